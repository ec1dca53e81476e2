"""A trace directory on disk: the manifest, appended and flushed line by line, and
content-addressed snapshots, each compressed and written atomically.

Layout::

    manifest.jsonl              one JSON object per line (see records.py)
    snapshots/<ref>.json.zst    RelayViz documents (zstandard), named by a digest of their JSON
    modules/<ref>.json.zst      IR modules kept for relayviz replay (save_json, or TVMScript and constants)
    cache/                      what readers derived from the trace (diff summaries), by version

Because a ``begin`` line is on disk before its pass runs, a trace left by a process that
died inside a pass still says which pass it was and holds that pass's input snapshot.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import IO, Any, Dict, Optional, Set, Tuple, Union

import orjson
import zstandard

from .._files import ZSTD_SUFFIX, atomic_write_bytes
from ..errors import RelayVizTraceError
from ..format import Document, encode
from .trace import MANIFEST, MODULES, SNAPSHOTS, read_module, read_snapshot, snapshot_ref

__all__ = ["DirectoryStore", "new_trace_dir", "COMPRESSION_LEVEL"]

#: zstandard's level for snapshots: fast enough to stay a small part of a snapshot's cost.
COMPRESSION_LEVEL = 3


class DirectoryStore:
    """Writes a trace directory. Creating it claims the directory, race-safely.

    The directory (and its parents) is created if needed; it is refused with
    :class:`RelayVizTraceError` if it is not empty or if another writer claims it first (the
    manifest is created exclusively), so two traces never mix.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self.path: Optional[Path] = Path(path)
        root = Path(path)
        self._compressor = zstandard.ZstdCompressor(level=COMPRESSION_LEVEL)
        self._written: Set[Tuple[str, str]] = set()
        #: The manifest's size in bytes as of the last line appended, or None when it is not known
        #: (while a line is being written, after a reopening): then it is asked of the file.
        self._size: Optional[int] = None
        try:
            if root.exists() and not root.is_dir():  # mkdir would say it exists, as if another trace held it
                raise RelayVizTraceError(f"{root}: is a file, not a directory; pass a directory for the trace "
                                         "(or none: a new relayviz-trace/<timestamp>/ is made)")
            root.mkdir(parents=True, exist_ok=True)
            if any(root.iterdir()):
                raise RelayVizTraceError(
                    f"{root}: the trace directory is not empty; pass a new directory "
                    "(or none: a new relayviz-trace/<timestamp>/ is made)")
            # open for the store's life, appended to line by line; close() closes it
            self._manifest: Optional[IO[bytes]] = open(root / MANIFEST, "xb")  # noqa: SIM115 (closed by close())
            (root / SNAPSHOTS).mkdir(exist_ok=True)
        except FileExistsError:
            raise RelayVizTraceError(f"{root}: another trace is being written to this directory; "
                                     "pass a new directory") from None
        except OSError as exc:
            raise RelayVizTraceError(f"{root}: cannot create the trace directory: "
                                     f"{exc.strerror or exc}") from exc

    @property
    def root(self) -> Path:
        assert self.path is not None
        return self.path

    def put(self, doc: Document) -> str:
        return self._write(SNAPSHOTS, encode(doc))

    def get(self, ref: str) -> Document:
        return read_snapshot(self.root, ref)

    def put_module(self, data: bytes) -> str:
        try:
            (self.root / MODULES).mkdir(exist_ok=True)  # made on first use: most traces keep none
        except OSError as exc:
            raise RelayVizTraceError(f"{self.root / MODULES}: cannot create the folder: {exc.strerror or exc}") from exc
        return self._write(MODULES, data)

    def get_module(self, ref: str) -> bytes:
        return read_module(self.root, ref)

    def _write(self, folder: str, data: bytes) -> str:
        """Store ``data`` once under ``folder``, compressed, named by its digest; the digest."""
        ref = snapshot_ref(data)
        if (folder, ref) not in self._written:
            target = self.root / folder / f"{ref}.json{ZSTD_SUFFIX}"
            if not target.exists():
                # No fsync per file: like the manifest's lines, a snapshot is handed to the
                # operating system, which keeps it if the process dies (the case a trace is
                # made for); an fsync each cost more than serializing a small module.
                atomic_write_bytes(target, self._compressor.compress(data), within=self.root, durable=False)
            self._written.add((folder, ref))
        return ref

    def append(self, line: Dict[str, Any]) -> None:
        """Append one manifest line and flush it to the operating system (reopening the
        manifest if the store was closed)."""
        if self._manifest is None:
            try:
                self._manifest = open(self.root / MANIFEST, "ab")  # noqa: SIM115 (closed by close())
            except OSError as exc:
                raise RelayVizTraceError(f"{self.root}: cannot reopen the manifest: "
                                         f"{exc.strerror or exc}") from exc
        data = orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)
        size = self.written()
        # Unknown until the line is flushed: a Ctrl-C in between leaves the answer to the file.
        self._size = None
        self._manifest.write(data)
        self._manifest.flush()
        self._size = size + len(data)

    def written(self) -> int:
        """The manifest's size in bytes, the lines buffered for writing included: counted as
        lines are appended (asking the file costs a system call, twice per pass event), and
        asked of the file whenever the count is not known to be right."""
        if self._size is not None:
            return self._size
        if self._manifest is not None:
            self._size = self._manifest.tell()
            return self._size
        try:
            return (self.root / MANIFEST).stat().st_size
        except OSError:
            return 0

    def close(self) -> None:
        """Flush the manifest and close it. No fsync, as for the snapshots: a trace outlives its
        process, not a power loss, and an fsync cost 6 ms a trace here, more than a test's
        whole compilation when a test suite is traced test by test."""
        if self._manifest is not None:
            try:
                self._manifest.flush()
            finally:
                self._size = None
                self._manifest.close()
                self._manifest = None


def new_trace_dir(base: Union[str, "os.PathLike[str]"] = "relayviz-trace") -> Path:
    """Create and return a new, empty ``<base>/<timestamp>/`` directory (race-safe)."""
    base = Path(base)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RelayVizTraceError(f"{base}: cannot create the directory for traces: {exc.strerror or exc}") from exc
    for attempt in range(1000):
        candidate = base / (stamp if attempt == 0 else f"{stamp}-{attempt + 1}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise RelayVizTraceError(f"{candidate}: cannot create the trace directory: {exc.strerror or exc}") from exc
        return candidate
    raise RelayVizTraceError(f"{base}: cannot find a free trace directory name for {stamp}")
