"""Exact text of the diff renderables, in a 100-column console without colour."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import pytest
from rich.console import Console

from diffgraphs import T8, DocumentBuilder
from relayviz_instrument.diff import diff
from relayviz_instrument.views.hunk_tree import DiffView, OpDeltaTable, diff_counts


def render(*renderables: Any) -> str:
    console = Console(width=100, color_system=None, record=True)
    for renderable in renderables:
        console.print(renderable)
    return console.export_text()


@pytest.fixture
def fused() -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """relu(add(conv2d(x, w), 1.0)); after: strides 2, and add+relu fused into a function."""
    a, b = DocumentBuilder(), DocumentBuilder()
    x, w = a.var("x"), a.var("w")
    conv = a.call("nn.conv2d", x, w, attrs={"strides": [1, 1], "data_layout": "NCHW"})
    a.function(a.call("nn.relu", a.call("add", conv, a.const(1.0))), [x, w])
    x, w = b.var("x"), b.var("w")
    conv = b.call("nn.conv2d", x, w, attrs={"strides": [2, 2], "data_layout": "NCHW"})
    p0 = b.var("p0")
    body = b.call("nn.relu", b.call("add", p0, b.const(1.0)))
    fused_fn = b.function(body, [p0], attrs={"Primitive": 1})
    b.function(b.add({"node_kind": "Call", "op": fused_fn, "args": [conv], "type": T8}), [x, w])
    return a.document(), b.document()


def test_pass_header_and_hunk_tree(fused: Tuple[Dict[str, Any], Dict[str, Any]]) -> None:
    tree = DiffView(diff(*fused), "FuseOps", ["depth 1", "0.52 ms", "8 → 13 nodes"])
    assert render(tree) == (
        "FuseOps  depth 1  0.52 ms  8 → 13 nodes  +3 −0 ~2\n"
        "├── wrapped  add+nn.relu wrapped into a primitive Function\n"
        "│   ├── + Function Primitive\n"
        "│   ├── = add  float32[1, 8]\n"
        "│   ├── = nn.relu  float32[1, 8]\n"
        "│   ├── = Const  float32\n"
        "│   ├── + Call Primitive  float32[1, 8]\n"
        "│   └── + Var %p0  float32[1, 8]\n"
        "└── changed  nn.conv2d: attrs.strides\n"
        "    └── ~ nn.conv2d  attrs.strides: [1, 1] → [2, 2]\n"
    )


def test_long_hunks_are_cut(fused: Tuple[Dict[str, Any], Dict[str, Any]]) -> None:
    assert render(DiffView(diff(*fused), "FuseOps", node_lines=3)) == (
        "FuseOps  +3 −0 ~2\n"
        "├── wrapped  add+nn.relu wrapped into a primitive Function\n"
        "│   ├── + Function Primitive\n"
        "│   ├── = add  float32[1, 8]\n"
        "│   └── … 4 more\n"
        "└── changed  nn.conv2d: attrs.strides\n"
        "    └── ~ nn.conv2d  attrs.strides: [1, 1] → [2, 2]\n"
    )


def test_groups_of_equal_hunks_show_one_with_a_count() -> None:
    a, b = DocumentBuilder(), DocumentBuilder()
    for builder, fold in ((a, False), (b, True)):
        x = builder.var("x")
        outs = []
        for _ in range(3):
            if fold:
                scale = builder.const(6.0)
            else:
                scale = builder.call("multiply", builder.const(2.0), builder.const(3.0),
                                     ty={"dtype": "float32", "shape": []})
            outs.append(builder.call("multiply", builder.call("tanh", x), scale))
        builder.function(builder.add({"node_kind": "Tuple", "fields": outs}), [x])
    assert render(DiffView(diff(a.document(), b.document()), "FoldConstant")) == (
        "FoldConstant  +3 −9 ~3\n"
        "└── replaced ×3  multiply+Const×2 → Const\n"
        "    ├── − multiply  float32\n"
        "    ├── − Const  float32\n"
        "    ├── − Const  float32\n"
        "    ├── + Const  float32\n"
        "    └── ~ multiply  float32[1, 8]  inputs rewired\n"
    )


def test_no_differences() -> None:
    b = DocumentBuilder()
    x = b.var("x")
    b.function(b.call("nn.relu", x), [x])
    doc = b.document()
    assert render(DiffView(diff(doc, doc), "a.json → b.json")) == (
        "a.json → b.json  +0 −0 ~0\n"
        "└── no differences\n"
    )


def test_operator_table_sums_passes() -> None:
    table = OpDeltaTable([
        ("SimplifyInference", {"nn.batch_norm": -2, "multiply": 4, "add": 4}),
        ("FoldConstant", {"multiply": -2, "add": -2}),
        ("AlterOpLayout", {"layout_transform": 3}),
    ])
    assert render(table) == (
        "operator calls across the pipeline                                \n"
        " operator         ┃ + ┃ − ┃ net ┃ passes                          \n"
        "━━━━━━━━━━━━━━━━━━╇━━━╇━━━╇━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n"
        " add              │ 4 │ 2 │  +2 │ SimplifyInference, FoldConstant \n"
        " layout_transform │ 3 │ 0 │  +3 │ AlterOpLayout                   \n"
        " multiply         │ 4 │ 2 │  +2 │ SimplifyInference, FoldConstant \n"
        " nn.batch_norm    │ 0 │ 2 │  −2 │ SimplifyInference               \n"
    )


def test_counts_from_a_stored_summary() -> None:
    counts = diff_counts({"added": 4, "removed": 2, "changed": 1, "rewired": 3})
    assert counts.plain == "+4 −2 ~4"
    assert [(span.start, span.end, str(span.style)) for span in counts.spans] == [
        (0, 2, "green"), (3, 5, "red"), (6, 8, "yellow")]


def test_pipeline_events_leave_out_temporary_and_half_rewritten_modules() -> None:
    from relayviz_instrument.analysis.pipeline import pipeline_events
    from relayviz_instrument.store import PassRecord

    def rec(index, name, depth, parent, before, after):
        return PassRecord(index=index, name=name, depth=depth, parent=parent, before=before, after=after,
                          changed=before != after)

    records = [
        rec(0, "sequential", 1, None, "m0", "m3"),
        rec(1, "SimplifyInference", 2, 0, "m0", "m1"),
        rec(2, "InferType", 3, 1, "m0-rewritten", "m1"),  # inside the pass, on its own result
        rec(3, "SimplifyExpr", 2, 0, "m1", "m1"),
        rec(4, "InferType", 3, 3, "tmp", "tmp-typed"),  # a _tmp module of its own
        rec(5, "FuseOps", 2, 0, "m1", "m3"),
        rec(6, "tir.Simplify", 1, None, None, None),  # not compared
        # A trace filtered to some passes: the module changed in between, unrecorded.
        rec(7, "FoldConstant", 1, None, "m5", "m6"),
        rec(8, "FuseOps", 1, None, "m7", "m8"),
        rec(9, "InferType", 2, 8, "m7-rewritten", "m8"),
    ]
    assert pipeline_events(records) == [0, 1, 3, 5, 7, 8]


KERNELS = [("FuseOps", {f"tvmgen_default_fused_nn_conv2d_add_nn_relu_{i}": 1 for i in range(1, 4)}),
           ("LowerTE", {"nn.conv2d": -3, "add": -3, "nn.relu": -3})]


def _render_kernels(width: int, terminal: bool) -> str:
    console = Console(width=width, color_system=None, record=True, force_terminal=terminal)
    console.print(OpDeltaTable(KERNELS), crop=False)
    return console.export_text()


def test_kernel_rows_stay_apart_at_80_columns_on_a_terminal() -> None:
    # shortened in the middle: the end that tells kernels apart stays
    assert _render_kernels(80, terminal=True) == (
        "operator calls across the pipeline                                \n"
        " operator                                 ┃ + ┃ − ┃ net ┃ passes  \n"
        "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━╇━━━╇━━━━━╇━━━━━━━━━\n"
        " add                                      │ 0 │ 3 │  −3 │ LowerTE \n"
        " nn.conv2d                                │ 0 │ 3 │  −3 │ LowerTE \n"
        " nn.relu                                  │ 0 │ 3 │  −3 │ LowerTE \n"
        " tvmgen_defaul…ed_nn_conv2d_add_nn_relu_1 │ 1 │ 0 │  +1 │ FuseOps \n"
        " tvmgen_defaul…ed_nn_conv2d_add_nn_relu_2 │ 1 │ 0 │  +1 │ FuseOps \n"
        " tvmgen_defaul…ed_nn_conv2d_add_nn_relu_3 │ 1 │ 0 │  +1 │ FuseOps \n"
    )


def test_kernel_names_are_whole_at_200_columns_and_when_piped() -> None:
    wide = _render_kernels(200, terminal=True)
    piped = _render_kernels(40, terminal=False)
    for text in (wide, piped):
        for i in range(1, 4):
            assert f" tvmgen_default_fused_nn_conv2d_add_nn_relu_{i} " in text
    assert piped == wide


def test_an_empty_operator_table_is_not_printed() -> None:
    assert render(OpDeltaTable([("FuseOps", {})])) == ""
