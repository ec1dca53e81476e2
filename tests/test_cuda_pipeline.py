"""An MLC-LLM-shaped decoder through ``tvm.compile``'s CUDA pipeline (dlight's default schedules,
the host/device split, the CUDA code generator), traced: the build is what an untraced one
builds, and the trace holds the GPU passes and, with ``tir=True``, the kernels they make.

No GPU is needed: the compile runs on the CPU and the executable keeps the kernels' CUDA source.
The compiles are the session's (``cuda_decoder_trace``, ``cuda_decoder_trace_tir``), which skip,
saying why, where CUDA cannot be compiled (a Relay-era TVM, one without CUDA code generation).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any, Dict, Iterator, List, Set

import pytest

from relayviz_instrument import load_trace
from relayviz_instrument.cli import main
from relayviz_instrument.demo.cuda import cuda_target, cuda_unavailable
from relayviz_instrument.format.irs import TIR


def _modules(mod: Any) -> Iterator[Any]:
    """A runtime module and every module it imports, depth first."""
    yield mod
    for imported in mod.imports:
        yield from _modules(imported)


def _cuda_sources(executable: Any) -> List[str]:
    """The CUDA source of every device module of a Relax VM executable."""
    return [m.inspect_source() for m in _modules(executable.mod) if m.kind == "cuda"]


def _kernels(source: str) -> Set[str]:
    """The names of the ``__global__`` functions (the kernels) a CUDA source defines."""
    return set(re.findall(r"__global__ void(?: __launch_bounds__\(\d+\))? (\w+)\(", source))


@pytest.fixture(scope="module")
def cuda_decoder_plain(cuda_decoder: Any) -> Any:
    """The same compile as ``cuda_decoder_trace``, with no instrument."""
    from relayviz_instrument.capture import compile_relax

    return compile_relax(cuda_decoder.clone(), target=cuda_target(), pipeline=None)


def test_a_traced_cuda_compile_builds_what_an_untraced_one_builds(cuda_decoder_plain, cuda_decoder_trace,
                                                                  cuda_decoder_trace_tir) -> None:
    (plain,) = _cuda_sources(cuda_decoder_plain)
    assert _kernels(plain) >= {"batch_decode_paged_kv_kernel", "batch_prefill_paged_kv_kernel"}
    for built, _ in (cuda_decoder_trace, cuda_decoder_trace_tir):
        assert _cuda_sources(built) == [plain]
        assert built.as_text() == cuda_decoder_plain.as_text()  # the VM's functions, the same bytecode


def test_the_trace_of_a_cuda_compile_is_complete_and_holds_the_gpu_passes(cuda_decoder_trace) -> None:
    built, traced = cuda_decoder_trace
    trace = load_trace(traced.path)
    assert trace.complete and not trace.problems
    names = [r.name for r in trace.records]
    for gpu_pass in ("ApplyDefaultSchedule", "s_tir.LowerThreadAllreduce", "s_tir.LowerCrossThreadReduction",
                     "tirx.SplitHostDevice", "tirx.LowerWarpMemory"):
        assert gpu_pass in names
    assert names[-1] == "VMCodeGen"
    # The executable's event: after the last Relax module, and its document names the VM's functions.
    artifact = trace.records[-1]
    last_relax = [r for r in trace.records if r.ir == "relax" and r.after is not None][-1]
    assert artifact.before == last_relax.after
    functions = set(trace.snapshot(artifact.after)["functions"])
    assert functions >= {"embed", "prefill", "decode", "create_paged_kv_cache"}


def _tir_snapshots(trace: Any) -> Iterator[Any]:
    for record in trace.records:
        if record.ir == TIR and record.after is not None:
            yield record, trace.snapshot(record.after)


def test_tir_snapshots_of_a_cuda_compile_hold_thread_bound_loops(cuda_decoder_trace_tir) -> None:
    _, traced = cuda_decoder_trace_tir
    trace = load_trace(traced.path)
    assert trace.complete
    threads: Dict[str, Set[str]] = {}
    for record, doc in _tir_snapshots(trace):
        bound = {n["thread"] for n in doc["nodes"] if n["node_kind"] == "For" and n.get("thread")}
        if bound:
            threads.setdefault(record.name, set()).update(bound)
    assert threads, "no TIR snapshot holds a thread-bound loop"
    assert set.union(*threads.values()) >= {"threadIdx.x", "blockIdx.x"}
    # The loops are bound before the build's TIR pipeline starts (by dlight's schedules, in Relax):
    # its first pass, which binds the target, already has them.
    (first,) = [r for r in trace.records if r.name == "tirx.BindTarget" and r.depth == 1]
    doc = trace.snapshot(first.after)
    assert {"threadIdx.x", "blockIdx.x"} <= {n.get("thread") for n in doc["nodes"] if n["node_kind"] == "For"}


def test_split_host_device_makes_a_kernel_per_function_that_the_cuda_source_defines(cuda_decoder_trace_tir) -> None:
    built, traced = cuda_decoder_trace_tir
    trace = load_trace(traced.path)
    splits = [r for r in trace.records if r.name == "tirx.SplitHostDevice" and r.changed]
    assert splits
    split = splits[-1]  # the build's (FoldConstant's nested builds come first)
    before, after = trace.snapshot(split.before), trace.snapshot(split.after)
    made = set(after["functions"]) - set(before["functions"])
    assert "batch_decode_paged_kv_kernel" in made
    for kernel in made:
        assert kernel.endswith("_kernel") and kernel[:-len("_kernel")] in before["functions"]
        node = after["nodes"][after["functions"][kernel]]
        assert node["node_kind"] == "PrimFunc" and '"kind":"cuda"' in node["attrs"]["target"]
    (source,) = _cuda_sources(built)
    assert made <= _kernels(source)


def test_demo_traces_a_cuda_compile_and_prints_the_table(cuda_decoder, tmp_path, capsys) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--relax", "--target", "cuda", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    trace = load_trace(out)
    assert trace.complete
    assert f"trace {out}" in printed and f"relayviz report {out}" in printed
    for name in ("LegalizeOps", "FuseTIR", "CallTIRRewrite", "VMCodeGen"):
        assert re.search(rf"^\s*\d+\s+{name}\b", printed, re.MULTILINE), name
    assert set(trace.snapshot(trace.records[-1].after)["functions"]) >= {"prefill", "decode"}
    # relax.build handing the PrimFuncs to the TIR build is the build's own step: nothing unexplained.
    assert "note:" not in printed and "(outside any pass)" not in printed


def test_demo_for_cuda_where_it_cannot_compile_exits_2_saying_why() -> None:
    why = cuda_unavailable()
    if why is None:
        pytest.skip("CUDA compiles run on this TVM: the refusal is checked on a TVM that cannot (the .venv leg)")
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "demo", "--relax", "--target", "cuda"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot compile for CUDA here" in lines[0] and why in lines[0]


# -- dlight's ApplyDefaultSchedule edits the module in place: recorded as its own change ---------------

def _scheduled(doc: Dict[str, Any]) -> Set[str]:
    """The PrimFuncs of a snapshot that carry ``tirx.is_scheduled`` (read from the document)."""
    found = set()
    for name, index in (doc.get("functions") or {}).items():
        node = doc["nodes"][index]
        if node["node_kind"] == "PrimFunc" and (node.get("attrs") or {}).get("tirx.is_scheduled"):
            found.add(name)
    return found


def _report(path: Any, *args: str, capsys: Any) -> Dict[str, Any]:
    assert main(["report", str(path), *args, "--json"]) == 0
    import json

    return json.loads(capsys.readouterr().out)


def test_apply_default_schedule_is_recorded_with_every_primfunc_it_scheduled(cuda_decoder_trace, capsys) -> None:
    _, traced = cuda_decoder_trace
    trace = load_trace(traced.path)
    (schedule,) = [r for r in trace.records if r.name == "ApplyDefaultSchedule"]
    assert schedule.changed is True and schedule.before != schedule.after
    before, after = trace.snapshot(schedule.before), trace.snapshot(schedule.after)
    scheduled = _scheduled(after) - _scheduled(before)
    assert len(scheduled) > 10 and "batch_decode_paged_kv" not in scheduled  # the KV cache's kernels come scheduled
    (shown,) = _report(traced.path, "--pass", "^ApplyDefaultSchedule$", capsys=capsys)["passes"]
    named = {c["detail"].lstrip("@") for c in shown["changed"] if "attrs.tirx.is_scheduled" in c["fields"]}
    assert named == scheduled
    assert main(["report", str(traced.path), "--pass", "^ApplyDefaultSchedule$"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(f"@{name}" in text for name in scheduled)  # every one of them named in the terminal too
    # No other pass's report holds dlight's work (before: RewriteDataflowReshape's, the next pass that
    # changed the module); with --all, the Sequentials around it hold it in their totals, and only they.
    holding = {p["index"] for p in _report(traced.path, capsys=capsys)["passes"]
               if any("attrs.tirx.is_scheduled" in c["fields"] for c in p["changed"])}
    assert holding == {schedule.index}
    around, parent = set(), schedule.parent
    while parent is not None:
        around.add(parent)
        parent = trace.records[parent].parent
    holding_all = {p["index"] for p in _report(traced.path, "--all", capsys=capsys)["passes"]
                   if any("attrs.tirx.is_scheduled" in c["fields"] for c in p["changed"])}
    assert holding_all - around == {schedule.index}


def test_with_tir_the_schedule_pass_holds_the_thread_bindings(cuda_decoder_trace_tir, capsys) -> None:
    _, traced = cuda_decoder_trace_tir
    trace = load_trace(traced.path)
    (schedule,) = [r for r in trace.records if r.name == "ApplyDefaultSchedule"]
    assert schedule.changed is True
    (shown,) = _report(traced.path, "--pass", "^ApplyDefaultSchedule$", capsys=capsys)["passes"]
    bound = {c["fields"]["thread"][1] for c in shown["changed"] if "thread" in c["fields"]} | {
        a["detail"].rsplit(" ", 1)[-1] for a in shown["added"] if a["node"] == "For" and "Idx" in a.get("detail", "")}
    assert {"threadIdx.x", "blockIdx.x"} <= bound, bound
    # The passes after it receive the scheduled loops; none of them binds them again.
    later = [p for p in _report(traced.path, "--all", capsys=capsys)["passes"] if p["index"] > schedule.index
             and trace.records[p["index"]].ir == "relax"]
    assert not any(a["node"] == "For" and "threadIdx" in a.get("detail", "") for p in later for a in p["added"])


@pytest.mark.parametrize("tir", [False, True], ids=["default", "tir"])
def test_show_of_a_cuda_trace_leaves_nothing_unexplained(tir, cuda_decoder_trace, cuda_decoder_trace_tir,
                                                         capsys) -> None:
    _, traced = cuda_decoder_trace_tir if tir else cuda_decoder_trace
    assert main(["show", str(traced.path)]) == 0
    printed = capsys.readouterr().out
    assert "note:" not in printed and "(outside any pass)" not in printed
    assert " ApplyDefaultSchedule " in printed  # a pipeline pass that changed the module: a row
    if tir:
        assert "(step of relax.build: kept " in " ".join(printed.split())
