"""How a candidate pair is judged: its score, its rivals, and the verdict on it.

Propagation (:mod:`.downward`, :mod:`.upward`), looking through inserted nodes
(:mod:`.look_through`), the residual signatures, the regions and the tie-break all weigh
candidates the same way, so the weighing is written once here. A candidate's evidence is
what it shares with its partner-to-be beyond the label: an equal signature, paired inputs
and users in common, equal operators below, an equal type, equal attributes
(:func:`score`). :func:`consider` pairs a candidate that nothing else agrees with as well,
puts off one that shares a single neighbour (the weak queue of :mod:`.propagation`), and
leaves equally good ones as a group for the tie-break (:mod:`.ties`).
"""

from __future__ import annotations

import heapq
from typing import Dict, List, Tuple

from .state import MAX_GROUP, MatchState, Score, Side

__all__ = ["consider", "score", "agreement", "inputs_agreeing", "candidates", "rivals", "used_alike", "related",
           "mutual_best"]


def consider(st: MatchState, x: int, y: int, final: bool = False) -> None:
    """Pair ``x`` with ``y`` if no other candidate of either agrees as well with its paired
    neighbours. With one neighbour in common, they wait in the queue (``final``: they have
    waited), and only if their attributes are equal or their users alike. Equally good
    candidates wait as a group."""
    A, B = st.A, st.B
    mark = score(A, x, y)
    rivals_b: List[int] = []
    rivals_a: List[int] = []
    if rivals(A, x, y, mark, rivals_b) or rivals(B, y, x, mark, rivals_a):
        return
    if rivals_a or rivals_b:
        st.groups.append(([x] + rivals_a, [y] + rivals_b))
        return
    if mark[0] or mark[1] >= 2:
        st.pair(x, y)
        return
    if not (mark[4] and (mark[5] or used_alike(st, x, y))):
        return  # one neighbour in common, another type, or other attributes and users: not enough
    if final:
        st.pair(x, y)
        return
    level = 2 * mark[3] + mark[4] + mark[5]
    st.sequence += 1
    heapq.heappush(st.weak, (-level, st.sequence, x, y))


def score(s: Side, x: int, y: int) -> Score:
    """How alike ``x`` (of ``s``) and ``y`` are: equal signatures, paired neighbours in
    common (then inputs in common, see :func:`inputs_agreeing`), inputs of equal operators,
    equal types, attributes."""
    o = s.other
    l0, ol0 = s.l0, o.l0
    return (int(s.sig[x] == o.sig[y]), agreement(s, x, y), inputs_agreeing(s, x, y),
            int([l0[i] for i in s.inputs[x]] == [ol0[j] for j in o.inputs[y]]),
            int(s.tiers[2][x] == o.tiers[2][y]), int(s.tiers[1][x] == o.tiers[1][y]))


def agreement(s: Side, x: int, y: int) -> int:
    """Paired inputs and users that ``x`` (of ``s``) and ``y`` have in common."""
    o = s.other
    partner = s.partner
    xs, ys = s.inputs[x], o.inputs[y]
    count = 0
    if len(xs) == len(ys):
        for i, j in zip(xs, ys):
            if partner[i] == j:
                count += 1
    elif xs and ys:
        yset = set(ys)
        count = sum(1 for i in xs if partner[i] in yset)
    users_y = o.users[y]
    if users_y:
        theirs = set(users_y)
        count += sum(1 for u, p in s.users[x] if partner[u] >= 0 and (partner[u], p) in theirs)
    return count


def inputs_agreeing(s: Side, x: int, y: int) -> int:
    """Paired inputs in common, position by position, twice those that only ``x`` reads and
    only ``y``: of two readings that agree as much, the one that keeps what a node computes
    from wins over the one that keeps who reads it, and a node's own weight says more than
    the activation its siblings read too."""
    o = s.other
    partner, mine, theirs = s.partner, s.users, o.users
    return sum(1 + (mine.count(i) == 1 and theirs.count(j) == 1)
               for i, j in zip(s.inputs[x], o.inputs[y]) if partner[i] == j)


def candidates(s: Side, x: int) -> List[int]:
    """Unpaired nodes of the other side with ``x``'s label that read a partner of one of
    ``x``'s inputs, or sit at the slot of a partner of one of ``x``'s users."""
    o = s.other
    partner, other_partner, l0, label = s.partner, o.partner, o.l0, s.l0[x]
    out: List[int] = []
    for i in s.inputs[x]:
        j = partner[i]
        if j >= 0:
            theirs = o.users[j]
            if len(theirs) <= MAX_GROUP:
                out += [v for v, _ in theirs if other_partner[v] < 0 and l0[v] == label]
    for u, p in s.users[x]:
        v = partner[u]
        if v >= 0:
            ins = o.inputs[v]
            if p < len(ins):
                w = ins[p]
                if other_partner[w] < 0 and l0[w] == label:
                    out.append(w)
    return out


def rivals(s: Side, x: int, y: int, mark: Score, equal: List[int]) -> bool:
    """Whether ``x`` (of ``s``) has a candidate that agrees better than ``y`` (whose score is
    ``mark``); candidates that agree as well are added to ``equal``."""
    for c in candidates(s, x):
        if c == y or c in equal:
            continue
        theirs = score(s, x, c)  # agreement is symmetric: comparable with ``mark``
        if theirs > mark:
            return True
        if theirs == mark:
            equal.append(c)
    return False


def used_alike(st: MatchState, u: int, v: int) -> bool:
    """Whether ``u`` (before) and ``v`` (after) have users of one operator at one input
    position, or none: a block deleted above a shared input leaves a user there that reads
    like the next one up, but what reads it does not."""
    A, B = st.A, st.B
    mine, theirs = A.users[u], B.users[v]
    if not mine or not theirs:
        return True
    seen = {(A.l0[w], p) for w, p in mine}
    return any((B.l0[w], q) in seen for w, q in theirs)


def related(st: MatchState, a: int, b: int) -> bool:
    """Evidence beyond labels: equal signatures, or a paired input or user in common."""
    return st.A.sig[a] == st.B.sig[b] or agreement(st.A, a, b) > 0


def mutual_best(scores: Dict[Tuple[int, int], int]) -> Dict[int, int]:
    """The pairs ``(a, b)`` of ``scores`` each of whose sides scores highest with the other,
    with no tie on either side: ``{a: b}``. The regions and the operator rewrites pick their
    pairs this way."""
    best_a: Dict[int, Tuple[int, int]] = {}  # a -> (score, b or -1 on a tie)
    best_b: Dict[int, Tuple[int, int]] = {}
    for (a, b), value in scores.items():
        for best, own, other in ((best_a, a, b), (best_b, b, a)):
            held = best.get(own)
            if held is None or value > held[0]:
                best[own] = (value, other)
            elif value == held[0]:
                best[own] = (value, -1)
    return {a: b for a, (_, b) in best_a.items() if b >= 0 and best_b[b][1] == a}
