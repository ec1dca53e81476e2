"""The Op node phase of the matcher (diff/matching/operators.py): Op nodes follow the calls
that use them; those left, identical ones in order."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, state
from relayviz_instrument.diff.matching.operators import pair_ops


def conv_relu(strides: List[int]) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x, w) = (relu(conv2d(x, w, strides)), tanh(x))."""
    b = Builder()
    ids = {"x": b.var("x"), "w": b.var("w")}
    ids["conv"] = b.call("nn.conv2d", ids["x"], ids["w"], attrs={"strides": strides})
    ids["conv op"] = b.op("nn.conv2d", {"strides": strides})
    ids["relu"] = b.call("nn.relu", ids["conv"])
    ids["relu op"] = b.op("nn.relu")
    ids["tanh"] = b.call("tanh", ids["x"])
    ids["tanh op"] = b.op("tanh")
    tup = b.add({"node_kind": "Tuple", "fields": [ids["relu"], ids["tanh"]]})
    ids["main"] = b.function(tup, [ids["x"], ids["w"]])
    return b.document(), ids


def test_pair_ops_pairs_op_nodes_by_their_calls_then_identical_ones_left() -> None:
    a, ia = conv_relu([1, 1])
    b, ib = conv_relu([2, 2])  # the convolution's Op node changed with its attributes
    st = state(a, b)
    pair_ids(st, *[(ia[k], ib[k]) for k in ("x", "w", "conv", "relu", "main")])  # not the tanh calls
    made = paired(st)
    pair_ops(st)
    assert paired(st) - made == {(ia["conv op"], ib["conv op"]), (ia["relu op"], ib["relu op"]),
                                 (ia["tanh op"], ib["tanh op"])}
