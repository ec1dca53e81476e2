"""Snapshots of one trace and the diffs between them, each read or computed once.

Provenance chains the diffs of the passes on the pipeline, and the HTML report shows the diff
of every pass that changed the module: the two share one :class:`DiffCache`, so a pass on the
pipeline is diffed once for both.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .diff import GraphDiff, diff
from .store import Trace

__all__ = ["DiffCache"]


class DiffCache:
    """The documents of ``trace``'s snapshots and their diffs, by snapshot reference.

    Documents are kept once read (a report shows most of them); a diff is keyed by the pair of
    references, so two events with the same input and output share it.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._documents: Dict[str, Dict[str, Any]] = {}
        self._diffs: Dict[Tuple[str, str], GraphDiff] = {}

    def document(self, ref: str) -> Dict[str, Any]:
        """The validated RelayViz document stored under ``ref``."""
        doc = self._documents.get(ref)
        if doc is None:
            doc = self._documents[ref] = self.trace.snapshot(ref)
        return doc

    def diff(self, before: str, after: str) -> GraphDiff:
        """The diff of the snapshots ``before`` and ``after`` (see :func:`relayviz_instrument.diff`)."""
        key = (before, after)
        result = self._diffs.get(key)
        if result is None:
            result = self._diffs[key] = diff(self.document(before), self.document(after))
        return result
