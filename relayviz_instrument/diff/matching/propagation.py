"""Propagation to a fixpoint: from the pairs next to unpaired nodes, to their neighbours.

:func:`settle` runs after every phase that pairs nodes from outside the graph's edges
(anchors, identical sub-graphs, residual signatures, regions, parameters, ties): it extends
the runs (:mod:`.runs`), seeds propagation from the *frontier* (the pairs next to an
unpaired node of a label the other side still has unpaired) and propagates, down to inputs
(:mod:`.downward`) and up to users (:mod:`.upward`), until no round pairs anything; the
pairs that share only one neighbour wait in a queue tried when nothing surer is left. Then
again, looking through inserted and deleted nodes (:mod:`.look_through`).
"""

from __future__ import annotations

import heapq
from typing import List

import numpy as np

from .downward import down
from .runs import runs
from .scoring import consider
from .state import MatchState
from .upward import up

__all__ = ["settle", "frontier", "propagate"]

#: Rounds of re-seeding propagation from the pairs that still have unpaired neighbours.
_ROUNDS = 4


def settle(st: MatchState) -> None:
    """Propagate from the new pairs to a fixpoint, re-seeding from the pairs next to an
    unpaired node (all of them first, then those near what the last round paired); then
    again, looking through inserted and deleted nodes. Looking through waits for plain
    propagation: a node deleted below and one inserted above look alike until the nodes
    around them are paired."""
    for reach in (False, True):
        st.reach = reach
        propagate(st)
        full = True
        for _ in range(_ROUNDS):
            count = st.count
            if st.settled[reach] == count:
                break  # the frontier was propagated from this very state already
            runs(st)
            st.queue = frontier(st, full)
            full = False
            propagate(st)
            if st.count == count:
                st.settled[reach] = count
                break
    st.reach = False


def frontier(st: MatchState, full: bool) -> List[int]:
    """Paired nodes (before ranks) next to an unpaired node, on either side, whose label
    the other side's unpaired nodes have (every step of propagation pairs an unpaired
    neighbour of a pair with a node of its label, so no other pair can lead anywhere);
    unless ``full``, only those next to a pair made since the last call. Also updates
    :attr:`.state.MatchState.open_labels`."""
    A, B = st.A, st.B
    parts = (A.partners(st.count), B.partners(st.count))
    free = [~(part >= 0) & ~s.op_mask() for s, part in ((A, parts[0]), (B, parts[1]))]
    left = [s.l0_array()[mask] for s, mask in zip((A, B), free)]
    st.open_labels = (set(np.unique(left[0]).tolist()), set(np.unique(left[1]).tolist()))
    seeds = np.zeros(A.graph.size, dtype=bool)
    for i, (s, part) in enumerate(((A, parts[0]), (B, parts[1]))):
        flat, owner = s.graph.input_arrays[2], s.graph.input_owner
        paired = part >= 0
        wanted = free[i].copy()
        wanted[free[i]] = np.isin(left[i], left[1 - i])
        nodes = np.concatenate([flat[wanted[owner] & paired[flat]], owner[wanted[flat] & paired[owner]]])
        seeds[nodes if s.is_a else part[nodes]] = True
    if not full:
        recent = np.asarray(st.recent, dtype=np.int64)
        near = np.zeros(A.graph.size, dtype=bool)
        near[recent] = True
        for s, mine, part in ((A, recent, parts[0]), (B, parts[0][recent], parts[1])):
            flat, owner = s.graph.input_arrays[2], s.graph.input_owner
            mark = np.zeros(s.graph.size, dtype=bool)
            mark[mine] = True
            hop = np.concatenate([flat[mark[owner]], owner[mark[flat]]])
            hop = hop if s.is_a else part[hop]
            near[hop[hop >= 0]] = True
        seeds &= near
    st.recent = []
    out: List[int] = np.flatnonzero(seeds).tolist()
    return out


def propagate(st: MatchState) -> None:
    """Pair neighbours of the new pairs; when none are left, try the queued slot pairs, best
    first, each followed by what it implies."""
    pa = st.A.partner
    while True:
        while st.queue:
            batch, st.queue = st.queue, []
            for a in batch:
                b = pa[a]
                down(st, a, b)
                up(st, a, b)
        while st.weak and not st.queue:
            _, _, x, y = heapq.heappop(st.weak)
            if pa[x] < 0 and st.B.partner[y] < 0:
                consider(st, x, y, final=True)
        if not st.queue:
            return
