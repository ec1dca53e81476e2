"""Runs: the bulk of an edited graph, paired the way a text diff extends a match of unique lines.

From each pair made so far, the stretch of equal lines above and below it in the two
documents' topological orders (:func:`..signatures.line_keys`: a node's label and where its
inputs and users are) is paired, vectorized: most of an edited graph is paired here, in time
proportional to the graphs. Runs are extended at the start of every round of propagation
(:func:`.propagation.settle`), so they start from the sure pairs (anchors, blocks, identical
sub-graphs) and later from the pairs propagation and the residual signatures made.
"""

from __future__ import annotations

from typing import List, Tuple, Union

import numpy as np

from ..index import IndexedDocument
from .state import Mask, MatchState, Ranks

__all__ = ["runs", "Lines"]

#: Lines compared at a time when a run is extended from a few pairs.
_CHUNK = 64


def runs(st: MatchState) -> None:
    """Pair runs of equal lines (:func:`..signatures.line_keys`) in the two documents'
    topological orders around the pairs made so far, the way a text diff extends a match
    of unique lines: on each diagonal (position after minus position before) of a pair,
    the maximal stretch of equal lines through it whose nodes are unpaired on both sides.
    Cost: one vectorized pass per diagonal with many pairs, a few chunks per stretch on
    the others."""
    if st.count == st.runs_done:
        return
    st.runs_done = st.count
    A, B = st.A, st.B
    if st.lines is None:
        # Op nodes, and parameters known by position alone, are not paired by runs.
        skip_a, skip_b = A.op_mask().copy(), B.op_mask().copy()
        skip_a[list(st.ia.labels.positional)] = True
        skip_b[list(st.ib.labels.positional)] = True
        st.lines = Lines(st.ia, st.ib, skip_a, skip_b)
    lines = st.lines
    lines.update(A.partners(st.count), B.partners(st.count))
    anchors = np.flatnonzero((lines.at >= 0) & ~lines.op_a)
    if not len(anchors):
        return
    diagonal = lines.at[anchors] - anchors
    order = np.lexsort((anchors, diagonal))
    anchors, diagonal = anchors[order], diagonal[order]
    cuts = np.flatnonzero(np.diff(diagonal)) + 1
    taken: List[Ranks] = []
    shifts: List[Ranks] = []
    sparse: List[Ranks] = []
    for group in np.split(np.arange(len(anchors)), cuts):
        d = int(diagonal[group[0]])
        lo, hi = max(0, -d), min(lines.na, lines.nb - d)
        if hi <= lo:
            continue
        if len(group) * _CHUNK < hi - lo:
            sparse.append(group)
            continue
        found = lines.runs_on(d, lo, hi)
        lines.take(found, d)
        taken.append(found)
        shifts.append(np.full(len(found), d, dtype=np.int64))
    if sparse:
        found, shift, upward = lines.runs_near(anchors, diagonal, np.concatenate(sparse))
        # Where two runs claim a node, the one that came up from a pair below it wins:
        # a node is what it computes from more than who reads it.
        order = np.argsort(~upward, kind="stable")
        taken.append(found[order])
        shifts.append(shift[order])
    if taken:
        found, shift = np.concatenate(taken), np.concatenate(shifts)
        xs, ys = lines.consistent(lines.topo_a[found], lines.topo_b[found + shift])
        st.bulk(xs, ys)


class Lines:
    """The two documents' line keys in topological order, and what runs of equal lines need
    of the pairs made so far (refreshed by :meth:`update`)."""

    def __init__(self, ia: IndexedDocument, ib: IndexedDocument, ops_a: Mask, ops_b: Mask) -> None:
        self.ka, self.kb = ia.line_keys(), ib.line_keys()
        self.na, self.nb = len(self.ka), len(self.kb)
        self.topo_a = np.asarray(ia.graph.topo, dtype=np.int64)
        self.topo_b = np.asarray(ib.graph.topo, dtype=np.int64)
        self.pos_b = np.asarray(ib.graph.position, dtype=np.int64)
        self.op_a, self.op_b = ops_a[self.topo_a], ops_b[self.topo_b]
        self.inputs_a, self.inputs_b = ia.graph.input_arrays, ib.graph.input_arrays

    def update(self, partner_a: Ranks, partner_b: Ranks) -> None:
        """Take the pairs as they are now (partners by rank, -1: unpaired)."""
        self.partner_a, self.partner_b = partner_a, partner_b
        by_position = partner_a[self.topo_a]
        self.at = np.full(len(by_position), -1, dtype=np.int64)  # each partner's position
        paired = by_position >= 0
        self.at[paired] = self.pos_b[by_position[paired]]
        self.free_a = (by_position < 0) & ~self.op_a
        self.free_b = (partner_b[self.topo_b] < 0) & ~self.op_b

    def take(self, found: Ranks, d: int) -> None:
        """Mark the lines at ``found`` (before side) on diagonal ``d`` as no longer free."""
        self.free_a[found] = False
        self.free_b[found + d] = False

    def good(self, span: Ranks, d: Union[Ranks, int]) -> Tuple[Mask, Mask]:
        """``(good, both free)`` for positions ``span`` (before side) on diagonal(s) ``d``: equal
        lines, both free or already paired with each other (or an Op line on both sides), and,
        if free, no input paired with something else than the other's input at its position
        (a run does not run past a pair made otherwise)."""
        other = span + d
        both_free = self.free_a[span] & self.free_b[other]
        on = self.at[span] == other
        good = (self.ka[span] == self.kb[other]) & (both_free | on | (self.op_a[span] & self.op_b[other]))
        check = np.flatnonzero(good & both_free)
        if len(check):
            good[check[self.conflicts(self.topo_a[span[check]], self.topo_b[other[check]])]] = False
        return good, both_free

    def consistent(self, xs: Ranks, ys: Ranks) -> Tuple[Ranks, Ranks]:
        """The pairs ``(xs[i], ys[i])`` found by runs on several diagonals that agree with each
        other: the first claim of each node, less the pairs whose inputs the others pair
        otherwise (two runs meeting around a repeated block must not mix their readings)."""
        _, first_x = np.unique(xs, return_index=True)
        keep = np.zeros(len(xs), dtype=bool)
        keep[first_x] = True
        _, first_y = np.unique(ys, return_index=True)
        once_y = np.zeros(len(xs), dtype=bool)
        once_y[first_y] = True
        keep &= once_y
        xs, ys = xs[keep], ys[keep]
        saved = self.partner_a, self.partner_b
        self.partner_a, self.partner_b = saved[0].copy(), saved[1].copy()
        self.partner_a[xs], self.partner_b[ys] = ys, xs
        ok = ~self.conflicts(xs, ys)
        self.partner_a, self.partner_b = saved
        return xs[ok], ys[ok]

    def conflicts(self, xs: Ranks, ys: Ranks) -> Mask:
        """For node pairs of equal lines (so of equal input counts), whether an input of one is
        paired with something else than the other's input at its position."""
        lens_a, starts_a, flat_a = self.inputs_a
        starts_b, flat_b = self.inputs_b[1], self.inputs_b[2]
        count = lens_a[xs]
        total = int(count.sum())
        if not total:
            return np.zeros(len(xs), dtype=bool)
        offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        ex = flat_a[np.repeat(starts_a[xs], count) + offset]
        ey = flat_b[np.repeat(starts_b[ys], count) + offset]
        pa, pb = self.partner_a[ex], self.partner_b[ey]
        bad = ((pa >= 0) & (pa != ey)) | ((pb >= 0) & (pb != ex))
        return np.bincount(np.repeat(np.arange(len(xs)), count), weights=bad, minlength=len(xs)) > 0

    def runs_on(self, d: int, lo: int, hi: int) -> Ranks:
        """Positions (before side) of the free nodes of the runs of good lines on diagonal
        ``d`` that hold a pair of that diagonal. An Op line (an operator's first use) is part
        of a run when it is on both sides, never paired by it."""
        span = np.arange(lo, hi)
        good, both_free = self.good(span, d)
        run = np.cumsum(~good)
        first = np.full(int(run[-1]) + 1, hi, dtype=np.int64)  # each run's lowest pair
        # An Op line is paired by its first use (exact signatures), wherever that moved: it
        # holds no run, or deleting the first of alike calls would shift the run onto the next.
        pairs = good & (self.at[span] == span + d) & ~self.op_a[span]
        np.minimum.at(first, run[pairs], span[pairs])
        return span[good & (span > first[run]) & both_free]

    def runs_near(self, anchors: Ranks, diagonal: Ranks, chosen: Ranks
                  ) -> Tuple[Ranks, Ranks, Mask]:
        """As :meth:`runs_on` for the diagonals of few pairs: every stretch of consecutive
        pairs (``anchors[chosen]``, sorted by diagonal then position) is extended both ways,
        all stretches a step at a time together, the few that go far a chunk at a time.
        Returns the positions found (before side), their diagonals, and whether each was
        reached going up (from a pair below it)."""
        position, shift = anchors[chosen], diagonal[chosen]
        new = np.ones(len(position), dtype=bool)
        new[1:] = (shift[1:] != shift[:-1]) | (position[1:] != position[:-1] + 1)
        last = np.ones(len(position), dtype=bool)
        last[:-1] = new[1:]
        at = position[last] + 1
        d = shift[last]
        step = np.ones(len(at), dtype=np.int64)
        na, nb = self.na, self.nb
        found_at: List[Ranks] = []
        found_d: List[Ranks] = []
        found_up: List[Mask] = []
        for _ in range(_CHUNK):
            inside = (at >= 0) & (at < na) & (at + d >= 0) & (at + d < nb)
            at, d, step = at[inside], d[inside], step[inside]
            good, both_free = self.good(at, d)
            good &= self.at[at] < 0  # a stretch ends at the next pair (the stretch above it goes on)
            take = good & both_free
            found_at.append(at[take])
            found_d.append(d[take])
            found_up.append(step[take] > 0)
            at, d, step = at[good] + step[good], d[good], step[good]
            if not len(at):
                break
        for i, dd, st in zip(at.tolist(), d.tolist(), step.tolist()):  # the long stretches
            chunk = _CHUNK
            while 0 <= i < na and 0 <= i + dd < nb:
                chunk *= 2  # chunks doubling: a stretch of n lines takes log(n) of them
                stop = max(max(0, -dd) - 1, i - chunk) if st < 0 else min(min(na, nb - dd), i + chunk)
                span = np.arange(i, stop, st)
                if not len(span):
                    break
                good, both_free = self.good(span, dd)
                good &= self.at[span] < 0
                bad = np.flatnonzero(~good)
                end = int(bad[0]) if len(bad) else len(span)
                found_at.append(span[:end][both_free[:end]])
                found_d.append(np.full(int(both_free[:end].sum()), dd))
                found_up.append(np.full(int(both_free[:end].sum()), st > 0))
                if end < len(span):
                    break
                i = stop
        if not found_at:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
        return (np.concatenate(found_at).astype(np.int64), np.concatenate(found_d).astype(np.int64),
                np.concatenate(found_up).astype(bool))
