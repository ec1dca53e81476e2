"""The runs phase of the matcher (diff/matching/runs.py): stretches of equal lines in the two
topological orders, extended from the pairs made so far."""

from __future__ import annotations


from matchstates import pair_ids, paired, relu_chain, state
from relayviz_instrument.diff.matching.anchors import anchor
from relayviz_instrument.diff.matching.exact import exact
from relayviz_instrument.diff.matching.runs import runs


def test_runs_pair_the_equal_lines_above_a_pair() -> None:
    # The bottom call changed, so no relu above it has an equal signature on the other side.
    a, ca = relu_chain("tanh", 6)
    b, cb = relu_chain("sigmoid", 6)
    st = state(a, b)
    anchor(st)
    exact(st)
    pair_ids(st, (ca[1], cb[1]))  # the lowest relu, as propagation or the residuals pair it
    made = paired(st)
    assert not {(x, y) for x, y in zip(ca[2:], cb[2:])} & made
    runs(st)
    assert paired(st) - made == set(zip(ca[2:], cb[2:]))


def test_runs_do_not_cross_an_unequal_line() -> None:
    # Only x and main are paired: the run up from x stops at tanh against sigmoid.
    a, ca = relu_chain("tanh", 6)
    b, cb = relu_chain("sigmoid", 6)
    st = state(a, b)
    anchor(st)
    exact(st)
    made = paired(st)
    runs(st)
    assert paired(st) == made

