"""The loop nests of the kernels of a CUDA build, and what the GPU passes did to them: the
Llama-shaped decoder of the demo through ``tvm.compile`` for sm_90 (dlight's default schedules,
then the s_tir and tirx lowering) under ``RelayVizTrace(tir=True)``.

The kernel read is ``fused_matmul_add2``: the attention's output projection and its residual
add, fused by FuseOps and FuseTIR. Skipped, with the reason, where nvcc is missing.
"""

from __future__ import annotations

import re
from typing import Any, List

import pytest
from rich.console import Console

from kerneltraces import FUSED_MATMUL, CudaTrace, cuda_llama
from relayviz_instrument.analysis.loop_nest import Loop, read_loop_nest
from relayviz_instrument.store import PassRecord, load_trace
from relayviz_instrument.views.kernel_text import kernel_change_text
from relayviz_instrument.views.kernel_text import LoopNestView
from relayviz_instrument.views.report import report_trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cuda(tmp_path_factory: pytest.TempPathFactory) -> CudaTrace:
    return cuda_llama(tmp_path_factory)


def render(renderable: Any, width: int = 120) -> str:
    console = Console(width=width, color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


def the_event(records: List[PassRecord], name: str) -> PassRecord:
    [found] = [r for r in records if r.name == name]
    return found


FUSED_BY_FUSE_TIR = """\
alloc matmul_intermediate float32[1, 16, 64] global
for i0 in 0..1
  for i1 in 0..16
    for i2 in 0..64
      for k in 0..64
        block matmul [v_i0 1, v_i1 16, v_i2 64, v_k 64 reduce]  writes matmul_intermediate[v_i0, v_i1, v_i2]  reads
        reshape5[v_i0, v_i1, v_k], param_0[v_k, v_i2]
for ax0 in 0..1
  for ax1 in 0..16
    for ax2 in 0..64
      block T_add [v_ax0 1, v_ax1 16, v_ax2 64]  writes T_add_intermediate[v_ax0, v_ax1, v_ax2]  reads reshape1[v_ax0,
      v_ax1, v_ax2], matmul_intermediate[v_ax0, v_ax1, v_ax2]
"""

# dlight's GEMM rule: a 32x64 tile per block of 16x8 threads, each thread a 4x4 sub-tile (the
# last axis two vectors of two); k in steps of 16 through shared memory, the sums in local
# memory, the add fused into the write-back.
SCHEDULED_BY_DLIGHT = """\
alloc matmul_intermediate_reindex_pad_local float32[1, 32, 64] local
alloc reshape5_reindex_pad_shared float32[1, 32, 64] shared
alloc param_0_reindex_shared float32[1, 64, 64] shared
for ax0_ax2_0_fused in 0..1 blockIdx.y
  for ax1_0 in 0..1 blockIdx.x
    for ax2_1 in 0..1 vthread.y
      for ax1_1 in 0..1 vthread.x
        for ax2_2 in 0..16 threadIdx.y
          for ax1_2 in 0..8 threadIdx.x
            for ax1_3_init in 0..4
              for ax2_3_0_init in 0..2
                for ax2_3_1_init in 0..2 vectorized
                  block matmul_init [v0 1, v1 32, v2 64]  writes matmul_intermediate_reindex_pad_local[0, v1, v2]
            for ax3_0 in 0..4
              for ax0_ax1_ax2_fused_0 in 0..16 threadIdx.y
                for ax0_ax1_ax2_fused_1 in 0..8 threadIdx.x
                  for ax0_ax1_ax2_fused_2 in 0..2
                    for ax0_ax1_ax2_fused_3 in 0..2 vectorized
                      block reshape5_reindex_pad_shared [v0 1, v1 32, v2 64]  writes reshape5_reindex_pad_shared[v0, v1,
                      v2]  reads reshape5[v0, v1, v2]
              for ax0_ax1_ax2_fused_0 in 0..16 threadIdx.y
                for ax0_ax1_ax2_fused_1 in 0..8 threadIdx.x
                  for ax0_ax1_ax2_fused_2 in 0..4
                    for ax0_ax1_ax2_fused_3 in 0..2 vectorized
                      block param_0_reindex_shared [v0 1, v1 64, v2 64]  writes param_0_reindex_shared[v0, v1, v2]
                      reads param_0[v2, v1]
              for ax3_1 in 0..16
                for ax1_3 in 0..4
                  for ax2_3_0 in 0..2
                    for ax2_3_1 in 0..2 vectorized
                      block matmul_update [v0 1, v1 32, v2 64, v3 64 reduce]  writes
                      matmul_intermediate_reindex_pad_local[0, v1, v2]  reads matmul_intermediate_reindex_pad_local[0,
                      v1, v2], reshape5_reindex_pad_shared[0, v1, v3], param_0_reindex_shared[0, v2, v3]
            for ax0 in 0..1
              for ax1 in 0..4
                for ax2_0 in 0..2
                  for ax2_1 in 0..2 vectorized
                    block matmul_intermediate_reindex_pad_local [v0 1, v1 32, v2 64]  writes T_add_intermediate[0, v1,
                    v2]  reads reshape1[0, v1, v2], matmul_intermediate_reindex_pad_local[v0, v1, v2]  if ax1_2 * 4 +
                    ax1 < 16
"""


def test_the_fused_matmul_before_the_default_schedule_is_fuse_tirs_serial_loops(cuda: CudaTrace) -> None:
    trace = load_trace(cuda.path)
    schedule = the_event(trace.records, "ApplyDefaultSchedule")
    assert schedule.before is not None
    nest = read_loop_nest(trace.snapshot(schedule.before), FUSED_MATMUL)
    assert nest is not None
    assert render(LoopNestView(nest)) == FUSED_BY_FUSE_TIR
    assert nest.launch() == {}


def test_the_fused_matmul_after_the_default_schedule_is_bound_to_threads_through_shared_memory(
        cuda: CudaTrace) -> None:
    trace = load_trace(cuda.path)
    schedule = the_event(trace.records, "ApplyDefaultSchedule")
    assert schedule.changed and schedule.after is not None  # dlight schedules the module in place
    nest = read_loop_nest(trace.snapshot(schedule.after), FUSED_MATMUL)
    assert nest is not None
    assert render(LoopNestView(nest)) == SCHEDULED_BY_DLIGHT
    assert nest.launch() == {"blockIdx.y": 1, "blockIdx.x": 1, "vthread.y": 1, "vthread.x": 1, "threadIdx.y": 16,
                             "threadIdx.x": 8}


def test_the_report_of_the_default_schedule_says_it_in_a_schedules_words(cuda: CudaTrace) -> None:
    report = report_trace(load_trace(cuda.path), "^ApplyDefaultSchedule$")
    [change] = [k for p in report.passes for k in p.kernels if k.kernel == FUSED_MATMUL]
    assert render(kernel_change_text(change), width=1000) == (
        "scheduled @fused_matmul_add2: i1 split 32 (was 16) → blockIdx.x(1) × vthread.x(1) × threadIdx.x(8) × 4; "
        "i2 split 64 → vthread.y(1) × threadIdx.y(16) × 2 × 2 vectorized; k split 64 → 4 × 16; "
        "+blocks matmul_init, reshape5_reindex_pad_shared, param_0_reindex_shared, "
        "matmul_intermediate_reindex_pad_local; −block T_add (merged into matmul_intermediate_reindex_pad_local); "
        "+local matmul_intermediate_reindex_pad_local float32[1, 32, 64]; "
        "+shared reshape5_reindex_pad_shared float32[1, 32, 64]; +shared param_0_reindex_shared float32[1, 64, 64]; "
        "−global matmul_intermediate\n")


def test_split_host_device_names_the_device_kernel_and_its_launch(cuda: CudaTrace) -> None:
    trace = load_trace(cuda.path)
    report = report_trace(trace, "SplitHostDevice")
    [split] = report.passes
    [change] = [k for k in split.kernels if k.kernel == FUSED_MATMUL]
    assert render(kernel_change_text(change), width=1000) == (
        "split @fused_matmul_add2 into host @fused_matmul_add2 and device kernel @fused_matmul_add2_kernel "
        "launched with grid (1, 1) and block (8, 16), 6,912 bytes of shared memory\n")
    # Every kernel of the build is split, each line in the pass's report above its hunks.
    assert sorted(k.kernel for k in split.kernels) == sorted(
        n for n, i in trace.snapshot(split.record.before)["functions"].items())
    text = render(report, width=200)
    assert text.index("├── split @fused_matmul_add2 into host") < text.index("├── added")


def test_the_launch_is_what_the_host_passes_to_the_kernel(cuda: CudaTrace) -> None:
    # TVM's own record of the launch, independent of the loop nests: the device kernel's
    # tirx.kernel_launch_params names the threads, the host's call_ffi_kernel passes their extents.
    trace = load_trace(cuda.path)
    [split] = report_trace(trace, "SplitHostDevice").passes
    [change] = [k for k in split.kernels if k.kernel == FUSED_MATMUL]
    doc = trace.snapshot(split.record.after)
    nodes = doc["nodes"]
    device = nodes[doc["functions"][FUSED_MATMUL + "_kernel"]]
    params = device["attrs"]["tirx.kernel_launch_params"]
    [call] = [n for n in nodes if n["node_kind"] == "Call" and nodes[n["op"]].get("name") == "tirx.call_ffi_kernel"
              and nodes[n["args"][0]].get("value") == FUSED_MATMUL + "_kernel"]
    passed = dict(zip(params, [nodes[a]["value"] for a in call["args"][-len(params):]]))
    [kernel] = change.to_json()["device_kernels"]
    assert kernel["grid"] == [passed.get("blockIdx.x", 1), passed.get("blockIdx.y", 1)]
    assert kernel["block"] == [passed.get("threadIdx.x", 1), passed.get("threadIdx.y", 1)]
    assert kernel["shared_bytes"] == 6912  # two tiles of float32: 32 x 18 and 64 x 18 (padded rows)


def test_the_device_kernel_holds_the_nest_and_its_host_launches_it(cuda: CudaTrace) -> None:
    trace = load_trace(cuda.path)
    [split] = report_trace(trace, "SplitHostDevice").passes  # the pipeline's (FoldConstant builds on the CPU)
    assert split.record.after is not None
    doc = trace.snapshot(split.record.after)
    host = read_loop_nest(doc, FUSED_MATMUL)
    device = read_loop_nest(doc, FUSED_MATMUL + "_kernel")
    assert host is not None and device is not None
    assert render(LoopNestView(host)) == "launch kernel @fused_matmul_add2_kernel\n"
    bound = [item for item in device.walk() if isinstance(item, Loop) and item.thread]
    assert [(b.thread, b.extent) for b in bound] == [("blockIdx.y", 1), ("blockIdx.x", 1), ("threadIdx.y", 16),
                                                     ("threadIdx.x", 8)]
    assert [(a.buffer, a.scope) for a in device.allocations()] == [
        ("matmul_intermediate_reindex_pad_local", "local"), ("reshape5_reindex_pad_shared", "shared"),
        ("param_0_reindex_shared", "shared")]


def test_a_reduction_lowered_across_threads_reads_as_such_in_report_and_diff(cuda: CudaTrace, capsys: Any) -> None:
    import json

    from relayviz_instrument.cli import main

    trace = load_trace(cuda.path)
    texts = {}
    for name in ("s_tir.LowerCrossThreadReduction", "s_tir.LowerThreadAllreduce"):
        [change] = report_trace(trace, f"^{re.escape(name)}$").passes
        assert main(["diff", str(cuda.path), "--pass", f"#{change.record.index}", "--json"]) == 1
        by_diff = {k["kernel"]: k["text"] for k in json.loads(capsys.readouterr().out)["kernels"]}
        assert by_diff == {k.kernel: k.text() for k in change.kernels}
        texts[name] = by_diff["rms_norm"]
    assert texts == {
        "s_tir.LowerCrossThreadReduction": "changed @rms_norm: +block T_multiply_red_write_back; "
                                           "+local cross_thread_T_multiply_red_shared float32[1]; "
                                           "+1 allreduce across threads",
        "s_tir.LowerThreadAllreduce": "changed @rms_norm: +shared red_result float32[1]; "
                                      "+shared red_buf_staging float32[2]; +local t0 float32[1]; "
                                      "+local mask uint32[1]; +local red_buf0 float32[1]; "
                                      "−local cross_thread_T_multiply_red_shared; +2 sync shared; "
                                      "allreduce across threads lowered (1)"}
