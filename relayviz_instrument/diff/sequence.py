"""Order-preserving alignment of two sequences of keys, the way a text diff aligns lines.

Used wherever a diff meets two lists whose items correspond in order: a function's
parameters, the fields of a ``Tuple``, the nodes of a region that a pass rewrote. The common
prefix and suffix are taken first (an edit in a list of equal items lands at the end of their
run, in one piece); keys that occur once in each of the rest anchor it (patience diff: the
longest chain of them in order); what lies between two anchors is aligned by longest common
subsequence when it is small, and left alone when it is large and has no anchor. So the cost
is linear in the lengths, plus a bounded table per gap.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Dict, Hashable, List, Sequence, Tuple

__all__ = ["align_sequences"]

#: Largest gap (cells of its table) aligned by longest common subsequence.
_CELLS = 4096


def align_sequences(xs: Sequence[Hashable], ys: Sequence[Hashable], cells: int = _CELLS, slide: bool = False,
          stretch: int = 1) -> List[Tuple[int, int]]:
    """Index pairs ``(i, j)`` with ``xs[i] == ys[j]``, increasing in both, of a long common
    subsequence of ``xs`` and ``ys`` (the longest when the lists are short). Gaps of more
    than ``cells`` cells (``cells=0``: every gap) are aligned by unique keys only; with
    ``stretch`` above 1, a gap without one by the stretches of up to ``stretch`` items that
    occur once on each side (a run of alike blocks is told apart by its neighbours). With
    ``slide``, an item inserted or deleted in a run of equal items is the run's last, wherever
    the rest of the lists put the gap (the blocks of a chain: a block repeated is its later
    copy)."""
    out: List[Tuple[int, int]] = []
    _gap(xs, ys, 0, len(xs), 0, len(ys), out, cells, stretch)
    out.sort()
    if slide:
        _slide(xs, ys, out)
    return out


def _slide(xs: Sequence[Hashable], ys: Sequence[Hashable], out: List[Tuple[int, int]]) -> None:
    """Move every edit inside a run of equal items to the run's end, in place. A gap aligned
    after its common suffix (an edit further up stopped the prefix) has its runs matched from
    the end, which would put an item repeated in a run at the run's start. So a pure
    insertion or deletion between two pairs is rotated past the item after it while that
    equals its first, and a pair takes the unpaired items equal to it just before it, unless
    its gap holds as many items on each side: those read as items changed one for one."""
    pi = pj = -1
    for t, (i, j) in enumerate(out):
        if i - pi != j - pj:
            while j - 1 > pj and ys[j - 1] == ys[j]:
                j -= 1
            while i - 1 > pi and xs[i - 1] == xs[i]:
                i -= 1
        if t and i == pi + 1 and j > pj + 1 and ys[pj + 1] == ys[j]:
            j = pj + 1  # the inserted ys[pj + 2 .. j] now follow xs[i]
        elif t and j == pj + 1 and i > pi + 1 and xs[pi + 1] == xs[i]:
            i = pi + 1
        out[t] = (i, j)
        pi, pj = i, j


def _gap(xs: Sequence[Hashable], ys: Sequence[Hashable], i0: int, i1: int, j0: int, j1: int,
         out: List[Tuple[int, int]], cells: int, stretch: int = 1) -> None:
    while i0 < i1 and j0 < j1 and xs[i0] == ys[j0]:
        out.append((i0, j0))
        i0 += 1
        j0 += 1
    while i0 < i1 and j0 < j1 and xs[i1 - 1] == ys[j1 - 1]:
        i1 -= 1
        j1 -= 1
        out.append((i1, j1))
    if i0 == i1 or j0 == j1:
        return
    if (i1 - i0) * (j1 - j0) <= cells:
        _table(xs, ys, i0, i1, j0, j1, out)
        return
    anchors = _anchors(xs, ys, i0, i1, j0, j1)
    if not anchors and stretch > 1:
        anchors = _stretches(xs, ys, i0, i1, j0, j1, stretch)
    for i, j in anchors:
        _gap(xs, ys, i0, i, j0, j, out, cells, stretch)
        out.append((i, j))
        i0, j0 = i + 1, j + 1
    if anchors:
        _gap(xs, ys, i0, i1, j0, j1, out, cells, stretch)


def _stretches(xs: Sequence[Hashable], ys: Sequence[Hashable], i0: int, i1: int, j0: int, j1: int,
               longest: int) -> List[Tuple[int, int]]:
    """The first items of the shortest stretches (2, 4, ... up to ``longest`` items) that occur
    once on each side, the longest chain of them in order; each is one level of hashes of
    the one before, so a gap of n items costs n per length tried."""
    hx = [hash(x) for x in xs[i0:i1]]
    hy = [hash(y) for y in ys[j0:j1]]
    k = 1
    while 2 * k <= min(longest, len(hx), len(hy)):
        hx = [hash((hx[t], hx[t + k])) for t in range(len(hx) - k)]
        hy = [hash((hy[t], hy[t + k])) for t in range(len(hy) - k)]
        k *= 2
        chain = [(i0 + i, j0 + j) for i, j in _anchors(hx, hy, 0, len(hx), 0, len(hy))]
        chain = [(i, j) for i, j in chain if list(xs[i:i + k]) == list(ys[j:j + k])]  # (hashes may collide)
        if chain:
            return chain
    return []


def _anchors(xs: Sequence[Hashable], ys: Sequence[Hashable], i0: int, i1: int, j0: int, j1: int
             ) -> List[Tuple[int, int]]:
    """Keys that occur once on each side, the longest chain of them in order."""
    once_x: Dict[Hashable, int] = {}
    for i in range(i0, i1):
        once_x[xs[i]] = -1 if xs[i] in once_x else i
    once_y: Dict[Hashable, int] = {}
    for j in range(j0, j1):
        key = ys[j]
        if once_x.get(key, -1) >= 0:
            once_y[key] = -1 if key in once_y else j
    pairs = sorted((once_x[k], j) for k, j in once_y.items() if j >= 0)
    # Longest increasing subsequence of the j's (patience sorting).
    tails: List[int] = []
    tail_at: List[int] = []
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k] = j
            tail_at[k] = n
        back[n] = tail_at[k - 1] if k else -1
    chain: List[Tuple[int, int]] = []
    n = tail_at[-1] if tail_at else -1
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    chain.reverse()
    return chain


def _table(xs: Sequence[Hashable], ys: Sequence[Hashable], i0: int, i1: int, j0: int, j1: int,
           out: List[Tuple[int, int]]) -> None:
    """Longest common subsequence by dynamic programming; ties go to the earliest pairs."""
    n, m = i1 - i0, j1 - j0
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below, x = table[i], table[i + 1], xs[i0 + i]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if x == ys[j0 + j] else max(below[j], row[j + 1])
    i = j = 0
    while i < n and j < m:
        if xs[i0 + i] == ys[j0 + j]:
            out.append((i0 + i, j0 + j))
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
