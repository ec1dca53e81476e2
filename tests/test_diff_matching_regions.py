"""The regions phase of the matcher (diff/matching/regions.py): two regions of unpaired nodes
that border the same pairs, aligned by operator in data-flow order."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, state
from relayviz_instrument.diff.matching.regions import regions


def sigmoid_relu(scaled: bool) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = exp(relu(sigmoid(x))), x multiplied by 2.0 first if ``scaled``."""
    b = Builder()
    ids = {"x": b.var("x")}
    h = b.call("multiply", ids["x"], b.const(2.0)) if scaled else ids["x"]
    ids["sigmoid"] = b.call("sigmoid", h)
    ids["relu"] = b.call("nn.relu", ids["sigmoid"])
    ids["exp"] = b.call("exp", ids["relu"])
    ids["main"] = b.function(ids["exp"], [ids["x"]])
    return b.document(), ids


def test_regions_align_what_a_pass_left_between_the_pairs_around_it() -> None:
    a, ia = sigmoid_relu(False)
    b, ib = sigmoid_relu(True)  # a multiply inserted below: the region grew by one node
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]), (ia["exp"], ib["exp"]), (ia["main"], ib["main"]))
    made = paired(st)
    regions(st)
    assert paired(st) - made == {(ia["sigmoid"], ib["sigmoid"]), (ia["relu"], ib["relu"])}



def test_regions_leave_a_region_alone_whose_operators_the_other_side_has_paired() -> None:
    a, ia = sigmoid_relu(False)
    b, ib = sigmoid_relu(True)
    st = state(a, b)
    pair_ids(st, *[(ia[k], ib[k]) for k in ("x", "sigmoid", "relu", "exp", "main")])
    made = paired(st)
    regions(st)  # the multiply inserted after has nothing to pair with
    assert paired(st) == made
