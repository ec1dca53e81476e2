"""The trace directory: a manifest of pass events and content-addressed snapshots.

Layout of a trace directory::

    manifest.jsonl          one JSON object per line, appended and flushed as passes run
    snapshots/<ref>.json    RelayViz documents, named by a digest of their bytes

The manifest's lines are, in order: a ``header`` (trace format, versions, options), then for
each pass event a ``begin`` line (written before the pass runs) and an ``end`` line (after it),
and a ``close`` line when the pass context exits. Because ``begin`` is on disk before the pass
runs, a trace left by a process that died inside a pass still says which pass it was and
holds that pass's input snapshot. Snapshots are written atomically (temporary file, fsync,
rename) and stored once however many passes refer to them.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Dict, Iterator, List, Optional, Tuple, Union

import orjson

from ._files import atomic_write_bytes
from .errors import RelayVizTraceError
from .format import digest_bytes, encode, load, loads

__all__ = ["PassRecord", "Trace", "TraceWriter", "MemoryStore", "load_trace", "new_trace_dir",
           "TRACE_FORMAT", "snapshot_ref", "begin_line", "end_line"]

#: Version of the trace layout (manifest records and directory structure).
TRACE_FORMAT = "relayviz-trace/1"
MANIFEST = "manifest.jsonl"
SNAPSHOTS = "snapshots"


@dataclass
class PassRecord:
    """One pass event of a traced compilation.

    ``index`` numbers events in the order they started; ``depth`` is 1 for a pass run
    directly in the context and ``parent`` the index of the enclosing event (a Sequential,
    or the function pass around an InferType). ``duration_ms`` is the pass's own wall time,
    without the instrument's time. ``changed`` is ``None`` when the module was not compared
    (a TIR-only module, or a pass left out by the ``passes``/``exclude`` filters).
    ``before``/``after`` are snapshot references (see :meth:`Trace.snapshot`); an unchanged
    pass has ``after == before``. ``summary`` is the diff summary of a changed pass.
    ``error`` is set on the pass that raised (or was running when the process died).
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
    summary: Optional[Dict[str, Any]] = None

    def to_json(self) -> Dict[str, Any]:
        """The record as a JSON object (the form ``relayviz show --json`` prints)."""
        out = dataclasses.asdict(self)
        out["required"] = list(self.required)
        return out


#: The fields of a record known when its pass begins, and those known when it ends: the
#: manifest's ``begin`` and ``end`` lines (an ``end`` line names its event by ``index``).
_BEGIN_FIELDS = ("index", "name", "opt_level", "required", "depth", "parent", "ir", "before", "nodes_before")
_END_FIELDS = ("duration_ms", "changed", "after", "nodes_after", "error", "summary")


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


def snapshot_ref(data: bytes) -> str:
    """The reference of an encoded snapshot: 32 hex digits of its SHA-256."""
    return digest_bytes(data).split(":", 1)[1]


class MemoryStore:
    """Snapshots kept in memory (a trace with no directory)."""

    def __init__(self) -> None:
        self._snapshots: Dict[str, bytes] = {}

    def put(self, doc: Dict[str, Any]) -> str:
        data = encode(doc)
        ref = snapshot_ref(data)
        self._snapshots.setdefault(ref, data)
        return ref

    def get(self, ref: str) -> Dict[str, Any]:
        try:
            return loads(self._snapshots[ref], source=f"snapshot {ref}")
        except KeyError:
            raise RelayVizTraceError(f"no snapshot {ref!r} in this trace") from None

    def append(self, line: Dict[str, Any]) -> None:
        """Memory traces keep no manifest: the records themselves are the manifest."""

    def reopen(self) -> None:
        pass

    def close(self) -> None:
        pass


class TraceWriter(MemoryStore):
    """Writes a trace directory: the manifest, appended and flushed line by line, and snapshots.

    The directory is created when the writer is made (its parents too); creating it fails with
    :class:`RelayVizTraceError` if it exists and is not empty, so two traces never mix.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], header: Dict[str, Any]) -> None:
        super().__init__()
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            if any(self.path.iterdir()):
                raise RelayVizTraceError(
                    f"{self.path}: the trace directory is not empty; pass a new directory "
                    "(or none: a new relayviz-trace/<timestamp>/ is made)")
            (self.path / SNAPSHOTS).mkdir()
            self._manifest: Optional[IO[bytes]] = open(self.path / MANIFEST, "ab")
        except OSError as exc:
            raise RelayVizTraceError(f"{self.path}: cannot create the trace directory: "
                                     f"{exc.strerror or exc}") from exc
        self.append({"type": "header", "trace_format": TRACE_FORMAT, **header})

    def put(self, doc: Dict[str, Any]) -> str:
        data = encode(doc)
        ref = snapshot_ref(data)
        target = self.path / SNAPSHOTS / f"{ref}.json"
        if not target.exists():
            atomic_write_bytes(target, data)
        return ref

    def get(self, ref: str) -> Dict[str, Any]:
        return _read_snapshot(self.path, ref)

    def append(self, line: Dict[str, Any]) -> None:
        """Append one manifest line and flush it to the operating system."""
        if self._manifest is None:
            raise RelayVizTraceError(f"{self.path}: the trace is closed")
        self._manifest.write(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
        self._manifest.flush()

    def reopen(self) -> None:
        """Append to the manifest again after :meth:`close` (to add the built graph)."""
        if self._manifest is None:
            try:
                self._manifest = open(self.path / MANIFEST, "ab")
            except OSError as exc:
                raise RelayVizTraceError(f"{self.path}: cannot reopen the manifest: "
                                         f"{exc.strerror or exc}") from exc

    def close(self) -> None:
        if self._manifest is not None:
            try:
                self._manifest.flush()
                os.fsync(self._manifest.fileno())
            finally:
                self._manifest.close()
                self._manifest = None


def _read_snapshot(root: Path, ref: str) -> Dict[str, Any]:
    # A ref names a file inside snapshots/: refuse anything that could point elsewhere.
    if not (isinstance(ref, str) and ref and all(c in "0123456789abcdef" for c in ref)):
        raise RelayVizTraceError(f"{root}: {ref!r} is not a snapshot reference (hex digits)")
    path = root / SNAPSHOTS / f"{ref}.json"
    if not path.is_file():
        raise RelayVizTraceError(f"{root}: snapshot {ref} is missing from {SNAPSHOTS}/; "
                                 "the trace directory is incomplete")
    return load(path)


def new_trace_dir(base: Union[str, "os.PathLike[str]"] = "relayviz-trace") -> Path:
    """Create and return a new, empty ``<base>/<timestamp>/`` directory (race-safe)."""
    base = Path(base)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base.mkdir(parents=True, exist_ok=True)
    for attempt in range(1000):
        candidate = base / (stamp if attempt == 0 else f"{stamp}-{attempt + 1}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise RelayVizTraceError(f"{base}: cannot find a free trace directory name for {stamp}")


class Trace:
    """A trace read back from its directory: its records, its header and its snapshots."""

    def __init__(self, path: Path, header: Dict[str, Any], records: List[PassRecord],
                 complete: bool, problems: List[str]) -> None:
        self.path = path
        self.header = header
        self.records = records
        self.complete = complete
        #: Why the trace is incomplete: instrument failures, a missing close record, ...
        self.problems = problems

    def snapshot(self, ref: str) -> Dict[str, Any]:
        """The validated RelayViz document stored under ``ref``."""
        return _read_snapshot(self.path, ref)

    @property
    def failed(self) -> Optional[PassRecord]:
        """The innermost pass that raised or was running when the process stopped, if any."""
        failed = [r for r in self.records if r.error is not None]
        return max(failed, key=lambda r: r.depth) if failed else None

    def __iter__(self) -> Iterator[PassRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


def load_trace(path: Union[str, "os.PathLike[str]"]) -> Trace:
    """Read a trace directory written by :class:`RelayVizTrace` back into records.

    Raises :class:`RelayVizTraceError` for a path that is not a trace directory or a manifest
    that cannot be read. A manifest cut short by a crash is read up to its last full line; the
    pass that had begun and not ended is the one that was running, and the trace is marked
    incomplete.
    """
    root = Path(path)
    manifest = root / MANIFEST
    if not manifest.is_file():
        what = "does not exist" if not root.exists() else f"has no {MANIFEST}"
        raise RelayVizTraceError(f"{root}: not a trace directory ({what}); "
                                 "pass a directory written by RelayVizTrace or `relayviz demo`")
    header: Dict[str, Any] = {}
    records: Dict[int, PassRecord] = {}
    problems: List[str] = []
    closed = False
    ended = set()
    with open(manifest, "rb") as stream:
        lines = stream.read().split(b"\n")
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
            kind = line["type"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            if lineno == len(lines) or (lineno == len(lines) - 1 and not lines[-1]):
                problems.append("the manifest's last line is cut short (the process stopped while writing)")
                break
            raise RelayVizTraceError(f"{manifest}:{lineno}: not a manifest record; "
                                     "the file is corrupt") from None
        if kind == "header":
            if line.get("trace_format") != TRACE_FORMAT:
                raise RelayVizTraceError(f"{manifest}:{lineno}: trace format {line.get('trace_format')!r} "
                                         f"is not {TRACE_FORMAT!r}; upgrade relayviz_instrument")
            header = {k: v for k, v in line.items() if k != "type"}
        elif kind == "begin":
            values = {k: line[k] for k in _BEGIN_FIELDS if k in line}
            values["required"] = tuple(values.get("required", ()))
            records[line["index"]] = PassRecord(**values)
        elif kind == "end":
            record = records.get(line.get("index"))
            if record is None:
                raise RelayVizTraceError(f"{manifest}:{lineno}: end of pass event {line.get('index')} "
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
    return Trace(root, header, ordered, closed and not problems, problems)

