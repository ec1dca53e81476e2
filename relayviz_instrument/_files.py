"""Reading input files and writing output files: one place for both, so every reader fails
the same way and no writer leaves half a file behind.

Inside a trace directory, which may come from anyone, no symbolic link is followed to write:
:func:`atomic_write_bytes` with ``within=`` the trace directory opens every directory below it
with ``O_NOFOLLOW`` and refuses a link, so that a ``cache`` that links elsewhere gets nothing
written (the trace directory itself may be a link: the user named it). A file is always
replaced by a rename, which replaces a link standing in its place rather than writing
through it. :func:`read_inside` reads a file of a trace the same way, regular files only (a
FIFO named as a trace's file would block a reader forever).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Optional, Sequence, Type, Union

import orjson

from .errors import RelayVizFormatError, RelayVizIOError

__all__ = ["atomic_write_bytes", "read_inside", "read_bytes", "read_input", "decompressed", "parse_json",
           "ZSTD_SUFFIX"]

#: How a zstandard frame starts, and the suffix of files the store compresses.
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_SUFFIX = ".zst"

PathLike = Union[str, "os.PathLike[str]"]


#: Flags of the files and folders opened inside a trace: never through a link (0 where the
#: platform has no such flag, and dir_fd is then not used either).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BY_FD = _NOFOLLOW != 0 and os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd  # rename: replace's probe


def atomic_write_bytes(path: PathLike, data: bytes, *, within: Optional[PathLike] = None,
                       durable: bool = True) -> None:
    """Write ``data`` to ``path``: a temporary file in the same directory, fsync, then rename.

    The file gets the permissions the umask gives a new file. With ``within`` (a directory
    ``path`` is inside, such as a trace directory), the folders between them are created if
    missing and none of them may be a symbolic link: a link is refused, never followed.
    Raises :class:`RelayVizIOError` (an ``OSError``) naming the path when it cannot be written.
    ``durable=False`` leaves out the fsync: the file is still whole or absent for any reader and
    after the writing process dies, only not after a power loss (a trace's snapshots, written
    by the hundred during a compilation, where an fsync each cost more than the snapshot).
    """
    path = Path(path)
    parts: Sequence[str] = ()
    if within is None:
        folder = path.parent
    else:
        folder, parts = Path(within), _parts_below(Path(within), path.parent)
    tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        dir_fd = _open_folder(folder, parts, create=True)
    except OSError as exc:
        raise RelayVizIOError(f"{path}: cannot write the file: {_why(exc, hint=True)}") from None
    try:
        try:
            fd = _open_at(dir_fd, folder, parts, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW)
        except OSError as exc:
            raise RelayVizIOError(f"{path}: cannot write the file: {_why(exc, hint=True)}") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
            if dir_fd is not None:
                os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            else:
                os.replace(folder.joinpath(*parts, tmp), path)
        except OSError as exc:
            try:
                if dir_fd is not None:
                    os.unlink(tmp, dir_fd=dir_fd)
                else:
                    os.unlink(folder.joinpath(*parts, tmp))
            except OSError:
                pass
            raise RelayVizIOError(f"{path}: cannot write the file: {_why(exc)}") from None
    finally:
        if dir_fd is not None:
            os.close(dir_fd)


def read_inside(within: PathLike, path: PathLike) -> bytes:
    """The bytes of the regular file ``path`` inside the directory ``within``, reached through
    no symbolic link below ``within``; :class:`RelayVizIOError` naming it if it cannot be read,
    is a link, or is not a regular file (a FIFO or a device)."""
    path = Path(path)
    folder, parts = Path(within), _parts_below(Path(within), path.parent)
    try:
        dir_fd = _open_folder(folder, parts, create=False)
        try:
            fd = _open_at(dir_fd, folder, parts, path.name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise RelayVizIOError(f"{path}: cannot read the file: it is not a regular file")
            return handle.read()
    except RelayVizIOError:
        raise
    except OSError as exc:
        raise RelayVizIOError(f"{path}: cannot read the file: {_why(exc)}") from None


def _parts_below(within: Path, folder: Path) -> Sequence[str]:
    """The names of the folders from ``within`` down to ``folder``; ``..`` is refused."""
    try:
        parts = folder.relative_to(within).parts
    except ValueError:
        raise RelayVizIOError(f"{folder}: not inside {within}") from None
    if ".." in parts:
        raise RelayVizIOError(f"{folder}: not inside {within}")
    return parts


def _open_folder(folder: Path, parts: Sequence[str], *, create: bool) -> Optional[int]:
    """A descriptor of ``folder/parts...``, each of ``parts`` opened (and made, with ``create``)
    without following a link; None where the platform cannot (the paths are checked with lstat)."""
    if not _BY_FD:
        current = folder
        for part in parts:
            current = current / part
            if create and not os.path.lexists(current):
                os.mkdir(current)
            if os.path.islink(current):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(current))
        return None
    fd = os.open(folder, os.O_RDONLY | _DIRECTORY)
    try:
        for at, part in enumerate(parts):
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                below = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except NotADirectoryError:  # what O_DIRECTORY | O_NOFOLLOW gives a link on Linux
                where = folder.joinpath(*parts[:at + 1])
                if os.path.islink(where):
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(where)) from None
                raise
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_at(dir_fd: Optional[int], folder: Path, parts: Sequence[str], name: str, flags: int) -> int:
    if dir_fd is not None:
        return os.open(name, flags | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dir_fd)
    if os.path.islink(folder.joinpath(*parts, name)) and flags & os.O_CREAT == 0:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)
    return os.open(folder.joinpath(*parts, name), flags, 0o666)


def _why(exc: OSError, *, hint: bool = False) -> str:
    if exc.errno == errno.ELOOP:
        return f"{exc.filename or 'it'} is a symbolic link, which relayviz does not follow inside a trace"
    return str(exc.strerror or exc) + (" (check the directory exists and is writable)" if hint else "")


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
