"""Ties and twins: the groups of equal candidates nothing else separated, and twins swapped.

Propagation and the residual signatures leave candidates that agree equally well as groups
(:attr:`.state.MatchState.groups`). :func:`break_ties` pairs them last, when every other
phase has had its say: first only the pairs strictly best for both sides, then (``final``)
the first best in canonical order; nodes that share nothing but their label stay unpaired.
Then :func:`swap_twins`: a removed node whose twin (same signature) was paired takes the
twin's place when more of the pair's users read it (EliminateCommonSubexpr keeps the node
most users already read), which only the finished pairing can tell.
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

from .scoring import related, score
from .state import SCORED_GROUP, MatchState, Score, Side

__all__ = ["break_ties", "swap_twins", "users_agreeing", "move"]


def break_ties(st: MatchState, final: bool) -> None:
    """Pair the groups of equal candidates: small ones by score, strictly best first
    (``final``: first best in canonical order), large ones in canonical order; nodes that
    share nothing but their label stay unpaired."""
    A, B = st.A, st.B
    groups, st.groups = st.groups, []
    seen: Set[Tuple[Tuple[int, ...], Tuple[int, ...]]] = set()
    for us, vs in groups:
        us = sorted({u for u in us if A.partner[u] < 0}, key=A.position.__getitem__)
        vs = sorted({v for v in vs if B.partner[v] < 0}, key=B.position.__getitem__)
        key = (tuple(us), tuple(vs))
        if not us or not vs or key in seen:
            continue
        seen.add(key)
        if len(us) > SCORED_GROUP or len(vs) > SCORED_GROUP:
            if final:
                for u, v in zip(us, vs):
                    if related(st, u, v):
                        st.pair(u, v)
            else:
                st.groups.append((us, vs))
            continue
        scores: Dict[Tuple[int, int], Score] = {(u, v): score(A, u, v) for u in us for v in vs if A.l0[u] == B.l0[v]}
        ranked = sorted(scores, key=lambda uv: (tuple(-s for s in scores[uv]),
                                                A.position[uv[0]], B.position[uv[1]]))
        left = False
        for u, v in ranked:
            if A.partner[u] >= 0 or B.partner[v] >= 0:
                continue
            s = scores[(u, v)]
            if not (s[0] or s[1]):
                continue  # nothing but the label in common
            if not final and (
                    any(scores.get((u, w), ()) >= s for w in vs if w != v and B.partner[w] < 0)
                    or any(scores.get((w, v), ()) >= s for w in us if w != u and A.partner[w] < 0)):
                left = True  # not strictly the best for both: wait for the final round
                continue
            st.pair(u, v)
        if left:
            st.groups.append((us, vs))


def swap_twins(st: MatchState, s: Side) -> None:
    """Give a pair to the unpaired twin (same signature) that more of its users agree with."""
    partner, sig = s.partner, s.sig
    unpaired = s.unpaired(st.count)
    if not unpaired:
        return
    wanted = {sig[r] for r in unpaired}
    paired_by_sig: Dict[int, List[int]] = {}
    for r in range(len(partner)):
        if partner[r] >= 0 and sig[r] in wanted:
            paired_by_sig.setdefault(sig[r], []).append(r)
    for r in unpaired:
        if partner[r] >= 0:
            continue
        for twin in paired_by_sig.get(sig[r], ()):
            if partner[twin] < 0:
                continue
            gain = users_agreeing(s, r, partner[twin]) - users_agreeing(s, twin, partner[twin])
            if gain > 0:
                move(s, twin, r)
                break


def users_agreeing(s: Side, x: int, y: int) -> int:
    """Users of ``x`` (of ``s``) paired with a user of ``y`` that reads it at the same input."""
    partner = s.partner
    theirs = set(s.other.users[y])
    return sum(1 for u, p in s.users[x] if partner[u] >= 0 and (partner[u], p) in theirs)


def move(s: Side, old: int, new: int) -> None:
    """Move the pairs of ``old``'s sub-graph to the corresponding nodes of ``new``'s."""
    mine, theirs = s.partner, s.other.partner
    s.cached = s.other.cached = (-1, s.cached[1], [])  # the arrays no longer tell
    stack = [(old, new)]
    while stack:
        x, y = stack.pop()
        if x == y or mine[x] < 0 or mine[y] >= 0:
            continue
        partner = mine[x]
        mine[x] = -1
        mine[y] = partner
        theirs[partner] = y
        stack.extend(zip(s.inputs[x], s.inputs[y]))
