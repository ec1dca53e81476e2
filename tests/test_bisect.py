"""RelayVizBisect and ``relayviz bisect``: skipping passes through should_run, and finding the
pass that makes a check of the built model fail."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import orjson
import pytest
import tvm
import tvm.relay.testing
from tvm import relay
from tvm.contrib import graph_executor

from rich.console import Console

from relayviz_instrument import RelayVizBisect, RelayVizTrace, load_trace
from relayviz_instrument.views.bisect import bisect_command
from relayviz_instrument.errors import RelayVizUsageError
from relayviz_instrument.views.show import show_trace

HOST = "llvm -mtriple=x86_64-linux-gnu"

#: A user's check: an MLP whose preparation pipeline holds a pass that scales the first dense
#: weight (a wrong constant), then relay.build; exits 1 when the built model's output differs
#: from NumPy's. Its PassContext holds RelayVizBisect(), as `relayviz bisect` requires.
CHECK = textwrap.dedent("""
    import sys
    import numpy as np
    import tvm, tvm.relay.testing
    from tvm import relay
    from tvm.contrib import graph_executor
    from relayviz_instrument import RelayVizBisect

    WRONG = sys.argv[1] == "wrong"
    ALWAYS = sys.argv[2] if len(sys.argv) > 2 else ""

    @tvm.transform.module_pass(opt_level=2, name="ScaleFirstWeight")
    def scale_first_weight(mod, ctx):
        class Scale(relay.ExprMutator):
            done = False
            def visit_constant(self, const):
                if WRONG and not Scale.done and len(const.data.shape) == 2:
                    Scale.done = True
                    return relay.const(const.data.numpy() * 1.5)
                return const
        return tvm.IRModule({mod.get_global_var("main"): Scale().visit(mod["main"])})

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    x = np.random.RandomState(0).rand(1, 1, 28, 28).astype("float32")
    h = x.reshape(1, -1)
    for i in (1, 2, 3):
        h = h @ params[f"fc{i}_weight"].numpy().T + params[f"fc{i}_bias"].numpy()
        h = np.maximum(h, 0) if i < 3 else h
    expected = np.exp(h - h.max()) / np.exp(h - h.max()).sum()

    bound = tvm.IRModule.from_expr(relay.build_module.bind_params_by_name(mod["main"], params))
    prepare = tvm.transform.Sequential([relay.transform.SimplifyInference(), relay.transform.FoldConstant(),
                                        scale_first_weight, relay.transform.EliminateCommonSubexpr()],
                                       name="prepare")
    instruments = [] if ALWAYS == "no-bisect" else [RelayVizBisect()]
    with tvm.transform.PassContext(opt_level=3, instruments=instruments):
        lib = relay.build(prepare(bound), target="llvm -mtriple=x86_64-linux-gnu")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", x)
    m.run()
    ok = np.allclose(m.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)
    print("output", "ok" if ok else "WRONG")
    sys.exit({"pass": 0, "fail": 1}.get(ALWAYS, 0 if ok else 1))
""")


def _bisect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    check = tmp_path / "check.py"
    check.write_text(CHECK)
    return subprocess.run([sys.executable, "-m", "relayviz_instrument", "bisect", "--json", "--keep-traces",
                           str(tmp_path / "runs"), "--", sys.executable, str(check), *args],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)


@pytest.mark.slow
def test_bisect_finds_the_wrong_pass_in_a_real_relay_build_and_prints_its_diff(tmp_path):
    check = tmp_path / "check.py"
    check.write_text(CHECK)
    result = bisect_command([sys.executable, str(check), "wrong"], keep_traces=str(tmp_path / "runs"))
    assert result.verdict == "found" and result.status == 0
    culprit = result.culprit
    assert culprit.name == "ScaleFirstWeight" and culprit.bisect == result.failing_limit - 1
    # relay.build's own optimizations were candidates too: the search covered them.
    assert result.skippable > 15
    statuses = {run.limit: run.status for run in result.runs}
    assert statuses[None] == 1 and statuses[0] == 0
    assert statuses[result.failing_limit] == 1 and statuses[result.failing_limit - 1] == 0
    # Its node-level diff comes from the failing run's trace: the one constant it changed.
    failing = load_trace(tmp_path / "runs" / _run_dir(tmp_path, result.failing_limit))
    assert failing.records[culprit.index].to_json() == culprit.to_json()
    before, after = failing.snapshot(culprit.before), failing.snapshot(culprit.after)
    consts = [(a["value"], b["value"]) for a, b in zip(before["nodes"], after["nodes"])
              if a["node_kind"] == "Const" and a != b]
    assert len(consts) == 1 and result.comparison is not None and not result.comparison.same
    console = Console(width=300, color_system=None, record=True, file=io.StringIO())
    console.print(result)
    text = console.export_text()
    assert (f"found: pass event #{culprit.index} ScaleFirstWeight (skippable pass {culprit.bisect}; opt_level 2) "
            f"makes the command fail: it passes with limit {culprit.bisect}, fails with limit {culprit.bisect + 1}"
            in text)
    assert f"ScaleFirstWeight #{culprit.index} before → after" in text and "Const" in text
    # The failing run's trace shows what was skipped.
    shown = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(failing.path), "--all"],
                           capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "skipped" in shown and "pass events skipped by RelayVizBisect" in shown


def _run_dir(tmp_path: Path, limit: int) -> str:
    """The directory of the run with ``limit``."""
    return next(p.name for p in (tmp_path / "runs").iterdir() if p.name.endswith(f"-limit-{limit}"))


def test_a_found_result_made_without_its_failing_limit_still_names_the_pass() -> None:
    from relayviz_instrument.store import PassRecord
    from relayviz_instrument.views.bisect import FOUND, BisectResult

    culprit = PassRecord(index=7, name="FoldScaleAxis", depth=2, opt_level=3, bisect=3)
    console = Console(width=200, color_system=None, record=True)
    console.print(BisectResult(["python", "check.py"], FOUND, [], 5, culprit=culprit))
    found = [line for line in console.export_text().splitlines() if line.startswith("found: ")]
    assert found == ["found: pass event #7 FoldScaleAxis (skippable pass 3; opt_level 3) makes the command fail"]


def test_bisect_says_when_the_command_passes_with_every_pass(tmp_path):
    done = _bisect(tmp_path, "right")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["verdict"] == "passes with every limit" and len(result["runs"]) == 1


def test_bisect_says_when_the_command_fails_with_every_limit(tmp_path):
    done = _bisect(tmp_path, "right", "fail")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["verdict"] == "fails with every limit"
    assert [run["limit"] for run in result["runs"]] == [None, 0] and result["culprit"] is None


def test_bisect_of_a_command_without_the_instrument_says_what_to_add(tmp_path):
    done = _bisect(tmp_path, "wrong", "no-bisect")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "the command wrote no trace: put RelayVizBisect() in the instruments" in done.stderr


# -- the instrument on its own ---------------------------------------------------------------

def _mlp_output(lib) -> np.ndarray:
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", np.random.RandomState(0).rand(1, 1, 28, 28).astype("float32"))
    m.run()
    return m.get_output(0).numpy()


def test_every_skippable_pass_of_relay_build_can_be_skipped_and_the_model_stays_right(tmp_path):
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    with tvm.transform.PassContext(opt_level=3):
        expected = _mlp_output(relay.build(mod, target=HOST, params=params))
    trace = RelayVizTrace(tmp_path / "t")
    bisect = RelayVizBisect(0, trace=trace)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace, bisect]):
        lib = relay.build(mod, target=HOST, params=params)
    np.testing.assert_allclose(_mlp_output(lib), expected, rtol=1e-5)
    names = [name for _, name, skipped in bisect.decisions if skipped]
    assert len(names) == len(bisect.decisions) > 10
    assert {"FoldConstant", "AlterOpLayout", "EliminateCommonSubexpr"} <= set(names)
    assert not {"InferType", "sequential", "FuseOps", "SimplifyInference"} & set(names)
    loaded = load_trace(tmp_path / "t")
    skipped = [r for r in loaded.records if r.skipped]
    assert [r.name for r in skipped] == names and [r.bisect for r in skipped] == list(range(len(names)))
    assert all(r.before is None and r.changed is None for r in skipped)
    # Skipped passes never reached run_before_pass: nothing nests in them.
    assert not any(r.parent in {s.index for s in skipped} for r in loaded.records)


def test_a_limit_runs_exactly_the_first_passes_of_a_run_without_one():
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    runs = {}
    for limit in (None, 5):
        bisect = RelayVizBisect(limit)
        with tvm.transform.PassContext(opt_level=3, instruments=[bisect]):
            relay.optimize(mod, target=HOST, params=params)
        runs[limit] = bisect.decisions
    assert [(n, name) for n, name, _ in runs[5]] == [(n, name) for n, name, _ in runs[None]]
    assert [skipped for _, _, skipped in runs[5]] == [n >= 5 for n, _, _ in runs[5]]
    assert not any(skipped for _, _, skipped in runs[None])


def test_required_passes_and_the_users_kept_passes_are_never_skipped():
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    bisect = RelayVizBisect(0, keep=["AlterOpLayout"])
    with tvm.transform.PassContext(opt_level=3, required_pass=["FoldConstant"], instruments=[bisect]):
        relay.optimize(mod, target=HOST, params=params)
    names = {name for _, name, _ in bisect.decisions}
    assert names and not {"FoldConstant", "AlterOpLayout"} & names


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("RELAYVIZ_BISECT_LIMIT", "7")
    assert RelayVizBisect().limit == 7 and RelayVizBisect(2).limit == 2
    monkeypatch.setenv("RELAYVIZ_BISECT_LIMIT", "")
    assert RelayVizBisect().limit is None
    monkeypatch.setenv("RELAYVIZ_BISECT_LIMIT", "seven")
    with pytest.raises(RelayVizUsageError, match="RELAYVIZ_BISECT_LIMIT='seven'"):
        RelayVizBisect()


def test_a_trace_without_bisection_writes_the_lines_it_always_wrote(tmp_path):
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "t")]):
        relay.transform.InferType()(mod)
    lines = [orjson.loads(line) for line in (tmp_path / "t" / "manifest.jsonl").read_bytes().splitlines()]
    assert not any({"skipped", "bisect", "replay"} & set(line) for line in lines)
    overview = show_trace(load_trace(tmp_path / "t"), everything=True).to_json()
    assert overview["records"][0]["skipped"] is False and overview["records"][0]["bisect"] is None
