"""A document indexed for diffing: its canonical graph, labels and signatures, computed once.

A trace diffs each snapshot twice, as the after of one pass and the before of the next;
:func:`index_document` does the per-document half of a diff (about half its time) once, and
:func:`relayviz_instrument.diff.diff` accepts the result in place of the document.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Any, Iterator, Optional, Union

import numpy as np
from numpy.typing import NDArray

from ..format import Document
from .signatures import Labels, line_keys
from .graph import CanonicalGraph

__all__ = ["IndexedDocument", "index_document", "Diffable", "collector_paused"]



class IndexedDocument:
    """A RelayViz document with what every diff of it needs: ``graph`` (the canonical graph:
    order, inputs, users, inlined functions, Let bindings) and ``labels`` (label tiers and
    structural signatures). Read-only once made; share it between diffs freely. Labels are
    hashes valid within one process (``signatures.py``), so a pickled index carries only its
    document and is indexed again when unpickled."""

    __slots__ = ("doc", "graph", "labels", "_lines")

    def __init__(self, doc: Document, graph: Optional[CanonicalGraph] = None) -> None:
        self.doc = doc
        self.graph = graph if graph is not None else CanonicalGraph(doc)
        self.labels = Labels(self.graph)
        self._lines: Optional[NDArray[np.uint64]] = None

    def line_keys(self) -> NDArray[np.uint64]:
        """Each node's line key in topological order (see :func:`.signatures.line_keys`),
        computed the first time a diff needs it."""
        if self._lines is None:
            self._lines = line_keys(self.graph, self.labels)
        return self._lines

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
Diffable = Union[Document, IndexedDocument]


def index_document(doc: Diffable, graph: Optional[CanonicalGraph] = None) -> IndexedDocument:
    """Index a RelayViz document for diffing; an :class:`IndexedDocument` is returned as is.

    The document must be valid (as :func:`relayviz_instrument.load` returns it) and must not
    change while the index is in use: the index refers to its nodes. ``graph``, if given, is
    the document's :class:`CanonicalGraph` made already (it is used, not made again).
    """
    if isinstance(doc, IndexedDocument):
        return doc
    with collector_paused():
        return IndexedDocument(doc, graph)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: indexing and diffing allocate a few containers
    per node, all alive until the end, and the collections their allocations trigger would
    scan them again and again (a third of the time of a 50k-node diff). The collector's
    previous state is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
