"""Propagation up: the users of a pair, paired by operator and the input they read.

From each new pair, :func:`up` groups the unpaired users of both sides by operator and input
position (any position for variadic nodes). Two users alone in their group pair when their
other inputs do not contradict them (:func:`user_pair`); several per side pair first by
content and paired inputs, then by paired inputs alone, the rest by score
(:func:`pair_group`); doubtful ones are weighed (:func:`.scoring.consider`). In
propagation's second pass, users of another operator are looked through
(:func:`.look_through.look_up`). Runs from :func:`.propagation.propagate`, beside
:mod:`.downward`.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from ..graph import VARIADIC_KINDS
from .look_through import look_up
from .scoring import consider, score, used_alike
from .state import SCORED_GROUP, MatchState, unique

__all__ = ["up", "user_pair", "pair_group"]


def up(st: MatchState, a: int, b: int) -> None:
    """Pair the users of a pair: by operator and input position, and among several, by the
    other inputs they read."""
    A, B = st.A, st.B
    pa, pb = A.partner, B.partner
    users_a = A.users[a]
    if len(users_a) == 1:  # the common case, kept cheap
        u, p = users_a[0]
        if pa[u] >= 0:
            return
        ua = users_a
    else:
        ua = [(u, p) for u, p in users_a if pa[u] < 0]
        if not ua:
            return
    ub = [(v, q) for v, q in B.users[b] if pb[v] < 0]
    if not ub:
        return
    if len(ua) == 1 and len(ub) == 1:
        (u, p), (v, q) = ua[0], ub[0]
        if A.l0[u] == B.l0[v] and (p == q or A.kind[u] in VARIADIC_KINDS):
            user_pair(st, u, v)
        elif st.reach:
            look_up(st, A, ua, ub)
            look_up(st, B, ub, ua)
        return
    # (dicts as ordered sets: a node read by thousands of users must not cost their square)
    groups: Dict[Tuple[int, int], Tuple[Dict[int, None], Dict[int, None]]] = {}
    for u, p in ua:
        groups.setdefault((A.l0[u], -1 if A.kind[u] in VARIADIC_KINDS else p), ({}, {}))[0][u] = None
    for v, q in ub:
        group = groups.get((B.l0[v], -1 if B.kind[v] in VARIADIC_KINDS else q))
        if group is not None:
            group[1][v] = None
    for members, others in groups.values():
        if not others:
            continue
        us, vs = list(members), list(others)
        if len(us) == 1 and len(vs) == 1:
            user_pair(st, us[0], vs[0])
        else:
            pair_group(st, us, vs)
    if st.reach:
        look_up(st, A, ua, ub)
        look_up(st, B, ub, ua)


def user_pair(st: MatchState, u: int, v: int) -> None:
    """Two users, the only candidates for each other, of one pair at the same input. If one
    of their other inputs contradicts them (paired elsewhere, or of another operator), the
    pair is considered like any other: a rewired input elsewhere can make another user
    look alike here until more around them is paired."""
    A, B = st.A, st.B
    pa, pb, l0a, l0b, l3a, l3b = A.partner, B.partner, A.l0, B.l0, A.tiers[3], B.tiers[3]
    xs, ys = A.inputs[u], B.inputs[v]
    # (unpaired inputs agree when of one operator, leaves when of one content: two weights
    # of other values tell two convolutions apart)
    if len(xs) == len(ys) and all(pa[x] == y or (pa[x] < 0 and pb[y] < 0 and l0a[x] == l0b[y] and (
            A.inputs[x] or l3a[x] == l3b[y])) for x, y in zip(xs, ys)) and used_alike(st, u, v):
        st.pair(u, v)
    else:
        consider(st, u, v)


def pair_group(st: MatchState, us: List[int], vs: List[int]) -> None:
    """Users of one label at one slot of a pair, several on a side. Those alone on both
    sides to have the same content and read the same pairs pair at once, then those alone
    to read the same pairs (indexes by content and paired inputs); the rest by score."""
    A, B = st.A, st.B
    pa, pb, l3a, l3b = A.partner, B.partner, A.tiers[3], B.tiers[3]
    for with_content in (True, False):
        keys_a = [(l3a[u] if with_content else 0, *[pa[x] for x in A.inputs[u]]) for u in us]
        keys_b = [(l3b[v] if with_content else 0, *B.inputs[v]) for v in vs]
        once_b = unique(keys_b)
        for i, j in ((i, once_b.get(key, -1)) for key, i in unique(keys_a).items()):
            if j >= 0:
                st.pair(us[i], vs[j])
        us = [u for u in us if pa[u] < 0]
        vs = [v for v in vs if pb[v] < 0]
        if not us or not vs:
            return
    if len(us) > SCORED_GROUP or len(vs) > SCORED_GROUP:
        return
    for u in us:
        best = max(vs, key=lambda v: (score(A, u, v), -B.position[v]))
        if pb[best] < 0:
            consider(st, u, best)
