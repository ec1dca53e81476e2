"""Looking through inserted and deleted nodes in the matcher (diff/matching/look_through.py):
a node paired across a ``layout_transform`` one side has and the other lacks."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, rank_a, rank_b, run_until, state
from relayviz_instrument.diff.matching.look_through import look_down, look_up
from relayviz_instrument.diff.matching.propagation import frontier, settle


def tanh_relu(inserted: str = "") -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = relu(tanh(x)), with a call of ``inserted`` between the two if given."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["tanh"] = b.call("tanh", ids["x"])
    ids["middle"] = b.call(inserted, ids["tanh"]) if inserted else ids["tanh"]
    ids["relu"] = b.call("nn.relu", ids["middle"])
    ids["main"] = b.function(ids["relu"], [ids["x"]])
    return b.document(), ids


def test_look_down_pairs_the_input_below_an_inserted_node() -> None:
    a, ia = tanh_relu()
    b, ib = tanh_relu("layout_transform")
    st = state(a, b)
    pair_ids(st, (ia["main"], ib["main"]), (ia["x"], ib["x"]), (ia["relu"], ib["relu"]))
    frontier(st, True)  # which labels are still unpaired on each side
    made = paired(st)
    # The relus' input slot holds tanh before and layout_transform after.
    look_down(st, rank_a(st, ia["tanh"]), rank_b(st, ib["middle"]))
    assert paired(st) - made == {(ia["tanh"], ib["tanh"])}


def test_look_down_pairs_the_input_below_a_deleted_node() -> None:
    a, ia = tanh_relu("layout_transform")
    b, ib = tanh_relu()
    st = state(a, b)
    pair_ids(st, (ia["main"], ib["main"]), (ia["x"], ib["x"]), (ia["relu"], ib["relu"]))
    frontier(st, True)
    made = paired(st)
    look_down(st, rank_a(st, ia["middle"]), rank_b(st, ib["tanh"]))
    assert paired(st) - made == {(ia["tanh"], ib["tanh"])}


def test_look_up_pairs_the_user_above_an_inserted_node() -> None:
    a, ia = tanh_relu()
    b, ib = tanh_relu("copy")
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]), (ia["tanh"], ib["tanh"]))
    frontier(st, True)
    made = paired(st)
    # The unpaired users of the tanh pair: relu before, copy after.
    look_up(st, st.A, [(rank_a(st, ia["relu"]), 0)], [(rank_b(st, ib["middle"]), 0)])
    assert paired(st) - made == {(ia["relu"], ib["relu"])}


_CONV_ADD = """
#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w1: Tensor[(16, 16, 3, 3), float32],
          %w2: Tensor[(16, 16, 3, 3), float32], %b: Tensor[(16), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, %w2, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  add(%3, %2)
}
"""


def test_propagation_pairs_the_add_that_alter_op_layout_moved_behind_layout_transforms() -> None:
    """AlterOpLayout (x86) rewrites both convolutions to NCHW4c and the add with them: the add
    reads the relu through a layout_transform, and only looking up through it pairs the adds."""
    import tvm
    from tvm import relay

    from relayviz_instrument import to_relayviz

    mod = relay.transform.InferType()(relay.fromtext(_CONV_ADD))
    with tvm.transform.PassContext(opt_level=3), tvm.target.Target("llvm -mtriple=x86_64-linux-gnu"):
        altered = relay.transform.InferType()(relay.transform.AlterOpLayout()(mod))
    a, b = to_relayviz(mod), to_relayviz(altered)

    def op_name(doc: Dict[str, Any], i: int) -> Any:
        node = doc["nodes"][i]
        return doc["nodes"][node["op"]].get("name") if node["node_kind"] == "Call" else None

    [add_a] = [i for i in range(len(a["nodes"])) if op_name(a, i) == "add"]
    [add_b] = [i for i in range(len(b["nodes"])) if op_name(b, i) == "add"]
    assert op_name(a, a["nodes"][add_a]["args"][1]) == "nn.relu"
    assert op_name(b, b["nodes"][add_b]["args"][1]) == "layout_transform"
    st = state(a, b)
    run_until(st, "settle")
    settle(st)
    assert (add_a, add_b) in paired(st)
