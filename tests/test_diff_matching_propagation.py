"""Propagation to a fixpoint in the matcher (diff/matching/propagation.py): from the frontier
of the sure pairs to their neighbours, the pairs put off tried last."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, rank_a, rank_b, relu_chain, run_until, state
from relayviz_instrument.diff.matching.propagation import frontier, propagate, settle
from relayviz_instrument.diff.matching.scoring import consider


def test_frontier_is_the_pairs_next_to_an_unpaired_node_the_other_side_could_pair() -> None:
    a, ca = relu_chain("tanh", 4)
    b, cb = relu_chain("sigmoid", 4)
    st = state(a, b)
    run_until(st, "settle")  # anchors: main and x; exact: the relu Op node
    main_a = len(a["nodes"]) - 1
    # x is next to tanh only, which the other side has no unpaired node of: main, next to the
    # top relu, is the frontier.
    assert frontier(st, True) == [rank_a(st, main_a)]


def test_settle_pairs_down_from_the_frontier_and_stops_at_the_edit() -> None:
    a, ca = relu_chain("tanh", 4)
    b, cb = relu_chain("sigmoid", 4)
    st = state(a, b)
    run_until(st, "settle")
    made = paired(st)
    settle(st)
    assert paired(st) - made == set(zip(ca[1:], cb[1:]))  # every relu; tanh and sigmoid stay apart


def subtract(second: str) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x, <second>) = relu(subtract(x, <second>))."""
    b = Builder()
    ids = {"x": b.var("x"), "y": b.var(second)}
    ids["sub"] = b.call("subtract", ids["x"], ids["y"])
    ids["relu"] = b.call("nn.relu", ids["sub"])
    ids["main"] = b.function(ids["relu"], [ids["x"], ids["y"]])
    return b.document(), ids


def test_propagate_pairs_what_was_put_off_when_nothing_surer_is_left() -> None:
    a, ia = subtract("y")
    b, ib = subtract("z")
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]))
    st.queue = []
    consider(st, rank_a(st, ia["sub"]), rank_b(st, ib["sub"]))  # one neighbour in common: put off
    assert st.weak and paired(st) == {(ia["x"], ib["x"])}
    propagate(st)
    assert not st.weak
    # ... and what it implies: the relu above it, then main.
    assert {(ia["sub"], ib["sub"]), (ia["relu"], ib["relu"]), (ia["main"], ib["main"])} <= paired(st)
