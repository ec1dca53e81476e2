"""Faults injected into traced compilations: the instrument never changes or breaks the build,
never loses what it flushed, and never leaves an event half-open without saying so.

Each fault that kills or limits the process runs in a child process (a script written to a
temporary directory); the parent reads the trace back as a user would, with ``load_trace``
and ``relayviz show``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Dict, List, Tuple

import orjson
import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning, load_trace, to_relayviz
from relayviz_instrument.capture.pass_frames import CUT_SHORT
from relayviz_instrument.errors import RelayVizTraceError

HOST = "llvm -mtriple=x86_64-linux-gnu"


def _manifest(path: Path) -> List[Dict]:
    return [orjson.loads(line) for line in (path / "manifest.jsonl").read_bytes().splitlines() if line.strip()]


def _begun_and_ended(path: Path) -> Tuple[set, set]:
    lines = _manifest(path)
    return ({line["index"] for line in lines if line["type"] == "begin"},
            {line["index"] for line in lines if line["type"] == "end"})


def _show(path: Path) -> str:
    """What `relayviz show` prints for the trace, run as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(path), "--all"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "child.py"
    path.write_text(textwrap.dedent("""
        import os, signal, sys, json, warnings
        # Ctrl-C as in a terminal, whatever the launcher left: a shell without job control starts
        # background jobs with SIGINT ignored, which their children inherit.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import numpy as np
        import tvm, tvm.relay.testing
        from tvm import relay
        from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning
        HOST = "llvm -mtriple=x86_64-linux-gnu"
        mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    """) + textwrap.dedent(body))
    return path


def _mlp_sequential():
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference(),
                                    relay.transform.FoldConstant(), relay.transform.FuseOps()])
    return mod, seq


# -- another instrument raising ---------------------------------------------------------------

class Raiser(tvm.instrument.PassInstrument):
    """Another user's instrument that raises in one callback for one pass."""

    def __init__(self, where: str, at: str) -> None:
        super().__init__()
        self.where, self.at = where, at

    def run_before_pass(self, mod, info):
        if self.where == "before" and info.name == self.at:
            raise RuntimeError(f"Raiser refuses {info.name}")

    def run_after_pass(self, mod, info):
        if self.where == "after" and info.name == self.at:
            raise RuntimeError(f"Raiser refuses {info.name}")


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("ours_first", [True, False], ids=["ours-first", "ours-last"])
def test_another_instrument_raising_leaves_a_consistent_trace(where, ours_first, tmp_path):
    mod, seq = _mlp_sequential()
    trace, raiser = RelayVizTrace(tmp_path / "t"), Raiser(where, "FoldConstant")
    with pytest.raises(RuntimeError) as caught:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace, raiser] if ours_first else [raiser, trace]):
            seq(mod)
    assert type(caught.value) is RuntimeError and str(caught.value) == "Raiser refuses FoldConstant"
    begun, ended = _begun_and_ended(tmp_path / "t")
    assert begun == ended and [line["type"] for line in _manifest(tmp_path / "t")].count("close") == 1
    loaded = load_trace(tmp_path / "t")
    assert loaded.complete and "FuseOps" not in {r.name for r in loaded.records}
    failed = [r for r in loaded.records if r.error is not None]
    # Our callback for FoldConstant ran (so the event began and is open) exactly when ours
    # comes before the raiser's before-callback, or after the raiser's after-callback.
    began_open = (where == "before") == ours_first
    assert [r.name for r in failed] == (["sequential", "FoldConstant"] if began_open else ["sequential"])
    for r in failed:
        assert r.error.startswith(f"raised by another pass instrument (Raiser.run_{where}_pass), not by the pass")
        assert r.replay is None  # the pass did not fail: nothing to replay
    assert [r.to_json() for r in loaded.records] == [r.to_json() for r in trace.records]


# -- Ctrl-C ----------------------------------------------------------------------------------

def test_ctrl_c_in_the_instrument_mid_build_stops_the_build_and_the_trace_names_the_running_pass(tmp_path):
    # The SIGINT arrives while the instrument's own code runs (its progress callback, after
    # FuseOps inside relay.build): TVM would drop a bare KeyboardInterrupt there.
    script = _script(tmp_path, f"""
        def progress(record):
            if record.name == "FuseOps":
                signal.raise_signal(signal.SIGINT)
        trace = RelayVizTrace({str(tmp_path / 't')!r}, progress=progress)
        try:
            with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
                relay.build(mod, target=HOST, params=params)
            print("BUILT")
        except KeyboardInterrupt as exc:
            print("INTERRUPTED", type(exc).__name__)
            sys.exit(130)
    """)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 130, done.stderr
    assert done.stdout.split() == ["INTERRUPTED", "CompilationInterrupted"]
    loaded = load_trace(tmp_path / "t")
    assert not loaded.complete
    fuse = next(r for r in loaded.records if r.name == "FuseOps")
    problem = next(p for p in loaded.problems if "interrupted" in p)
    running = loaded.records[int(problem.rsplit("(#", 1)[1].rstrip(")"))]
    assert running.index == fuse.parent and problem.endswith(f"during pass {running.name} (#{running.index})")
    begun, ended = _begun_and_ended(tmp_path / "t")
    assert begun == ended  # every event that began was ended on the way out
    shown = _show(tmp_path / "t")
    assert "incomplete: the compilation was interrupted (CompilationInterrupted) during pass" in shown
    assert f"pass {running.name} (#{running.index}) failed: CompilationInterrupted" in shown


def _interrupt_when(child: "subprocess.Popen[str]", manifest: Path, lines: int, sig: int) -> None:
    """Send ``sig`` to ``child`` once its manifest holds ``lines`` lines (mid-build)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and child.poll() is None:
        if manifest.is_file() and manifest.read_bytes().count(b"\n") >= lines:
            child.send_signal(sig)
            return
        time.sleep(0.005)
    pytest.fail("the child never got that far")


_BUILD_UNTIL_SIGNALLED = """
    trace = RelayVizTrace(sys.argv[1])
    try:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            relay.build(mod, target=HOST, params=params)
        print("BUILT")
    except KeyboardInterrupt:
        print("INTERRUPTED")
        sys.exit(130)
"""


@pytest.mark.parametrize("lines", [60, 250, 500])
def test_a_real_sigint_mid_build_leaves_a_readable_trace_whatever_tvm_does(lines, tmp_path):
    # Where the signal lands is up to the timing. In the instrument, the build stops with a
    # KeyboardInterrupt. In one of TVM's own Python callbacks (operator strategies, compute
    # functions), TVM drops it: the build goes on, or fails with an unrelated error where
    # the dropped callback returned nothing, or TVM crashes (hhb-tvm 0.16 segfaults on
    # Ctrl-C during relay.build with no instrument at all). Whatever happens, the trace is
    # read back whole and says what was running.
    script = _script(tmp_path, _BUILD_UNTIL_SIGNALLED)
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path / "t")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    _interrupt_when(child, tmp_path / "t" / "manifest.jsonl", lines, signal.SIGINT)
    out, err = child.communicate(timeout=300)
    loaded = load_trace(tmp_path / "t")
    begun, ended = _begun_and_ended(tmp_path / "t")
    said = f"exit {child.returncode}; stdout {out!r}; trace problems {loaded.problems}; stderr ends {err[-3000:]}"
    if child.returncode == 0:  # TVM dropped the interrupt and built
        assert out.strip() == "BUILT" and begun == ended, said
        # Complete, unless TVM dropped it in its own code that calls one of our callbacks (it
        # converts the arguments in Python): that callback never ran, and the trace says so.
        cut = [CUT_SHORT.format(callback=c) for c in ("run_before_pass", "run_after_pass")]
        assert loaded.complete or all(any(c in p for c in cut) for p in loaded.problems), said
    elif child.returncode == 130:  # it landed in the instrument: carried through TVM
        assert out.strip() == "INTERRUPTED" and begun == ended, said
        assert not loaded.complete and any("interrupted" in p for p in loaded.problems), said
    elif child.returncode == 1:  # TVM dropped it where a value was due, and failed on that
        assert "Traceback" in err and begun == ended and loaded.failed is not None, said
    else:  # TVM crashed: what was flushed is read, and the running pass named
        assert child.returncode < 0, said
        assert not loaded.complete and loaded.failed is not None and begun - ended, said
    assert "pass events" in _show(tmp_path / "t")


# -- SIGKILL ---------------------------------------------------------------------------------

def test_sigkill_inside_a_pass_of_relay_build_keeps_everything_flushed(tmp_path):
    script = _script(tmp_path, f"""
        class Killer(tvm.instrument.PassInstrument):
            def run_before_pass(self, mod, info):
                if info.name == "FuseOps":
                    os.kill(os.getpid(), signal.SIGKILL)
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace({str(tmp_path / 't')!r}), Killer()]):
            relay.build(mod, target=HOST, params=params)
    """)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL
    loaded = load_trace(tmp_path / "t")
    assert not loaded.complete and loaded.failed.name == "FuseOps"
    assert loaded.failed.error == "did not finish: the process stopped during this pass"
    # Every event before it was flushed, with its snapshots.
    before = [r for r in loaded.records if r.index < loaded.failed.index]
    assert len(before) > 30 and all(r.error is None or r.index in _ancestors(loaded, loaded.failed) for r in before)
    assert loaded.snapshot(loaded.failed.before)["ir"] == "relay"
    shown = _show(tmp_path / "t")
    assert "incomplete: the trace has no closing record" in shown
    assert "pass FuseOps (#" in shown and ") was running when the process stopped" in shown


def _ancestors(trace, record) -> set:
    out, parent = set(), record.parent
    while parent is not None:
        out.add(parent)
        parent = trace.records[parent].parent
    return out


def test_sigkill_from_outside_at_any_point_leaves_a_readable_trace(tmp_path):
    script = _script(tmp_path, _BUILD_UNTIL_SIGNALLED)
    for lines in (40, 300):
        out = tmp_path / f"t{lines}"
        child = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        _interrupt_when(child, out / "manifest.jsonl", lines, signal.SIGKILL)
        child.communicate(timeout=300)
        assert child.returncode == -signal.SIGKILL
        loaded = load_trace(out)
        assert not loaded.complete and len(loaded.records) >= lines // 2 - 1
        running = [r for r in loaded.records if r.error == "did not finish: the process stopped during this pass"]
        assert running and loaded.failed is running[-1]
        assert "incomplete" in _show(out)


# -- the disk filling up ---------------------------------------------------------------------

def test_a_full_disk_mid_build_is_one_warning_an_identical_build_and_an_incomplete_trace(tmp_path):
    # No file may grow past 64 KiB while relay.build runs: the manifest (or a snapshot) hits
    # the limit part way through. Root ignores file modes, so the limit is how the disk fills.
    script = _script(tmp_path, f"""
        import re, resource
        def artifacts(lib):
            # The LLVM IR names its alias-analysis nodes by memory addresses: masked.
            return [lib.get_graph_json(), relay.save_param_dict(lib.get_params()).hex(),
                    re.sub(r"0x[0-9a-f]+", "0x?", lib.get_lib().get_source("ll"))]
        with tvm.transform.PassContext(opt_level=3):
            plain = artifacts(relay.build(mod, target=HOST, params=params))
        trace = RelayVizTrace({str(tmp_path / 't')!r})
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
                traced = artifacts(relay.build(mod, target=HOST, params=params))
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        ours = [str(w.message) for w in caught if issubclass(w.category, TraceIncompleteWarning)]
        print(json.dumps({{"identical": traced == plain, "warnings": ours, "records": len(trace.records)}}))
    """)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["identical"] is True
    assert len(result["warnings"]) == 1 and "File too large" in result["warnings"][0]
    loaded = load_trace(tmp_path / "t")
    assert not loaded.complete
    # The manifest is the file that filled: its last line is cut where the limit fell.
    assert any("cut short (the disk filled while it was written" in p for p in loaded.problems)
    assert (tmp_path / "t" / "manifest.jsonl").stat().st_size == 64 * 1024
    assert 0 < len(loaded.records) < result["records"] + 1
    assert all(f.stat().st_size <= 64 * 1024 for f in (tmp_path / "t").rglob("*") if f.is_file())
    shown = _show(tmp_path / "t")
    assert "incomplete" in shown and "the disk filled" in shown
    # The build finished: no pass failed, and the process did not stop (before, both were said).
    assert loaded.failed is None and "failed" not in shown and "the process stopped" not in shown


# -- two compilations at once, nested contexts ---------------------------------------------------

def _build_traced(name: str, workload: Tuple, out: Path, results: Dict[str, Tuple[str, List[str]]]) -> None:
    mod, params = workload
    trace = RelayVizTrace(out)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        lib = relay.build(mod, target=HOST, params=params)
    trace.record_graph(lib)
    results[name] = (lib.get_graph_json(), [r.to_json() for r in load_trace(out).records], trace.complete)


def _comparable(records: List[Dict]) -> List[Tuple]:
    return [(r["name"], r["depth"], r["parent"], r["changed"], r["before"], r["after"]) for r in records]


def test_two_compilations_traced_at_once_in_two_threads_give_two_correct_traces(tmp_path):
    # One workload per model for both runs: get_workload draws its weights from numpy's global
    # random state, and the snapshots hold the weights' digests.
    workloads = {name: getattr(tvm.relay.testing, name).get_workload(batch_size=1) for name in ("mlp", "dqn")}
    alone: Dict = {}
    for name in ("mlp", "dqn"):
        _build_traced(name, workloads[name], tmp_path / f"{name}-alone", alone)
    together: Dict = {}
    threads = [threading.Thread(target=_build_traced, args=(name, workloads[name], tmp_path / name, together))
               for name in ("mlp", "dqn")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("mlp", "dqn"):
        graph, records, complete = together[name]
        assert complete and graph == alone[name][0]
        assert _comparable(records) == _comparable(alone[name][1])


def test_nested_pass_contexts_each_give_their_own_trace(tmp_path):
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    outer_seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference()],
                                         name="outer_passes")
    inner_seq = tvm.transform.Sequential([relay.transform.FoldConstant(), relay.transform.FuseOps()],
                                         name="inner_passes")
    outer, inner = RelayVizTrace(tmp_path / "outer"), RelayVizTrace(tmp_path / "inner")
    with tvm.transform.PassContext(opt_level=3, instruments=[outer]):
        simplified = outer_seq(mod)
        with tvm.transform.PassContext(opt_level=3, instruments=[inner]):
            fused = inner_seq(simplified)
        again = relay.transform.InferType()(fused)
    for trace, names, first, last in ((outer, {"outer_passes", "InferType", "SimplifyInference"}, mod, again),
                                      (inner, {"inner_passes", "FoldConstant", "FuseOps", "InferType"},
                                       simplified, fused)):
        loaded = load_trace(trace.path)
        assert loaded.complete and {r.name for r in loaded.records} == names
        assert loaded.snapshot(loaded.records[0].before) == to_relayviz(first)
        last_after = [r for r in loaded.records if r.depth == 1][-1].after
        assert loaded.snapshot(last_after) == to_relayviz(last)
    # One instrument given to both contexts records both as one trace.
    both = RelayVizTrace(tmp_path / "both")
    with tvm.transform.PassContext(opt_level=3, instruments=[both]):
        simplified = outer_seq(mod)
        with tvm.transform.PassContext(opt_level=3, instruments=[both]):
            inner_seq(simplified)
    loaded = load_trace(tmp_path / "both")
    assert loaded.complete and [r.name for r in loaded.records if r.depth == 1] == ["outer_passes", "inner_passes"]


# -- where the trace goes ----------------------------------------------------------------------

def test_a_directory_already_holding_a_trace_is_refused_and_left_as_it_was(tmp_path):
    mod, seq = _mlp_sequential()
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "t")]):
        expected = seq(mod)
    before = {p: p.read_bytes() for p in (tmp_path / "t").rglob("*") if p.is_file()}
    second = RelayVizTrace(tmp_path / "t")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tvm.transform.PassContext(opt_level=3, instruments=[second]):
            out = seq(mod)
    ours = [w for w in caught if issubclass(w.category, TraceIncompleteWarning)]
    assert len(ours) == 1 and "the trace directory is not empty; pass a new directory" in str(ours[0].message)
    assert tvm.ir.structural_equal(out, expected) and not second.complete
    assert {p: p.read_bytes() for p in (tmp_path / "t").rglob("*") if p.is_file()} == before
    with pytest.raises(RelayVizTraceError, match="not empty"):
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "t", strict=True)]):
            seq(mod)


def test_processes_racing_for_one_directory_never_interleave(tmp_path):
    # A real barrier: each child makes its trace, reports ready (a file named by its pid), and
    # waits for the release; the parent releases them only once all four are waiting, so all
    # four enter the pass context (and create the directory) together however slow the machine.
    script = _script(tmp_path, """
        import time
        from pathlib import Path
        ready, go = Path(sys.argv[2]), Path(sys.argv[3])
        trace = RelayVizTrace(sys.argv[1])
        seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference(),
                                        relay.transform.FoldConstant(), relay.transform.FuseOps()])
        released_before_ready = go.exists()
        (ready / str(os.getpid())).write_text("")
        while not go.exists():
            time.sleep(0.001)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
                seq(mod)
        print(json.dumps({"complete": trace.complete, "records": len(trace.records),
                          "waited": not released_before_ready, "warnings": [str(w.message) for w in caught]}))
    """)
    ready, go = tmp_path / "ready", tmp_path / "go"
    ready.mkdir()
    children = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "t"), str(ready), str(go)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    deadline = time.monotonic() + 240
    while len(list(ready.iterdir())) < len(children):
        died = [child.returncode for child in children if child.poll() is not None]
        assert not died, f"a child exited before the barrier: {died}"
        assert time.monotonic() < deadline, "the children never all reached the barrier"
        time.sleep(0.01)
    # Every child is waiting, and none has touched the contested directory yet.
    assert sorted(int(p.name) for p in ready.iterdir()) == sorted(child.pid for child in children)
    assert not (tmp_path / "t").exists()
    go.write_text("")
    results = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        results.append(json.loads(out.splitlines()[-1]))
    assert all(r["waited"] for r in results)
    winners = [r for r in results if r["complete"]]
    losers = [r for r in results if not r["complete"]]
    assert len(winners) == 1 and len(losers) == 3
    for loser in losers:
        assert len(loser["warnings"]) == 1
        assert "not empty" in loser["warnings"][0] or "another trace is being written" in loser["warnings"][0]
    lines = _manifest(tmp_path / "t")
    assert [line["type"] for line in lines].count("header") == 1
    loaded = load_trace(tmp_path / "t")
    assert loaded.complete and len(loaded.records) == winners[0]["records"]
