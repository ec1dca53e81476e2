"""Connected components of a graph given as two arrays of edge ends, vectorized.

Minimum-label hooking with pointer jumping: each round every edge pulls the larger of its two
component labels down to the smaller, and labels are then shortened to their roots. A path
of n nodes takes a handful of rounds, each a few passes over the arrays.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["components"]


def components(n: int, u: NDArray[np.int64], v: NDArray[np.int64]) -> NDArray[np.int64]:
    """For each of ``n`` nodes, the smallest node of its component (edges ``u[i]``--``v[i]``)."""
    label: NDArray[np.int64] = np.arange(n, dtype=np.int64)
    if not len(u):
        return label
    while True:
        lu, lv = label[u], label[v]
        low = np.minimum(lu, lv)
        hooked = label.copy()
        np.minimum.at(hooked, lu, low)
        np.minimum.at(hooked, lv, low)
        while True:
            shorter = hooked[hooked]
            if np.array_equal(shorter, hooked):
                break
            hooked = shorter
        if np.array_equal(hooked, label):
            return label
        label = hooked
