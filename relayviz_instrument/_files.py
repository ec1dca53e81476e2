"""Reading input files and writing output files: one place for both, so every reader fails
the same way and no writer leaves half a file behind."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any, Type, Union

import orjson

from .errors import RelayVizFormatError, RelayVizIOError

__all__ = ["atomic_write_bytes", "read_bytes", "read_input", "decompressed", "parse_json", "ZSTD_SUFFIX"]

#: How a zstandard frame starts, and the suffix of files the store compresses.
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_SUFFIX = ".zst"

PathLike = Union[str, "os.PathLike[str]"]


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path``: a temporary file in the same directory, fsync, then rename.

    The file gets the permissions the umask gives a new file. Raises
    :class:`RelayVizIOError` (an ``OSError``) naming the path when it cannot be written.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise RelayVizIOError(f"{path}: cannot write the file: {exc.strerror or exc} "
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
        raise RelayVizIOError(f"{path}: cannot write the file: {exc.strerror or exc}") from None


def read_bytes(path: PathLike) -> bytes:
    """The bytes of the file at ``path``; :class:`RelayVizIOError` naming it if it cannot be read."""
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise RelayVizIOError(f"{path}: cannot read the file: it is a directory (pass a file)") from None
    except OSError as exc:
        raise RelayVizIOError(f"{path}: cannot read the file: {exc.strerror or exc} (check the path)") from None


def read_input(path: PathLike) -> bytes:
    """The bytes of an input file, decompressed if it is a zstandard file (a stored snapshot)."""
    return decompressed(read_bytes(path), os.fspath(path))


def decompressed(data: bytes, source: str) -> bytes:
    """``data`` itself, or its decompression if it is a zstandard frame."""
    if not data.startswith(_ZSTD_MAGIC):
        return data
    import zstandard

    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except zstandard.ZstdError as exc:
        raise RelayVizFormatError(f"a damaged zstandard file ({exc})", source=source,
                                  hint="the file was cut short or altered; take it from the trace again") from None


def parse_json(data: Union[bytes, str], source: str, error: Type[RelayVizFormatError] = RelayVizFormatError) -> Any:
    """Parse JSON text read from ``source``; ``error`` (a format error class) says why it is not JSON.

    Binary input (an image, a ``.params`` file, a compressed file) is named as such rather
    than reported as a JSON syntax error at some byte offset.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        if b"\x00" in raw[:4096] or not _is_utf8(raw):
            raise error("not a text file (it holds binary data, not JSON)", source=source,
                        hint="pass a JSON file") from None
        raise error(f"invalid JSON: {exc}", source=source, hint="the file is not JSON; was it truncated?") from None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
