"""The residual signatures phase of the matcher (diff/matching/residual.py): unpaired nodes
hashed again with their paired inputs as pairs, tier by tier."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import pair_ids, paired, state
from relayviz_instrument.diff.matching.residual import residual


def add_constant(value: float) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = relu(add(x, value))."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["const"] = b.const(value)
    ids["add"] = b.call("add", ids["x"], ids["const"])
    ids["relu"] = b.call("nn.relu", ids["add"])
    ids["main"] = b.function(ids["relu"], [ids["x"]])
    return b.document(), ids


def test_residual_pairs_a_value_change_at_the_tier_that_ignores_values() -> None:
    a, ia = add_constant(1.0)
    b, ib = add_constant(2.0)
    st = state(a, b)
    pair_ids(st, (ia["x"], ib["x"]), (ia["main"], ib["main"]))
    made = paired(st)
    residual(st, 3)  # values count at tier 3: the constants, and all above them, differ
    assert paired(st) == made
    residual(st, 2)
    assert paired(st) - made == {(ia[k], ib[k]) for k in ("const", "add", "relu")}


def test_residual_below_tier_3_leaves_a_pair_without_evidence_to_the_tie_break() -> None:
    a, ia = add_constant(1.0)
    b, ib = add_constant(2.0)
    st = state(a, b)  # nothing paired yet
    residual(st, 2)
    # x has an equal signature; the nodes above it share nothing paired: they wait, one group each.
    assert paired(st) == {(ia["x"], ib["x"])}
    ids_a, ids_b = st.A.graph.doc_id, st.B.graph.doc_id
    groups = {(tuple(ids_a[u] for u in us), tuple(ids_b[v] for v in vs)) for us, vs in st.groups}
    assert groups == {((ia[k],), (ib[k],)) for k in ("const", "add", "relu", "main")}
