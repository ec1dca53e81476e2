"""``relayviz diff A.json B.json [--json]`` on snapshots of a real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relayviz_instrument import dumps
from relayviz_instrument.cli import main


@pytest.fixture
def snapshots(mlp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``a.json``: the MLP of tvm.relay.testing; ``b.json``: it after FuseOps. In the cwd."""
    from tvm import relay

    mod, _ = mlp
    mod = relay.transform.InferType()(mod)
    (tmp_path / "a.json").write_bytes(dumps(mod))
    (tmp_path / "b.json").write_bytes(dumps(relay.transform.FuseOps(fuse_opt_level=2)(mod)))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_diff_prints_hunks_and_exits_1_when_different(snapshots: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["diff", "a.json", "b.json"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "a.json → b.json  25 → 46 nodes  +21 −0 ~0"
    assert "├── wrapped  nn.batch_flatten wrapped into a primitive Function" in lines
    assert "├── wrapped ×2  nn.dense+nn.bias_add+nn.relu wrapped into a primitive Function" in lines
    assert lines[-1].startswith("    └── ")


def test_diff_json_for_scripts(snapshots: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["diff", "a.json", "b.json", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"added", "removed", "changed", "rewired", "hunks", "module", "summary"}
    assert {k: out["summary"][k] for k in ("added", "removed", "changed", "rewired", "unchanged")} == {
        "added": 21, "removed": 0, "changed": 0, "rewired": 0, "unchanged": 25}
    assert len(out["added"]) == 21 and out["removed"] == []
    assert [h["kind"] for h in out["hunks"]] == ["wrapped"] * 5


def test_same_snapshot_exits_0(snapshots: Path, capsys: pytest.CaptureFixture) -> None:
    (snapshots / "copy.json").write_bytes((snapshots / "a.json").read_bytes())
    assert main(["diff", "a.json", "copy.json"]) == 0
    assert capsys.readouterr().out.splitlines() == ["a.json → copy.json  25 → 25 nodes  +0 −0 ~0",
                                                    "└── no differences"]


def test_unreadable_input_is_one_line_and_status_2(snapshots: Path, capsys: pytest.CaptureFixture) -> None:
    (snapshots / "broken.json").write_text('{"format": "relayviz", "version": [1, 1], "nodes": [{}]}')
    assert main(["diff", "a.json", "broken.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: broken.json, node 0, field 'node_kind': missing or non-string 'node_kind'")


def test_diff_of_two_builds_as_graph_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Two builds of one model at different opt levels: the executor graphs, compared."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    graphs = {}
    for level in (0, 3):
        with tvm.transform.PassContext(opt_level=level):
            graphs[level] = json.loads(relay.build(mod, target="llvm", params=params).get_graph_json())
        (tmp_path / f"O{level}.json").write_text(json.dumps(graphs[level]))
    assert main(["diff", str(tmp_path / "O0.json"), str(tmp_path / "O3.json"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    kernels = {level: sorted(n["attrs"]["func_name"] for n in g["nodes"] if n["op"] == "tvm_op")
               for level, g in graphs.items()}
    assert kernels[0] != kernels[3]
    assert out["summary"]["ops"], "the operator deltas name the kernels that differ"
    changed_names = set(out["summary"]["ops"])
    assert changed_names <= set(kernels[0]) | set(kernels[3])
    assert main(["diff", str(tmp_path / "O3.json"), str(tmp_path / "O3.json")]) == 0


def test_an_error_message_with_brackets_is_printed_as_written(snapshots: Path, capsys: pytest.CaptureFixture) -> None:
    """Messages are text, not rich markup: ``[major, minor]`` and ``[1]`` must survive."""
    doc = json.loads((snapshots / "a.json").read_bytes())
    doc["version"] = [1]
    (snapshots / "bad.json").write_text(json.dumps(doc))
    assert main(["diff", "bad.json", "b.json"]) == 2
    err = capsys.readouterr().err
    assert err == "error: bad.json, field 'version': 'version' must be [major, minor], got [1] (regenerate the " \
                  "document with relayviz_instrument.dumps() or fix the file by hand)\n"


def test_diff_of_a_pass_of_a_trace_is_the_diff_of_its_two_snapshot_files(resnet18_traced, capsys) -> None:
    _, trace = resnet18_traced
    assert main(["show", str(trace.path), "--paths"]) == 0
    shown = capsys.readouterr().out
    fuse = next(r for r in trace.records if r.name == "FuseOps" and r.changed)
    row = next(line for line in shown.splitlines() if line.split()[:2] == [str(fuse.index), "FuseOps"]
               and ".json.zst" in line)
    before, after = [word for word in row.split() if word.endswith(".json.zst")]
    assert before.endswith(f"{fuse.before}.json.zst") and after.endswith(f"{fuse.after}.json.zst")
    assert main(["diff", str(trace.path), "--pass", "FuseOps", "--json"]) == 1
    by_pass = json.loads(capsys.readouterr().out)
    assert main(["diff", before, after, "--json"]) == 1
    by_files = json.loads(capsys.readouterr().out)
    assert by_pass == by_files and by_pass["summary"]["hunks"][0]["kind"] == "wrapped"
    assert main(["diff", str(trace.path), "--pass", f"#{fuse.index}", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == by_files


def test_diff_of_a_pass_that_is_not_there_names_the_trace(resnet18_traced, capsys) -> None:
    _, trace = resnet18_traced
    assert main(["diff", str(trace.path), "--pass", "FuseOp"]) == 2
    err = capsys.readouterr().err
    assert str(trace.path) in err and "no pass named 'FuseOp'" in err and "FuseOps" in err
    assert main(["diff", str(trace.path), "--pass", "99999"]) == 2
    assert "no pass event #99999" in capsys.readouterr().err
    assert main(["diff", str(trace.path)]) == 2
    assert "give two snapshots" in capsys.readouterr().err


# -- relayviz diff TRACE_A TRACE_B: two compilations aligned pass by pass --------------------


def test_diff_of_opt_level_2_and_3_names_the_first_divergent_pass(mlp_optimized, capsys) -> None:
    assert main(["diff", str(mlp_optimized["o2"]), str(mlp_optimized["o3"])]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"A: {mlp_optimized['o2']}  (81 pass events)"
    assert lines[1] == f"B: {mlp_optimized['o3']}  (99 pass events)"
    header = lines[2].split()
    assert header == ["pass", "A", "ms", "B", "ms", "outputs"]
    rows = {line.split()[0]: line for line in lines[4:] if line.startswith("  ") and "only B" in line}
    assert "—" in rows["CanonicalizeOps"] and "yes" in rows["CanonicalizeOps"]
    first = lines.index(next(line for line in lines if line.startswith("first divergence: ")))
    assert lines[first].startswith("first divergence: CanonicalizeOps (#") and lines[first].endswith(
        " in B) ran only in B")
    assert lines[first + 1].startswith("A's module → B's module after CanonicalizeOps  25 → 25 nodes  +")
    assert "└── replaced ×3  nn.bias_add → add" in lines[first + 2:]
    assert "later divergence" in lines[-1] or "later divergence" in " ".join(lines[-2:])


def test_diff_of_a_trace_with_itself_reports_no_divergence_and_exits_0(mlp_optimized, capsys) -> None:
    trace = str(mlp_optimized["o3"])
    assert main(["diff", trace, trace]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("no divergence: A and B ran the same passes and left the same modules")
    assert "first divergence" not in out


def test_diff_of_two_traces_as_json(mlp_optimized, capsys) -> None:
    assert main(["diff", str(mlp_optimized["o3"]), str(mlp_optimized["nofold"]), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"a", "b", "same", "pairs", "first_divergence", "divergences"}
    assert out["same"] is False and out["a"]["trace"] == str(mlp_optimized["o3"])
    first = out["first_divergence"]
    assert (first["name"], first["status"], first["b"]) == ("FoldConstant", "only A", None)
    assert out["pairs"][first["pair"]]["name"] == "FoldConstant"
    assert first["diff"]["summary"] == out["pairs"][first["pair"]]["summary"]
    assert out["divergences"] == sum(1 for p in out["pairs"] if p["diverges"]) >= 1
    assert {p["status"] for p in out["pairs"]} == {"same", "different", "only A"}


def test_diff_all_lists_every_pair(mlp_optimized, capsys) -> None:
    trace = str(mlp_optimized["o3"])
    main(["diff", trace, trace])
    short = capsys.readouterr().out.splitlines()
    main(["diff", trace, trace, "--all"])
    full = capsys.readouterr().out.splitlines()
    hidden = int(next(line for line in short if "more pass events" in line).split()[0])
    assert len(full) == len(short) + hidden - 1 and not any("more pass events" in line for line in full)


def test_diff_of_a_trace_and_a_file_or_a_plain_directory_is_status_2(mlp_optimized, snapshots, capsys) -> None:
    assert main(["diff", str(mlp_optimized["o3"]), "a.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{mlp_optimized['o3']} is a directory and the other is not" in err
    (snapshots / "empty").mkdir()
    assert main(["diff", str(mlp_optimized["o3"]), "empty"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "empty: not a trace directory" in err
    assert main(["diff", str(mlp_optimized["o3"]), str(mlp_optimized["o2"]), "--pass", "FuseOps"]) == 2
    assert "give two snapshots" in capsys.readouterr().err
