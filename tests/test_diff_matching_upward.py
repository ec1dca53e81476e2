"""Propagation up in the matcher (diff/matching/upward.py): the users of a pair, by operator
and input position, several alike ones by the other inputs they read."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, rank_a, rank_b, state
from relayviz_instrument.diff.matching.upward import up

WEIGHT = {"dtype": "float32", "shape": [8, 8]}


def three_dense(order: List[str]) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x, w1, w2, w3) = concatenate((dense(x, w1), dense(x, w2), dense(x, w3))), the
    dense calls written in ``order`` (so numbered and ordered otherwise)."""
    b = Builder()
    ids = {"x": b.var("x")}
    for name in ("w1", "w2", "w3"):
        ids[name] = b.var(name, WEIGHT)
    for name in order:
        ids["dense " + name] = b.call("nn.dense", ids["x"], ids[name])
    tup = b.add({"node_kind": "Tuple", "fields": [ids["dense " + name] for name in ("w1", "w2", "w3")]})
    ids["main"] = b.function(b.call("concatenate", tup), [ids[name] for name in ("x", "w1", "w2", "w3")])
    return b.document(), ids


def test_up_pairs_alike_users_by_the_other_inputs_they_read() -> None:
    a, ia = three_dense(["w1", "w2", "w3"])
    b, ib = three_dense(["w3", "w1", "w2"])
    st = state(a, b)
    pair_ids(st, *[(ia[name], ib[name]) for name in ("x", "w1", "w2", "w3")])
    made = paired(st)
    up(st, rank_a(st, ia["x"]), rank_b(st, ib["x"]))
    new = paired(st) - made
    assert {(ia["dense " + w], ib["dense " + w]) for w in ("w1", "w2", "w3")} <= new


def test_up_pairs_the_one_user_of_each_side_at_the_same_input() -> None:
    a, ia = three_dense(["w1", "w2", "w3"])
    b, ib = three_dense(["w2", "w3", "w1"])
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]), (ia["w2"], ib["w2"]))
    made = paired(st)
    up(st, rank_a(st, ia["w2"]), rank_b(st, ib["w2"]))  # w2 is read by one dense on each side
    new = paired(st) - made
    assert (ia["dense w2"], ib["dense w2"]) in new
    assert not {x for x, _ in new} & {ia["dense w1"], ia["dense w3"]}  # x's other users wait for x
