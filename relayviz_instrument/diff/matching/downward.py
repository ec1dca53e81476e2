"""Propagation down: the inputs of a pair, paired slot by slot.

From each new pair, :func:`down` pairs the inputs: by position when both lists are as long
(by alignment when their number differs or the node is variadic: paired inputs by their
pair, then by signature, then by operator), after moving inputs whose signature (else
content) sits at another slot on the other side back to it (:func:`unswap`: ``add(b, a)``
for ``add(a, b)`` is one rewired node). Inputs of equal signature pair with their whole
sub-graph; inputs read by the pair alone on both sides pair at once; the others are weighed
(:func:`.scoring.consider`). Inputs of another operator at a slot are looked through
(:func:`.look_through.look_down`) in propagation's second pass. Runs from
:func:`.propagation.propagate`, beside :mod:`.upward`.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from ..graph import VARIADIC_KINDS
from ..sequence import align_sequences
from .anchors import pair_params
from .look_through import look_down
from .scoring import consider
from .state import MatchState, unique

__all__ = ["down", "align_inputs", "unswap", "slot"]


def down(st: MatchState, a: int, b: int) -> None:
    """Pair the inputs of a pair."""
    A, B = st.A, st.B
    xs, ys = A.inputs[a], B.inputs[b]
    if not xs or not ys:
        return
    if A.kind[a] == "Function" and a not in A.graph.inlined and b not in B.graph.inlined:
        pair_params(st, a, b)  # by name: the graph tells the rest (see pair_params)
        xs, ys = xs[:1], ys[:1]
    pa, pb = A.partner, B.partner
    if len(xs) == 1 and len(ys) == 1:
        x, y = xs[0], ys[0]
        if pa[x] < 0 and pb[y] < 0:
            slot(st, x, y)
        return
    if len(xs) == len(ys) and A.kind[a] not in VARIADIC_KINDS:
        slots = list(zip(xs, ys))
    else:
        slots = align_inputs(st, xs, ys)
    open_slots = [(x, y) for x, y in slots if pa[x] < 0 and pb[y] < 0]
    if len(open_slots) > 1:
        unswap(st, open_slots)
    for x, y in open_slots:
        if pa[x] < 0 and pb[y] < 0:
            slot(st, x, y)


def align_inputs(st: MatchState, xs: Sequence[int], ys: Sequence[int]) -> List[Tuple[int, int]]:
    """An order-preserving alignment of two input lists: paired inputs by their pair,
    unpaired ones by their signature, then by their operator."""
    A, B = st.A, st.B
    pa = A.partner

    def key_a(x: int) -> Tuple[int, int]:
        return (0, pa[x]) if pa[x] >= 0 else (1, A.sig[x])

    def key_b(y: int) -> Tuple[int, int]:
        return (0, y) if B.partner[y] >= 0 else (1, B.sig[y])

    out = [(xs[i], ys[j]) for i, j in align_sequences([key_a(x) for x in xs], [key_b(y) for y in ys])]
    taken_a = {x for x, _ in out}
    taken_b = {y for _, y in out}
    rest_a = [x for x in xs if x not in taken_a and pa[x] < 0]
    rest_b = [y for y in ys if y not in taken_b and B.partner[y] < 0]
    if rest_a and rest_b:
        out += [(rest_a[i], rest_b[j])
                for i, j in align_sequences([A.l0[x] for x in rest_a], [B.l0[y] for y in rest_b])]
    return out


def unswap(st: MatchState, slots: List[Tuple[int, int]]) -> None:
    """Inputs whose signature (else content) is at another slot on the other side, and not
    at their own, moved there: pair them so (``add(b, a)`` for ``add(a, b)`` is one
    rewired node)."""
    A, B = st.A, st.B
    for keys_a, keys_b in ((A.sig, B.sig), (A.tiers[3], B.tiers[3])):
        if all(keys_a[x] == keys_b[y] for x, y in slots):
            return
        theirs = {keys_b[y] for _, y in slots}
        moved = [i for i, (x, y) in enumerate(slots) if keys_a[x] != keys_b[y] and keys_a[x] in theirs]
        if not moved:
            continue
        at_b = unique([keys_b[y] for _, y in slots])
        at_a = unique([keys_a[x] for x, _ in slots])
        for i in moved:
            x, y = slots[i]
            j = at_b.get(keys_a[x], -1)
            if j >= 0 and j != i and at_a.get(keys_a[x]) == i:
                other = slots[j][1]
                if A.partner[x] < 0 and B.partner[other] < 0:
                    if A.sig[x] == B.sig[other]:
                        st.walk(x, other)
                    else:
                        st.pair(x, other)


def slot(st: MatchState, x: int, y: int) -> None:
    """``x`` and ``y`` are the inputs at one slot of a pair."""
    A, B = st.A, st.B
    if A.l0[x] != B.l0[y]:
        if st.reach:
            look_down(st, x, y)
        return
    if A.sig[x] == B.sig[y]:
        st.walk(x, y)
        return
    if A.users.count(x) == 1 and B.users.count(y) == 1 and A.tiers[2][x] == B.tiers[2][y]:
        # Read by the pair alone on both sides: nothing else can claim them, unless an
        # input already paired says otherwise.
        pa, pb = A.partner, B.partner
        if all(pa[i] < 0 for i in A.inputs[x]) and all(pb[j] < 0 for j in B.inputs[y]):
            st.pair(x, y)
            return
    consider(st, x, y)
