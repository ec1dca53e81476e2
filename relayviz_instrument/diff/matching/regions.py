"""Regions: the unpaired computations of two regions that border the same pairs, aligned.

A region is a connected set of unpaired nodes; its border, the pairs next to it. What a
pass left in place between what it rewrote (a ``nn.relu`` between two batch norms that
SimplifyInference expanded) is unpaired after propagation and the residual signatures,
because its neighbours on both sides changed; but its region borders the same pairs as its
counterpart's, and the two read alike in data-flow order. Runs once, after the residual
signatures have paired what they can and before the parameters left and the tie-break.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from ..components import components
from ..sequence import align_sequences
from .residual import alike
from .scoring import agreement, mutual_best, used_alike
from .state import MatchState, Ranks, Side

__all__ = ["regions", "region_borders", "bordered"]


def regions(st: MatchState) -> None:
    """Align the unpaired computations of two regions that border the same pairs.

    A region is a connected set of unpaired nodes; its border, the pairs next to it. A
    region of each side whose borders share the most pairs (and no other region's more)
    are aligned in data-flow order by operator, nodes with inputs only: what a pass left
    in place between what it rewrote (a ``nn.relu`` between two expanded batch norms).
    A node with paired neighbours pairs only with one that shares one of them. Only
    regions holding a node of an operator unpaired on the other side are looked at."""
    A, B = st.A, st.B
    found = []
    for s in (A, B):
        members: Dict[int, List[int]] = {}
        candidates = [r for r in alike(st, s, 0) if s.inputs[r]]
        if not candidates:
            return
        region, borders = region_borders(s, s.partners(st.count))
        for r in candidates:
            members.setdefault(int(region[r]), []).append(r)
        keep = np.isin(borders[0], np.fromiter(members, dtype=np.int64, count=len(members)))
        found.append((members, borders[0][keep], borders[1][keep]))
    (members_a, region_a, border_a), (members_b, region_b, border_b) = found
    by_border: Dict[int, List[int]] = {}
    for k, a in zip(region_b.tolist(), border_b.tolist()):
        by_border.setdefault(a, []).append(k)
    shared: Dict[Tuple[int, int], int] = {}
    for k, a in zip(region_a.tolist(), border_a.tolist()):
        for m in by_border.get(a, ()):
            shared[(k, m)] = shared.get((k, m), 0) + 1
    chosen = mutual_best(shared)  # region of A -> region of B
    for k in sorted(chosen):
        m = chosen[k]
        xs = sorted(members_a[k], key=A.position.__getitem__)
        ys = sorted(members_b[m], key=B.position.__getitem__)
        for i, j in align_sequences([A.l0[x] for x in xs], [B.l0[y] for y in ys]):
            x, y = xs[i], ys[j]
            if bordered(A, x) and bordered(B, y) and not agreement(A, x, y):
                continue
            if A.tiers[1][x] != B.tiers[1][y] and not used_alike(st, x, y):
                continue
            st.pair(x, y)


def region_borders(s: Side, part: Ranks) -> Tuple[Ranks, Tuple[Ranks, Ranks]]:
    """Each node's region (the smallest node of its connected set of unpaired nodes, through
    inputs), and the border: ``(region, pair's before rank)`` for every edge out of a region."""
    flat, owner = s.graph.input_arrays[2], s.graph.input_owner
    paired = part >= 0
    free = ~paired & ~s.op_mask()
    inner = free[owner] & free[flat]
    region = components(len(part), owner[inner], flat[inner])
    out_up = free[owner] & paired[flat]  # a region's node reads a pair
    out_down = free[flat] & paired[owner]  # a pair reads a region's node
    regions = np.concatenate([region[owner[out_up]], region[flat[out_down]]])
    pairs = np.concatenate([flat[out_up], owner[out_down]])
    if not s.is_a:
        pairs = part[pairs]
    key = np.unique(np.stack([regions, pairs], axis=1), axis=0) if len(pairs) else np.zeros((0, 2), np.int64)
    return region, (key[:, 0], key[:, 1])


def bordered(s: Side, x: int) -> bool:
    """Whether ``x`` has a paired input or user."""
    partner = s.partner
    return any(partner[i] >= 0 for i in s.inputs[x]) or any(partner[u] >= 0 for u, _ in s.users[x])
