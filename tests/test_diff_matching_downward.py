"""Propagation down in the matcher (diff/matching/downward.py): the inputs of a pair, slot by
slot, swapped arguments kept with their pairs."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, rank_a, rank_b, state
from relayviz_instrument.diff.matching.downward import down


def swapped_add(swapped: bool, value: float) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = multiply(add(tanh(x), sigmoid(x)), value); the add's arguments the other way
    round if ``swapped``."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["tanh"], ids["sigmoid"] = b.call("tanh", ids["x"]), b.call("sigmoid", ids["x"])
    args = (ids["sigmoid"], ids["tanh"]) if swapped else (ids["tanh"], ids["sigmoid"])
    ids["add"] = b.call("add", *args)
    ids["const"] = b.const(value)
    ids["multiply"] = b.call("multiply", ids["add"], ids["const"])
    ids["main"] = b.function(ids["multiply"], [ids["x"]])
    return b.document(), ids


def test_down_keeps_swapped_arguments_with_their_pairs() -> None:
    a, ia = swapped_add(False, 1.0)
    b, ib = swapped_add(True, 1.0)  # add(sigmoid(x), tanh(x)) for add(tanh(x), sigmoid(x))
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]), (ia["add"], ib["add"]))
    made = paired(st)
    down(st, rank_a(st, ia["add"]), rank_b(st, ib["add"]))
    assert paired(st) - made == {(ia["tanh"], ib["tanh"]), (ia["sigmoid"], ib["sigmoid"])}


def test_down_pairs_an_input_read_by_the_pair_alone_whose_value_changed() -> None:
    a, ia = swapped_add(False, 1.0)
    b, ib = swapped_add(False, 2.0)
    st = state(a, b)
    pair_ids(st, (ia["multiply"], ib["multiply"]))
    made = paired(st)
    down(st, rank_a(st, ia["multiply"]), rank_b(st, ib["multiply"]))
    new = paired(st) - made
    assert (ia["const"], ib["const"]) in new  # another value, same type, read by the pair alone
    assert (ia["add"], ib["add"]) in new



def fields(ops: Tuple[str, ...]) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = concatenate((op(x) for op in ops))."""
    b = Builder()
    ids = {"x": b.var("x")}
    for op in ops:
        ids[op] = b.call(op, ids["x"])
    ids["tuple"] = b.add({"node_kind": "Tuple", "fields": [ids[op] for op in ops]})
    ids["concatenate"] = b.call("concatenate", ids["tuple"])
    ids["main"] = b.function(ids["concatenate"], [ids["x"]])
    return b.document(), ids


def test_down_aligns_the_fields_of_a_tuple_that_lost_one() -> None:
    a, ia = fields(("tanh", "sigmoid", "exp"))
    b, ib = fields(("tanh", "exp"))  # the middle field removed: the last is not the second
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]), (ia["tuple"], ib["tuple"]))
    made = paired(st)
    down(st, rank_a(st, ia["tuple"]), rank_b(st, ib["tuple"]))
    assert paired(st) - made == {(ia["tanh"], ib["tanh"]), (ia["exp"], ib["exp"])}
