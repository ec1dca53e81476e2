"""Why a regression snapshot does not match, as plain text for pytest's failure report.

For a trace, the stored snapshot and this run are aligned pass by pass
(:func:`~relayviz_instrument.analysis.alignment.align`): the message names the first pass where they part
ways (a pass added to or removed from the pipeline is named as such, not as a cascade of
differences), shows that pass's module against the stored one node by node as ``relayviz
report`` prints a diff, and ends with one line counting the later divergences. For a single
module, function or graph it shows their node-level diff. A snapshot this package cannot read
(another format, a damaged file) gets one line saying what to run instead of a diff.
"""

from __future__ import annotations

import difflib
import io
from typing import Any, Dict, List, Union

from rich.console import Console

from ..analysis.alignment import align
from ..views.diff import DivergenceView
from ..views.diff import FileComparison
from ..diff import diff
from ..errors import RelayVizFormatError
from .codec import SnapshotFormatError, StoredSnapshot, decode_snapshot, header_versions, pinned_part

__all__ = ["explain", "version_note", "LABELS", "UPDATE_HINT"]

#: What the two sides are called in a message.
LABELS = ("the snapshot", "this run")
UPDATE_HINT = "run pytest --snapshot-update"
#: Width of the rendered text: wide enough that node lines rarely wrap.
_WIDTH = 120
#: Lines of a plain text diff shown when the graphs are the same but the files are not.
_TEXT_LINES = 24


def explain(stored: Union[bytes, str, None], received: Union[bytes, str], *, where: str = "the snapshot") -> List[str]:
    """Lines telling why ``received`` (this run's snapshot file) does not match ``stored``
    (the file on disk; empty or ``None`` when there is none). ``where`` names the file."""
    received = received.encode() if isinstance(received, str) else received
    stored = stored.encode() if isinstance(stored, str) else (stored or b"")
    if not stored:
        return [f"no snapshot is stored for this test: {UPDATE_HINT} to write it"]
    try:
        old = decode_snapshot(stored, where)
    except SnapshotFormatError as exc:
        if exc.format is not None:
            return [f"snapshot written by format {exc.format}; {UPDATE_HINT}"]
        return [f"{exc.source}: {exc.message}; {UPDATE_HINT}"]
    except RelayVizFormatError as exc:
        return [str(exc)]
    new = decode_snapshot(received, "this run")
    lines = _version_notes(stored, received)
    if pinned_part(stored) == pinned_part(received):
        return lines + ["the snapshot matches but for the versions in its header"]
    versions = [_document_version(side) for side in (old, new)]
    if versions[0] != versions[1]:
        lines.append(f"note: the snapshot holds RelayViz {versions[0]} documents, this relayviz_instrument writes "
                     f"{versions[1]}: if nothing else differs, {UPDATE_HINT}")
    if old.header.get("options") != new.header.get("options"):
        return lines + [f"the snapshot was written with options {old.header.get('options')}, the test now "
                        f"asks for {new.header.get('options')}: {UPDATE_HINT}"]
    if old.kind != new.kind:
        return lines + [f"the snapshot holds a {old.kind}, the test now gives a {new.kind}: {UPDATE_HINT}"]
    if old.kind == "trace":
        alignment = align(old, new)
        if not alignment.same:
            return lines + _text(DivergenceView(alignment, LABELS))
    else:
        found = diff(old.snapshot(old.root or ""), new.snapshot(new.root or ""))
        if not found.is_empty:
            return lines + _text(FileComparison(f"{LABELS[0]}'s {old.kind}", f"{LABELS[1]}'s", found))
    return lines + _text_diff(stored, received)


def version_note(stored: bytes, received: bytes) -> str:
    """``the snapshot was written with TVM 0.15.0, Python 3.10; this is TVM 0.16.0, Python 3.10``,
    or empty when the TVM and Python versions of the two headers agree."""
    old, new = header_versions(stored), header_versions(received)
    if old == new:
        return ""

    def said(versions: Dict[str, str]) -> str:
        return f"TVM {versions.get('tvm', '?')}, Python {versions.get('python', '?')}"

    return f"the snapshot was written with {said(old)}; this is {said(new)}"


def _version_notes(stored: bytes, received: bytes) -> List[str]:
    note = version_note(stored, received)
    return [f"note: {note}"] if note else []


def _document_version(stored: StoredSnapshot) -> str:
    """The RelayViz version of a snapshot's modules (``1.1``), ``?`` if it holds none."""
    for doc in stored.modules.values():
        return ".".join(str(part) for part in doc.get("version", ["?"]))
    return "?"


def _text(renderable: Any) -> List[str]:
    """A renderable as plain text lines (no colour, no markup: pytest prints them as they are)."""
    out = io.StringIO()
    console = Console(file=out, width=_WIDTH, color_system=None, force_terminal=False, highlight=False,
                      emoji=False, legacy_windows=False)
    console.print(renderable, crop=False, soft_wrap=True)
    return out.getvalue().rstrip("\n").split("\n")


def _text_diff(stored: bytes, received: bytes) -> List[str]:
    """The two files' own lines where no pass or node differs (how modules are written)."""
    lines = list(difflib.unified_diff(stored.decode("utf-8", "replace").split("\n"),
                                      received.decode("utf-8", "replace").split("\n"),
                                      LABELS[0], LABELS[1], n=1, lineterm=""))
    shown = lines[:_TEXT_LINES] + ([f"… {len(lines) - _TEXT_LINES} more lines"] if len(lines) > _TEXT_LINES else [])
    return ["no pass and no node differs, but the files do:"] + shown
