"""How the matcher judges a candidate pair (diff/matching/scoring.py): paired at once with
enough evidence, put off with one neighbour in common, left as a group with equal rivals."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import T4, T8, DocumentBuilder as Builder
from matchstates import pair_ids, paired, rank_a, rank_b, state
from relayviz_instrument.diff.matching.scoring import consider, score

Doc = Dict[str, Any]


def two_relus() -> Tuple[Doc, Dict[str, int]]:
    """main(x) = add(relu(x), relu(x)): two users of x alike in every way."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["r1"], ids["r2"] = b.call("nn.relu", ids["x"]), b.call("nn.relu", ids["x"])
    ids["add"] = b.call("add", ids["r1"], ids["r2"])
    ids["main"] = b.function(ids["add"], [ids["x"]])
    return b.document(), ids


def subtract(second: str, ty: Dict[str, Any] = T8) -> Tuple[Doc, Dict[str, int]]:
    """main(x, <second>) = relu(subtract(x, <second>)), the subtract of type ``ty``."""
    b = Builder()
    ids = {"x": b.var("x"), "y": b.var(second)}
    ids["sub"] = b.call("subtract", ids["x"], ids["y"], ty=ty)
    ids["relu"] = b.call("nn.relu", ids["sub"])
    ids["main"] = b.function(ids["relu"], [ids["x"], ids["y"]])
    return b.document(), ids


def test_consider_pairs_a_candidate_with_two_paired_neighbours_in_common() -> None:
    a, ia = subtract("y")
    b, ib = subtract("y", ty=T4)  # another type: another signature
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]), (ia["y"], ib["y"]), (ia["relu"], ib["relu"]))
    x, y = rank_a(st, ia["sub"]), rank_b(st, ib["sub"])
    assert score(st.A, x, y)[:2] == (0, 3)  # no equal signature; two inputs and a user in common
    consider(st, x, y)
    assert (ia["sub"], ib["sub"]) in paired(st)


def test_consider_puts_off_a_candidate_with_one_neighbour_in_common() -> None:
    a, ia = subtract("y")
    b, ib = subtract("z")  # the second input is another parameter: only x is in common
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]))
    x, y = rank_a(st, ia["sub"]), rank_b(st, ib["sub"])
    assert score(st.A, x, y)[:2] == (0, 1)  # no equal signature, one neighbour in common
    made = paired(st)
    consider(st, x, y)
    assert paired(st) == made
    assert [(u, v) for _, _, u, v in st.weak] == [(x, y)]
    consider(st, x, y, final=True)  # it has waited: nothing surer came
    assert paired(st) - made == {(ia["sub"], ib["sub"])}


def test_consider_leaves_equally_good_candidates_as_a_group() -> None:
    a, ia = two_relus()
    b, ib = two_relus()
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]))
    made = paired(st)
    consider(st, rank_a(st, ia["r1"]), rank_b(st, ib["r1"]))
    assert paired(st) == made
    [(us, vs)] = st.groups
    assert sorted(us) == sorted(rank_a(st, ia[k]) for k in ("r1", "r2"))
    assert sorted(vs) == sorted(rank_b(st, ib[k]) for k in ("r1", "r2"))
