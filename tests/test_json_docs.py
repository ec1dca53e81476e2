"""Every key the commands print with --json (and --jsonl) is described in docs/json.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from relayviz_instrument.cli import main

DOCS = (Path(__file__).parent.parent / "docs" / "json.md").read_text()
DOCUMENTED = set(re.findall(r"`([a-z_]+)`", DOCS))
#: Keys that are data rather than names: record indices and operator names used as keys.
_DATA_KEY = re.compile(r"^\d+$|\.|^[a-z_]+\.[a-z_.]+$")


#: Maps whose keys are data (record indices, operator names, field paths): their values are
#: documented objects (``summaries``) or data (the rest, not walked).
_MAPS_OF_DOCUMENTED = ("summaries",)
_MAPS_OF_DATA = ("roles", "ops", "fields", "options", "before", "after")


def keys(value: Any, parent: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        if parent in _MAPS_OF_DATA:
            return
        for key, item in value.items():
            if parent in _MAPS_OF_DOCUMENTED or _DATA_KEY.search(key):
                yield from keys(item, "")
                continue
            yield key
            yield from keys(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from keys(item, parent)


@pytest.fixture(scope="module")
def outputs(resnet18_traced) -> Any:
    _, trace = resnet18_traced
    return trace


def test_every_key_of_every_json_output_is_documented(outputs, mlp_optimized, capsys, tmp_path) -> None:
    trace = outputs
    found = set()
    for argv in (["show", str(trace.path), "--json"], ["report", str(trace.path), "--json"],
                 ["report", str(trace.path), "--all", "--json"]):
        main(argv)
        found |= set(keys(json.loads(capsys.readouterr().out)))
    main(["report", str(trace.path), "--jsonl"])
    for line in capsys.readouterr().out.splitlines():
        found |= set(keys(json.loads(line)))
    graph = next(r for r in trace.records if r.ir == "graph_executor")
    main(["diff", str(trace.path), "--pass", "FuseOps", "--json"])
    found |= set(keys(json.loads(capsys.readouterr().out)))
    main(["diff", str(mlp_optimized["o2"]), str(mlp_optimized["o3"]), "--json"])
    found |= set(keys(json.loads(capsys.readouterr().out)))
    built = tmp_path / "graph.json"
    from relayviz_instrument.export import write_netron

    write_netron(trace.snapshot(graph.after), built)
    main(["inspect", str(built), "--json"])
    found |= set(keys(json.loads(capsys.readouterr().out)))
    assert {"records", "passes", "operators", "inputs", "module", "pairs"} <= found  # the walk saw every output
    missing = sorted(found - DOCUMENTED - {"type"} | ({"type"} - DOCUMENTED))
    assert not missing, f"keys printed but not described in docs/json.md: {missing}"


def test_booleans_are_booleans(outputs, capsys) -> None:
    trace = outputs
    main(["show", str(trace.path), "--json"])
    shown = json.loads(capsys.readouterr().out)
    assert all(isinstance(r["changed"], bool) or r["changed"] is None for r in shown["records"])
    doc = trace.snapshot(next(r.before for r in trace.records if r.before))
    batch_norm = next(n for n in doc["nodes"] if n["node_kind"] == "Op" and n["name"] == "nn.batch_norm")
    assert batch_norm["attrs"]["center"] is True and batch_norm["attrs"]["scale"] in (True, False)
