"""Looking through inserted and deleted nodes: pairs across up to three nodes one side lacks.

When the inputs at one slot of a pair (or its users at one input) differ in operator, one
side may have nodes inserted there (``expand_dims`` then ``layout_transform`` before an
``add``) or deleted. :func:`look_down` pairs a node with one below the other side's node at
that slot, :func:`look_up` with one above. Propagation (:mod:`.downward`, :mod:`.upward`)
calls them only in its second pass (:attr:`.state.MatchState.reach`, set by
:func:`.propagation.settle`): a node deleted below and one inserted above look alike until
the nodes around them are paired, so looking through waits for plain propagation.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from .scoring import rivals, score
from .state import MAX_GROUP, MatchState, Side

__all__ = ["look_down", "look_up", "below", "climb", "plausible", "evidence"]

#: Inserted or deleted nodes that propagation looks through.
_LOOK_THROUGH = 3


def look_down(st: MatchState, x: int, y: int) -> None:
    """``x`` and ``y`` take the same input slot but differ in kind or operator: one side may
    have nodes inserted (a ``layout_transform``) or deleted there. Pair ``x`` with a node
    below ``y`` (or ``y`` with one below ``x``). Right below one inserted node, a node that
    has inputs needs no more evidence; deeper, or a leaf, needs equal signatures or an input
    already paired with the corresponding input. When both readings are possible, the one
    with evidence wins, and neither if both have it."""
    A, B = st.A, st.B
    under_y = below(A, x, y) if A.l0[x] in st.open_labels[1] else None
    under_x = below(B, y, x) if B.l0[y] in st.open_labels[0] else None
    if under_y is not None and under_x is not None:
        strong_y, strong_x = evidence(A, x, under_y), evidence(B, y, under_x)
        if strong_y == strong_x:
            return
        under_x, under_y = (None, under_y) if strong_y else (under_x, None)
    if under_y is not None:
        st.pair(x, under_y)
    elif under_x is not None:
        st.pair(under_x, y)


def below(s: Side, x: int, start: int) -> Optional[int]:
    """An unpaired node of ``x``'s label below ``start`` (of the other side) for ``x``."""
    o = s.other
    label = s.l0[x]
    level = [start]
    for depth in range(1, _LOOK_THROUGH + 1):
        nxt = []
        for r in level:
            for i in o.inputs[r]:
                if o.partner[i] >= 0:
                    continue
                if o.l0[i] == label and plausible(s, x, i, depth):
                    return i
                nxt.append(i)
        level = nxt
    return None


def plausible(s: Side, x: int, y: int, depth: int) -> bool:
    """Whether ``x`` (of ``s``) may pair with ``y`` found ``depth`` nodes away: evidence
    (none needed right below one inserted node that has inputs), and no rival as good."""
    if not ((depth == 1 and s.inputs[x]) or evidence(s, x, y)):
        return False
    mark = score(s, x, y)
    return not (rivals(s, x, y, mark, []) or rivals(s.other, y, x, mark, []))


def evidence(s: Side, x: int, y: int) -> bool:
    """Whether ``x`` (of ``s``) and ``y`` have equal signatures or an input paired with the
    corresponding input."""
    o = s.other
    if s.sig[x] == o.sig[y]:
        return True
    xs, ys = s.inputs[x], o.inputs[y]
    partner = s.partner
    if len(xs) == len(ys):
        return any(partner[i] == j for i, j in zip(xs, ys))
    yset = set(ys)
    return any(partner[i] in yset for i in xs)


def look_up(st: MatchState, s: Side, mine: List[Tuple[int, int]], theirs: List[Tuple[int, int]]) -> None:
    """Users of a pair still unpaired may sit above nodes inserted on the other side: climb
    from each of the other side's unpaired users through unpaired nodes to one of the
    label of a user of ``s``, reached at the same slot.

    Not when the node taken as inserted has a counterpart among the users of the user:
    then that user was deleted, which one edit explains, and looking from the other side
    finds it."""
    if len(mine) > MAX_GROUP or len(theirs) > MAX_GROUP:
        return  # a node read by many (a shared weight or input): climb stops at such nodes too
    o = s.other
    sp, op_, sl, ol = s.partner, o.partner, s.l0, o.l0
    wanted = st.open_labels[1 if s.is_a else 0]
    for u, p in mine:
        if sp[u] >= 0 or sl[u] not in wanted:
            continue
        for v, _ in theirs:
            if op_[v] >= 0 or ol[v] == sl[u]:
                continue
            if any(sp[t] < 0 and sl[t] == ol[v] for t, _ in s.users[u]):
                continue
            w = climb(o, v, sl[u], p)
            if w is not None and plausible(s, u, w, 1):
                st.link(s, u, w)
                break


def climb(o: Side, start: int, label: int, slot: int) -> Optional[int]:
    """The one unpaired node of ``label`` reached at input ``slot`` going up from ``start``
    through at most ``_LOOK_THROUGH`` unpaired nodes of other labels."""
    partner, l0, users = o.partner, o.l0, o.users
    found = None
    level = [start]
    for _ in range(_LOOK_THROUGH):
        nxt = []
        for r in level:
            theirs = users[r]
            if len(theirs) > MAX_GROUP:
                continue
            for w, q in theirs:
                if partner[w] >= 0:
                    continue
                if l0[w] == label:
                    if q == slot:
                        if found is not None and found != w:
                            return None
                        found = w
                else:
                    nxt.append(w)
        if found is not None:
            return found
        level = nxt
    return None
