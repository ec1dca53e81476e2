"""The tie-break and the twins of the matcher (diff/matching/ties.py): groups of equal
candidates paired last, and a pair given to the twin more of its users read."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, rank_a, rank_b, state
from relayviz_instrument.diff.matching.scoring import consider
from relayviz_instrument.diff.matching.ties import break_ties, swap_twins


def two_relus() -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = add(relu(x), relu(x)): two users of x alike in every way."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["r1"], ids["r2"] = b.call("nn.relu", ids["x"]), b.call("nn.relu", ids["x"])
    ids["add"] = b.call("add", ids["r1"], ids["r2"])
    ids["main"] = b.function(ids["add"], [ids["x"]])
    return b.document(), ids


def test_break_ties_waits_for_the_final_round_then_pairs_in_canonical_order() -> None:
    a, ia = two_relus()
    b, ib = two_relus()
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]))
    consider(st, rank_a(st, ia["r1"]), rank_b(st, ib["r1"]))  # leaves {r1, r2} x {r1, r2} as a group
    made = paired(st)
    break_ties(st, final=False)  # neither pair is strictly best for both
    assert paired(st) == made and len(st.groups) == 1
    break_ties(st, final=True)
    # Both documents were written in one order, so canonical order pairs r1 with r1.
    assert paired(st) - made == {(ia["r1"], ib["r1"]), (ia["r2"], ib["r2"])}
    assert st.groups == []


def common_subexpression(merged: bool) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = (relu(t1), sigmoid(t2), exp(t2)) with t1 = t2 = tanh(x), one node if ``merged``."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["t1"] = b.call("tanh", ids["x"])
    ids["t2"] = ids["t1"] if merged else b.call("tanh", ids["x"])
    ids["relu"] = b.call("nn.relu", ids["t1"])
    ids["sigmoid"] = b.call("sigmoid", ids["t2"])
    ids["exp"] = b.call("exp", ids["t2"])
    ids["tuple"] = b.add({"node_kind": "Tuple", "fields": [ids["relu"], ids["sigmoid"], ids["exp"]]})
    ids["main"] = b.function(ids["tuple"], [ids["x"]])
    return b.document(), ids


def test_swap_twins_gives_the_pair_to_the_twin_more_users_read() -> None:
    # EliminateCommonSubexpr kept one tanh; two of its three users read the second copy before.
    a, ia = common_subexpression(False)
    b, ib = common_subexpression(True)
    st = state(a, b)
    pair_ids(st, *[(ia[k], ib[k]) for k in ("x", "t1", "relu", "sigmoid", "exp", "tuple", "main")])
    swap_twins(st, st.A)
    pairs = paired(st)
    assert (ia["t2"], ib["t1"]) in pairs and (ia["t1"], ib["t1"]) not in pairs
