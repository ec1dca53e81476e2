"""The diff engine as it was before DIFF_VERSION 2, frozen for tests that compare the two.

Not shipped: tests/test_diff_legacy.py diffs real traces with both engines. Do not edit.

Node-level diff of two RelayViz documents: a pure function, no rich, no I/O.

Its result model, field comparison and node descriptions are the package's (unchanged
since); view, signatures, matching, pair comparison and hunks are the first engine's own.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Any, Dict, Iterator, Mapping

from .changes import compare_pairs, describe

from .hunks import build_hunks
from .matching import match
from relayviz_instrument.diff.model import GraphDiff
from .signatures import Labels, SignatureTable
from .view import GraphView

__all__ = ["diff"]


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> GraphDiff:
    """Compare two RelayViz documents node by node.

    Every node of ``before`` is paired with a node of ``after`` or removed, every node of
    ``after`` paired or added; pairs are one to one and never join nodes of different kinds
    or operators. The result does not depend on how either document numbers its nodes.
    Both documents must be valid (as :func:`relayviz_instrument.load` returns them).
    """
    with _collector_paused():
        return _diff(before, after)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: a diff allocates a few containers per node and
    frees them all at the end, and collections triggered on the way cost a third of the time
    of a 50k-node diff. The collector's previous state is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> GraphDiff:
    table = SignatureTable()
    va, vb = GraphView(before), GraphView(after)
    la, lb = Labels(va, table), Labels(vb, table)
    a2b, b2a = match(va, vb, la, lb)
    changed, rewired = compare_pairs(va, vb, la, lb, a2b)
    by_rank = {va.rank_of[m.before]: m for m in changed + rewired}
    hunks = build_hunks(va, vb, la, a2b, b2a, by_rank)

    removed = [a for a in range(va.size) if a2b[a] < 0]
    added = [b for b in range(vb.size) if b2a[b] < 0]
    op_delta: Dict[str, int] = {}
    for view, ranks, step in ((va, removed, -1), (vb, added, 1)):
        for r in ranks:
            name = view.op_name(r)
            if name is not None:
                op_delta[name] = op_delta.get(name, 0) + step
    mentioned_a = set(removed) | set(by_rank)
    mentioned_b = set(added) | {vb.rank_of[m.after] for m in changed + rewired}
    for hunk in hunks:
        for a, b in hunk.matched:
            mentioned_a.add(va.rank_of[a])
            mentioned_b.add(vb.rank_of[b])
    return GraphDiff(
        mapping={va.doc_id[a]: vb.doc_id[b] for a, b in enumerate(a2b) if b >= 0},
        added=tuple(sorted(vb.doc_id[b] for b in added)),
        removed=tuple(sorted(va.doc_id[a] for a in removed)),
        changed=tuple(sorted(changed, key=lambda m: m.before)),
        rewired=tuple(sorted(rewired, key=lambda m: m.before)),
        hunks=tuple(hunks),
        info_before={va.doc_id[r]: describe(va, r) for r in sorted(mentioned_a)},
        info_after={vb.doc_id[r]: describe(vb, r) for r in sorted(mentioned_b)},
        op_delta={k: v for k, v in sorted(op_delta.items()) if v},
        nodes_before=va.size,
        nodes_after=vb.size,
    )
