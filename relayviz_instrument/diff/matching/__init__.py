"""Pairing the nodes of two snapshots: a one-to-one mapping that survives duplicates.

The matcher follows GumTree and XLA's hlo_diff, adapted to Relay's DAGs, with a text diff's
way of aligning runs of equal lines. Every step finds a node's candidates in an index (the
users of its inputs' partners, the inputs of its users' partners, a table of signatures or of
line keys), never among all unpaired nodes of its label, so a diff costs time in proportion
to the graphs, however many nodes look alike.

The phases, one module each, share one :class:`~.state.MatchState` (both sides and the
pairing so far); :func:`match` runs them in this order:

1. **Identical documents** (equal labels and references in canonical order) are paired in
   one comparison (:mod:`.anchors`).
2. **Anchors** (:mod:`.anchors`). Global functions are paired by name, the ``root``
   expressions, parameters by name when the name is unique in both lists.
3. **Blocks** (:mod:`.anchors`), where parameters have no names to tell them apart: the two
   main chains are aligned block by block (:mod:`..blocks`), and the blocks that align paired
   node by node.
4. **Identical sub-graphs** (:mod:`.exact`): nodes whose signature occurs once on each side.
5. **Runs** (:mod:`.runs`): from each pair, the stretch of equal lines above it in the two
   documents' topological orders (:func:`..signatures.line_keys`), vectorized; most of an
   edited graph is paired here.
6. **Propagation to a fixpoint** (:mod:`.propagation`) from the pairs next to unpaired nodes
   (of a label the other side still has unpaired): inputs by position (:mod:`.downward`; by
   alignment when their number differs; by signature, else content, first, so swapped
   arguments stay with their pairs), users by operator and input position (:mod:`.upward`;
   by content and paired inputs first). A candidate is paired when nothing else agrees as
   well with its paired inputs and users (:mod:`.scoring`); a pair that only shares one
   neighbour waits in a queue tried when nothing surer is left, and only if its type is equal
   and its attributes or users alike; equally good candidates wait as a group. Then
   propagation looks through up to three inserted or deleted nodes (:mod:`.look_through`:
   ``expand_dims`` then ``layout_transform`` before an ``add``).
7. **Residual signatures** (:mod:`.residual`). The nodes still unpaired are hashed again at
   tiers 3, 2, 1 and 0, where an input that is already paired counts as that pair: a unique
   residual signature pairs a node whose attributes, type or value changed between nodes that
   did not.
8. **Regions** (:mod:`.regions`). Unpaired nodes form regions; a region of each side that
   borders the same pairs is aligned in data-flow order by operator (a ``nn.relu`` between
   two batch norms that SimplifyInference expanded).
9. **Parameters left** (:mod:`.anchors`), in the order of their lists; **ties**
   (:mod:`.ties`): groups that no neighbour separates are paired in canonical order; then a
   removed node whose twin was paired takes the twin's place when more of the pair's users
   read it (EliminateCommonSubexpr keeps the node most users already read).
10. **Operator rewrites** (:mod:`.rewrites`): a removed call and an added call of operators of
    one role (``nn.conv2d`` and ``nn.contrib_conv2d_NCHWc``) that sit in one place, read
    through the layout transforms around them, are paired, as the one pair of different
    operators a diff makes.
11. **Op nodes** follow their calls (:mod:`.operators`).

Nodes of different tier-0 labels (kind and operator) are never paired, but by the operator
rewrites of step 10. The two documents'
sides are one :class:`~.state.Side` each, and every step that looks from one side to the
other is written once and run both ways.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..index import IndexedDocument
from .anchors import align_blocks, anchor, identical, leftover_params
from .exact import exact
from .operators import pair_ops
from .propagation import settle
from .regions import regions
from .residual import residual
from .rewrites import pair_rewrites
from .state import MatchState
from .ties import break_ties, swap_twins

__all__ = ["match", "run_phases", "PHASES"]


#: The phases of :func:`match`, in the order it first runs them.
PHASES = ("anchor", "align_blocks", "exact", "settle", "residual", "regions", "leftover_params", "break_ties",
          "swap_twins", "pair_rewrites", "pair_ops")


def match(ia: IndexedDocument, ib: IndexedDocument) -> Tuple[List[int], List[int]]:
    """Pair the nodes of two indexed documents; return ``(a2b, b2a)`` rank maps (-1: unpaired)."""
    st = MatchState(ia, ib)
    if identical(st):
        return st.A.partner, st.B.partner
    run_phases(st)
    return st.A.partner, st.B.partner


def run_phases(st: MatchState, until: Optional[str] = None) -> None:
    """Run the phases of :func:`match` on ``st`` (two documents that are not identical) in their
    order, stopping before the first run of the phase ``until`` (one of :data:`PHASES`; every
    phase when None): the tests of each phase bring a state to it this way."""
    stop = PHASES.index(until) if until is not None else len(PHASES)

    def runs(phase: str) -> bool:
        return PHASES.index(phase) < stop

    if runs("anchor"):
        anchor(st)
    if runs("align_blocks"):
        align_blocks(st)
    if runs("exact"):
        exact(st)
        st.queue = []  # propagation starts from the frontier, once runs have paired the bulk
    if runs("settle"):
        settle(st)
    if runs("residual"):
        for tier in (3, 2, 1, 0):
            residual(st, tier)
            settle(st)
    if runs("regions"):
        regions(st)
        settle(st)
    if runs("leftover_params"):
        leftover_params(st)
        settle(st)
    if runs("break_ties"):
        for final in (False, True):
            break_ties(st, final)
            settle(st)
            for tier in (1, 0):
                residual(st, tier)
                settle(st)
    if runs("swap_twins"):
        for side in (st.A, st.B):
            swap_twins(st, side)
    if runs("pair_rewrites"):
        pair_rewrites(st)
    if runs("pair_ops"):
        pair_ops(st)
