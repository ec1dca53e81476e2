"""Match states of small documents, for the tests of the matcher's phases one by one.

A phase test builds two documents (``diffgraphs.DocumentBuilder``, or ``to_relayviz`` of a
Relay program), makes a :class:`~relayviz_instrument.diff.matching.state.MatchState`, brings it
to where the phase runs (:func:`run_until`, or pairs made by hand with :func:`pair_ids`), runs
the phase, and states which pairs it made. Pairs are named by document node ids, which the
test chose, rather than by canonical ranks, which the index computes.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Set, Tuple

from relayviz_instrument.diff.index import index_document
from relayviz_instrument.diff.matching.anchors import align_blocks, anchor, identical, leftover_params
from relayviz_instrument.diff.matching.exact import exact
from relayviz_instrument.diff.matching.propagation import settle
from relayviz_instrument.diff.matching.regions import regions
from relayviz_instrument.diff.matching.residual import residual
from relayviz_instrument.diff.matching.rewrites import pair_rewrites
from relayviz_instrument.diff.matching.state import MatchState
from relayviz_instrument.diff.matching.ties import break_ties, swap_twins

#: The phases of ``match`` in the order it first runs them (see ``diff/matching/__init__.py``).
PHASES = ("anchor", "align_blocks", "exact", "settle", "residual", "regions", "leftover_params", "break_ties",
          "swap_twins", "pair_rewrites", "pair_ops")


def state(before: Mapping[str, Any], after: Mapping[str, Any]) -> MatchState:
    """A fresh match state of two documents (nothing paired)."""
    return MatchState(index_document(before), index_document(after))


def rank_a(st: MatchState, node_id: int) -> int:
    """The canonical rank of node ``node_id`` of the before document."""
    return st.A.graph.rank_of[node_id]


def rank_b(st: MatchState, node_id: int) -> int:
    """The canonical rank of node ``node_id`` of the after document."""
    return st.B.graph.rank_of[node_id]


def pair_ids(st: MatchState, *pairs: Tuple[int, int]) -> None:
    """Pair nodes given by document ids, ``(before id, after id)``, as an earlier phase would."""
    for x, y in pairs:
        assert st.pair(rank_a(st, x), rank_b(st, y)), (x, y)


def paired(st: MatchState) -> Set[Tuple[int, int]]:
    """The pairs made so far, as ``(before id, after id)``."""
    ids_a, ids_b = st.A.graph.doc_id, st.B.graph.doc_id
    return {(ids_a[a], ids_b[b]) for a, b in enumerate(st.A.partner) if b >= 0}


def partners(st: MatchState) -> Dict[int, int]:
    """Before id -> after id of every pair made so far."""
    return dict(paired(st))


def run_until(st: MatchState, phase: str) -> None:
    """Run the phases of ``match`` on ``st`` in its order, up to the first run of ``phase``
    (not included); the documents must not be identical."""
    stop = PHASES.index(phase)

    def before(name: str) -> bool:
        return PHASES.index(name) < stop

    assert not identical(st)
    if before("anchor"):
        anchor(st)
    if before("align_blocks"):
        align_blocks(st)
    if before("exact"):
        exact(st)
        st.queue = []
    if before("settle"):
        settle(st)
    if before("residual"):
        for tier in (3, 2, 1, 0):
            residual(st, tier)
            settle(st)
    if before("regions"):
        regions(st)
        settle(st)
    if before("leftover_params"):
        leftover_params(st)
        settle(st)
    if before("break_ties"):
        for final in (False, True):
            break_ties(st, final)
            settle(st)
            for tier in (1, 0):
                residual(st, tier)
                settle(st)
    if before("pair_rewrites"):
        for side in (st.A, st.B):
            swap_twins(st, side)
    if before("pair_ops"):
        pair_rewrites(st)
