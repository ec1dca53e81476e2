"""What differs inside a pair of nodes, and how a node is described in a diff."""

from __future__ import annotations

from typing import List, Sequence, Tuple

from relayviz_instrument.diff.changes import describe, field_changes  # unchanged since
from relayviz_instrument.diff.model import FieldChange, NodeMatch

from .signatures import Labels, compared_fields
from .view import GraphView

__all__ = ["compare_pairs", "describe"]


def compare_pairs(va: GraphView, vb: GraphView, la: Labels, lb: Labels,
                  a2b: Sequence[int]) -> Tuple[List[NodeMatch], List[NodeMatch]]:
    """The pairs that are not unchanged, split into ``(changed, rewired)``, in before-rank order.

    A pair is changed when its compared fields differ (the tier-3 labels tell cheaply when
    they do not), rewired when only its inputs do, read through inlined functions.
    """
    changed: List[NodeMatch] = []
    rewired: List[NodeMatch] = []
    l3a, l3b = la.tiers[3], lb.tiers[3]
    ins_a, ins_b = va.inputs, vb.inputs
    for a in range(va.size):
        b = a2b[a]
        if b < 0:
            continue
        moved = [a2b[x] for x in ins_a[a]] != ins_b[b]
        fields: Tuple[FieldChange, ...] = ()
        if l3a[a] != l3b[b]:
            fields = field_changes(compared_fields(va, a), compared_fields(vb, b))
        if not fields and not moved:
            continue
        inputs = (tuple(va.doc_id[x] for x in ins_a[a]), tuple(vb.doc_id[y] for y in ins_b[b]))
        match = NodeMatch(va.doc_id[a], vb.doc_id[b], "changed" if fields else "rewired", fields,
                          inputs, moved)
        (changed if fields else rewired).append(match)
    return changed, rewired
