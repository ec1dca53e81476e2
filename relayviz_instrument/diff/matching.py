"""Pairing the nodes of two snapshots: a one-to-one mapping that survives duplicates.

The matcher follows GumTree and XLA's hlo_diff, adapted to Relay's DAGs, with a text diff's
way of aligning runs of equal lines. Every step finds a node's candidates in an index (the
users of its inputs' partners, the inputs of its users' partners, a table of signatures or of
line keys), never among all unpaired nodes of its label, so a diff costs time in proportion
to the graphs, however many nodes look alike.

1. **Identical documents** (equal labels and references in canonical order) are paired in
   one comparison.
2. **Anchors.** Global functions are paired by name, the ``root`` expressions, parameters
   by name when the name is unique in both lists.
3. **Blocks**, where parameters have no names to tell them apart: the two main chains are
   aligned block by block (:mod:`.blocks`), and the blocks that align paired node by node.
4. **Identical sub-graphs**: nodes whose signature occurs once on each side.
5. **Runs** (:meth:`_Matcher.runs`): from each pair, the stretch of equal lines above it in
   the two documents' topological orders (:func:`~.signatures.line_keys`), vectorized;
   most of an edited graph is paired here.
6. **Propagation to a fixpoint** from the pairs next to unpaired nodes (of a label the other
   side still has unpaired): inputs by position (by alignment when their number differs; by
   signature, else content, first, so swapped arguments stay with their pairs), users by
   operator and input position (by content and paired inputs first). A candidate is paired when
   nothing else agrees as well with its paired inputs and users; a pair that only shares one
   neighbour waits in a queue tried when nothing surer is left, and only if its type is equal
   and its attributes or users alike; equally good candidates wait as a group. Then propagation
   looks through up to three inserted or deleted nodes (``expand_dims`` then
   ``layout_transform`` before an ``add``).
7. **Residual signatures.** The nodes still unpaired are hashed again at tiers 3, 2, 1 and 0,
   where an input that is already paired counts as that pair: a unique residual signature
   pairs a node whose attributes, type or value changed between nodes that did not.
8. **Regions.** Unpaired nodes form regions; a region of each side that borders the same
   pairs is aligned in data-flow order by operator (a ``nn.relu`` between two batch norms
   that SimplifyInference expanded).
9. **Parameters left**, in the order of their lists; **ties**: groups that no neighbour
   separates are paired in canonical order; then a removed node whose twin was paired takes
   the twin's place when more of the pair's users read it (EliminateCommonSubexpr keeps the
   node most users already read).
10. **Op nodes** follow their calls.

Nodes of different tier-0 labels (kind and operator) are never paired. The two documents'
sides are one :class:`_Side` each, and every step that looks from one side to the other is
written once and run both ways.
"""

from __future__ import annotations

import heapq
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from .sequence import align_sequences
from .blocks import aligned_blocks, relative_pairs, spine_blocks
from .components import components
from .index import IndexedDocument
from .signatures import residual_signatures
from .graph import VARIADIC_KINDS

__all__ = ["match"]

#: Users of one node considered together; larger fan-outs are paired by their inputs only.
_MAX_GROUP = 64
#: Members of a group of equal candidates scored pair by pair; larger groups go in order.
_SCORED_GROUP = 16
#: Inserted or deleted nodes that propagation looks through.
_LOOK_THROUGH = 3
#: Rounds of re-seeding propagation from the pairs that still have unpaired neighbours.
_ROUNDS = 4
#: Lines compared at a time when a run is extended from a few pairs.
_CHUNK = 64


def match(ia: IndexedDocument, ib: IndexedDocument) -> Tuple[List[int], List[int]]:
    """Pair the nodes of two indexed documents; return ``(a2b, b2a)`` rank maps (-1: unpaired)."""
    matcher = _Matcher(ia, ib)
    matcher.run()
    return matcher.A.partner, matcher.B.partner


class _Side:
    """One document during matching: its graph, labels, and each node's partner (-1: none)."""

    __slots__ = ("graph", "tiers", "l0", "sig", "inputs", "kind", "position", "partner", "other", "is_a", "ops",
                 "cached", "l0_values")

    def __init__(self, index: IndexedDocument, is_a: bool) -> None:
        self.graph = index.graph
        self.tiers = index.labels.tiers
        self.l0 = self.tiers[0]
        self.sig = index.labels.signature
        if index.labels.positional:
            # A parameter known by its position alone is no evidence by itself: a parameter
            # added or removed before it moves the rest of the list (the nodes reading it say).
            self.sig = list(self.sig)
            for p in index.labels.positional:
                self.sig[p] = hash(("positional parameter", is_a, p))
        self.inputs = index.graph.inputs
        self.kind = index.graph.kind
        self.position = index.graph.position
        self.partner = [-1] * index.graph.size
        self.other: _Side = self
        self.is_a = is_a
        self.ops: Optional[np.ndarray] = None  # which nodes are Op nodes
        self.l0_values: Optional[np.ndarray] = None
        self.cached: Tuple[int, np.ndarray, List[int]] = (-1, np.zeros(0, dtype=np.int64), [])

    @property
    def users(self) -> List[List[Tuple[int, int]]]:
        return self.graph.users

    def l0_array(self) -> np.ndarray:
        """The tier-0 labels as an array."""
        if self.l0_values is None:
            self.l0_values = np.asarray(self.l0, dtype=np.int64)
        return self.l0_values

    def op_mask(self) -> np.ndarray:
        """Which nodes are Op nodes (labels of calls, paired last)."""
        if self.ops is None:
            self.ops = np.fromiter((k == "Op" for k in self.kind), dtype=bool, count=len(self.kind))
        return self.ops

    def partners(self, stamp: int) -> np.ndarray:
        """``partner`` as an array, made again when ``stamp`` (the pairs made) has changed."""
        if self.cached[0] != stamp:
            part = np.asarray(self.partner, dtype=np.int64)
            self.cached = (stamp, part, np.flatnonzero((part < 0) & ~self.op_mask()).tolist())
        return self.cached[1]

    def unpaired(self, stamp: int) -> List[int]:
        """The unpaired nodes but Op nodes, in rank order (``stamp`` as for :meth:`partners`)."""
        self.partners(stamp)
        return self.cached[2]


#: Verdicts of a rival search.
_NONE, _EQUAL, _BETTER = 0, 1, 2


class _Matcher:
    def __init__(self, ia: IndexedDocument, ib: IndexedDocument) -> None:
        self.A, self.B = _Side(ia, True), _Side(ib, False)
        self.A.other, self.B.other = self.B, self.A
        self.queue: List[int] = []  # before ranks of new pairs, to propagate from
        self.weak: List[Tuple[int, int, int, int]] = []  # slot pairs without evidence, a heap
        self.sequence = 0
        self.groups: List[Tuple[List[int], List[int]]] = []  # equal candidates, for the tie-break
        self.reach = False  # whether propagation looks through inserted and deleted nodes
        self.settled = {False: -1, True: -1}  # pair counts at which propagation reached a fixpoint
        self.residual_done: Dict[int, int] = {}  # pair counts at which each residual tier ran
        self.count = 0  # pairs made
        self.runs_done = -1  # the pair count at which runs were last extended
        self.recent: List[int] = []  # before ranks paired since the last frontier
        #: Tier-0 labels of the unpaired nodes of each side (a superset as pairs are made).
        self.open_labels: Tuple[Set[int], Set[int]] = (set(), set())
        self.ia, self.ib = ia, ib
        self.lines: Optional[_Lines] = None
        #: Global functions whose name both documents give to functions of different kinds
        #: (FuseTIR makes a Relax function a PrimFunc): a name is a function's identity, so
        #: they pair with nothing rather than with another function of their kind.
        fa, fb = ia.graph.functions, ib.graph.functions
        self.unpairable: Tuple[Set[int], Set[int]] = (
            {fa[n] for n in fa if n in fb and self.A.l0[fa[n]] != self.B.l0[fb[n]]},
            {fb[n] for n in fb if n in fa and self.A.l0[fa[n]] != self.B.l0[fb[n]]})

    # -- the phases ---------------------------------------------------------------------------

    def run(self) -> None:
        if self.identical():
            return
        self.anchor()
        self.align_blocks()
        self.exact()
        self.queue = []  # propagation starts from the frontier, once runs have paired the bulk
        self.settle()
        for tier in (3, 2, 1, 0):
            self.residual(tier)
            self.settle()
        self.regions()
        self.settle()
        self.leftover_params()
        self.settle()
        for final in (False, True):
            self.break_ties(final)
            self.settle()
            for tier in (1, 0):
                self.residual(tier)
                self.settle()
        for side in (self.A, self.B):
            self.swap_twins(side)
        self.pair_ops()

    def identical(self) -> bool:
        """Pair everything at once when the two documents are the same graph, numbered alike."""
        ga, gb = self.A.graph, self.B.graph
        if ga.size != gb.size or self.A.tiers[3] != self.B.tiers[3] or ga.refs != gb.refs:
            return False
        self.A.partner = list(range(ga.size))
        self.B.partner = list(range(gb.size))
        return True

    def pair(self, a: int, b: int) -> bool:
        pa, pb = self.A.partner, self.B.partner
        if pa[a] >= 0 or pb[b] >= 0 or self.A.l0[a] != self.B.l0[b]:
            return False
        if a in self.unpairable[0] or b in self.unpairable[1]:
            return False
        pa[a] = b
        pb[b] = a
        self.queue.append(a)
        self.recent.append(a)
        self.count += 1
        return True

    def link(self, s: _Side, x: int, y: int) -> bool:
        """Pair ``x`` of side ``s`` with ``y`` of the other side."""
        return self.pair(x, y) if s.is_a else self.pair(y, x)

    def walk(self, a: int, b: int) -> None:
        """Pair two nodes of equal signature and, below them, their inputs position by position."""
        ins_a, ins_b = self.A.inputs, self.B.inputs
        stack = [(a, b)]
        while stack:
            x, y = stack.pop()
            if not self.pair(x, y):
                continue
            xs = ins_a[x]
            if xs:
                stack.extend(zip(xs, ins_b[y]))

    # -- anchors and identical sub-graphs -------------------------------------------------------

    def anchor(self) -> None:
        ga, gb = self.A.graph, self.B.graph
        for name, fa in ga.functions.items():
            fb = gb.functions.get(name)
            if fb is not None and self.pair(fa, fb):
                self.pair_params(fa, fb)
        if ga.root is not None and gb.root is not None and self.pair(ga.root, gb.root):
            self.pair_params(ga.root, gb.root)

    def pair_params(self, fa: int, fb: int, rest: bool = False) -> None:
        """Parameters by name, when the name is unique in both lists; with ``rest``, the rest
        of the two lists aligned by their labels. Alike parameters (anonymous frontends) are
        left to the nodes that read them until then: where a list gained a parameter among
        alike ones is told by the graph, not by the list."""
        A, B = self.A, self.B
        if A.kind[fa] != "Function" or B.kind[fb] != "Function":
            return
        pa, pb = A.graph.refs[fa][1:], B.graph.refs[fb][1:]
        if not rest:
            t1a, t1b = A.tiers[1], B.tiers[1]
            names_a, names_b = _unique([t1a[p] for p in pa]), _unique([t1b[p] for p in pb])
            for name, i in names_a.items():
                j = names_b.get(name, -1)
                if j >= 0:
                    self.pair(pa[i], pb[j])
            return
        rest_a = [p for p in pa if A.partner[p] < 0]
        rest_b = [p for p in pb if B.partner[p] < 0]
        if rest_a and rest_b:
            t3a, t3b = A.tiers[3], B.tiers[3]
            for i, j in align_sequences([t3a[p] for p in rest_a], [t3b[p] for p in rest_b]):
                self.pair(rest_a[i], rest_b[j])

    def leftover_params(self) -> None:
        """The parameters still unpaired of paired functions, by their place in the lists."""
        A = self.A
        for f in [r for r, k in enumerate(A.kind) if k == "Function"]:
            if A.partner[f] >= 0 and f not in A.graph.inlined:
                self.pair_params(f, A.partner[f], rest=True)

    def align_blocks(self) -> None:
        """Where parameters have no names to tell them apart, align the two main chains block
        by block (:mod:`.blocks`) and pair the blocks that align, node by node: a block
        deleted from a run of alike blocks reads as deleted, not as its neighbours shifted."""
        if not (self.ia.labels.positional or self.ib.labels.positional):
            return
        ba, bb = spine_blocks(self.ia), spine_blocks(self.ib)
        if ba is None or bb is None:
            return
        # Where it is sure (runs and unique blocks); a block repeated is the later copy, as a
        # pass that repeats a block leaves the first one reading what it read. First with the
        # places of the parameters the blocks read: a block deleted from a run of alike ones
        # with its weights left in the list is told by where they are.
        for i, j in aligned_blocks(ba, bb):
            a, b = ba.exits[i], bb.exits[j]
            entry_a, entry_b = (ba.exits[i - 1] if i else -1), (bb.exits[j - 1] if j else -1)
            for x, y in relative_pairs(self.ia, self.ib, a, b, entry_a, entry_b, ba.owner, bb.owner):
                self.pair(x, y)

    def exact(self) -> None:
        """Nodes whose signature occurs once on each side: the roots of identical sub-graphs,
        paired at once (what lies below them is paired by the runs and propagation)."""
        A, B = self.A, self.B
        sa = np.array(A.sig, dtype=np.int64)
        sb = np.array(B.sig, dtype=np.int64)
        keys_a, first_a, count_a = np.unique(sa, return_index=True, return_counts=True)
        keys_b, first_b, count_b = np.unique(sb, return_index=True, return_counts=True)
        once_a, once_b = count_a == 1, count_b == 1
        _, ia, ib = np.intersect1d(keys_a[once_a], keys_b[once_b], assume_unique=True, return_indices=True)
        self.bulk(first_a[once_a][ia], first_b[once_b][ib])

    def bulk(self, nodes_a: np.ndarray, nodes_b: np.ndarray) -> None:
        """Pair ``nodes_a[i]`` with ``nodes_b[i]`` where both are unpaired (labels known equal);
        the pairs are not propagated from (the frontier is, later)."""
        pa, pb = self.A.partner, self.B.partner
        no_a, no_b = self.unpairable
        made = 0
        for a, b in zip(nodes_a.tolist(), nodes_b.tolist()):
            if pa[a] < 0 and pb[b] < 0 and a not in no_a and b not in no_b:
                pa[a] = b
                pb[b] = a
                self.recent.append(a)
                made += 1
        self.count += made

    def runs(self) -> None:
        """Pair runs of equal lines (:func:`~.signatures.line_keys`) in the two documents'
        topological orders around the pairs made so far, the way a text diff extends a match
        of unique lines: on each diagonal (position after minus position before) of a pair,
        the maximal stretch of equal lines through it whose nodes are unpaired on both sides.
        Cost: one vectorized pass per diagonal with many pairs, a few chunks per stretch on
        the others."""
        if self.count == self.runs_done:
            return
        self.runs_done = self.count
        A, B = self.A, self.B
        if self.lines is None:
            # Op nodes, and parameters known by position alone, are not paired by runs.
            skip_a, skip_b = A.op_mask().copy(), B.op_mask().copy()
            skip_a[list(self.ia.labels.positional)] = True
            skip_b[list(self.ib.labels.positional)] = True
            self.lines = _Lines(self.ia, self.ib, skip_a, skip_b)
        lines = self.lines
        lines.update(A.partners(self.count), B.partners(self.count))
        anchors = np.flatnonzero((lines.at >= 0) & ~lines.op_a)
        if not len(anchors):
            return
        diagonal = lines.at[anchors] - anchors
        order = np.lexsort((anchors, diagonal))
        anchors, diagonal = anchors[order], diagonal[order]
        cuts = np.flatnonzero(np.diff(diagonal)) + 1
        taken: List[np.ndarray] = []
        shifts: List[np.ndarray] = []
        sparse: List[np.ndarray] = []
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
            self.bulk(xs, ys)

    # -- propagation --------------------------------------------------------------------------

    def settle(self) -> None:
        """Propagate from the new pairs to a fixpoint, re-seeding from the pairs next to an
        unpaired node (all of them first, then those near what the last round paired); then
        again, looking through inserted and deleted nodes. Looking through waits for plain
        propagation: a node deleted below and one inserted above look alike until the nodes
        around them are paired."""
        for reach in (False, True):
            self.reach = reach
            self.propagate()
            full = True
            for _ in range(_ROUNDS):
                count = self.count
                if self.settled[reach] == count:
                    break  # the frontier was propagated from this very state already
                self.runs()
                self.queue = self.frontier(full)
                full = False
                self.propagate()
                if self.count == count:
                    self.settled[reach] = count
                    break
        self.reach = False

    def frontier(self, full: bool) -> List[int]:
        """Paired nodes (before ranks) next to an unpaired node, on either side, whose label
        the other side's unpaired nodes have (every step of propagation pairs an unpaired
        neighbour of a pair with a node of its label, so no other pair can lead anywhere);
        unless ``full``, only those next to a pair made since the last call. Also updates
        :attr:`open_labels`."""
        A, B = self.A, self.B
        parts = (A.partners(self.count), B.partners(self.count))
        free = [~(part >= 0) & ~s.op_mask() for s, part in ((A, parts[0]), (B, parts[1]))]
        left = [s.l0_array()[mask] for s, mask in zip((A, B), free)]
        self.open_labels = (set(np.unique(left[0]).tolist()), set(np.unique(left[1]).tolist()))
        seeds = np.zeros(A.graph.size, dtype=bool)
        for i, (s, part) in enumerate(((A, parts[0]), (B, parts[1]))):
            flat, owner = s.graph.input_arrays[2], s.graph.input_owner
            paired = part >= 0
            wanted = free[i].copy()
            wanted[free[i]] = np.isin(left[i], left[1 - i])
            nodes = np.concatenate([flat[wanted[owner] & paired[flat]], owner[wanted[flat] & paired[owner]]])
            seeds[nodes if s.is_a else part[nodes]] = True
        if not full:
            recent = np.asarray(self.recent, dtype=np.int64)
            near = np.zeros(A.graph.size, dtype=bool)
            near[recent] = True
            for s, mine, part, other in ((A, recent, parts[0], parts[1]), (B, parts[0][recent], parts[1], None)):
                flat, owner = s.graph.input_arrays[2], s.graph.input_owner
                mark = np.zeros(s.graph.size, dtype=bool)
                mark[mine] = True
                hop = np.concatenate([flat[mark[owner]], owner[mark[flat]]])
                hop = hop if s.is_a else part[hop]
                near[hop[hop >= 0]] = True
            seeds &= near
        self.recent = []
        return np.flatnonzero(seeds).tolist()

    def propagate(self) -> None:
        """Pair neighbours of the new pairs; when none are left, try the queued slot pairs, best
        first, each followed by what it implies."""
        pa = self.A.partner
        while True:
            while self.queue:
                batch, self.queue = self.queue, []
                for a in batch:
                    b = pa[a]
                    self.down(a, b)
                    self.up(a, b)
            while self.weak and not self.queue:
                _, _, x, y = heapq.heappop(self.weak)
                if pa[x] < 0 and self.B.partner[y] < 0:
                    self.consider(x, y, final=True)
            if not self.queue:
                return

    def down(self, a: int, b: int) -> None:
        """Pair the inputs of a pair."""
        A, B = self.A, self.B
        xs, ys = A.inputs[a], B.inputs[b]
        if not xs or not ys:
            return
        if A.kind[a] == "Function" and a not in A.graph.inlined and b not in B.graph.inlined:
            self.pair_params(a, b)  # by name: the graph tells the rest (see pair_params)
            xs, ys = xs[:1], ys[:1]
        pa, pb = A.partner, B.partner
        if len(xs) == 1 and len(ys) == 1:
            x, y = xs[0], ys[0]
            if pa[x] < 0 and pb[y] < 0:
                self.slot(x, y)
            return
        if len(xs) == len(ys) and A.kind[a] not in VARIADIC_KINDS:
            slots = list(zip(xs, ys))
        else:
            slots = self.align_inputs(xs, ys)
        open_slots = [(x, y) for x, y in slots if pa[x] < 0 and pb[y] < 0]
        if len(open_slots) > 1:
            self.unswap(open_slots)
        for x, y in open_slots:
            if pa[x] < 0 and pb[y] < 0:
                self.slot(x, y)

    def align_inputs(self, xs: Sequence[int], ys: Sequence[int]) -> List[Tuple[int, int]]:
        """An order-preserving alignment of two input lists: paired inputs by their pair,
        unpaired ones by their signature, then by their operator."""
        A, B = self.A, self.B
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

    def unswap(self, slots: List[Tuple[int, int]]) -> None:
        """Inputs whose signature (else content) is at another slot on the other side, and not
        at their own, moved there: pair them so (``add(b, a)`` for ``add(a, b)`` is one
        rewired node)."""
        A, B = self.A, self.B
        for keys_a, keys_b in ((A.sig, B.sig), (A.tiers[3], B.tiers[3])):
            if all(keys_a[x] == keys_b[y] for x, y in slots):
                return
            theirs = {keys_b[y] for _, y in slots}
            moved = [i for i, (x, y) in enumerate(slots) if keys_a[x] != keys_b[y] and keys_a[x] in theirs]
            if not moved:
                continue
            at_b = _unique([keys_b[y] for _, y in slots])
            at_a = _unique([keys_a[x] for x, _ in slots])
            for i in moved:
                x, y = slots[i]
                j = at_b.get(keys_a[x], -1)
                if j >= 0 and j != i and at_a.get(keys_a[x]) == i:
                    other = slots[j][1]
                    if A.partner[x] < 0 and B.partner[other] < 0:
                        if A.sig[x] == B.sig[other]:
                            self.walk(x, other)
                        else:
                            self.pair(x, other)

    def slot(self, x: int, y: int) -> None:
        """``x`` and ``y`` are the inputs at one slot of a pair."""
        A, B = self.A, self.B
        if A.l0[x] != B.l0[y]:
            if self.reach:
                self.look_down(x, y)
            return
        if A.sig[x] == B.sig[y]:
            self.walk(x, y)
            return
        if A.users.count(x) == 1 and B.users.count(y) == 1 and A.tiers[2][x] == B.tiers[2][y]:
            # Read by the pair alone on both sides: nothing else can claim them, unless an
            # input already paired says otherwise.
            pa, pb = A.partner, B.partner
            if all(pa[i] < 0 for i in A.inputs[x]) and all(pb[j] < 0 for j in B.inputs[y]):
                self.pair(x, y)
                return
        self.consider(x, y)

    def consider(self, x: int, y: int, final: bool = False) -> None:
        """Pair ``x`` with ``y`` if no other candidate of either agrees as well with its paired
        neighbours. With one neighbour in common, they wait in the queue (``final``: they have
        waited), and only if their attributes are equal or their users alike. Equally good
        candidates wait as a group."""
        A, B = self.A, self.B
        score = self.score(A, x, y)
        rivals_b: List[int] = []
        rivals_a: List[int] = []
        if self.rivals(A, x, y, score, rivals_b) or self.rivals(B, y, x, score, rivals_a):
            return
        if rivals_a or rivals_b:
            self.groups.append(([x] + rivals_a, [y] + rivals_b))
            return
        if score[0] or score[1] >= 2:
            self.pair(x, y)
            return
        if not (score[4] and (score[5] or self.used_alike(x, y))):
            return  # one neighbour in common, another type, or other attributes and users: not enough
        if final:
            self.pair(x, y)
            return
        level = 2 * score[3] + score[4] + score[5]
        self.sequence += 1
        heapq.heappush(self.weak, (-level, self.sequence, x, y))

    def score(self, s: _Side, x: int, y: int) -> Tuple[int, int, int, int, int, int]:
        """How alike ``x`` (of ``s``) and ``y`` are: equal signatures, paired neighbours in
        common (then inputs in common, see :meth:`inputs_agreeing`), inputs of equal operators,
        equal types, attributes."""
        o = s.other
        l0, ol0 = s.l0, o.l0
        return (int(s.sig[x] == o.sig[y]), self.agreement(s, x, y), self.inputs_agreeing(s, x, y),
                int([l0[i] for i in s.inputs[x]] == [ol0[j] for j in o.inputs[y]]),
                int(s.tiers[2][x] == o.tiers[2][y]), int(s.tiers[1][x] == o.tiers[1][y]))

    @staticmethod
    def agreement(s: _Side, x: int, y: int) -> int:
        """Paired inputs and users that ``x`` (of ``s``) and ``y`` have in common."""
        o = s.other
        partner = s.partner
        xs, ys = s.inputs[x], o.inputs[y]
        count = 0
        if len(xs) == len(ys):
            for i, j in zip(xs, ys):
                if partner[i] == j:
                    count += 1
        elif xs and ys:
            yset = set(ys)
            count = sum(1 for i in xs if partner[i] in yset)
        users_y = o.users[y]
        if users_y:
            theirs = set(users_y)
            count += sum(1 for u, p in s.users[x] if partner[u] >= 0 and (partner[u], p) in theirs)
        return count

    @staticmethod
    def inputs_agreeing(s: _Side, x: int, y: int) -> int:
        """Paired inputs in common, position by position, twice those that only ``x`` reads and
        only ``y``: of two readings that agree as much, the one that keeps what a node computes
        from wins over the one that keeps who reads it, and a node's own weight says more than
        the activation its siblings read too."""
        o = s.other
        partner, mine, theirs = s.partner, s.users, o.users
        return sum(1 + (mine.count(i) == 1 and theirs.count(j) == 1)
                   for i, j in zip(s.inputs[x], o.inputs[y]) if partner[i] == j)

    def candidates(self, s: _Side, x: int) -> List[int]:
        """Unpaired nodes of the other side with ``x``'s label that read a partner of one of
        ``x``'s inputs, or sit at the slot of a partner of one of ``x``'s users."""
        o = s.other
        partner, other_partner, l0, label = s.partner, o.partner, o.l0, s.l0[x]
        out: List[int] = []
        for i in s.inputs[x]:
            j = partner[i]
            if j >= 0:
                theirs = o.users[j]
                if len(theirs) <= _MAX_GROUP:
                    out += [v for v, _ in theirs if other_partner[v] < 0 and l0[v] == label]
        for u, p in s.users[x]:
            v = partner[u]
            if v >= 0:
                ins = o.inputs[v]
                if p < len(ins):
                    w = ins[p]
                    if other_partner[w] < 0 and l0[w] == label:
                        out.append(w)
        return out

    def rivals(self, s: _Side, x: int, y: int, score: Tuple[int, ...], equal: List[int]) -> bool:
        """Whether ``x`` (of ``s``) has a candidate that agrees better than ``y``; candidates
        that agree as well are added to ``equal``."""
        for c in self.candidates(s, x):
            if c == y or c in equal:
                continue
            theirs = self.score(s, x, c)  # agreement is symmetric: comparable with ``score``
            if theirs > score:
                return True
            if theirs == score:
                equal.append(c)
        return False

    # -- propagation along users ---------------------------------------------------------------

    def up(self, a: int, b: int) -> None:
        """Pair the users of a pair: by operator and input position, and among several, by the
        other inputs they read."""
        A, B = self.A, self.B
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
                self.user_pair(u, v)
            elif self.reach:
                self.look_up(A, ua, ub)
                self.look_up(B, ub, ua)
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
                self.user_pair(us[0], vs[0])
            else:
                self.pair_group(us, vs)
        if self.reach:
            self.look_up(A, ua, ub)
            self.look_up(B, ub, ua)

    def user_pair(self, u: int, v: int) -> None:
        """Two users, the only candidates for each other, of one pair at the same input. If one
        of their other inputs contradicts them (paired elsewhere, or of another operator), the
        pair is considered like any other: a rewired input elsewhere can make another user
        look alike here until more around them is paired."""
        A, B = self.A, self.B
        pa, pb, l0a, l0b, l3a, l3b = A.partner, B.partner, A.l0, B.l0, A.tiers[3], B.tiers[3]
        xs, ys = A.inputs[u], B.inputs[v]
        # (unpaired inputs agree when of one operator, leaves when of one content: two weights
        # of other values tell two convolutions apart)
        if len(xs) == len(ys) and all(pa[x] == y or (pa[x] < 0 and pb[y] < 0 and l0a[x] == l0b[y] and (
                A.inputs[x] or l3a[x] == l3b[y])) for x, y in zip(xs, ys)) and self.used_alike(u, v):
            self.pair(u, v)
        else:
            self.consider(u, v)

    def used_alike(self, u: int, v: int) -> bool:
        """Whether ``u`` and ``v`` have users of one operator at one input position, or none:
        a block deleted above a shared input leaves a user there that reads like the next one
        up, but what reads it does not."""
        A, B = self.A, self.B
        mine, theirs = A.users[u], B.users[v]
        if not mine or not theirs:
            return True
        seen = {(A.l0[w], p) for w, p in mine}
        return any((B.l0[w], q) in seen for w, q in theirs)

    def pair_group(self, us: List[int], vs: List[int]) -> None:
        """Users of one label at one slot of a pair, several on a side. Those alone on both
        sides to have the same content and read the same pairs pair at once, then those alone
        to read the same pairs (indexes by content and paired inputs); the rest by score."""
        A, B = self.A, self.B
        pa, pb, l3a, l3b = A.partner, B.partner, A.tiers[3], B.tiers[3]
        for with_content in (True, False):
            keys_a = [(l3a[u] if with_content else 0, *[pa[x] for x in A.inputs[u]]) for u in us]
            keys_b = [(l3b[v] if with_content else 0, *B.inputs[v]) for v in vs]
            once_b = _unique(keys_b)
            for i, j in ((i, once_b.get(key, -1)) for key, i in _unique(keys_a).items()):
                if j >= 0:
                    self.pair(us[i], vs[j])
            us = [u for u in us if pa[u] < 0]
            vs = [v for v in vs if pb[v] < 0]
            if not us or not vs:
                return
        if len(us) > _SCORED_GROUP or len(vs) > _SCORED_GROUP:
            return
        for u in us:
            best = max(vs, key=lambda v: (self.score(A, u, v), -B.position[v]))
            if pb[best] < 0:
                self.consider(u, best)

    # -- looking through inserted and deleted nodes --------------------------------------------

    def look_down(self, x: int, y: int) -> None:
        """``x`` and ``y`` take the same input slot but differ in kind or operator: one side may
        have nodes inserted (a ``layout_transform``) or deleted there. Pair ``x`` with a node
        below ``y`` (or ``y`` with one below ``x``). Right below one inserted node, a node that
        has inputs needs no more evidence; deeper, or a leaf, needs equal signatures or an input
        already paired with the corresponding input. When both readings are possible, the one
        with evidence wins, and neither if both have it."""
        A, B = self.A, self.B
        under_y = self.below(A, x, y) if A.l0[x] in self.open_labels[1] else None
        under_x = self.below(B, y, x) if B.l0[y] in self.open_labels[0] else None
        if under_y is not None and under_x is not None:
            strong_y, strong_x = self.evidence(A, x, under_y), self.evidence(B, y, under_x)
            if strong_y == strong_x:
                return
            under_x, under_y = (None, under_y) if strong_y else (under_x, None)
        if under_y is not None:
            self.pair(x, under_y)
        elif under_x is not None:
            self.pair(under_x, y)

    def below(self, s: _Side, x: int, start: int) -> Optional[int]:
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
                    if o.l0[i] == label and self.plausible(s, x, i, depth):
                        return i
                    nxt.append(i)
            level = nxt
        return None

    def plausible(self, s: _Side, x: int, y: int, depth: int) -> bool:
        if not ((depth == 1 and s.inputs[x]) or self.evidence(s, x, y)):
            return False
        score = self.score(s, x, y)
        return not (self.rivals(s, x, y, score, []) or self.rivals(s.other, y, x, score, []))

    @staticmethod
    def evidence(s: _Side, x: int, y: int) -> bool:
        o = s.other
        if s.sig[x] == o.sig[y]:
            return True
        xs, ys = s.inputs[x], o.inputs[y]
        partner = s.partner
        if len(xs) == len(ys):
            return any(partner[i] == j for i, j in zip(xs, ys))
        yset = set(ys)
        return any(partner[i] in yset for i in xs)

    def look_up(self, s: _Side, mine: List[Tuple[int, int]], theirs: List[Tuple[int, int]]) -> None:
        """Users of a pair still unpaired may sit above nodes inserted on the other side: climb
        from each of the other side's unpaired users through unpaired nodes to one of the
        label of a user of ``s``, reached at the same slot.

        Not when the node taken as inserted has a counterpart among the users of the user:
        then that user was deleted, which one edit explains, and looking from the other side
        finds it."""
        if len(mine) > _MAX_GROUP or len(theirs) > _MAX_GROUP:
            return  # a node read by many (a shared weight or input): climb stops at such nodes too
        o = s.other
        sp, op_, sl, ol = s.partner, o.partner, s.l0, o.l0
        wanted = self.open_labels[1 if s.is_a else 0]
        for u, p in mine:
            if sp[u] >= 0 or sl[u] not in wanted:
                continue
            for v, _ in theirs:
                if op_[v] >= 0 or ol[v] == sl[u]:
                    continue
                if any(sp[t] < 0 and sl[t] == ol[v] for t, _ in s.users[u]):
                    continue
                w = self.climb(o, v, sl[u], p)
                if w is not None and self.plausible(s, u, w, 1):
                    self.link(s, u, w)
                    break

    @staticmethod
    def climb(o: _Side, start: int, label: int, slot: int) -> Optional[int]:
        """The one unpaired node of ``label`` reached at input ``slot`` going up from ``start``
        through at most ``_LOOK_THROUGH`` unpaired nodes of other labels."""
        partner, l0, users = o.partner, o.l0, o.users
        found = None
        level = [start]
        for _ in range(_LOOK_THROUGH):
            nxt = []
            for r in level:
                theirs = users[r]
                if len(theirs) > _MAX_GROUP:
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

    # -- residual signatures, regions, ties, twins, ops ----------------------------------------

    def residual(self, tier: int) -> None:
        if self.residual_done.get(tier) == self.count:
            return  # nothing was paired since this tier's groups were last looked at
        self.residual_done[tier] = self.count
        A, B = self.A, self.B
        cand_a, cand_b = self.alike(A, tier), self.alike(B, tier)
        if not cand_a or not cand_b:
            return
        ra = residual_signatures(A.graph, A.tiers[tier], A.partner, True, cand_a)
        rb = residual_signatures(B.graph, B.tiers[tier], B.partner, False, cand_b)
        groups_a: Dict[int, List[int]] = {}
        for a, sig in ra.items():
            groups_a.setdefault(sig, []).append(a)
        groups_b: Dict[int, List[int]] = {}
        for b, sig in rb.items():
            groups_b.setdefault(sig, []).append(b)
        position = A.position  # users before inputs
        common = sorted((-position[m[0]], sig) for sig, m in groups_a.items() if sig in groups_b)
        for _, sig in common:
            members_a = [a for a in groups_a[sig] if A.partner[a] < 0]
            members_b = [b for b in groups_b[sig] if B.partner[b] < 0]
            if len(members_a) == 1 and len(members_b) == 1 and (tier == 3 or self.related(members_a[0], members_b[0]) and (
                    tier >= 1 or A.tiers[1][members_a[0]] == B.tiers[1][members_b[0]]
                    or self.used_alike(members_a[0], members_b[0]))):
                self.pair_residual(members_a[0], members_b[0], ra, rb)
            elif members_a and members_b:
                self.groups.append((members_a, members_b))

    def alike(self, s: _Side, tier: int) -> List[int]:
        """The unpaired nodes of ``s`` whose tier label an unpaired node of the other side has."""
        mine, theirs = s.unpaired(self.count), s.other.unpaired(self.count)
        if not mine or not theirs:
            return []
        labels, other = s.tiers[tier], s.other.tiers[tier]
        wanted = {other[r] for r in theirs}
        return [r for r in mine if labels[r] in wanted]

    def pair_residual(self, a: int, b: int, ra: Dict[int, int], rb: Dict[int, int]) -> None:
        stack = [(a, b)]
        while stack:
            x, y = stack.pop()
            if not self.pair(x, y):
                continue
            for i, j in zip(self.A.inputs[x], self.B.inputs[y]):
                if self.A.partner[i] < 0 and self.B.partner[j] < 0 and ra.get(i) == rb.get(j):
                    stack.append((i, j))

    def related(self, a: int, b: int) -> bool:
        """Evidence beyond labels: equal signatures, or a paired input or user in common."""
        return self.A.sig[a] == self.B.sig[b] or self.agreement(self.A, a, b) > 0

    def regions(self) -> None:
        """Align the unpaired computations of two regions that border the same pairs.

        A region is a connected set of unpaired nodes; its border, the pairs next to it. A
        region of each side whose borders share the most pairs (and no other region's more)
        are aligned in data-flow order by operator, nodes with inputs only: what a pass left
        in place between what it rewrote (a ``nn.relu`` between two expanded batch norms).
        A node with paired neighbours pairs only with one that shares one of them. Only
        regions holding a node of an operator unpaired on the other side are looked at."""
        A, B = self.A, self.B
        found = []
        for s in (A, B):
            members: Dict[int, List[int]] = {}
            candidates = [r for r in self.alike(s, 0) if s.inputs[r]]
            if not candidates:
                return
            region, borders = _regions(s, s.partners(self.count))
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
        best_a: Dict[int, Tuple[int, int]] = {}  # region of A -> (shared, region of B or -1 on a tie)
        best_b: Dict[int, Tuple[int, int]] = {}
        for (k, m), count in shared.items():
            for best, mine, theirs in ((best_a, k, m), (best_b, m, k)):
                held = best.get(mine)
                if held is None or count > held[0]:
                    best[mine] = (count, theirs)
                elif count == held[0]:
                    best[mine] = (count, -1)
        for k in sorted(best_a):
            m = best_a[k][1]
            if m < 0 or best_b[m][1] != k:
                continue
            xs = sorted(members_a[k], key=A.position.__getitem__)
            ys = sorted(members_b[m], key=B.position.__getitem__)
            for i, j in align_sequences([A.l0[x] for x in xs], [B.l0[y] for y in ys]):
                x, y = xs[i], ys[j]
                if _bordered(A, x) and _bordered(B, y) and not self.agreement(A, x, y):
                    continue
                if A.tiers[1][x] != B.tiers[1][y] and not self.used_alike(x, y):
                    continue
                self.pair(x, y)

    def break_ties(self, final: bool) -> None:
        """Pair the groups of equal candidates: small ones by score, strictly best first
        (``final``: first best in canonical order), large ones in canonical order; nodes that
        share nothing but their label stay unpaired."""
        A, B = self.A, self.B
        groups, self.groups = self.groups, []
        seen = set()
        for us, vs in groups:
            us = sorted({u for u in us if A.partner[u] < 0}, key=A.position.__getitem__)
            vs = sorted({v for v in vs if B.partner[v] < 0}, key=B.position.__getitem__)
            key = (tuple(us), tuple(vs))
            if not us or not vs or key in seen:
                continue
            seen.add(key)
            if len(us) > _SCORED_GROUP or len(vs) > _SCORED_GROUP:
                if final:
                    for u, v in zip(us, vs):
                        if self.related(u, v):
                            self.pair(u, v)
                else:
                    self.groups.append((us, vs))
                continue
            scores = {(u, v): self.score(A, u, v) for u in us for v in vs if A.l0[u] == B.l0[v]}
            ranked = sorted(scores, key=lambda uv: (tuple(-s for s in scores[uv]),
                                                    A.position[uv[0]], B.position[uv[1]]))
            left = False
            for u, v in ranked:
                if A.partner[u] >= 0 or B.partner[v] >= 0:
                    continue
                s = scores[(u, v)]
                if not (s[0] or s[1]):
                    continue  # nothing but the label in common
                if not final and (
                        any(scores.get((u, w), ()) >= s for w in vs if w != v and B.partner[w] < 0)
                        or any(scores.get((w, v), ()) >= s for w in us if w != u and A.partner[w] < 0)):
                    left = True  # not strictly the best for both: wait for the final round
                    continue
                self.pair(u, v)
            if left:
                self.groups.append((us, vs))

    def swap_twins(self, s: _Side) -> None:
        """Give a pair to the unpaired twin (same signature) that more of its users agree with."""
        partner, sig = s.partner, s.sig
        unpaired = s.unpaired(self.count)
        if not unpaired:
            return
        wanted = {sig[r] for r in unpaired}
        paired_by_sig: Dict[int, List[int]] = {}
        for r in range(len(partner)):
            if partner[r] >= 0 and sig[r] in wanted:
                paired_by_sig.setdefault(sig[r], []).append(r)
        for r in unpaired:
            if partner[r] >= 0:
                continue
            for twin in paired_by_sig.get(sig[r], ()):
                if partner[twin] < 0:
                    continue
                gain = self.users_agreeing(s, r, partner[twin]) - self.users_agreeing(s, twin, partner[twin])
                if gain > 0:
                    self.move(s, twin, r)
                    break

    @staticmethod
    def users_agreeing(s: _Side, x: int, y: int) -> int:
        partner = s.partner
        theirs = set(s.other.users[y])
        return sum(1 for u, p in s.users[x] if partner[u] >= 0 and (partner[u], p) in theirs)

    def move(self, s: _Side, old: int, new: int) -> None:
        """Move the pairs of ``old``'s sub-graph to the corresponding nodes of ``new``'s."""
        mine, theirs = s.partner, s.other.partner
        s.cached = s.other.cached = (-1, s.cached[1], [])  # the arrays no longer tell
        stack = [(old, new)]
        while stack:
            x, y = stack.pop()
            if x == y or mine[x] < 0 or mine[y] >= 0:
                continue
            partner = mine[x]
            mine[x] = -1
            mine[y] = partner
            theirs[partner] = y
            stack.extend(zip(s.inputs[x], s.inputs[y]))

    def pair_ops(self) -> None:
        """Pair Op nodes by the calls that use them, then identical ones left over in order."""
        A, B = self.A, self.B
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
                self.pair(int(votes[i, 0]), int(votes[i, 1]))
        left_a: Dict[int, List[int]] = {}
        for a in (r for r, k in enumerate(A.kind) if k == "Op"):
            if A.partner[a] < 0:
                left_a.setdefault(A.tiers[3][a], []).append(a)
        for b in (r for r, k in enumerate(B.kind) if k == "Op"):
            if B.partner[b] < 0:
                members = left_a.get(B.tiers[3][b])
                if members:
                    self.pair(members.pop(0), b)


def _unique(keys: Sequence[object]) -> Dict[object, int]:
    """Keys that occur once, with their index."""
    seen: Dict[object, int] = {}
    for i, key in enumerate(keys):
        seen[key] = -1 if key in seen else i
    return {k: i for k, i in seen.items() if i >= 0}


def _regions(s: _Side, part: np.ndarray) -> Tuple[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
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


def _bordered(s: _Side, x: int) -> bool:
    """Whether ``x`` has a paired input or user."""
    partner = s.partner
    return any(partner[i] >= 0 for i in s.inputs[x]) or any(partner[u] >= 0 for u, _ in s.users[x])


class _Lines:
    """The two documents' line keys in topological order, and what runs of equal lines need
    of the pairs made so far (refreshed by :meth:`update`)."""

    def __init__(self, ia: IndexedDocument, ib: IndexedDocument, ops_a: np.ndarray, ops_b: np.ndarray) -> None:
        self.ka, self.kb = ia.line_keys(), ib.line_keys()
        self.na, self.nb = len(self.ka), len(self.kb)
        self.topo_a = np.asarray(ia.graph.topo, dtype=np.int64)
        self.topo_b = np.asarray(ib.graph.topo, dtype=np.int64)
        self.pos_b = np.asarray(ib.graph.position, dtype=np.int64)
        self.op_a, self.op_b = ops_a[self.topo_a], ops_b[self.topo_b]
        self.inputs_a, self.inputs_b = ia.graph.input_arrays, ib.graph.input_arrays

    def update(self, partner_a: np.ndarray, partner_b: np.ndarray) -> None:
        """Take the pairs as they are now (partners by rank, -1: unpaired)."""
        self.partner_a, self.partner_b = partner_a, partner_b
        by_position = partner_a[self.topo_a]
        self.at = np.full(len(by_position), -1, dtype=np.int64)  # each partner's position
        paired = by_position >= 0
        self.at[paired] = self.pos_b[by_position[paired]]
        self.free_a = (by_position < 0) & ~self.op_a
        self.free_b = (partner_b[self.topo_b] < 0) & ~self.op_b

    def take(self, found: np.ndarray, d: int) -> None:
        self.free_a[found] = False
        self.free_b[found + d] = False

    def good(self, span: np.ndarray, d: "np.ndarray | int") -> Tuple[np.ndarray, np.ndarray]:
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

    def consistent(self, xs: np.ndarray, ys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
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

    def conflicts(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
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

    def runs_on(self, d: int, lo: int, hi: int) -> np.ndarray:
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

    def runs_near(self, anchors: np.ndarray, diagonal: np.ndarray, chosen: np.ndarray
                  ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        found_at: List[np.ndarray] = []
        found_d: List[np.ndarray] = []
        found_up: List[np.ndarray] = []
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
