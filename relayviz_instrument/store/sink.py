"""The one interface between the instrument and where a trace goes, and the sink that owns
the manifest's lines.

:class:`TraceStore` is what a store does (a Protocol: memory and directory stores each
implement it); :class:`TraceSink` is the only writer of manifest lines: the header first,
a ``begin`` and an ``end`` line per event and one ``close`` line, each exactly once, in that
order, whatever the instrument's callbacks do. An event added after the close (the built
graph, recorded after the ``with`` block) is appended after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Set, Tuple

from ..errors import RelayVizTraceError
from ..format import Document
from ..format.irs import MODULE_IRS
from .records import PassRecord, begin_line, close_line, context_line, end_line, header_line

__all__ = ["TraceStore", "TraceSink"]


class TraceStore(Protocol):
    """Where a trace's snapshots and manifest lines go.

    ``put`` stores a document and returns its reference (the same document gives the same
    reference in every store); ``get`` reads it back; ``put_module`` and ``get_module`` do
    the same for a kept IR module's bytes (``capture/kept_module.py``, for ``relayviz
    replay``); ``append`` adds one manifest line and makes it durable as far as the store can;
    ``close`` flushes everything (a later ``append`` opens the manifest again). ``written``
    tells how much of the manifest is written (bytes or lines): it grows with every line
    appended, at the moment the line is. ``path`` is the trace directory, ``None`` in memory.
    """

    path: Optional[Path]

    def put(self, doc: Document) -> str: ...

    def get(self, ref: str) -> Document: ...

    def put_module(self, data: bytes) -> str: ...

    def get_module(self, ref: str) -> bytes: ...

    def append(self, line: Dict[str, Any]) -> None: ...

    def written(self) -> int: ...

    def close(self) -> None: ...


class TraceSink:
    """Writes one trace's manifest through a :class:`TraceStore`, each line exactly once."""

    def __init__(self, store: TraceStore, header: Dict[str, Any]) -> None:
        self.store = store
        self._begun: Set[int] = set()
        self._ended: Set[int] = set()
        #: The line being appended: which set it goes to, the event, and how much of the
        #: manifest was written before it (see ``_settle``).
        self._appending: Optional[Tuple[Set[int], int, int]] = None
        self._closed = False
        #: The manifest's size when the ``close`` line began to be written (see ``close``).
        self._closing: Optional[int] = None
        #: The last document stored of each model dialect (Relay, Relax), with its reference (see
        #: ``held``): one module of each, kept as long as the trace (the serializer holds the latest
        #: while it records anyway); TIR modules and built artifacts are not kept.
        self._held: Dict[str, Tuple[str, Document]] = {}
        store.append(header_line(header))

    @property
    def path(self) -> Optional[Path]:
        return self.store.path

    def put(self, doc: Document) -> str:
        """Store a snapshot; its reference."""
        ref = self.store.put(doc)
        ir = doc.get("ir")
        if ir in MODULE_IRS:
            self._held[ir] = (ref, doc)
        return ref

    def get(self, ref: str) -> Document:
        """A stored snapshot."""
        return self.store.get(ref)

    def held(self, ref: str) -> Optional[Document]:
        """The document stored under ``ref`` if it is the last Relay or Relax module stored of
        its dialect: the very object the trace wrote (read it, never change it), which the trace
        knows without reading the store; else None (read it with :meth:`get`). What a
        compilation built is recorded after its last module, whose document is the one held."""
        for held_ref, doc in self._held.values():
            if held_ref == ref:
                return doc
        return None

    def put_module(self, data: bytes) -> str:
        """Store a kept IR module's bytes (JSON, in one of ``capture/kept_module.py``'s forms); its reference."""
        return self.store.put_module(data)

    def get_module(self, ref: str) -> bytes:
        """A stored IR module's bytes."""
        return self.store.get_module(ref)

    def begin(self, record: PassRecord) -> None:
        """The ``begin`` line of ``record`` (refused if it was written already)."""
        if self.has_begun(record.index):
            raise RelayVizTraceError(f"pass event {record.index} ({record.name}) began twice")
        self._append(self._begun, record.index, begin_line(record))

    def end(self, record: PassRecord) -> None:
        """The ``end`` line of ``record``, once, after its ``begin`` line."""
        if not self.has_begun(record.index) or self.has_ended(record.index):
            raise RelayVizTraceError(f"pass event {record.index} ({record.name}) ended twice or never began")
        self._append(self._ended, record.index, end_line(record))

    def _append(self, lines: Set[int], index: int, line: Dict[str, Any]) -> None:
        """Append an event's line and note it among ``lines`` once it is written. An
        interruption (Ctrl-C) may land anywhere in here, before the line is written or after:
        which one is settled by the manifest's size (``_settle``), never guessed."""
        self._appending = (lines, index, self.store.written())
        self.store.append(line)
        lines.add(index)
        self._appending = None

    def _settle(self) -> None:
        """After an interrupted ``_append``: the line counts as written if the manifest grew."""
        appending, self._appending = self._appending, None
        if appending is not None:
            lines, index, before = appending
            if self.store.written() > before:
                lines.add(index)

    def context(self, index: int, parent: Optional[int], opened: str, opt_level: Optional[int]) -> None:
        """The ``context`` line of a pass context a process trace entered (see ``records.py``)."""
        self.store.append(context_line(index, parent, opened, opt_level))

    def has_begun(self, index: int) -> bool:
        """Whether the ``begin`` line of event ``index`` was written."""
        if self._appending is not None:
            self._settle()
        return index in self._begun

    def has_ended(self, index: int) -> bool:
        """Whether the ``end`` line of event ``index`` was written."""
        if self._appending is not None:
            self._settle()
        return index in self._ended

    def close(self, *, complete: bool, problems: List[str], events: int, instrument_ms: float,
              build_failure: Optional[str] = None, notes: Optional[List[str]] = None) -> None:
        """The ``close`` line (once; later calls do nothing), then flush the store."""
        if self.closed:
            return
        self._closing = self.store.written()
        try:
            self.store.append(close_line(complete=complete, problems=problems, events=events,
                                         instrument_ms=instrument_ms, build_failure=build_failure, notes=notes))
        except Exception:
            self._closed = True  # it failed for good (a full disk): not tried again
            raise
        finally:
            self.store.close()
        self._closed = True

    @property
    def closed(self) -> bool:
        """Whether the ``close`` line was written (or its writing failed for good). A ``close``
        cut short by an interruption (Ctrl-C) counts as written if the manifest grew: a second
        ``close`` then writes nothing, and one cut before the line was written writes it."""
        return self._closed or (self._closing is not None and self.store.written() > self._closing)

    def close_again(self, *, complete: bool, problems: List[str], events: int, instrument_ms: float,
                    notes: Optional[List[str]] = None) -> None:
        """Another ``close`` line, for problems (or notes) that arose after the first (recording
        the built graph): a reader adds them to the first's. Then flush again."""
        self.store.append(close_line(complete=complete, problems=problems, events=events,
                                     instrument_ms=instrument_ms, notes=notes))
        self.store.close()

    def add_after_close(self, record: PassRecord) -> None:
        """Both lines of an event recorded after the context exited, then flush again."""
        self.begin(record)
        self.end(record)
        if self.closed:
            self.store.close()
