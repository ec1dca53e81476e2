"""Match states of small documents, for the tests of the matcher's phases one by one.

A phase test builds two documents (``diffgraphs.DocumentBuilder``, or ``to_relayviz`` of a
Relay program), makes a :class:`~relayviz_instrument.diff.matching.state.MatchState`, brings it
to where the phase runs (:func:`run_until`, or pairs made by hand with :func:`pair_ids`), runs
the phase, and states which pairs it made. Pairs are named by document node ids, which the
test chose, rather than by canonical ranks, which the index computes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Set, Tuple

from diffgraphs import DocumentBuilder

from relayviz_instrument.diff.index import index_document
from relayviz_instrument.diff.matching import run_phases
from relayviz_instrument.diff.matching.anchors import identical
from relayviz_instrument.diff.matching.state import MatchState


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
    assert not identical(st)
    run_phases(st, until=phase)


def relu_chain(bottom: str, length: int) -> Tuple[Dict[str, Any], List[int]]:
    """main(x) = relu(relu(... bottom(x))): ``length`` relus above one call of ``bottom``; the
    document and the ids of the chain's calls, bottom first."""
    b = DocumentBuilder()
    x = b.var("x")
    chain = [b.call(bottom, x)]
    for _ in range(length):
        chain.append(b.call("nn.relu", chain[-1]))
    b.function(chain[-1], [x])
    return b.document(), chain
