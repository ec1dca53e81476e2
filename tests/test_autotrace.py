"""Tracing a script without editing it: ``relayviz run`` and ``RELAYVIZ_TRACE`` put the instrument
into every pass context a process enters (relay.quantize's own included), record what relay.build
returned, and leave the script's output and exit status alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path
from typing import Dict

import pytest
from tvm import relay  # noqa: F401  (the Relay leg only: conftest skips this module without Relay)

from relayviz_instrument import load_trace
from relayviz_instrument.autotrace.run import STARTUP_DIR, run_traced
from relayviz_instrument.errors import RelayVizUsageError
from relayviz_instrument.views.show import show_trace

ROOT = Path(__file__).resolve().parent.parent

#: relay.quantize then relay.build, with no instrument anywhere; it exits with status 3.
QUANTIZE_SCRIPT = textwrap.dedent("""\
    import sys
    import numpy as np
    import tvm
    from tvm import relay

    data = relay.var("data", shape=(1, 3, 16, 16))
    w1 = relay.var("w1", shape=(8, 3, 3, 3))
    w2 = relay.var("w2", shape=(8, 8, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(data, w1, padding=(1, 1)))
    y = relay.nn.relu(relay.nn.conv2d(y, w2, padding=(1, 1)))
    mod = tvm.IRModule.from_expr(relay.Function([data, w1, w2], y))
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((8, 3, 3, 3)).astype("float32"),
              "w2": rng.standard_normal((8, 8, 3, 3)).astype("float32")}
    with relay.quantize.qconfig(calibrate_mode="global_scale", global_scale=8.0, skip_conv_layers=[]):
        qmod = relay.quantize.quantize(mod, params)
    lib = relay.build(qmod, target="llvm -mtriple=x86_64-linux-gnu")
    print("built", type(lib).__name__, sys.argv[1:])
    sys.exit(3)
""")

#: Three pass contexts opened by library-style helpers, each nested in the one before; the
#: outermost also runs a pass after the inner ones return, and the middle one passes its own
#: RelayVizTrace, as a user would, and prints how many events it recorded.
NESTED_SCRIPT = textwrap.dedent("""\
    import tvm
    from tvm import relay
    from relayviz_instrument import RelayVizTrace

    def innermost(mod):
        with tvm.transform.PassContext(opt_level=3):
            return relay.transform.DeadCodeElimination()(mod)

    def middle(mod, out):
        own = RelayVizTrace(out)
        with tvm.transform.PassContext(opt_level=2, instruments=[own]):
            mod = relay.transform.EliminateCommonSubexpr()(mod)
            mod = innermost(mod)
        print("own trace", len(own.records), [r.name for r in own.records if r.depth == 1])
        return mod

    def outermost(mod, out):
        with tvm.transform.PassContext(opt_level=1):
            mod = relay.transform.FoldConstant()(mod)
            mod = middle(mod, out)
            mod = relay.transform.SimplifyExpr()(mod)
        return mod

    x = relay.var("x", shape=(4, 4))
    body = relay.add(relay.add(x, x), relay.add(x, x))
    import sys
    outermost(tvm.IRModule.from_expr(relay.Function([x], body)), sys.argv[1])
""")


#: The same compilations in the main thread and in two threads started before it, all three
#: waiting for each other so that their passes overlap; then a thread that runs passes outside
#: any pass context (in its own default context, which no instrument is in).
THREADS_SCRIPT = textwrap.dedent("""\
    import threading
    import tvm
    from tvm import relay

    start = threading.Barrier(3)

    def compile_some(k):
        start.wait()
        for i in range(3):
            x = relay.var("x", shape=(4, 4 + i + k))
            body = relay.nn.relu(relay.add(relay.add(x, relay.const(1.0)), relay.const(2.0)))
            mod = tvm.IRModule.from_expr(relay.Function([x], body))
            with tvm.transform.PassContext(opt_level=3):
                mod = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.FoldConstant(),
                                                relay.transform.FuseOps(2)])(mod)
        with tvm.transform.PassContext(opt_level=3):
            relay.build(mod, target="llvm -mtriple=x86_64-linux-gnu")

    def outside_any_context():
        x = relay.var("x", shape=(2, 2))
        mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))
        for _ in range(4):
            mod = relay.transform.InferType()(mod)

    workers = [threading.Thread(target=compile_some, args=(k,), name=f"compiler-{k}") for k in (1, 2)]
    for worker in workers:
        worker.start()
    compile_some(0)
    for worker in workers:
        worker.join()
    bare = threading.Thread(target=outside_any_context, name="bare-worker")
    bare.start()
    bare.join()
    print("ok")
""")


def _env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYVIZ_TRACE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _relayviz_run(tmp_path: Path, script: Path, trace: Path, *args: str) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run([sys.executable, "-m", "relayviz_instrument", "run", "-o", str(trace), "--",
                           sys.executable, str(script), *args], cwd=tmp_path, env=_env(), capture_output=True)


def _shown(trace: Path) -> str:
    import io

    from rich.console import Console

    console = Console(width=200, color_system=None, file=io.StringIO())
    console.print(show_trace(load_trace(trace)))
    return console.file.getvalue()  # type: ignore[attr-defined]  # the console writes into a StringIO


def _check_quantize_trace(trace_dir: Path) -> None:
    trace = load_trace(trace_dir)
    assert trace.complete, trace.problems
    names = [r.name for r in trace.records]
    for name in ("QuantizeAnnotate", "QuantizeCalibrate", "QuantizeRealize"):
        assert name in names
    shown = _shown(trace_dir)
    for name in ("QuantizeAnnotate", "QuantizeCalibrate", "QuantizeRealize", "GraphExecutorCodegen"):
        assert name in shown, shown
    # quantize's passes ran in the context relay.quantize opened, not in the default one
    annotate = next(r for r in trace.records if r.name == "QuantizeAnnotate")
    context = trace.contexts[annotate.context]
    assert os.path.join("relay", "quantize", "quantize.py:") in context["opened"]
    assert context["parent"] == 0 and trace.contexts[0]["parent"] is None
    # the built graph is recorded after the last Relay module of the build, which was changed
    graph = next(r for r in trace.records if r.ir == "graph_executor")
    assert graph.before is not None and graph.nodes_after


def test_relayviz_run_traces_quantize_and_build_and_keeps_output_and_status(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text(QUANTIZE_SCRIPT)
    plain = subprocess.run([sys.executable, str(script), "a b", "-c"], cwd=tmp_path, env=_env(), capture_output=True)
    assert plain.returncode == 3, plain.stderr.decode()[-2000:]
    done = _relayviz_run(tmp_path, script, tmp_path / "T", "a b", "-c")
    assert done.returncode == 3, done.stderr.decode()[-2000:]
    assert done.stdout == plain.stdout
    assert b"QuantizeRealize" in done.stderr and b"pass contexts" in done.stderr  # the table, on stderr
    _check_quantize_trace(tmp_path / "T")


def test_the_environment_variable_traces_through_the_installed_hook(tmp_path: Path) -> None:
    """``RELAYVIZ_TRACE=T python s.py`` in an environment whose site-packages hold the package's
    ``relayviz-trace.pth`` (as an install puts it there), with no other change to the command."""
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    here = Path(subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "tvm-here.pth").write_text(f"{here}\n")  # this environment's TVM and dependencies
    shutil.copy(STARTUP_DIR / "relayviz-trace.pth", site / "relayviz-trace.pth")
    script = tmp_path / "s.py"
    script.write_text(QUANTIZE_SCRIPT)
    untraced = subprocess.run([str(python), str(script)], cwd=tmp_path, env=_env(), capture_output=True)
    assert untraced.returncode == 3, untraced.stderr.decode()[-2000:]
    assert not any(tmp_path.glob("relayviz-trace*"))
    done = subprocess.run([str(python), str(script)], cwd=tmp_path, env=_env(RELAYVIZ_TRACE=str(tmp_path / "T")),
                          capture_output=True)
    assert done.returncode == 3, done.stderr.decode()[-2000:]
    assert done.stdout == untraced.stdout
    assert f"traced in {tmp_path / 'T'}".encode() in done.stderr
    _check_quantize_trace(tmp_path / "T")


def test_nested_contexts_are_sections_of_one_trace_in_order(tmp_path: Path) -> None:
    script = tmp_path / "nested.py"
    script.write_text(NESTED_SCRIPT)
    done = _relayviz_run(tmp_path, script, tmp_path / "T", str(tmp_path / "own"))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    trace = load_trace(tmp_path / "T")
    assert trace.complete, trace.problems
    lines = NESTED_SCRIPT.splitlines()
    with_lines = [i + 1 for i, line in enumerate(lines) if "with tvm.transform.PassContext" in line]
    # the default context, then outermost, middle and innermost, each inside the one before
    assert [c["opened"] for c in trace.contexts[1:]] == [f"{script}:{n}" for n in (with_lines[2], with_lines[1],
                                                                                    with_lines[0])]
    assert [c["parent"] for c in trace.contexts] == [None, 0, 1, 2]
    assert [c["opt_level"] for c in trace.contexts[1:]] == [1, 2, 3]

    # the events each context ran itself (not nested in an event of the same context), in order
    firsts = [r for r in trace.records if r.parent is None or trace.records[r.parent].context != r.context]
    assert [(r.context, r.name) for r in firsts] == [(1, "FoldConstant"), (2, "EliminateCommonSubexpr"),
                                                     (3, "DeadCodeElimination"), (1, "SimplifyExpr")]
    # every pass of every context is in the trace: each nested InferType belongs to its pass's context
    for r in trace.records:
        if r.parent is not None and trace.records[r.parent].context == r.context:
            assert r.index > r.parent
    # the middle context's own RelayVizTrace recorded its context's passes, as without relayviz run (not
    # the innermost context's, which it was not given to); the process trace has the same events
    own = load_trace(tmp_path / "own")
    assert own.complete and [r.name for r in own.records] == [r.name for r in trace.records if r.context == 2]
    assert f"own trace {len(own.records)}".encode() in done.stdout
    shown = _shown(tmp_path / "T")
    assert "pass contexts" in shown and f"{script}:{with_lines[0]}" in shown


#: A pass that raises inside a helper's own context; the script catches the error and compiles on.
FAILING_SCRIPT = textwrap.dedent("""\
    import tvm
    from tvm import relay

    @tvm.transform.module_pass(opt_level=0, name="Explodes")
    def explodes(mod, ctx):
        raise ValueError("no such layout")

    def helper(mod):
        with tvm.transform.PassContext(opt_level=3):
            return tvm.transform.Sequential([relay.transform.InferType(), explodes])(mod)

    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))
    try:
        helper(mod)
    except Exception as exc:
        print("caught", type(exc).__name__)
    relay.transform.FoldConstant()(mod)
""")


def test_a_context_an_exception_leaves_ends_its_events_and_the_trace_goes_on(tmp_path: Path) -> None:
    script = tmp_path / "failing.py"
    script.write_text(FAILING_SCRIPT)
    done = _relayviz_run(tmp_path, script, tmp_path / "T")
    assert done.returncode == 0 and b"caught" in done.stdout, done.stderr.decode()[-3000:]
    trace = load_trace(tmp_path / "T")
    by_name = {r.name: r for r in trace.records}
    assert "no such layout" in (by_name["Explodes"].error or "")
    assert by_name["sequential"].error is not None and by_name["Explodes"].parent == by_name["sequential"].index
    assert by_name["Explodes"].context == by_name["sequential"].context == 1
    # the pass run afterwards, outside any with-block, is an event of its own in the default context
    fold = by_name["FoldConstant"]
    assert fold.parent is None and fold.depth == 1 and fold.context == 0 and fold.error is None


def test_relayviz_run_refuses_a_trace_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "T").mkdir()
    (tmp_path / "T" / "kept.txt").write_text("mine")
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    done = _relayviz_run(tmp_path, script, tmp_path / "T")
    assert done.returncode == 2 and b"ran" not in done.stdout
    assert done.stderr.decode().count("\n") == 1 and "not empty" in done.stderr.decode()


def test_relayviz_runs_use_case_runs_a_command_from_python_and_returns_its_status_and_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in _env().items():
        monkeypatch.setenv(name, value)
    for name in [n for n in os.environ if n.startswith("RELAYVIZ_TRACE")]:
        monkeypatch.delenv(name)
    script = tmp_path / "nested.py"
    script.write_text(NESTED_SCRIPT)
    done = run_traced([str(script), str(tmp_path / "own")], tmp_path / "T", passes="^Fold")
    assert done.status == 0 and done.command == [sys.executable, str(script), str(tmp_path / "own")]
    assert done.trace is not None and [c["parent"] for c in done.trace.contexts] == [None, 0, 1, 2]
    assert {r.name for r in done.trace.records if r.before is not None} == {"FoldConstant"}
    assert done.trace.header["options"]["passes"] == "(?:^Fold)"
    assert done.to_json() == {"command": done.command, "status": 0, "trace": str(tmp_path / "T")}
    untraced = run_traced([sys.executable, "-c", "import sys; sys.exit(5)"], tmp_path / "N")
    assert (untraced.status, untraced.trace, untraced.to_json()["trace"]) == (5, None, None)
    assert untraced.untraced == ("relayviz: the command entered no TVM pass context; nothing was traced in "
                                 f"{tmp_path / 'N'}")
    with pytest.raises(RelayVizUsageError, match="not empty"):
        run_traced([sys.executable, "-c", "print('never run')"], tmp_path / "T")


#: A child project of three tests: a relay.build, a pass in a context of its own that then fails
#: an assertion, and a test that never touches TVM.
CHILD_TESTS = textwrap.dedent("""\
    import tvm
    from tvm import relay

    def _mod():
        x = relay.var("x", shape=(4,))
        return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(1.0) + relay.const(2.0))))

    def test_builds():
        relay.build(_mod(), target="llvm -mtriple=x86_64-linux-gnu")

    def test_folds_then_fails():
        with tvm.transform.PassContext(opt_level=3):
            relay.transform.FoldConstant()(relay.transform.InferType()(_mod()))
        assert False, "on purpose"

    def test_arithmetic():
        assert 1 + 1 == 2
""")


def test_pytest_option_traces_each_test_into_its_folder(tmp_path: Path) -> None:
    import json

    (tmp_path / "test_child.py").write_text(CHILD_TESTS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--relayviz-trace",
                           "D", "test_child.py"], cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert done.returncode == 1 and "1 failed, 2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    shown = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", "D", "--json"], cwd=tmp_path,
                           env=_env(), capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    tests = {t["test"]: t for t in json.loads(shown.stdout)["tests"]}
    assert list(tests) == [f"test_child.py::{name}" for name in ("test_builds", "test_folds_then_fails",
                                                                  "test_arithmetic")]
    assert [t["outcome"] for t in tests.values()] == ["passed", "failed", "passed"]
    built = load_trace(tmp_path / "D" / tests["test_child.py::test_builds"]["folder"])
    assert any(r.ir == "graph_executor" for r in built.records) and "FuseOps" in {r.name for r in built.records}
    folded = load_trace(tmp_path / "D" / tests["test_child.py::test_folds_then_fails"]["folder"])
    assert [r.name for r in folded.records if r.depth == 1] == ["InferType", "FoldConstant"]
    assert [c["parent"] for c in folded.contexts] == [None, 0]
    assert tests["test_child.py::test_arithmetic"]["events"] == 0
    assert all(t["events"] == len(load_trace(tmp_path / "D" / t["folder"]).records) for t in tests.values())
    table = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", "D"], cwd=tmp_path, env=_env(),
                           capture_output=True, text=True)
    assert "3 tests traced" in table.stdout and "test_folds_then_fails" in table.stdout


#: Two traces one after the other in one process (as pytest --relayviz-trace makes them), Relay
#: first imported while the first is active.
TWO_TRACES_SCRIPT = textwrap.dedent("""\
    import sys
    from relayviz_instrument import autotrace

    def build():
        x = relay.var("x", shape=(4,))
        relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x))),
                    target="llvm -mtriple=x86_64-linux-gnu")

    autotrace.start(sys.argv[1] + "/a")
    import tvm
    from tvm import relay
    build()
    first = autotrace.stop()
    autotrace.start(sys.argv[1] + "/b")
    build()
    second = autotrace.stop()
    build()
    print([sum(r.ir == "graph_executor" for r in t.records) for t in (first, second)],
          relay.build is relay.build_module.build, tvm.transform.PassContext.__init__.__module__,
          tvm.transform.Pass.__call__.__module__)
""")


def test_each_trace_of_a_process_records_its_builds_and_stopping_takes_every_patch_away(tmp_path: Path) -> None:
    script = tmp_path / "two.py"
    script.write_text(TWO_TRACES_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "[1, 1] True tvm.ir.transform tvm.ir.transform\n"
    assert [len(load_trace(tmp_path / t).records) > 0 for t in "ab"] == [True, True]


def test_relayviz_run_runs_a_module_with_its_own_options(tmp_path: Path) -> None:
    (tmp_path / "nested_helpers.py").write_text(NESTED_SCRIPT.replace("sys.argv[1]", "sys.argv[2]"))
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "run", "-o", str(tmp_path / "T"), "-m",
                           "nested_helpers", "--tir", str(tmp_path / "own")], cwd=tmp_path, env=_env(),
                          capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    trace = load_trace(tmp_path / "T")
    assert [c["parent"] for c in trace.contexts] == [None, 0, 1, 2]
    assert trace.header["options"]["tir"] is False  # --tir after the module is the module's argument


def test_a_trace_records_one_thread_and_counts_the_events_of_the_others(tmp_path: Path) -> None:
    """Passes that run in other threads at the same time are not interleaved into the main
    thread's nesting (which made passes of one thread end those of another, as failures): the
    trace records the thread that entered the first pass context, and names the others with
    their events, which the trace is then incomplete without. Passes another thread runs outside
    any pass context reach no instrument at all: they are counted where Python calls them."""
    script = tmp_path / "threads.py"
    script.write_text(THREADS_SCRIPT)
    done = _relayviz_run(tmp_path, script, tmp_path / "T")
    assert done.returncode == 0 and done.stdout.decode().splitlines()[0] == "ok", done.stderr.decode()[-3000:]
    trace = load_trace(tmp_path / "T")
    assert not any(r.error for r in trace.records), [r.error for r in trace.records if r.error][:3]
    assert all(r.duration_ms >= 0 for r in trace.records)
    # the main thread's: three compilations through the Sequential, one build, its built graph
    assert len(trace.contexts) == 1 + 4
    passes = [r for r in trace.records if r.ir != "graph_executor"]
    assert [r.name for r in passes if r.depth == 1 and r.context != 4] == ["sequential"] * 3
    assert len(passes) == len(trace.records) - 1 and trace.records[-1].ir == "graph_executor"
    # the others did the same work: as many events each, its build's result among them
    assert not trace.complete
    problem = next(p for p in trace.problems if "other threads" in p)
    assert "MainThread" in problem
    assert f"compiler-1: {len(trace.records)}" in problem and f"compiler-2: {len(trace.records)}" in problem
    assert "bare-worker" not in problem
    # the passes no callback reports: counted where they are called from Python
    outside = next(p for p in trace.problems if "outside any pass context" in p)
    assert outside.endswith("bare-worker: 4") and "compiler-" not in outside
    shown = _shown(tmp_path / "T")
    assert "not recorded" in shown and "bare-worker" in shown


#: Tracing started, TVM imported and a module compiled in a worker thread; the main thread stops it.
STOPPED_ELSEWHERE_SCRIPT = textwrap.dedent("""\
    import sys
    import threading
    from relayviz_instrument import autotrace

    def work():
        autotrace.start(sys.argv[1])
        import tvm
        from tvm import relay
        x = relay.var("x", shape=(4,))
        with tvm.transform.PassContext(opt_level=3):
            relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x))))

    worker = threading.Thread(target=work, name="tracer")
    worker.start()
    worker.join()
    trace = autotrace.stop()
    print(trace.complete, len(trace.records))
""")


def test_a_trace_is_closed_by_whichever_thread_stops_it(tmp_path: Path) -> None:
    """The thread a trace records need not be the one that stops it (at the process's exit,
    the main thread): the trace is closed all the same, and nothing in it is lost."""
    script = tmp_path / "elsewhere.py"
    script.write_text(STOPPED_ELSEWHERE_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "T")], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "True 1\n", done.stderr[-3000:]
    trace = load_trace(tmp_path / "T")
    assert trace.complete and [r.name for r in trace.records] == ["InferType"]
    assert trace.records[0].after is not None and trace.records[0].error is None
