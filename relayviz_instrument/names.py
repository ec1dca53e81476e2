"""How names are shown: one rule for every view, table, exporter and error message.

A name comes from a trace, a snapshot or a graph file, that is from anyone: a variable named
``data\\x1b[2J`` clears the terminal that prints it raw, and a control character makes an
SVG file invalid XML. :func:`printable` is the one place a name (or any text from a file) is
made fit for output: control characters are written as Python writes them in a string
(``\\x1b``, ``\\n``, ``\\u202e``), and a name longer than :data:`NAME_CHARS` is shown as its start
and its end with the number of characters left out, so that a huge name costs its length once,
not once per row that shows it. :func:`shorten` fits a name to a column.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["printable", "printable_lines", "shorten", "NAME_CHARS"]

#: Names longer than this are shown shortened (their start, the count left out, their end).
#: TVM's longest names (fused kernels) are a few hundred characters.
NAME_CHARS = 1000

#: What never reaches output raw: the C0 controls, DEL and the C1 controls (``\x9b`` starts
#: a terminal sequence too), the line and paragraph separators, the marks and overrides of
#: bidirectional text (which reorder what a terminal shows), and the two non-characters XML
#: refuses.
_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufffe\uffff"
_UNPRINTABLE = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
#: The same but the line break, for text already laid out in lines (what a console prints).
_UNPRINTABLE_IN_LINES = re.compile(f"[\x00-\x09\x0b-\x1f{_BEYOND_C0}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: "re.Match[str]") -> str:
    c = match.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: Optional[int] = NAME_CHARS) -> str:
    """``text`` fit for a terminal, an SVG or a DOT file: every control character written as
    an escape (``\\x1b``), and, when ``limit`` is set and ``text`` is longer, its first and last
    ``limit // 2`` characters around ``…[N characters]…``. Costs ``O(min(len(text), limit))``
    when shortened, so a view may call it once per row whatever the name's size."""
    if limit is not None and len(text) > limit:
        half = max(1, limit // 2)
        left = len(text) - 2 * half
        return (_UNPRINTABLE.sub(_escape, text[:half]) + f"…[{left:,} characters]…"
                + _UNPRINTABLE.sub(_escape, text[-half:]))
    return _UNPRINTABLE.sub(_escape, text)


def printable_lines(text: str) -> str:
    """``text`` with every control character but the line break escaped as :func:`printable`
    does, whatever its length; ``text`` itself (the same object) when it has none."""
    if _UNPRINTABLE_IN_LINES.search(text) is None:
        return text
    return _UNPRINTABLE_IN_LINES.sub(_escape, text)


def shorten(name: str, room: int) -> str:
    """``name`` in at most ``room`` characters: its start, ``…``, and its end, which is what
    tells names apart (``tvmgen_default_fused_nn_conv2d_add_nn_relu_1``, ``FoldScaleAxis``)."""
    if len(name) <= room:
        return name
    if room < 4:
        return name[:room]
    head = max(1, (room - 1) // 3)
    return name[:head] + "…" + name[len(name) - (room - 1 - head):]
