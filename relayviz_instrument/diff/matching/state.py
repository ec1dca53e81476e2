"""What the phases of the matcher share: the two sides and the pairing so far.

Every phase reads and extends one :class:`MatchState`. It holds one :class:`Side` per
document (its graph, labels, and each node's partner), the primitives that make pairs
(:meth:`MatchState.pair` and the walks and bulk pairing built on it), and the bookkeeping the
phases leave for each other: the queue of new pairs that propagation starts from, the weak
pairs it has put off, the groups of equal candidates left for the tie-break, and the pair
counts at which a phase last ran (so that it is not run again on a state it has seen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Hashable, List, Optional, Sequence, Set, Tuple

import numpy as np
from numpy.typing import NDArray

from ..graph import CanonicalGraph, UserIndex
from ..index import IndexedDocument

if TYPE_CHECKING:
    from .runs import Lines

__all__ = ["MatchState", "Side", "Ranks", "Mask", "Score", "unique", "MAX_GROUP", "SCORED_GROUP"]

#: Node ranks (or partners: -1, unpaired) as an array.
Ranks = NDArray[np.int64]
#: One flag per node (or per line) as an array.
Mask = NDArray[np.bool_]
#: How alike two candidates are (see :func:`.scoring.score`); tuples compare field by field.
Score = Tuple[int, int, int, int, int, int]

#: Users of one node considered together; larger fan-outs are paired by their inputs only.
MAX_GROUP = 64
#: Members of a group of equal candidates scored pair by pair; larger groups go in order.
SCORED_GROUP = 16


class Side:
    """One document during matching: its graph, labels, and each node's partner (-1: none)."""

    __slots__ = ("graph", "tiers", "l0", "sig", "inputs", "kind", "position", "partner", "other", "is_a", "ops",
                 "cached", "l0_values")

    def __init__(self, index: IndexedDocument, is_a: bool) -> None:
        self.graph: CanonicalGraph = index.graph
        self.tiers: Tuple[List[int], List[int], List[int], List[int]] = index.labels.tiers
        self.l0: List[int] = self.tiers[0]
        self.sig: List[int] = index.labels.signature
        if index.labels.positional:
            # A parameter known by its position alone is no evidence by itself: a parameter
            # added or removed before it moves the rest of the list (the nodes reading it say).
            self.sig = list(self.sig)
            for p in index.labels.positional:
                self.sig[p] = hash(("positional parameter", is_a, p))
        self.inputs: List[List[int]] = index.graph.inputs
        self.kind: List[str] = index.graph.kind
        self.position: List[int] = index.graph.position
        self.partner: List[int] = [-1] * index.graph.size
        self.other: Side = self
        self.is_a = is_a
        self.ops: Optional[Mask] = None  # which nodes are Op nodes
        self.l0_values: Optional[Ranks] = None
        self.cached: Tuple[int, Ranks, List[int]] = (-1, np.zeros(0, dtype=np.int64), [])

    @property
    def users(self) -> UserIndex:
        """``(user, input position)`` of each node's users (made when first asked for)."""
        return self.graph.users

    def l0_array(self) -> Ranks:
        """The tier-0 labels as an array."""
        if self.l0_values is None:
            self.l0_values = np.asarray(self.l0, dtype=np.int64)
        return self.l0_values

    def op_mask(self) -> Mask:
        """Which nodes are Op nodes (labels of calls, paired last)."""
        if self.ops is None:
            self.ops = np.fromiter((k == "Op" for k in self.kind), dtype=bool, count=len(self.kind))
        return self.ops

    def partners(self, stamp: int) -> Ranks:
        """``partner`` as an array, made again when ``stamp`` (the pairs made) has changed."""
        if self.cached[0] != stamp:
            part = np.asarray(self.partner, dtype=np.int64)
            self.cached = (stamp, part, np.flatnonzero((part < 0) & ~self.op_mask()).tolist())
        return self.cached[1]

    def unpaired(self, stamp: int) -> List[int]:
        """The unpaired nodes but Op nodes, in rank order (``stamp`` as for :meth:`partners`)."""
        self.partners(stamp)
        return self.cached[2]


class MatchState:
    """The two sides of a diff and what the phases leave for each other (see the module)."""

    __slots__ = ("A", "B", "ia", "ib", "queue", "weak", "sequence", "groups", "reach", "settled", "residual_done",
                 "count", "runs_done", "recent", "open_labels", "lines", "unpairable")

    def __init__(self, ia: IndexedDocument, ib: IndexedDocument) -> None:
        self.A, self.B = Side(ia, True), Side(ib, False)
        self.A.other, self.B.other = self.B, self.A
        self.ia, self.ib = ia, ib
        self.queue: List[int] = []  # before ranks of new pairs, to propagate from
        self.weak: List[Tuple[int, int, int, int]] = []  # slot pairs without evidence, a heap
        self.sequence = 0  # pushes onto ``weak``, to keep its order stable
        self.groups: List[Tuple[List[int], List[int]]] = []  # equal candidates, for the tie-break
        self.reach = False  # whether propagation looks through inserted and deleted nodes
        self.settled: Dict[bool, int] = {False: -1, True: -1}  # pair counts at which propagation reached a fixpoint
        self.residual_done: Dict[int, int] = {}  # pair counts at which each residual tier ran
        self.count = 0  # pairs made
        self.runs_done = -1  # the pair count at which runs were last extended
        self.recent: List[int] = []  # before ranks paired since the last frontier
        #: Tier-0 labels of the unpaired nodes of each side (a superset as pairs are made).
        self.open_labels: Tuple[Set[int], Set[int]] = (set(), set())
        self.lines: Optional[Lines] = None  # made by the first run of :func:`.runs.runs`
        #: Global functions whose name both documents give to functions of different kinds
        #: (FuseTIR makes a Relax function a PrimFunc): a name is a function's identity, so
        #: they pair with nothing rather than with another function of their kind.
        fa, fb = ia.graph.functions, ib.graph.functions
        self.unpairable: Tuple[Set[int], Set[int]] = (
            {fa[n] for n in fa if n in fb and self.A.l0[fa[n]] != self.B.l0[fb[n]]},
            {fb[n] for n in fb if n in fa and self.A.l0[fa[n]] != self.B.l0[fb[n]]})

    def pair(self, a: int, b: int) -> bool:
        """Pair ``a`` (before) with ``b`` (after) if both are unpaired, of one tier-0 label and
        pairable; the pair is queued for propagation. Whether it was made."""
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

    def pair_rewritten(self, a: int, b: int) -> bool:
        """Pair two calls of different operators of one role (see :mod:`.rewrites`), both
        unpaired and pairable; not queued for propagation. Whether it was made."""
        pa, pb = self.A.partner, self.B.partner
        if pa[a] >= 0 or pb[b] >= 0 or a in self.unpairable[0] or b in self.unpairable[1]:
            return False
        pa[a] = b
        pb[b] = a
        self.recent.append(a)
        self.count += 1
        return True

    def link(self, s: Side, x: int, y: int) -> bool:
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

    def bulk(self, nodes_a: Ranks, nodes_b: Ranks) -> None:
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


def unique(keys: Sequence[Hashable]) -> Dict[Hashable, int]:
    """Keys that occur once, with their index."""
    seen: Dict[Hashable, int] = {}
    for i, key in enumerate(keys):
        seen[key] = -1 if key in seen else i
    return {k: i for k, i in seen.items() if i >= 0}
