"""Identical sub-graphs: nodes whose structural signature occurs once on each side.

Equal signatures mean equal sub-graphs (read as trees, :mod:`..signatures`), so a signature
that occurs once in each document names the same computation in both. These pairs are made
right after the anchors, in one vectorized step and without propagating from them: they are
the sure pairs that the runs (:mod:`.runs`) extend and the frontier of propagation
(:mod:`.propagation`) starts from, and what lies below them is paired there.
"""

from __future__ import annotations

import numpy as np

from .state import MatchState

__all__ = ["exact"]


def exact(st: MatchState) -> None:
    """Nodes whose signature occurs once on each side: the roots of identical sub-graphs,
    paired at once (what lies below them is paired by the runs and propagation)."""
    A, B = st.A, st.B
    sa = np.array(A.sig, dtype=np.int64)
    sb = np.array(B.sig, dtype=np.int64)
    keys_a, first_a, count_a = np.unique(sa, return_index=True, return_counts=True)
    keys_b, first_b, count_b = np.unique(sb, return_index=True, return_counts=True)
    once_a, once_b = count_a == 1, count_b == 1
    _, ia, ib = np.intersect1d(keys_a[once_a], keys_b[once_b], assume_unique=True, return_indices=True)
    st.bulk(first_a[once_a][ia], first_b[once_b][ib])
