"""Op nodes: paired last, by the calls that use them.

An Op node (``nn.conv2d`` with its attributes) is shared by every call of that operator, so
it has no place of its own in the graph: it is what the calls that use it are. Every other
phase leaves Op nodes alone, and this one runs after all of them: an Op pairs with the Op of
the calls its calls are paired with (the most votes first), and the Op nodes left with an
identical one, in order.
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np

from .state import MatchState

__all__ = ["pair_ops"]


def pair_ops(st: MatchState) -> None:
    """Pair Op nodes by the calls that use them, then identical ones left over in order."""
    A, B = st.A, st.B
    ga, gb = A.graph, B.graph
    part = np.asarray(A.partner, dtype=np.int64)
    op_a, op_b = np.asarray(ga.op_of, dtype=np.int64), np.asarray(gb.op_of, dtype=np.int64)
    calls = np.flatnonzero((op_a >= 0) & (part >= 0))
    theirs = op_b[part[calls]]
    mine = op_a[calls][theirs >= 0]
    theirs = theirs[theirs >= 0]
    if len(mine):
        votes, count = np.unique(np.stack([mine, theirs], axis=1), axis=0, return_counts=True)
        for i in np.lexsort((votes[:, 1], votes[:, 0], -count)).tolist():
            st.pair(int(votes[i, 0]), int(votes[i, 1]))
    left_a: Dict[int, List[int]] = {}
    for a in (r for r, k in enumerate(A.kind) if k == "Op"):
        if A.partner[a] < 0:
            left_a.setdefault(A.tiers[3][a], []).append(a)
    for b in (r for r, k in enumerate(B.kind) if k == "Op"):
        if B.partner[b] < 0:
            members = left_a.get(B.tiers[3][b])
            if members:
                st.pair(members.pop(0), b)
