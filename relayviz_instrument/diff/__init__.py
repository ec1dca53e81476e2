"""Node-level diff of two RelayViz documents: a pure function, no rich, no I/O.

One module per concern::

    graph.py       a document as a graph: canonical numbering, inputs, users, inlined functions
    signatures.py  labels at four tiers, structural signatures, line keys
    index.py       a document indexed once (graph, labels, signatures) for any number of diffs
    sequence.py    order-preserving alignment of two key sequences (a line diff's core)
    blocks.py      the blocks of a main chain, aligned block by block
    components.py  connected components, vectorized
    matching/      the one-to-one pairing of nodes, one module per phase over one shared state
    changes.py     what differs inside a pair; how a node is described
    hunks.py       changes grouped into replaced / merged / wrapped / inserted / ... hunks
    model.py       the result: GraphDiff, NodeMatch, Hunk
"""

from __future__ import annotations

from typing import Dict, List, Literal, Tuple

from ..format import Document
from .changes import NodeDescriptions, compare_pairs, json_equal
from .hunks import build_hunks
from .index import Diffable, IndexedDocument, collector_paused, index_document
from .matching import match
from .model import FieldChange, GraphDiff, Hunk, HunkGroup, NodeInfo, NodeMatch

__all__ = ["diff", "index_document", "IndexedDocument", "DIFF_VERSION", "GraphDiff", "NodeMatch",
           "FieldChange", "NodeInfo", "Hunk", "HunkGroup", "module_changes"]

#: The version of what :func:`diff` answers: raised whenever the same two documents may give
#: another result (other pairs, hunks or labels), so that results derived from stored traces
#: (cached summaries) are redone.
DIFF_VERSION = 9


def diff(before: Diffable, after: Diffable) -> GraphDiff:
    """Compare two RelayViz documents node by node.

    Every node of ``before`` is paired with a node of ``after`` or removed, every node of
    ``after`` paired or added; pairs are one to one and never join nodes of different kinds
    or operators. The result does not depend on how either document numbers its nodes.
    Both documents must be valid (as :func:`relayviz_instrument.load` returns them); either
    may be given as an :class:`IndexedDocument` (:func:`index_document`) to reuse its index.
    """
    with collector_paused():
        if _same_document(before, after):
            return _unchanged(before, after)
        return _diff(index_document(before), index_document(after))


def _same_document(before: Diffable, after: Diffable) -> bool:
    """Whether the two are equal as JSON (one comparison, no index needed)."""
    a, b = _document(before), _document(after)
    return a is b or (a.get("functions") == b.get("functions") and a.get("root") == b.get("root")
                      and a["nodes"] == b["nodes"])


def _document(doc: Diffable) -> Document:
    return doc.doc if isinstance(doc, IndexedDocument) else doc


def _unchanged(before: Diffable, after: Diffable) -> GraphDiff:
    """The diff of a document with one whose expressions are equal: every node paired with
    itself (module-level fields may still differ)."""
    nodes = len(_document(before)["nodes"])
    ids = range(nodes)
    return GraphDiff(mapping=dict(zip(ids, ids)), added=(), removed=(), changed=(), rewired=(), hunks=(),
                     info_before={}, info_after={}, op_delta={}, nodes_before=nodes, nodes_after=nodes,
                     module=module_changes(_document(before), _document(after)))


def _diff(ia: IndexedDocument, ib: IndexedDocument) -> GraphDiff:
    va, vb = ia.graph, ib.graph
    a2b, b2a = match(ia, ib)
    changed, rewired = compare_pairs(ia, ib, a2b)
    by_rank = {va.rank_of[m.before]: m for m in changed + rewired}
    hunks = build_hunks(va, vb, ia.labels, a2b, b2a, by_rank)

    removed = [a for a in range(va.size) if a2b[a] < 0]
    added = [b for b in range(vb.size) if b2a[b] < 0]
    op_delta: Dict[str, int] = {}
    for graph, ranks, step in ((va, removed, -1), (vb, added, 1)):
        for r in ranks:
            name = graph.op_name(r)
            if name is not None:
                op_delta[name] = op_delta.get(name, 0) + step
    for m in changed:  # a call rewritten into another operator counts as one less and one more
        if m.fields and m.fields[0].field == "op":
            old, new = str(m.fields[0].before), str(m.fields[0].after)
            op_delta[old] = op_delta.get(old, 0) - 1
            op_delta[new] = op_delta.get(new, 0) + 1
    mentioned_a = set(removed) | set(by_rank)
    mentioned_b = set(added) | {vb.rank_of[m.after] for m in changed + rewired}
    for hunk in hunks:
        for a, b in hunk.matched:
            mentioned_a.add(va.rank_of[a])
            mentioned_b.add(vb.rank_of[b])
    return GraphDiff(
        mapping=dict(zip([va.doc_id[a] for a in range(va.size) if a2b[a] >= 0],
                         [vb.doc_id[b] for b in a2b if b >= 0])),
        added=tuple(sorted(vb.doc_id[b] for b in added)),
        removed=tuple(sorted(va.doc_id[a] for a in removed)),
        changed=tuple(sorted(changed, key=lambda m: m.before)),
        rewired=tuple(sorted(rewired, key=lambda m: m.before)),
        hunks=tuple(hunks),
        info_before=NodeDescriptions(va, mentioned_a),
        info_after=NodeDescriptions(vb, mentioned_b),
        op_delta={k: v for k, v in sorted(op_delta.items()) if v},
        nodes_before=va.size,
        nodes_after=vb.size,
        module=module_changes(ia.doc, ib.doc),
    )


#: Root fields that describe the module besides its expressions, compared entry by entry.
_MODULE_FIELDS: Tuple[Literal["type_definitions", "attrs"], ...] = ("type_definitions", "attrs")


def module_changes(before: Document, after: Document) -> Tuple[FieldChange, ...]:
    """What differs between two documents' module-level fields (type definitions, module
    attributes), one :class:`FieldChange` per entry added, removed or changed."""
    out: List[FieldChange] = []
    for name in _MODULE_FIELDS:
        old, new = before.get(name) or {}, after.get(name) or {}
        for key in sorted(set(old) | set(new)):
            if not json_equal(old.get(key), new.get(key)):
                out.append(FieldChange(f"{name}.{key}", old.get(key), new.get(key)))
    return tuple(out)
