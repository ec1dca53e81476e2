"""Reading a trace back: a directory written by :class:`~relayviz_instrument.store.DirectoryStore`
as records and snapshots, and :class:`TraceLike`, what every reader of a trace may ask of one
(a trace read back, or a live ``RelayVizTrace``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Protocol, Sequence, Union

from .._files import ZSTD_SUFFIX, read_input
from ..errors import RelayVizTraceError
from ..format import Document, digest_bytes, loads
from .records import PassRecord, read_manifest

__all__ = ["Trace", "TraceLike", "load_trace", "read_snapshot", "read_snapshot_bytes", "snapshot_path",
           "snapshot_ref", "snapshot_file_ref", "read_module", "MANIFEST", "SNAPSHOTS", "MODULES",
           "MANIFEST_LINE_BYTES"]

MANIFEST = "manifest.jsonl"
SNAPSHOTS = "snapshots"
#: IR modules kept for ``relayviz replay`` (JSON: ``tvm.ir.save_json``, or TVMScript with its constants).
MODULES = "modules"
#: The longest manifest line read. The instrument writes lines of a few KiB (it keeps an error
#: to 4,000 characters); a longer line holds a name no compilation gave, and past this bound
#: the trace is refused rather than read into memory. Names up to it are shown shortened
#: (:func:`~relayviz_instrument.names.printable`).
MANIFEST_LINE_BYTES = 64 * 2**20


def snapshot_ref(data: bytes) -> str:
    """The reference of an encoded snapshot: 32 hex digits of the SHA-256 of its JSON."""
    return digest_bytes(data).split(":", 1)[1]


def snapshot_path(root: Path, ref: str) -> Path:
    """The file of snapshot ``ref`` in the trace directory ``root`` (compressed, or plain JSON as
    traces of format 1 stored them). A ref names a file inside ``snapshots/``: anything that
    could point elsewhere is refused."""
    _check_ref(root, ref, "snapshot")
    compressed = root / SNAPSHOTS / f"{ref}.json{ZSTD_SUFFIX}"
    if compressed.is_file():
        return compressed
    plain = root / SNAPSHOTS / f"{ref}.json"
    if plain.is_file():
        return plain
    raise RelayVizTraceError(f"{root}: snapshot {ref} is missing from {SNAPSHOTS}/; "
                             "the trace directory is incomplete")


def _check_ref(root: Path, ref: Any, what: str) -> None:
    if not (isinstance(ref, str) and ref and all(c in "0123456789abcdef" for c in ref)):
        raise RelayVizTraceError(f"{root}: {ref!r} is not a {what} reference (hex digits)")


def read_module(root: Path, ref: str) -> bytes:
    """The bytes of the module kept under ``ref`` in ``root`` (``capture/kept_module.py``),
    checked against its digest (the reference is the digest of the text)."""
    _check_ref(root, ref, "module")
    path = root / MODULES / f"{ref}.json{ZSTD_SUFFIX}"
    if not path.is_file():
        raise RelayVizTraceError(f"{root}: module {ref} is missing from {MODULES}/; the trace directory "
                                 "is incomplete")
    data = read_input(path)
    if snapshot_ref(data) != ref:  # TVM's load_json may crash the process on damaged JSON: never pass it any
        raise RelayVizTraceError(f"{path}: the kept module is damaged (its content does not match its digest); "
                                 "it cannot be replayed")
    return data


#: How a trace names a snapshot file: the reference (the digest of its JSON) and a suffix.
_SNAPSHOT_NAME = re.compile(r"([0-9a-f]{32})\.json(?:" + re.escape(ZSTD_SUFFIX) + ")?")


def snapshot_file_ref(path: Union[str, "os.PathLike[str]"]) -> Optional[str]:
    """The reference a file's name claims, if it is named as a trace names its snapshots
    (``<32 hex digits>.json.zst``, or ``.json`` in traces of format 1); else None."""
    found = _SNAPSHOT_NAME.fullmatch(os.path.basename(os.fspath(path)))
    return found.group(1) if found else None


def read_snapshot_bytes(path: Union[str, "os.PathLike[str]"]) -> bytes:
    """The JSON of the snapshot file ``path``, decompressed, and checked against the digest its
    name holds when it is named as a trace names its snapshots: a snapshot altered after it was
    written (recompressed or not) is refused with :class:`RelayVizTraceError` naming the file.
    The check costs a SHA-256 of the JSON, a few percent of parsing and validating it."""
    data = read_input(path)
    ref = snapshot_file_ref(path)
    if ref is not None and snapshot_ref(data) != ref:
        raise RelayVizTraceError(f"{os.fspath(path)}: the snapshot does not match its digest (its file name): it "
                                 "was altered after it was written; record the trace again")
    return data


def read_snapshot(root: Path, ref: str) -> Document:
    """The validated document of snapshot ``ref`` of the trace directory ``root``, checked
    against its digest (see :func:`read_snapshot_bytes`)."""
    path = snapshot_path(root, ref)
    return loads(read_snapshot_bytes(path), source=str(path))


class TraceLike(Protocol):
    """What the analyses and views read of a trace, live (``RelayVizTrace``) or read back
    (:class:`Trace`): its records in the order the passes started, whether it is complete and
    why not, its directory (None for a trace kept in memory), and the snapshot stored under a
    record's ``before`` or ``after``."""

    @property
    def path(self) -> Optional[Path]: ...

    @property
    def records(self) -> Sequence[PassRecord]: ...

    @property
    def complete(self) -> bool: ...

    @property
    def problems(self) -> Sequence[str]: ...

    def snapshot(self, ref: str) -> Document: ...


class Trace:
    """A trace read back: its records, its header and its snapshots.

    ``complete`` is False when the instrument failed or the process stopped before the pass
    context exited; ``problems`` says why.
    """

    def __init__(self, path: Optional[Path], header: Dict[str, Any], records: List[PassRecord],
                 complete: bool, problems: List[str], contexts: Optional[List[Dict[str, Any]]] = None,
                 build_failure: Optional[str] = None, notes: Optional[List[str]] = None) -> None:
        self.path = path
        self.header = header
        self.records = records
        self.complete = complete
        #: Why the trace is incomplete: instrument failures, a missing close record, ...
        self.problems = problems
        #: The pass contexts of a trace of a whole process (``relayviz run``), in the order entered:
        #: ``index``, ``parent``, ``opened`` (``file:line``), ``opt_level``; empty for one context.
        self.contexts = contexts or []
        #: The error that ended the compilation after its last pass (in code generation), if any.
        self.build_failure = build_failure
        #: What a reader should know of the trace, complete or not (see ``records.close_line``).
        self.notes = notes or []

    def snapshot(self, ref: str) -> Document:
        """The validated RelayViz document stored under ``ref``."""
        if self.path is None:
            raise RelayVizTraceError("this trace was read without its snapshots")
        return read_snapshot(self.path, ref)

    def snapshot_path(self, ref: str) -> Path:
        """The file that holds snapshot ``ref`` (for commands that take a snapshot file)."""
        if self.path is None:
            raise RelayVizTraceError("this trace has no directory")
        return snapshot_path(self.path, ref)

    def module(self, ref: str) -> bytes:
        """The bytes of the IR module kept under ``ref`` (a record's ``replay``), digest checked."""
        if self.path is None:
            raise RelayVizTraceError("this trace has no directory")
        return read_module(self.path, ref)

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
    try:
        data = manifest.read_bytes()
    except OSError as exc:
        raise RelayVizTraceError(f"{manifest}: cannot read the manifest: {exc.strerror or exc}") from None
    lines: List[bytes] = []
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end - start > MANIFEST_LINE_BYTES:
            raise RelayVizTraceError(f"{manifest}:{len(lines) + 1}: a line longer than {MANIFEST_LINE_BYTES // 2**20} "
                                     "MiB, which the instrument never writes; the file is damaged or was not written "
                                     "by RelayVizTrace")
        lines.append(data[start:end])
        start = end + 1
    contents = read_manifest(lines, str(manifest))
    return Trace(root, contents.header, contents.records, contents.complete, contents.problems,
                 contents.contexts, contents.build_failure, contents.notes)
