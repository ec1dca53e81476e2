"""A folder of traces, one per test (``pytest --relayviz-trace DIR``): ``DIR/<test folder>/`` each
a trace directory, and ``DIR/relayviz-tests.json``, the index that names each test, its folder
and its outcome. The pytest plugin writes the index (again after each test, atomically, so that
a session that dies still leaves the tests it finished); ``relayviz show DIR`` reads it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import orjson

from .._files import atomic_write_bytes, read_bytes
from ..errors import RelayVizTraceError

__all__ = ["SUITE_INDEX", "SuiteEntry", "is_suite", "read_suite", "write_suite", "test_folder_name"]

#: The index of a folder of per-test traces.
SUITE_INDEX = "relayviz-tests.json"
#: The index's format, in its header.
_SUITE_FORMAT = "relayviz-tests/1"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class SuiteEntry:
    """One test: its pytest node id, its trace folder (a name inside the suite folder; None if
    the test entered no pass context) and its outcome (``passed``, ``failed``, ``skipped``)."""

    test: str
    folder: Optional[str]
    outcome: str

    def to_json(self) -> Dict[str, Any]:
        """The entry as the index stores it."""
        return {"test": self.test, "folder": self.folder, "outcome": self.outcome}


def test_folder_name(test_id: str, taken: Sequence[str]) -> str:
    """A folder name for ``test_id``: its characters other than letters, digits, ``.``, ``_``
    and ``-`` replaced by ``_``, at most 120 of them, never one of ``taken``."""
    base = _UNSAFE.sub("_", test_id).strip("._")[:120] or "test"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def is_suite(root: Union[str, "os.PathLike[str]"]) -> bool:
    """Whether ``root`` holds a suite index."""
    return (Path(root) / SUITE_INDEX).is_file()


def write_suite(root: Union[str, "os.PathLike[str]"], entries: Sequence[SuiteEntry]) -> None:
    """Write the index of ``root`` (atomically) listing ``entries`` in order."""
    data = {"format": _SUITE_FORMAT, "tests": [e.to_json() for e in entries]}
    atomic_write_bytes(Path(root) / SUITE_INDEX, orjson.dumps(data, option=orjson.OPT_INDENT_2))


def read_suite(root: Union[str, "os.PathLike[str]"]) -> List[SuiteEntry]:
    """The entries of ``root``'s index. A file that is not such an index, or an entry whose
    folder would point outside ``root``, raises :class:`RelayVizTraceError` naming the field."""
    path = Path(root) / SUITE_INDEX
    where = str(path)
    try:
        data = orjson.loads(read_bytes(path))
    except orjson.JSONDecodeError as exc:
        raise RelayVizTraceError(f"{where}: not JSON ({exc}); the file is corrupt") from None
    if not (isinstance(data, dict) and data.get("format") == _SUITE_FORMAT and isinstance(data.get("tests"), list)):
        raise RelayVizTraceError(f"{where}: not an index of per-test traces ({_SUITE_FORMAT}); "
                                 "it is written by pytest --relayviz-trace")
    entries = []
    for i, item in enumerate(data["tests"]):
        at = f"{where}: tests[{i}]"
        if not isinstance(item, dict):
            raise RelayVizTraceError(f"{at}: not an object; the file is corrupt")
        test, folder, outcome = item.get("test"), item.get("folder"), item.get("outcome")
        if not isinstance(test, str) or not isinstance(outcome, str):
            raise RelayVizTraceError(f"{at}: fields 'test' and 'outcome' must be strings; the file is corrupt")
        if folder is not None and not (isinstance(folder, str) and _UNSAFE.search(folder) is None
                                       and folder not in ("", ".", "..")):
            raise RelayVizTraceError(f"{at}: field 'folder' must be a plain folder name inside {root}, "
                                     f"not {folder!r}; the file is corrupt")
        entries.append(SuiteEntry(test, folder, outcome))
    return entries
