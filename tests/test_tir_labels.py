"""TIR as a reader of its code reads it: loops with their variable, range and kind, stores and
loads with their buffer and index, allocations with their buffer, shape and scope, in the
hunks of ``relayviz report``, the exports and the HTML report's boxes.

The steps are TVM's own: a ``tir.Schedule`` split of a loop, and ``FlattenBuffer`` run under
the trace on a PrimFunc that LegalizeOps and FuseTIR made. Expected texts are written from the
TVMScript of the PrimFuncs (printed in each test's comment), not from the code under test.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax (the PrimFuncs come from LegalizeOps)")

import tvm
from rich.console import Console

from relaxprograms import NEW_TVM, add_relu_module, schedule
from relayviz_instrument import RelayVizTrace, load_trace
from relayviz_instrument.cli import main
from relayviz_instrument.diff import diff
from relayviz_instrument.diff.graph import CanonicalGraph
from relayviz_instrument.html_report.graphs import snapshot_graph
from relayviz_instrument.serialize.tir import TirSerializer
from relayviz_instrument.views.hunk_tree import DiffView

TIR = tvm.tirx if NEW_TVM else tvm.tir
S_TIR = tvm.s_tir if NEW_TVM else tvm.tir
#: The name LegalizeOps gives relu's block (TVM 0.16 names it after the operator).
RELU = "compute" if NEW_TVM else "Relu"


@pytest.fixture(scope="module")
def fused() -> Any:
    """``relu(x + y)`` on [4, 64] after the zero pipeline: one PrimFunc, two loop nests."""
    mod = add_relu_module()
    (func,) = [f for f in mod.functions.values() if type(f).__name__ == "PrimFunc"]
    return func


@pytest.fixture(scope="module")
def flattened(fused: Any, tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Any]:
    """A trace of FlattenBuffer alone, run on the PrimFunc with its blocks lowered:

        T_add_intermediate = T.alloc_buffer((4, 64))
        for ax0, ax1 in T.grid(4, 64):
            T_add_intermediate[ax0, ax1] = x[ax0, ax1] + y[ax0, ax1]
        for i0, i1 in T.grid(4, 64):
            compute_intermediate[i0, i1] = T.max(T_add_intermediate[i0, i1], T.float32(0.0))

    becomes ``x_1 = x.view(256)`` ... ``T_add_intermediate[ax0 * 64 + ax1] = x_1[ax0 * 64 + ax1] + ...``.
    """
    mod = tvm.IRModule({"main": fused})
    for make in (S_TIR.transform.LowerInitBlock, S_TIR.transform.ConvertBlocksToOpaque,
                 S_TIR.transform.LowerOpaqueBlock):
        mod = make()(mod)
    path = tmp_path_factory.mktemp("flatten") / "trace"
    with tvm.transform.PassContext(instruments=[RelayVizTrace(path, tir=True)]):
        flat = TIR.transform.FlattenBuffer()(mod)
    return path, flat


def _text(renderable: Any) -> str:
    console = Console(width=160, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


@pytest.mark.skipif(not NEW_TVM, reason="the block and loop names are TVM 0.2x's (0.16 names relu's block Relu)")
def test_a_split_loop_reads_with_its_variables_ranges_and_the_new_binding(fused: Any) -> None:
    # for i0, i1 in T.grid(4, 64) -> for i0, i1_0, i1_1 in T.grid(4, 8, 8), v_i1 = i1_0 * 8 + i1_1
    sch, block = schedule(fused)
    _, inner = sch.get_loops(block(RELU))
    sch.split(inner, factors=[None, 8])
    result = diff(TirSerializer().expr(fused), TirSerializer().expr(sch.mod["main"]))
    assert _text(DiffView(result, "split")).splitlines() == [
        "split  +1 −0 ~3",
        "├── changed  BlockRealize: iter_values",
        '│   └── ~ BlockRealize (i0, i1_0 * 8 + i1_1)  iter_values: ["i0", "i1"] → ["i0", "i1_0 * 8 + i1_1"]',
        "└── inserted  For inserted before For",
        "    ├── + For i1_0 in 0..8",
        "    ├── ~ For i1_1 in 0..8  extent: 64 → 8, loop_var: i1 → i1_1",
        "    └── ~ For i0 in 0..4  inputs rewired",
    ]


@pytest.mark.skipif(not NEW_TVM, reason="the block and loop names are TVM 0.2x's (0.16 names relu's block Relu)")
def test_a_parallel_loop_and_a_local_cache_read_as_what_they_are_once_lowered(fused: Any) -> None:
    # for i0 in T.parallel(4): ...; T_add_intermediate_local = T.alloc_buffer((4, 64), scope="local")
    # filled by for ax0, ax1 in T.grid(4, 64): T_add_intermediate_local[ax0, ax1] = T_add_intermediate[ax0, ax1]
    sch, block = schedule(fused)
    outer, _ = sch.get_loops(block(RELU))
    sch.parallel(outer)
    sch.cache_read(block(RELU), 0, "local")
    lowered = []
    for mod in (tvm.IRModule({"main": fused}), sch.mod):
        for make in (S_TIR.transform.LowerInitBlock, S_TIR.transform.ConvertBlocksToOpaque,
                     S_TIR.transform.LowerOpaqueBlock):
            mod = make()(mod)
        lowered.append(TirSerializer().expr(mod["main"]))
    assert _text(DiffView(diff(*lowered), "cached")).splitlines() == [
        "cached  +5 −0 ~3",
        "├── added  Allocate added",
        "│   ├── + Allocate T_add_intermediate_local float32[4, 64] scope=local",
        "│   └── ~ SeqStmt 5 statements  inputs rewired",
        "├── added  BufferLoad+BufferStore+For×2 added",
        "│   ├── + BufferLoad T_add_intermediate[ax0, ax1]  float32",
        "│   ├── + BufferStore T_add_intermediate_local[ax0, ax1]",
        "│   ├── + For ax1 in 0..64",
        "│   └── + For ax0 in 0..4",
        "├── changed  BufferLoad: buffer",
        "│   └── ~ BufferLoad T_add_intermediate_local[i0, i1]  buffer: T_add_intermediate → T_add_intermediate_local",
        "└── changed  For: kind",
        "    └── ~ For i0 in 0..4 parallel  kind: serial → parallel",
    ]


@pytest.mark.skipif(not NEW_TVM, reason="FlattenBuffer declares the flat views of parameters from TVM 0.2x")
def test_flatten_buffer_hunks_show_buffers_and_flat_indices(flattened: Tuple[Path, Any], capsys: Any,
                                                            monkeypatch: Any) -> None:
    path, flat = flattened
    script = flat.script()
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["report", str(path), "--pass", "FlattenBuffer"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("├── changed ×3  BufferLoad: indices")
    assert lines[at:at + 4] == [
        "├── changed ×3  BufferLoad: indices",
        '│   └── ~ BufferLoad x[ax0 * 64 + ax1]  indices: ["ax0", "ax1"] → ["ax0 * 64 + ax1"]',
        "└── changed ×2  BufferStore: indices",
        '    └── ~ BufferStore T_add_intermediate[ax0 * 64 + ax1]  indices: ["ax0", "ax1"] → ["ax0 * 64 + ax1"]',
    ]
    assert main(["report", str(path), "--pass", "FlattenBuffer", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["passes"]
    accesses = sorted((c["node"], c["detail"]) for c in entry["changed"] if c["node"].startswith("Buffer"))
    assert accesses == [
        ("BufferLoad", "T_add_intermediate[i0 * 64 + i1]"),
        ("BufferLoad", "x[ax0 * 64 + ax1]"),
        ("BufferLoad", "y[ax0 * 64 + ax1]"),
        ("BufferStore", "T_add_intermediate[ax0 * 64 + ax1]"),
        ("BufferStore", f"{RELU}_intermediate[i0 * 64 + i1]"),
    ]
    # The same accesses, in TVMScript's words (it writes T.int64(64) and renames the flat views x_1...).
    for _, detail in accesses:
        buffer, index = detail.split("[", 1)
        tvm_index = re.escape(index[:-1]).replace("64", r"T\.int64\(64\)")
        assert re.search(rf"\b{buffer}(_1)?\[{tvm_index}\]", script), detail
    added = sorted(a["detail"] for a in entry["added"] + [c for c in entry["changed"] if c["node"] == "Allocate"])
    assert "T_add_intermediate float32[256]" in added  # the allocation, flat
    assert {"x float32[256] declared", "y float32[256] declared"} <= set(added)  # the parameters' flat views


def test_flatten_buffer_pairs_no_allocation_with_a_parameters_declaration(flattened: Tuple[Path, Any]) -> None:
    path, _ = flattened
    trace = load_trace(path)
    [record] = [r for r in trace.records if r.name.endswith("FlattenBuffer")]
    before, after = trace.snapshot(record.before), trace.snapshot(record.after)
    result = diff(before, after)
    pairs = [(before["nodes"][a]["name"], after["nodes"][b]["name"]) for a, b in result.mapping.items()
             if before["nodes"][a]["node_kind"] == "Allocate"]
    assert all(a == b for a, b in pairs), pairs


@pytest.mark.skipif(not NEW_TVM, reason="FlattenBuffer declares the flat views of parameters from TVM 0.2x")
def test_exports_and_the_html_boxes_label_loops_stores_and_allocations(flattened: Tuple[Path, Any],
                                                                        tmp_path: Path) -> None:
    path, _ = flattened
    trace = load_trace(path)
    [record] = [r for r in trace.records if r.name.endswith("FlattenBuffer")]
    out = tmp_path / "flat.dot"
    assert main(["export", str(path), "--pass", str(record.index), "--to", "dot", "-o", str(out)]) == 0
    labels = set(re.findall(r'label="([^"\\]*)', out.read_text()))
    # x is float32[4, 64]; T_add_intermediate[ax0, ax1] = x[ax0, ax1] + y[ax0, ax1] before flattening.
    assert {"for ax0 in 0..4", "for ax1 in 0..64", "for i0 in 0..4", "for i1 in 0..64",
            "T_add_intermediate[ax0 * 64 + ax1] =", "x[ax0 * 64 + ax1]", "alloc T_add_intermediate float32[256]",
            "alloc x float32[256] declared"} <= labels
    # The HTML report's boxes: a statement's box says it as the drawing does.
    graph: Dict[str, Any] = snapshot_graph(CanonicalGraph(trace.snapshot(record.before)))
    shown = {(n["k"], n["n"]) for n in graph["nodes"] if "h" not in n}
    assert {("For", "for ax1 in 0..64"), ("BufferStore", "T_add_intermediate[ax0, ax1] ="),
            ("BufferLoad", "x[ax0, ax1]"), ("Allocate", "alloc T_add_intermediate float32[4, 64]")} <= shown
