"""The HTML report's data and page, without a browser: graphs, payload, page, asset, CLI.

(``test_html_browser.py`` opens the page in headless Chromium.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from relayviz_instrument.cli import main
from relayviz_instrument.diff import diff
from relayviz_instrument.diff.graph import CanonicalGraph
from relayviz_instrument.html_report import render_html_report, report_data, write_html_report
from relayviz_instrument.html_report.graphs import STATUSES, pass_graph, snapshot_graph
from relayviz_instrument.html_report.page import ASSETS
from relayviz_instrument.analysis.provenance import provenance
from relayviz_instrument.serialize import to_relayviz
from relayviz_instrument.store import load_trace

WEB = Path(__file__).resolve().parent.parent / "web"


@pytest.fixture(scope="module")
def fused() -> Dict[str, Any]:
    """A conv2d+add+relu network before and after FuseOps."""
    import tvm
    from tvm import relay

    x = relay.var("x", shape=(1, 4, 8, 8))
    w = relay.var("w", shape=(4, 4, 3, 3))
    b = relay.var("b", shape=(4, 1, 1))
    y = relay.nn.relu(relay.add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    z = relay.nn.max_pool2d(y)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w, b], z)))
    after = relay.transform.FuseOps(2)(mod)
    return {"before": to_relayviz(mod), "after": to_relayviz(after)}


def by_name(graph: Dict[str, Any], name: str) -> List[int]:
    """The drawn nodes named ``name`` (an operator, or a kind's detail such as ``%x``)."""
    return [i for i, n in enumerate(graph["nodes"]) if "h" not in n and "c" not in n and name in (n["n"], n.get("d"))]


def test_snapshot_graph_draws_a_primitive_function_as_a_compound(fused: Dict[str, Any]) -> None:
    doc = fused["after"]
    graph = snapshot_graph(CanonicalGraph(doc))
    nodes = graph["nodes"]
    assert len(nodes) == len(doc["nodes"])
    compounds = [i for i, n in enumerate(nodes) if n.get("c")]
    assert len(compounds) == 2
    assert sorted(nodes[c]["d"] for c in compounds) == ["nn.conv2d+add+nn.relu", "nn.max_pool2d"]
    [conv] = by_name(graph, "nn.conv2d")
    [relu] = by_name(graph, "nn.relu")
    [pool] = by_name(graph, "nn.max_pool2d")
    [x] = by_name(graph, "%x")
    conv_fn = next(c for c in compounds if "conv2d" in nodes[c]["d"])
    assert nodes[conv]["p"] == nodes[relu]["p"] == conv_fn
    # Parameters stand for the arguments: the conv2d reads %x itself; the pool reads the relu.
    assert x in nodes[conv]["in"] and "p" not in nodes[x]
    assert nodes[pool]["in"] == [relu]
    for i, node in enumerate(doc["nodes"]):
        drawn = nodes[i]
        if node["node_kind"] == "Op":
            assert drawn["h"] == -1
        elif node["node_kind"] == "Call" and doc["nodes"][node["op"]]["node_kind"] == "Function":
            assert drawn["h"] >= 0 and "h" not in nodes[drawn["h"]]  # the call: drawn as the body
    main_fn = doc["functions"]["main"]
    assert nodes[main_fn]["in"] == [pool]  # a global function reads its body, not its parameters


def test_pass_graph_colours_the_diff(fused: Dict[str, Any]) -> None:
    before, after = fused["before"], fused["after"]
    d = diff(before, after)
    a, b = snapshot_graph(CanonicalGraph(before))["nodes"], snapshot_graph(CanonicalGraph(after))["nodes"]
    graph = pass_graph(a, b, d)
    statuses = [STATUSES[n[2]] for n in graph["nodes"]]
    # FuseOps added the two functions; every call it moved is the same call.
    added = [b[n[1]]["n"] for n in graph["nodes"] if STATUSES[n[2]] == "added"]
    assert sorted(added) == ["Function", "Function"]
    assert "removed" not in statuses
    for node in graph["nodes"]:
        if node[0] >= 0 and node[1] >= 0:
            assert d.mapping[node[0]] == node[1]
    compounds = {g for g, n in enumerate(graph["nodes"]) if b[n[1]].get("c")}
    inside = [n for n in graph["nodes"] if n[3] >= 0]
    assert inside and {n[3] for n in inside} == compounds
    # One wrapped hunk per function: its members are the function and the calls it holds.
    assert [h.kind for h in d.hunks] == ["wrapped", "wrapped"]
    for members in graph["hunks"]:
        names = sorted(b[graph["nodes"][g][1]]["n"] for g in members)
        assert "Function" in names and len(names) >= 2
    assert all(0 <= u < len(graph["nodes"]) and 0 <= v < len(graph["nodes"]) and s in (0, 1, 2)
               for u, v, s in graph["edges"])


def test_pass_graph_regions_keep_changes_and_their_neighbours(resnet18_traced: Any) -> None:
    _, trace = resnet18_traced
    data = report_data(load_trace(trace.path))
    fold = next(p for p in data["passes"] if p["name"] == "FoldConstant" and p.get("graph") is not None)
    graph = data["graphs"][fold["graph"]]
    nodes = graph["nodes"]
    in_hunks = {g for h in graph["hunks"] for g in h["nodes"]}
    assert graph["regions"] and sum(graph["regions"]) == sum(1 for n in nodes if n[4] >= 0)
    assert min(graph["regions"]) >= 3  # smaller ones are drawn
    for g, node in enumerate(nodes):
        if node[2] != 0 or g in in_hunks:
            assert node[4] == -1
    for u, v, _ in graph["edges"]:  # a region never touches a change
        for x, y in ((u, v), (v, u)):
            if nodes[x][4] >= 0:
                assert nodes[y][2] == 0 and y not in in_hunks


def test_report_data_follows_the_trace_and_its_pipeline(resnet18_traced: Any) -> None:
    _, trace = resnet18_traced
    loaded = load_trace(trace.path)
    data = report_data(loaded)
    prov = provenance(loaded)
    assert [p["i"] for p in data["passes"]] == [r.index for r in loaded.records]
    for p, r in zip(data["passes"], loaded.records):
        has = bool(r.changed and r.before and r.after and r.before != r.after)
        assert ("graph" in p) == has
        if has:
            g = data["graphs"][p["graph"]]
            assert data["snapshots"][g["before"]]["ref"] == r.before
            assert data["snapshots"][g["after"]]["ref"] == r.after
        assert p.get("span") == (list(prov.span(r.index)) if prov.span(r.index) else None)
    assert [data["snapshots"][s]["ref"] for s in data["chain"]] == list(prov.refs)
    assert [s["name"] for s in data["steps"]] == [s.name for s in prov.steps]
    for i, step in enumerate(data["steps"]):
        g = data["graphs"][step["graph"]]
        assert (g["before"], g["after"]) == (data["chain"][i], data["chain"][i + 1])
        assert len(step["origins"]) == len(g["hunks"])
    assert data["start"] == prov.steps[0].index


def test_page_is_self_contained_deterministic_and_escapes_the_data(tmp_path: Path) -> None:
    import tvm
    from tvm import relay

    from relayviz_instrument.capture import RelayVizTrace

    nasty = "</script><script>alert(1)</script>"
    x = relay.var(nasty, shape=(2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(relay.nn.relu(x), relay.const(1.0))))
    path = tmp_path / "trace"
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(path)]):
        tvm.transform.Sequential([relay.transform.InferType(), relay.transform.FuseOps(2)])(mod)
    trace = load_trace(path)
    page = render_html_report(trace)
    assert page == render_html_report(trace)
    text = page.decode("utf-8")
    assert text.count("</script>") == 2  # the data's and the viewer's, nothing from the trace
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing to fetch
    data = re.search(r'<script id="relayviz-data" type="application/json">(.*?)</script>', text, re.S)
    assert data and json.loads(data.group(1)) == json.loads(json.dumps(report_data(trace)))
    assert nasty in data.group(1).encode().decode("unicode_escape")
    out = write_html_report(trace, tmp_path / "report.html")
    assert out.read_bytes() == page


def test_a_trace_kept_in_memory_gets_its_report() -> None:
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument.capture import RelayVizTrace

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    live = RelayVizTrace(False)
    with tvm.transform.PassContext(opt_level=3, instruments=[live]):
        relay.optimize(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
    data = report_data(live)
    assert data["trace"]["name"] == "(in memory)" and data["trace"]["complete"]
    assert [p["i"] for p in data["passes"]] == [r.index for r in live.records]
    assert any("graph" in p for p in data["passes"])


def test_the_asset_records_the_bundled_packages_and_their_licences() -> None:
    script = (ASSETS / "viewer.js").read_text(encoding="utf-8")
    assert (ASSETS / "viewer.css").is_file()
    header = script[: script.index("*/")]
    listed = re.findall(r"^ \*   (\S+) (\S+) (\S+)$", header, re.M)
    assert listed, header
    lock = json.loads((WEB / "package-lock.json").read_text())["packages"]
    wanted = json.loads((WEB / "package.json").read_text())["dependencies"]
    for name, version, licence in listed:
        entry = lock[f"node_modules/{name}"]
        assert entry["version"] == version and entry.get("license") == licence
        assert not entry.get("dev")
        assert f"\n{name} {version}\n" in script[script.index("Licences of the bundled packages"):]
    assert set(wanted) <= {name for name, _, _ in listed}
    for name, version in wanted.items():  # exact pins, as the lock file has them
        assert lock[f"node_modules/{name}"]["version"] == version


def test_cli_report_html(resnet18_traced: Any, tmp_path: Path, capsys: Any) -> None:
    _, trace = resnet18_traced
    out = tmp_path / "r18.html"
    assert main(["report", str(trace.path), "--html", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert out.read_bytes().startswith(b"<!DOCTYPE html>")
    assert main(["report", str(trace.path), "--html", str(tmp_path / "missing" / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "cannot write the file" in err and "Traceback" not in err
