"""A schedule read back from TIR documents: a matmul of ``te.create_prim_func`` scheduled with
TVM's own schedule primitives (fuse, split, bind, unroll, cache_read, compute_at), serialized
before and after, its loop nests and the change between them in a schedule's words. Runs on
both TVMs (``tvm.tir.Schedule`` of TVM 0.16, ``tvm.s_tir.Schedule`` of 0.2x)."""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest

from rich.console import Console

from relayviz_instrument import to_relayviz
from relayviz_instrument.analysis.loop_nest import loop_nests
from relayviz_instrument.analysis.schedule_changes import SCHEDULED, kernel_changes
from relayviz_instrument.views.kernel_text import LoopNestView


def render(renderable: Any, width: int = 100) -> str:
    console = Console(width=width, color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


def scheduled_matmul() -> Tuple[Any, Any]:
    """``(module, schedule)``: C[128, 64] = A[128, 256] @ B[256, 64], its i and j fused and split
    over 64 blocks of 128 threads, k split by 8 and the inner loop unrolled, A's rows staged
    in shared memory at each step of k."""
    import tvm
    from tvm import te

    schedule_class = getattr(getattr(tvm, "s_tir", None), "Schedule", None) or tvm.tir.Schedule
    a, b = te.placeholder((128, 256), name="A"), te.placeholder((256, 64), name="B")
    k = te.reduce_axis((0, 256), name="k")
    c = te.compute((128, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"mm": te.create_prim_func([a, b, c]).with_attr("global_symbol", "mm")})
    sch = schedule_class(mod)
    sch.work_on("mm")
    block = sch.get_sblock("C") if hasattr(sch, "get_sblock") else sch.get_block("C")
    i, j, kk = sch.get_loops(block)
    bx, tx = sch.split(sch.fuse(i, j), factors=[None, 128])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    ko, ki = sch.split(kk, factors=[None, 8])
    sch.unroll(ki)
    sch.compute_at(sch.cache_read(block, 0, "shared"), ko)
    return mod, sch


def test_a_scheduled_matmul_reads_as_fused_split_bound_and_unrolled_loops() -> None:
    mod, sch = scheduled_matmul()
    before, after = loop_nests(to_relayviz(mod)), loop_nests(to_relayviz(sch.mod))
    assert render(LoopNestView(before["mm"])) == """\
for i in 0..128
  for j in 0..64
    for k in 0..256
      block C [v_i 128, v_j 64, v_k 256 reduce]  writes C[v_i, v_j]  reads A[v_i, v_k], B[v_k, v_j]
"""
    assert render(LoopNestView(after["mm"])) == """\
alloc A_shared float32[128, 256] shared
for i_j_fused_0 in 0..64 blockIdx.x
  for i_j_fused_1 in 0..128 threadIdx.x
    for k_0 in 0..32
      for ax0 in 0..2
        for ax1 in 0..8
          block A_shared [v0 128, v1 256]  writes A_shared[v0, v1]  reads A[v0, v1]
      for k_1 in 0..8 unrolled
        block C [v_i 128, v_j 64, v_k 256 reduce]  writes C[v_i, v_j]  reads A_shared[v_i, v_k],
        B[v_k, v_j]
"""
    [change] = kernel_changes(before, after)
    assert change.verb == SCHEDULED
    assert change.text() == ("scheduled @mm: i*j fused split 8192 → blockIdx.x(64) × threadIdx.x(128); "
                             "k split 256 → 32 × 8 unrolled; +block A_shared; +shared A_shared float32[128, 256]")
    assert after["mm"].launch() == {"blockIdx.x": 64, "threadIdx.x": 128}


def test_an_unchanged_kernel_has_no_change_and_the_json_keeps_every_item() -> None:
    mod, sch = scheduled_matmul()
    after = loop_nests(to_relayviz(sch.mod))
    assert kernel_changes(after, loop_nests(to_relayviz(sch.mod))) == []
    shown = LoopNestView(after["mm"]).to_json()
    assert shown["kernel"] == "mm"
    assert [line[2] for line in shown["lines"]] == ["alloc", "bound", "bound", "loop", "loop", "loop", "block",
                                                    "loop", "block"]
    [alloc, outer] = shown["items"]
    assert alloc == {"item": "alloc", "buffer": "A_shared", "dtype": "float32", "shape": [128, 256],
                     "scope": "shared"}
    assert outer["thread"] == "blockIdx.x" and outer["kind"] == "thread_binding"


def test_a_document_nesting_loops_beyond_any_kernel_is_refused_in_one_line() -> None:
    # A trace is input from anyone: a PrimFunc of 300 nested loops (no compiler writes one)
    # is a format error, not a RecursionError; 150 are read.
    from relayviz_instrument.analysis.loop_nest import MAX_DEPTH, read_loop_nest
    from relayviz_instrument.errors import RelayVizFormatError
    from relayviz_instrument.format import new_document

    def nested(depth: int) -> Any:
        nodes: List[Any] = [{"node_kind": "Const", "value": 0, "dtype": "int32"}, {"node_kind": "Evaluate", "value": 0}]
        for i in range(depth):
            nodes.append({"node_kind": "For", "loop_var": f"i{i}", "min": 0, "extent": 2, "kind": "serial",
                          "body": len(nodes) - 1})
        nodes.append({"node_kind": "PrimFunc", "name": "deep", "signature": [], "body": len(nodes) - 1})
        return new_document(nodes, ir="tir", functions={"deep": len(nodes) - 1})

    nest = read_loop_nest(nested(150), "deep")
    assert nest is not None and sum(1 for _ in nest.walk()) == 150
    with pytest.raises(RelayVizFormatError, match=f"'deep': statements nested more than {MAX_DEPTH} "):
        read_loop_nest(nested(300), "deep")
    assert loop_nests(nested(300)) == {}  # a report goes on without it
