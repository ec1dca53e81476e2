"""Residual signatures: the nodes still unpaired, hashed again with their paired inputs as pairs.

Once propagation has settled, an unpaired node's signature may differ from its counterpart's
only because something below it changed. Hashed again at tier 3, 2, 1 then 0
(:func:`..signatures.residual_signatures`), with every input that is already paired counted
as that pair, a residual signature unique on both sides pairs a node whose value, type or
attributes changed between nodes that did not: at tier 3 at once; below, only with an equal
signature or a paired neighbour in common; at tier 0, also with equal attributes or users
alike. The rest, and groups of several per side, go to the tie-break (:mod:`.ties`). Runs
after the first propagation, and again at tiers 1 and 0 after each round of the tie-break.
"""

from __future__ import annotations

from typing import Dict, List

from ..signatures import residual_signatures
from .scoring import related, used_alike
from .state import MatchState, Side

__all__ = ["residual", "alike", "pair_residual"]


def residual(st: MatchState, tier: int) -> None:
    """Pair the unpaired nodes whose residual signature at ``tier`` is unique on both sides."""
    if st.residual_done.get(tier) == st.count:
        return  # nothing was paired since this tier's groups were last looked at
    st.residual_done[tier] = st.count
    A, B = st.A, st.B
    cand_a, cand_b = alike(st, A, tier), alike(st, B, tier)
    if not cand_a or not cand_b:
        return
    ra = residual_signatures(A.graph, A.tiers[tier], A.partner, True, cand_a)
    rb = residual_signatures(B.graph, B.tiers[tier], B.partner, False, cand_b)
    groups_a: Dict[int, List[int]] = {}
    for a, sig in ra.items():
        groups_a.setdefault(sig, []).append(a)
    groups_b: Dict[int, List[int]] = {}
    for b, sig in rb.items():
        groups_b.setdefault(sig, []).append(b)
    position = A.position  # users before inputs
    common = sorted((-position[m[0]], sig) for sig, m in groups_a.items() if sig in groups_b)
    for _, sig in common:
        members_a = [a for a in groups_a[sig] if A.partner[a] < 0]
        members_b = [b for b in groups_b[sig] if B.partner[b] < 0]
        if len(members_a) == 1 and len(members_b) == 1 and (tier == 3 or related(st, members_a[0], members_b[0]) and (
                tier >= 1 or A.tiers[1][members_a[0]] == B.tiers[1][members_b[0]]
                or used_alike(st, members_a[0], members_b[0]))):
            pair_residual(st, members_a[0], members_b[0], ra, rb)
        elif members_a and members_b:
            st.groups.append((members_a, members_b))


def alike(st: MatchState, s: Side, tier: int) -> List[int]:
    """The unpaired nodes of ``s`` whose tier label an unpaired node of the other side has."""
    mine, theirs = s.unpaired(st.count), s.other.unpaired(st.count)
    if not mine or not theirs:
        return []
    labels, other = s.tiers[tier], s.other.tiers[tier]
    wanted = {other[r] for r in theirs}
    return [r for r in mine if labels[r] in wanted]


def pair_residual(st: MatchState, a: int, b: int, ra: Dict[int, int], rb: Dict[int, int]) -> None:
    """Pair ``a`` with ``b`` and, below them, their unpaired inputs of equal residual
    signatures (``ra``, ``rb``) position by position."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if not st.pair(x, y):
            continue
        for i, j in zip(st.A.inputs[x], st.B.inputs[y]):
            if st.A.partner[i] < 0 and st.B.partner[j] < 0 and ra.get(i) == rb.get(j):
                stack.append((i, j))
