"""A document indexed for diffing: its canonical graph, labels and signatures, computed once.

A trace diffs each snapshot twice, as the after of one pass and the before of the next;
:func:`index_document` does the per-document half of a diff (about half its time) once, and
:func:`relayviz_instrument.diff.diff` accepts the result in place of the document.
"""

from __future__ import annotations

from typing import Any, Mapping, Union

from .signatures import Labels
from .view import CanonicalGraph

__all__ = ["IndexedDocument", "index_document", "Diffable"]

class IndexedDocument:
    """A RelayViz document with what every diff of it needs: ``graph`` (the canonical graph:
    order, inputs, users, inlined functions, Let bindings) and ``labels`` (label tiers and
    structural signatures). Read-only once made; share it between diffs freely."""

    __slots__ = ("doc", "graph", "labels", "_process")

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc
        self.graph = CanonicalGraph(doc)
        self.labels = Labels(self.graph)

    @property
    def size(self) -> int:
        return self.graph.size

    def __getstate__(self) -> Any:
        return self.doc

    def __setstate__(self, doc: Any) -> None:
        IndexedDocument.__init__(self, doc)

    def __repr__(self) -> str:
        return f"<IndexedDocument of {self.graph.size} nodes>"


#: What :func:`~relayviz_instrument.diff.diff` accepts on each side.
Diffable = Union[Mapping[str, Any], IndexedDocument]


def index_document(doc: Diffable) -> IndexedDocument:
    """Index a RelayViz document for diffing; an :class:`IndexedDocument` is returned as is.

    The document must be valid (as :func:`relayviz_instrument.load` returns it) and must not
    change while the index is in use: the index refers to its nodes.
    """
    return doc if isinstance(doc, IndexedDocument) else IndexedDocument(doc)
