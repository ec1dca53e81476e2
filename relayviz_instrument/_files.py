"""Writing output files atomically, so a reader never sees half a file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from .errors import RelayVizTraceError

__all__ = ["atomic_write_bytes"]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``: a temporary file in the same directory, fsync, then rename.

    The file gets the permissions the umask gives a new file. Raises
    :class:`RelayVizTraceError` (an ``OSError``) naming the path when it cannot be written.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise RelayVizTraceError(f"{path}: cannot write the file: {exc.strerror or exc} "
                                 "(check the directory exists and is writable)") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise RelayVizTraceError(f"{path}: cannot write the file: {exc.strerror or exc}") from None
