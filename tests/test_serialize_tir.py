"""TIR -> RelayViz: a PrimFunc's statements, and what a diff says about scheduling steps.

The PrimFuncs come from TVM's own lowering (LegalizeOps and FuseTIR in the zero pipeline) and
its own lowering passes; the steps from TVM's schedule primitives (split, vectorize,
compute_inline). Counts are checked against TVM's own walk of the body.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax (the PrimFuncs come from LegalizeOps)")

import tvm

from relaxprograms import NEW_TVM, add_relu_module, schedule, tir_census
from relayviz_instrument import format as fmt
from relayviz_instrument.diff import diff
from relayviz_instrument.serialize import module_ir, serializer_for
from relayviz_instrument.serialize.tir import TirSerializer

TIR = tvm.tirx if NEW_TVM else tvm.tir
S_TIR = tvm.s_tir if NEW_TVM else tvm.tir
#: The name LegalizeOps gives relu's block (TVM 0.16 names it after the operator).
RELU = "compute" if NEW_TVM else "Relu"


@pytest.fixture(scope="module")
def fused():
    mod = add_relu_module()
    (name, func), = [(g.name_hint, f) for g, f in mod.functions.items() if type(f).__name__ == "PrimFunc"]
    return name, func


def _tir_module(func):
    return tvm.IRModule({"main": func})


def _lowered(func):
    mod = _tir_module(func)
    for make in (S_TIR.transform.LowerInitBlock, S_TIR.transform.ConvertBlocksToOpaque,
                 S_TIR.transform.LowerOpaqueBlock, TIR.transform.FlattenBuffer):
        mod = make()(mod)
    return mod["main"]


def _census(doc):
    counts = {}
    for node in doc["nodes"]:
        if node["node_kind"] in ("For", "Block", "BlockRealize", "BufferStore", "BufferLoad", "SeqStmt",
                                 "IfThenElse", "Evaluate", "LetStmt", "AttrStmt", "AssertStmt", "Allocate"):
            counts[node["node_kind"]] = counts.get(node["node_kind"], 0) + 1
    return counts


@pytest.mark.parametrize("stage", ["scheduled", "lowered"])
def test_statement_counts_equal_tvms_own_walk(fused, stage):
    _, func = fused
    if stage == "lowered":
        func = _lowered(func)
    doc = TirSerializer().expr(func)
    fmt.validate(doc)
    assert _census(doc) == dict(tir_census(func))


def test_a_primfunc_node_has_its_signature_buffers_and_loops(fused):
    name, func = fused
    mod = _tir_module(func)
    assert module_ir(mod) == "tir"
    doc = serializer_for("tir").module(mod)
    nodes = doc["nodes"]
    prim = nodes[doc["functions"]["main"]]
    assert prim["node_kind"] == "PrimFunc" and prim["name"] == "main"
    # FuseTIR names the parameters after the arguments (TVM 0.16: p_x, p_y, p_output0).
    p = "" if NEW_TVM else "p_"
    out = f"{RELU}_intermediate" if NEW_TVM else "p_output0"
    assert [(p["name"], p["dtype"], p["shape"]) for p in prim["signature"]] == [
        (f"{p}x", "float32", [4, 64]), (f"{p}y", "float32", [4, 64]), (out, "float32", [4, 64])]
    root = nodes[nodes[prim["body"]]["block"]]
    assert root["node_kind"] == "Block" and root["alloc_buffers"] == [
        {"name": "T_add_intermediate", "dtype": "float32", "shape": [4, 64]}]
    blocks = {n["name"]: n for n in nodes if n["node_kind"] == "Block"}
    assert blocks["T_add"]["iter_vars"] == [
        {"name": "v_ax0", "kind": "spatial", "min": 0, "extent": 4},
        {"name": "v_ax1", "kind": "spatial", "min": 0, "extent": 64}]
    assert blocks["T_add"]["reads"] == ["x[v_ax0, v_ax1]", "y[v_ax0, v_ax1]"]  # buffers, by their own names
    loops = [(n["loop_var"], n["extent"], n["kind"]) for n in nodes if n["node_kind"] == "For"]
    assert sorted(loops) == [("ax0", 4, "serial"), ("ax1", 64, "serial"), ("i0", 4, "serial"), ("i1", 64, "serial")]
    store = next(n for n in nodes if n["node_kind"] == "BufferStore" and n["buffer"] == f"{RELU}_intermediate")
    value = nodes[store["value"]]
    assert nodes[value["op"]]["name"] == "tir.max"


def test_without_bodies_a_primfunc_is_one_node(fused):
    _, func = fused
    doc = serializer_for("tir", tir_bodies=False).module(_tir_module(func))
    assert [n["node_kind"] for n in doc["nodes"]] == ["PrimFunc"]


def test_a_split_and_vectorized_loop_and_an_inlined_block_show_in_the_diff(fused):
    _, func = fused
    sch, block = schedule(func)
    _, inner = sch.get_loops(block(RELU))
    _, lanes = sch.split(inner, factors=[None, 8])
    sch.vectorize(lanes)
    sch.compute_inline(block("T_add"))
    before, after = TirSerializer().expr(func), TirSerializer().expr(sch.mod["main"])
    fmt.validate(after)
    result = diff(before, after)
    loops = {(n["loop_var"], n["extent"], n["kind"]) for n in after["nodes"] if n["node_kind"] == "For"}
    assert loops == {("i0", 4, "serial"), ("i1_0", 8, "serial"), ("i1_1", 8, "vectorized")}
    changed_loops = [m for m in result.changed if result.info_after[m.after].kind == "For"]
    assert any(c.field == "kind" and (c.before, c.after) == ("serial", "vectorized")
               for m in changed_loops for c in m.fields)
    # The inlined block is gone, with its store and its loops; its computation moved into the consumer.
    removed = [result.info_before[r].kind for r in result.removed]
    assert removed.count("Block") == 1 and removed.count("BufferStore") == 1 and removed.count("For") >= 1
    kinds = {h.kind for h in result.hunks}
    assert "removed" in kinds and {"replaced", "changed"} & kinds
    realize = next(n for n in after["nodes"] if n["node_kind"] == "BlockRealize" and n["iter_values"])
    assert realize["iter_values"] == ["i0", "i1_0 * 8 + i1_1"]
