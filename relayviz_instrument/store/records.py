"""What a trace records: one :class:`PassRecord` per pass event, and the manifest lines that
carry records to disk and back.

The manifest is JSON lines: a ``header`` (trace format, versions, options), then for each
pass event a ``begin`` line (written before the pass runs) and an ``end`` line (after it),
and one ``close`` line when the pass context exits. Events added after the context exited
(the built graph, recorded with ``record_graph``) follow the close line. A record holds raw
facts only (names, nesting, times, snapshot references, node counts); what is derived from
them, like diff summaries, is computed when a trace is read (:mod:`relayviz_instrument.analysis.pass_diffs`).

A trace of a whole process (``relayviz run``, ``RELAYVIZ_TRACE``) holds every pass context the
process entered: one ``context`` line when each is entered (its number, the context it is
nested in, where it was opened, its opt_level), and each event names its context.

Fields added after a layout was released (``skipped``, ``bisect``, ``replay``, ``context``, ``new_module``,
``between``) are written only
when they are set, so a trace that uses none of them has the lines it always had, and an
older reader, which ignores keys it does not know, still reads a newer trace.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import orjson

from ..format.checks import is_int, json_type_name
from ..format.irs import RELAY
from ..errors import RelayVizTraceError

__all__ = ["PassRecord", "TRACE_FORMAT", "TRACE_FORMATS_READ", "header_line", "begin_line", "end_line",
           "close_line", "context_line", "ManifestContents", "read_manifest", "NO_GRAPH"]

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

    ``skipped`` is True for an event :class:`~relayviz_instrument.capture.RelayVizBisect` did
    not let run, and ``bisect`` numbers the events it could skip (None for the others).
    ``replay`` holds what ``relayviz replay`` needs to run the pass again (the input module
    by reference, in the form ``module_form`` names, and the PassContext and target): written for
    the pass that raised, and for passes chosen with ``keep_modules``. ``context`` is the
    number of the pass context the event ran in, in a trace of a whole process (None in a
    trace of one context). ``new_module`` is True for
    a pass run directly in the context on a module that shares no function (no ``GlobalVar``
    object) with the module the trace saw before it: one the caller made anew, which starts a
    pipeline of its own. ``between`` is set on a pass run directly in the context on a module
    that is not what the last such pass left (and is not a new one): the code that ran both
    passes, in which the module was changed between them, as ``{"function", "file", "line"}``
    (``tvm.relax.vm_build.build``: a step of TVM's build; a function of the user's script:
    code between passes).
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
    ir: str = RELAY
    error: Optional[str] = None
    note: Optional[str] = None
    skipped: bool = False
    bisect: Optional[int] = None
    replay: Optional[Dict[str, Any]] = None
    context: Optional[int] = None
    new_module: bool = False
    between: Optional[Dict[str, Any]] = None

    def to_json(self) -> Dict[str, Any]:
        """The record as a JSON object (the form ``relayviz show --json`` prints)."""
        out = dataclasses.asdict(self)
        out["required"] = list(self.required)
        return out


#: The fields of a record known when its pass begins, and those known when it ends: the
#: manifest's ``begin`` and ``end`` lines (an ``end`` line names its event by ``index``).
_BEGIN_FIELDS = ("index", "name", "opt_level", "required", "depth", "parent", "ir", "before", "nodes_before",
                 "note", "skipped", "bisect", "replay", "context", "new_module", "between")
_END_FIELDS = ("duration_ms", "changed", "after", "nodes_after", "error", "replay")


#: How a trace's note says that what a build returned has no graph to record (the AOT executor):
#: the reason, not a missing ``record_graph`` call, that the trace ends at the last module.
NO_GRAPH = "has no graph to record"
#: The error of a pass that began and never ended in a manifest the process stopped writing.
STOPPED_DURING = "did not finish: the process stopped during this pass"
#: The note of an event whose end the manifest could not hold: its last line is cut short.
_END_CUT = ("its end was not recorded: the manifest could not be written past this point (the disk filled, or "
            "writing was cut off)")
#: The note of an event whose end line is missing from a closed manifest.
_END_NOT_RECORDED = "its end was not recorded (the instrument had stopped recording)"


def _count(v: Any) -> bool:
    return is_int(v) and v >= 0


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _string(v: Any) -> bool:
    return isinstance(v, str)


#: What each record field may hold in a manifest line: a check, and how a message names it.
_FIELD_CHECKS: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "index": (_count, "a non-negative integer"),
    "name": (_string, "a string"),
    "opt_level": (is_int, "an integer"),
    "required": (lambda v: isinstance(v, list) and all(isinstance(r, str) for r in v), "a list of strings"),
    "depth": (lambda v: is_int(v) and v >= 1, "a positive integer"),
    "parent": (_optional(_count), "an event index or null"),
    "ir": (_string, "a string"),
    "before": (_optional(_string), "a snapshot reference or null"),
    "after": (_optional(_string), "a snapshot reference or null"),
    "nodes_before": (_optional(_count), "a node count or null"),
    "nodes_after": (_optional(_count), "a node count or null"),
    "note": (_optional(_string), "a string or null"),
    "duration_ms": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    "changed": (_optional(lambda v: isinstance(v, bool)), "true, false or null"),
    "error": (_optional(_string), "a string or null"),
    "skipped": (lambda v: isinstance(v, bool), "true or false"),
    "bisect": (_optional(_count), "a non-negative integer or null"),
    "replay": (_optional(lambda v: isinstance(v, dict)), "an object or null"),
    "context": (_optional(_count), "a pass context number or null"),
    "new_module": (lambda v: isinstance(v, bool), "true or false"),
    "between": (_optional(lambda v: isinstance(v, dict) and isinstance(v.get("function"), str)
                          and isinstance(v.get("file"), str) and is_int(v.get("line"))),
                "an object with a function, a file and a line, or null"),
}

#: What each field of a ``context`` line may hold.
_CONTEXT_CHECKS: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "index": (_count, "a non-negative integer"),
    "parent": (_optional(_count), "a pass context number or null"),
    "opened": (_string, "a string"),
    "opt_level": (_optional(is_int), "an integer or null"),
}


def header_line(header: Dict[str, Any]) -> Dict[str, Any]:
    """The manifest's first line: the trace format and ``header`` (versions, options)."""
    return {"type": "header", "trace_format": TRACE_FORMAT, **header}


def begin_line(record: PassRecord) -> Dict[str, Any]:
    """The manifest line written when ``record``'s pass begins."""
    # Spelled out, in the order of _BEGIN_FIELDS, the optional ones only when set: written for
    # every pass event, a generic loop over the field names cost more than encoding the line.
    line: Dict[str, Any] = {"type": "begin", "index": record.index, "name": record.name,
                            "opt_level": record.opt_level, "required": list(record.required),
                            "depth": record.depth, "parent": record.parent, "ir": record.ir,
                            "before": record.before, "nodes_before": record.nodes_before, "note": record.note}
    if record.skipped:
        line["skipped"] = record.skipped
    if record.bisect is not None:
        line["bisect"] = record.bisect
    if record.replay is not None:
        line["replay"] = record.replay
    if record.context is not None:
        line["context"] = record.context
    if record.new_module:
        line["new_module"] = record.new_module
    if record.between is not None:
        line["between"] = record.between
    return line


def end_line(record: PassRecord) -> Dict[str, Any]:
    """The manifest line written when ``record``'s pass ends."""
    line: Dict[str, Any] = {"type": "end", "index": record.index, "duration_ms": record.duration_ms,
                            "changed": record.changed, "after": record.after, "nodes_after": record.nodes_after,
                            "error": record.error}
    if record.replay is not None:
        line["replay"] = record.replay
    return line


def context_line(index: int, parent: Optional[int], opened: str, opt_level: Optional[int]) -> Dict[str, Any]:
    """The line written when a process trace's pass context ``index`` is entered: the context
    it is nested in (``parent``), where it was opened (``file:line``) and its opt_level."""
    return {"type": "context", "index": index, "parent": parent, "opened": opened, "opt_level": opt_level}


def close_line(*, complete: bool, problems: List[str], events: int, instrument_ms: float,
               build_failure: Optional[str] = None, notes: Optional[List[str]] = None) -> Dict[str, Any]:
    """The line written once, when the pass context exits. ``build_failure`` (written only when
    set) is the error that ended the compilation after its last pass, in code generation;
    ``notes`` (written only when there are any) say what a reader should know of a trace that
    is complete all the same (the pass context's exit never reached the trace after every
    event had ended; a build returned something with no graph)."""
    line: Dict[str, Any] = {"type": "close", "complete": complete, "problems": list(problems), "events": events,
                            "instrument_ms": round(instrument_ms, 3)}
    if build_failure is not None:
        line["build_failure"] = build_failure
    if notes:
        line["notes"] = list(notes)
    return line


@dataclass
class ManifestContents:
    """What a manifest says: its header, the records, whether it was closed, and what went wrong."""

    header: Dict[str, Any]
    records: List[PassRecord]
    closed: bool
    problems: List[str]
    #: The pass contexts of a process trace, in the order they were entered (``context`` lines).
    contexts: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    #: The error that ended the compilation after its last pass (a close line's ``build_failure``).
    build_failure: Optional[str] = None
    #: What the close lines note of a trace, complete or not (see :func:`close_line`).
    notes: List[str] = dataclasses.field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.closed and not self.problems


def read_manifest(lines: Iterable[bytes], where: str) -> ManifestContents:
    """Records from manifest lines (``where`` names the file in messages, with the line number).

    A last line cut short (the process stopped while writing it) is dropped and noted; a
    damaged line elsewhere, a field of the wrong type, an event that begins twice or names a
    parent that never began raises :class:`RelayVizTraceError` naming the line and the field.
    A pass that began and never ended is the one that was running when the process stopped.
    """
    raw_lines = list(lines)
    header: Dict[str, Any] = {}
    records: Dict[int, PassRecord] = {}
    problems: List[str] = []
    closed = False
    cut = False  # the last line is cut short: the disk filled (or the process stopped) while writing it
    build_failure: Optional[str] = None
    notes: List[str] = []
    ended = set()
    contexts: List[Dict[str, Any]] = []
    last = max((i for i, raw in enumerate(raw_lines) if raw.strip()), default=-1)
    for i, raw in enumerate(raw_lines):
        if not raw.strip():
            continue
        at = f"{where}:{i + 1}"
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            line = None
        if not (isinstance(line, dict) and isinstance(line.get("type"), str)):
            if i == last:
                problems.append("the manifest's last line is cut short (the disk filled while it was written, or "
                                "writing it was cut off)")
                cut = True
                break
            raise RelayVizTraceError(f"{at}: not a manifest record; the file is corrupt") from None
        kind = line["type"]
        if kind == "header":
            if line.get("trace_format") not in TRACE_FORMATS_READ:
                raise RelayVizTraceError(f"{at}: trace format {line.get('trace_format')!r} "
                                         f"is not one of {', '.join(TRACE_FORMATS_READ)}; upgrade relayviz_instrument")
            header = {k: v for k, v in line.items() if k != "type"}
        elif kind == "begin":
            values = _checked_fields(line, _BEGIN_FIELDS, at)
            if "index" not in values or "name" not in values:
                raise RelayVizTraceError(f"{at}: a begin line without index and name; the file is corrupt")
            index = values["index"]
            if index in records:
                raise RelayVizTraceError(f"{at}: pass event {index} begins a second time; the file is corrupt")
            parent = values.get("parent")
            if parent is not None and (parent >= index or parent not in records):
                raise RelayVizTraceError(f"{at}: field 'parent': event {parent} is not an earlier event of "
                                         "this trace; the file is corrupt")
            if values.get("depth", 1) > len(records) + 1:  # nested in more events than have begun
                raise RelayVizTraceError(f"{at}: field 'depth': {values['depth']} is deeper than the "
                                         f"{len(records)} events begun before it; the file is corrupt")
            values["required"] = tuple(values.get("required", ()))
            records[index] = PassRecord(**values)
        elif kind == "end":
            index = line.get("index")
            record = records.get(index) if is_int(index) else None
            if record is None:
                raise RelayVizTraceError(f"{at}: end of pass event {index!r} that never began; the file is corrupt")
            ended.add(record.index)
            for key, value in _checked_fields(line, _END_FIELDS, at).items():
                setattr(record, key, value)
        elif kind == "context":
            values = {}
            for name, (check, expected) in _CONTEXT_CHECKS.items():
                if not check(line.get(name)):
                    raise RelayVizTraceError(f"{at}: field {name!r} of a context line must be {expected}, not "
                                             f"{json_type_name(line.get(name))}; the file is corrupt")
                values[name] = line.get(name)
            if values["index"] != len(contexts) or (values["parent"] is not None
                                                    and values["parent"] >= values["index"]):
                raise RelayVizTraceError(f"{at}: pass context {values['index']} is out of order; the file is corrupt")
            contexts.append(values)
        elif kind == "close":
            closed = True
            found = line.get("problems", [])
            if not (isinstance(found, list) and all(isinstance(p, str) for p in found)):
                raise RelayVizTraceError(f"{at}: field 'problems' must be a list of strings, not "
                                         f"{json_type_name(found)}; the file is corrupt")
            problems.extend(found)
            noted = line.get("notes", [])
            if not (isinstance(noted, list) and all(isinstance(n, str) for n in noted)):
                raise RelayVizTraceError(f"{at}: field 'notes' must be a list of strings, not "
                                         f"{json_type_name(noted)}; the file is corrupt")
            notes.extend(n for n in noted if n not in notes)
            failure = line.get("build_failure")
            if failure is not None and not isinstance(failure, str):
                raise RelayVizTraceError(f"{at}: field 'build_failure' must be a string or null, not "
                                         f"{json_type_name(failure)}; the file is corrupt")
            build_failure = build_failure or failure
    ordered = [records[i] for i in sorted(records)]
    if not closed and cut:  # nothing could be written after the cut: what happened next is not known
        problems.append("the trace has no closing record: the manifest could not be written past its last line")
    elif not closed:
        problems.append("the trace has no closing record: the process stopped during the compilation "
                        "(or the manifest could not be written to its end)")
    for record in ordered:
        if record.index in ended:
            continue
        if not closed and cut:  # the build may have gone on: the pass is not said to have failed
            record.note = "; ".join(filter(None, [record.note, _END_CUT]))
        elif not closed and record.error is None:
            record.error = STOPPED_DURING
        elif closed:  # the instrument stopped recording while the pass ran; the pass went on
            record.note = "; ".join(filter(None, [record.note, _END_NOT_RECORDED]))
    for record in ordered:
        if record.context is not None and record.context >= len(contexts):
            raise RelayVizTraceError(f"{where}: pass event {record.index} names pass context {record.context}, "
                                     "which the manifest never opens; the file is corrupt")
    return ManifestContents(header, ordered, closed, problems, contexts, build_failure, notes)


def _checked_fields(line: Dict[str, Any], names: Tuple[str, ...], at: str) -> Dict[str, Any]:
    """The fields ``names`` present in ``line``, each checked against :data:`_FIELD_CHECKS`."""
    values = {}
    for name in names:
        if name in line:
            check, expected = _FIELD_CHECKS[name]
            if not check(line[name]):
                raise RelayVizTraceError(f"{at}: field {name!r} must be {expected}, not "
                                         f"{json_type_name(line[name])}; the file is corrupt")
            values[name] = line[name]
    return values
