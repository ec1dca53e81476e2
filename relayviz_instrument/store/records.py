"""What a trace records: one :class:`PassRecord` per pass event, and the manifest lines that
carry records to disk and back.

The manifest is JSON lines: a ``header`` (trace format, versions, options), then for each
pass event a ``begin`` line (written before the pass runs) and an ``end`` line (after it),
and one ``close`` line when the pass context exits. Events added after the context exited
(the built graph, recorded with ``record_graph``) follow the close line. A record holds raw
facts only (names, nesting, times, snapshot references, node counts); what is derived from
them, like diff summaries, is computed when a trace is read (:mod:`relayviz_instrument.pass_diffs`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

import orjson

from ..errors import RelayVizTraceError

__all__ = ["PassRecord", "TRACE_FORMAT", "TRACE_FORMATS_READ", "header_line", "begin_line", "end_line",
           "close_line", "ManifestContents", "read_manifest"]

#: Version of the trace layout (manifest lines and directory structure) this package writes.
TRACE_FORMAT = "relayviz-trace/2"
#: Layouts this package reads. Version 1 stored diff summaries in ``end`` lines (ignored now).
TRACE_FORMATS_READ = ("relayviz-trace/1", TRACE_FORMAT)


@dataclass
class PassRecord:
    """One pass event of a traced compilation.

    ``index`` numbers events in the order they started; ``depth`` is 1 for a pass run
    directly in the context and ``parent`` the index of the enclosing event (a Sequential,
    or the function pass around an InferType). ``duration_ms`` is the pass's own wall time,
    without the instrument's time. ``changed`` is ``None`` when the module was not compared
    (a TIR-only module, or a pass left out by the ``passes``/``exclude`` filters).
    ``before``/``after`` are snapshot references (see :meth:`Trace.snapshot`); an unchanged
    pass has ``after == before``. ``ir`` is the dialect of the pass's input module
    (``relay``, ``relax``, ``tir``, ``empty``, ``other``; ``graph_executor`` for a built
    graph). ``error`` is set on the pass that raised (or was running when the process died);
    ``note`` says why a module was not snapshotted, when it was not for a reason the user may
    not expect (a dialect the installed TVM cannot serialize).
    """

    index: int
    name: str
    opt_level: int = 0
    required: Tuple[str, ...] = ()
    depth: int = 1
    parent: Optional[int] = None
    duration_ms: float = 0.0
    changed: Optional[bool] = None
    before: Optional[str] = None
    after: Optional[str] = None
    nodes_before: Optional[int] = None
    nodes_after: Optional[int] = None
    ir: str = "relay"
    error: Optional[str] = None
    note: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """The record as a JSON object (the form ``relayviz show --json`` prints)."""
        out = dataclasses.asdict(self)
        out["required"] = list(self.required)
        return out


#: The fields of a record known when its pass begins, and those known when it ends: the
#: manifest's ``begin`` and ``end`` lines (an ``end`` line names its event by ``index``).
_BEGIN_FIELDS = ("index", "name", "opt_level", "required", "depth", "parent", "ir", "before", "nodes_before",
                 "note")
_END_FIELDS = ("duration_ms", "changed", "after", "nodes_after", "error")


def header_line(header: Dict[str, Any]) -> Dict[str, Any]:
    """The manifest's first line: the trace format and ``header`` (versions, options)."""
    return {"type": "header", "trace_format": TRACE_FORMAT, **header}


def begin_line(record: PassRecord) -> Dict[str, Any]:
    """The manifest line written when ``record``'s pass begins."""
    line: Dict[str, Any] = {"type": "begin"}
    line.update((k, getattr(record, k)) for k in _BEGIN_FIELDS)
    line["required"] = list(record.required)
    return line


def end_line(record: PassRecord) -> Dict[str, Any]:
    """The manifest line written when ``record``'s pass ends."""
    line: Dict[str, Any] = {"type": "end", "index": record.index}
    line.update((k, getattr(record, k)) for k in _END_FIELDS)
    return line


def close_line(*, complete: bool, problems: List[str], events: int, instrument_ms: float) -> Dict[str, Any]:
    """The line written once, when the pass context exits."""
    return {"type": "close", "complete": complete, "problems": list(problems), "events": events,
            "instrument_ms": round(instrument_ms, 3)}


@dataclass
class ManifestContents:
    """What a manifest says: its header, the records, whether it was closed, and what went wrong."""

    header: Dict[str, Any]
    records: List[PassRecord]
    closed: bool
    problems: List[str]

    @property
    def complete(self) -> bool:
        return self.closed and not self.problems


def read_manifest(lines: Iterable[bytes], where: str) -> ManifestContents:
    """Records from manifest lines (``where`` names the file in messages, with the line number).

    A last line cut short (the process stopped while writing it) is dropped and noted; a
    damaged line elsewhere raises :class:`RelayVizTraceError`. A pass that began and never
    ended is the one that was running when the process stopped.
    """
    raw_lines = list(lines)
    header: Dict[str, Any] = {}
    records: Dict[int, PassRecord] = {}
    problems: List[str] = []
    closed = False
    ended = set()
    last = max((i for i, raw in enumerate(raw_lines) if raw.strip()), default=-1)
    for i, raw in enumerate(raw_lines):
        if not raw.strip():
            continue
        lineno = i + 1
        try:
            line = orjson.loads(raw)
            kind = line["type"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            if i == last:
                problems.append("the manifest's last line is cut short (the process stopped while writing)")
                break
            raise RelayVizTraceError(f"{where}:{lineno}: not a manifest record; the file is corrupt") from None
        if kind == "header":
            if line.get("trace_format") not in TRACE_FORMATS_READ:
                raise RelayVizTraceError(f"{where}:{lineno}: trace format {line.get('trace_format')!r} "
                                         f"is not one of {', '.join(TRACE_FORMATS_READ)}; upgrade relayviz_instrument")
            header = {k: v for k, v in line.items() if k != "type"}
        elif kind == "begin":
            try:
                values = {k: line[k] for k in _BEGIN_FIELDS if k in line}
                values["required"] = tuple(values.get("required", ()))
                records[line["index"]] = PassRecord(**values)
            except (KeyError, TypeError):
                raise RelayVizTraceError(f"{where}:{lineno}: a begin line without index and name; "
                                         "the file is corrupt") from None
        elif kind == "end":
            record = records.get(line.get("index"))
            if record is None:
                raise RelayVizTraceError(f"{where}:{lineno}: end of pass event {line.get('index')} "
                                         "that never began; the file is corrupt")
            ended.add(record.index)
            for key in _END_FIELDS:
                if key in line:
                    setattr(record, key, line[key])
        elif kind == "close":
            closed = True
            problems.extend(line.get("problems", []))
    ordered = [records[i] for i in sorted(records)]
    if not closed:
        problems.append("the trace has no closing record: the process stopped during the compilation")
        for record in ordered:
            if record.index not in ended and record.error is None:
                record.error = "did not finish: the process stopped during this pass"
    return ManifestContents(header, ordered, closed, problems)
