"""The identical sub-graphs phase of the matcher (diff/matching/exact.py): nodes whose
signature occurs once on each side."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import paired, rank_a, state
from relayviz_instrument.diff.matching.anchors import anchor
from relayviz_instrument.diff.matching.exact import exact


def tanh_relu_add(value: float, twice: bool = False) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = add(relu(tanh(x)), value), with a second tanh(x) read by the add if ``twice``."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["tanh"] = b.call("tanh", ids["x"])
    ids["relu"] = b.call("nn.relu", ids["tanh"])
    ids["const"] = b.const(value)
    second = b.call("tanh", ids["x"]) if twice else ids["const"]
    ids["add"] = b.call("add", ids["relu"], second)
    ids["main"] = b.function(ids["add"], [ids["x"]])
    return b.document(), ids


def test_exact_pairs_the_sub_graph_below_an_edit() -> None:
    a, ia = tanh_relu_add(1.0)
    b, ib = tanh_relu_add(2.0)  # the constant's value changed
    st = state(a, b)
    anchor(st)
    made = paired(st)
    exact(st)
    new = paired(st) - made
    assert {(ia["tanh"], ib["tanh"]), (ia["relu"], ib["relu"])} <= new
    # The add reads the changed constant: its signature differs, and so does the constant's.
    assert not {x for x, _ in new} & {ia["add"], ia["const"]}


def test_exact_leaves_a_signature_that_occurs_twice_on_a_side() -> None:
    a, ia = tanh_relu_add(1.0, twice=True)  # tanh(x) twice: which of the two is b's is not told
    b, ib = tanh_relu_add(1.0)
    st = state(a, b)
    anchor(st)
    exact(st)
    assert st.A.partner[rank_a(st, ia["tanh"])] == -1
    assert (ia["relu"], ib["relu"]) in paired(st)  # relu(tanh(x)) occurs once on each side
