"""What each pass of a trace did, derived when the trace is read.

A trace records raw facts: snapshots, node counts, times. The diff of a changed pass is
derived from its two snapshots, when someone asks, so that it always comes from the diff
engine that reads it (not the one that ran inside the compilation) and costs the
compilation nothing. Summaries (the ``+ - ~`` of the pass table) are cached in a trace
directory's ``cache/diff-v<DIFF_VERSION>.json`` (:mod:`~relayviz_instrument.analysis.diff_cache`,
which checks every entry it reads), keyed by the two snapshot references, so a second
``relayviz show`` reads them back and a better diff engine recomputes them.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..diff import GraphDiff, IndexedDocument, diff, index_document
from ..diff.graph import CanonicalGraph
from ..format import INFERRED_TYPE_KINDS, Document
from ..store import PassRecord, TraceLike
from .diff_cache import CACHE_DIR, UNTYPED, read_cache, write_cache
from .pipeline import Credit

__all__ = ["PassDiffs", "CACHE_DIR", "without_inferred_types", "add_summaries"]

#: Documents kept in memory: a pass's output is usually the next changed pass's input.
_DOCUMENTS = 4


class PassDiffs:
    """The diffs and diff summaries of the changed passes of ``trace``, each computed once.

    ``trace`` is a :class:`~relayviz_instrument.store.TraceLike` (a trace read back, or a live
    :class:`~relayviz_instrument.RelayVizTrace`). Summaries are read from and
    written to the trace directory's cache when it has one (entries that do not check out are
    dropped; a cache that cannot be written is skipped: it only saves time). Diffs are kept
    once computed, so every view of one trace (table, report, provenance, HTML page) diffs a
    pair of snapshots once; documents are kept ``keep_documents`` at a time (``None``: all).
    """

    def __init__(self, trace: TraceLike, *, use_cache: bool = True, keep_documents: Optional[int] = _DOCUMENTS) -> None:
        self.trace = trace
        self._keep = keep_documents  # None: every document read stays in memory
        self._documents: "OrderedDict[str, Document]" = OrderedDict()
        self._indexes: "OrderedDict[str, IndexedDocument]" = OrderedDict()
        # Graphs made for views before any index of their snapshot: (document, graph).
        self._views: "OrderedDict[str, Tuple[Document, CanonicalGraph]]" = OrderedDict()
        self._diffs: Dict[Tuple[str, str, bool], GraphDiff] = {}
        self._cache_root: Optional[Path] = None
        self._read: Optional[Dict[str, Dict[str, Any]]] = None  # the summaries, once the cache is read
        self._dirty = False
        path = getattr(trace, "path", None)
        if use_cache and path is not None:
            self._cache_root = Path(path)

    @property
    def _summaries(self) -> Dict[str, Dict[str, Any]]:
        """The summaries known: the trace's cache, read when a summary is first asked for."""
        if self._read is None:
            self._read = {} if self._cache_root is None else read_cache(self._cache_root, self.trace.records)
        return self._read

    def document(self, ref: str) -> Document:
        """The snapshot ``ref`` (the last few are kept in memory)."""
        doc = self._documents.get(ref)
        if doc is None:
            doc = self.trace.snapshot(ref)
            self._documents[ref] = doc
            while self._keep is not None and len(self._documents) > self._keep:
                self._documents.popitem(last=False)
        else:
            self._documents.move_to_end(ref)
        return doc

    def indexed(self, ref: str) -> IndexedDocument:
        """The snapshot ``ref`` indexed for diffing: a trace diffs most snapshots twice (as the
        after of one pass and the before of the next), and the index is made once."""
        index = self._indexes.get(ref)
        if index is None:
            doc = self.document(ref)
            made = self._views.pop(ref, None)  # its graph, if made from this very document
            index = self._indexes[ref] = index_document(doc, made[1] if made and made[0] is doc else None)
            self._trim(self._indexes)
        else:
            self._indexes.move_to_end(ref)
        return index

    def graph(self, ref: str) -> CanonicalGraph:
        """The snapshot ``ref`` as the diff reads it (for drawing and describing its nodes): the
        graph of its index if it has one, else made once and kept like the indexes."""
        index = self._indexes.get(ref)
        if index is not None:
            return index.graph
        made = self._views.get(ref)
        if made is None:
            doc = self.document(ref)
            made = self._views[ref] = (doc, CanonicalGraph(doc))
            self._trim(self._views)
        else:
            self._views.move_to_end(ref)
        return made[1]

    def _trim(self, kept: "OrderedDict[str, Any]") -> None:
        while self._keep is not None and len(kept) > self._keep:
            kept.popitem(last=False)

    def diff(self, record: PassRecord) -> Optional[GraphDiff]:
        """The diff of a pass that changed the module (``None`` for any other record)."""
        if not (record.changed and record.before and record.after):
            return None
        return self.pair_diff(record.before, record.after)

    def summary(self, record: PassRecord) -> Optional[Dict[str, Any]]:
        """The diff summary of a pass that changed the module (``None`` for any other record)."""
        if not (record.changed and record.before and record.after):
            return None
        cached = self._summaries.get(f"{record.before}-{record.after}")
        if cached is not None:
            return cached
        result = self.diff(record)
        return None if result is None else result.summary

    def pair_diff(self, before: str, after: str, *, ignore_types: bool = False) -> GraphDiff:
        """The diff of two snapshots of the trace (with ``ignore_types``, of the two with the
        types inference fills in removed, so that what a pass did shows without what the
        InferType nested in it added)."""
        found = self._diffs.get((before, after, ignore_types))
        if found is not None:
            return found
        if ignore_types:
            result = diff(without_inferred_types(self.document(before)),
                          without_inferred_types(self.document(after)))
        else:
            result = diff(self.indexed(before), self.indexed(after))
        self._diffs[(before, after, ignore_types)] = result
        key = f"{before}-{after}" + (f"-{UNTYPED}" if ignore_types else "")
        if key not in self._summaries:
            self._summaries[key] = result.summary
            self._dirty = True
        return result

    def pair_summary(self, before: str, after: str, *, ignore_types: bool = False) -> Dict[str, Any]:
        """The summary of :meth:`pair_diff` (from the cache when it is there)."""
        cached = self._summaries.get(f"{before}-{after}" + (f"-{UNTYPED}" if ignore_types else ""))
        if cached is not None:
            return cached
        return self.pair_diff(before, after, ignore_types=ignore_types).summary

    def credited_diffs(self, credit: Credit) -> List[GraphDiff]:
        """The diffs of the parts of a pass's run that are its own (see
        :class:`~relayviz_instrument.analysis.pipeline.Credit`)."""
        return [self.pair_diff(a, b, ignore_types=untyped) for a, b, untyped in credit.parts]

    def credited_summary(self, credit: Credit) -> Dict[str, Any]:
        """The summary of what a pass did itself: its parts' summaries added up (empty: nothing)."""
        return add_summaries([self.pair_summary(a, b, ignore_types=untyped) for a, b, untyped in credit.parts])

    def summaries(self, records: Iterable[PassRecord]) -> Dict[int, Dict[str, Any]]:
        """Summaries by record index for the changed passes among ``records``; saves the cache."""
        out = {}
        for record in records:
            found = self.summary(record)
            if found is not None:
                out[record.index] = found
        self.save()
        return out

    def save(self) -> None:
        """Write the summaries computed so far to the trace's cache, if it has one."""
        if self._dirty and self._cache_root is not None and write_cache(self._cache_root, self._summaries):
            self._dirty = False


#: The fields type inference fills in, by node kind (a Var's come from its annotation or, for
#: the Vars a rewrite creates without one, from inference).
_INFERRED_FIELDS = {**{kind: ("type",) for kind in INFERRED_TYPE_KINDS},
                    "Function": ("ret_type",), "Var": ("type", "dtype", "shape")}


def without_inferred_types(doc: Document) -> Document:
    """A copy of ``doc`` without the types a module gets from type inference, to compare a
    half-rewritten module (whose new expressions have none yet) with a finished one."""
    nodes = []
    for node in doc["nodes"]:
        drop = _INFERRED_FIELDS.get(node["node_kind"], ())
        if any(k in node for k in drop):
            node = {k: v for k, v in node.items() if k not in drop}
        nodes.append(node)
    return {**doc, "nodes": nodes}


def add_summaries(summaries: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Diff summaries of consecutive parts of one pass's run, as one: counts and operator deltas
    added up, hunk groups listed in order. No parts give ``{}``."""
    if len(summaries) <= 1:
        return dict(summaries[0]) if summaries else {}
    out: Dict[str, Any] = {key: sum(s.get(key, 0) for s in summaries)
                           for key in ("added", "removed", "changed", "rewired", "unchanged")}
    out["hunks"] = [group for s in summaries for group in s.get("hunks", [])]
    ops: Dict[str, int] = {}
    for s in summaries:
        for op, count in s.get("ops", {}).items():
            ops[op] = ops.get(op, 0) + count
    if any(ops.values()):
        out["ops"] = {op: count for op, count in sorted(ops.items()) if count}
    return out
