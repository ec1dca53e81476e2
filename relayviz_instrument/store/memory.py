"""A trace kept in memory: snapshots and manifest lines in Python objects (``out_dir=False``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import orjson

from ..errors import RelayVizTraceError
from ..format import Document, encode, loads
from .trace import snapshot_ref

__all__ = ["MemoryStore"]


class MemoryStore:
    """Snapshots as encoded bytes by reference, and the manifest as a list of encoded lines."""

    path: Optional[Path] = None

    def __init__(self) -> None:
        self._snapshots: Dict[str, bytes] = {}
        self._modules: Dict[str, bytes] = {}
        #: The manifest lines, encoded as a directory store writes them.
        self.lines: List[bytes] = []

    def put(self, doc: Document) -> str:
        data = encode(doc)
        ref = snapshot_ref(data)
        self._snapshots.setdefault(ref, data)
        return ref

    def get(self, ref: str) -> Document:
        try:
            return loads(self._snapshots[ref], source=f"snapshot {ref}")
        except KeyError:
            raise RelayVizTraceError(f"no snapshot {ref!r} in this trace") from None

    def put_module(self, data: bytes) -> str:
        ref = snapshot_ref(data)
        self._modules.setdefault(ref, data)
        return ref

    def get_module(self, ref: str) -> bytes:
        try:
            return self._modules[ref]
        except KeyError:
            raise RelayVizTraceError(f"no module {ref!r} in this trace") from None

    def append(self, line: Dict[str, Any]) -> None:
        self.lines.append(orjson.dumps(line))

    def written(self) -> int:
        return len(self.lines)

    def close(self) -> None:
        pass
