"""Where traces go and how they come back: records and manifest lines, the store interface
and the sink that owns the manifest, the memory and directory stores, and the reader::

    records.py     PassRecord; the manifest's header / begin / end / close lines
    sink.py        TraceStore (the Protocol both stores implement) and TraceSink
    memory.py      MemoryStore: a trace kept in memory
    directory.py   DirectoryStore: a trace directory, compressed snapshots, atomic writes
    trace.py       load_trace / Trace: a trace directory read back; TraceLike, what readers ask of a trace
    documents.py   read_document: a snapshot or graph JSON file as a document
    suite.py       a folder of per-test traces (pytest --relayviz-trace) and its index
    builds.py      the compilations a trace holds (split_builds) and what each built
"""

from __future__ import annotations

from .directory import DirectoryStore, new_trace_dir
from .memory import MemoryStore
from .trace import (MANIFEST, MODULES, SNAPSHOTS, Trace, TraceLike, load_trace, read_module, read_snapshot,
                    snapshot_path, snapshot_ref)
from .records import TRACE_FORMAT, PassRecord, begin_line, close_line, end_line, header_line, read_manifest
from .sink import TraceSink, TraceStore

__all__ = [
    "PassRecord",
    "Trace",
    "TraceLike",
    "load_trace",
    "TraceStore",
    "TraceSink",
    "MemoryStore",
    "DirectoryStore",
    "new_trace_dir",
    "read_snapshot",
    "read_module",
    "snapshot_path",
    "snapshot_ref",
    "read_manifest",
    "header_line",
    "begin_line",
    "end_line",
    "close_line",
    "TRACE_FORMAT",
    "MANIFEST",
    "SNAPSHOTS",
    "MODULES",
]
