"""How every command writes: a renderable to the console, or JSON to standard output, and
errors as one escaped line on standard error.

Every console the commands print with is an :class:`OutputConsole`: whatever text a view
gives it, a control character from a trace or a file (an ``ESC[2J`` in a variable's name)
reaches the terminal or the pipe written as an escape (``\\x1b``, see
:func:`~relayviz_instrument.names.printable`), never raw. Views escape the names they show
themselves, so that tables measure what is printed; the console is the guard for any text
they did not.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Optional

import orjson
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from ..errors import EXIT_STATUS, RelayVizError, RelayVizWarning
from ..names import printable, printable_lines

__all__ = ["OutputConsole", "print_json", "print_json_lines", "print_result", "print_error", "warnings_as_lines"]

#: An error or warning longer than this is shown as its start and its end: messages name a
#: file and a place, and quote TVM's errors (which the instrument keeps to 4,000 characters);
#: a longer one quotes a huge name from a file, which must not cost its size on every line.
_MESSAGE_CHARS = 8000


class OutputConsole(Console):
    """A rich console whose output never holds a control character it was not made to write:
    the text of every segment is passed through :func:`~relayviz_instrument.names.printable_lines`
    (line breaks kept; the styles are the console's own and are not text)."""

    def render(self, renderable: RenderableType, options: Optional[ConsoleOptions] = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text:
                text = printable_lines(segment.text)
                if text is not segment.text:
                    segment = Segment(text, segment.style)
            yield segment


def print_json(value: Any) -> None:
    """``value`` as indented JSON (keys in the order built), one document, on standard output."""
    sys.stdout.flush()
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
    sys.stdout.buffer.flush()


def print_json_lines(values: Iterable[Any]) -> None:
    """Each value as one line of JSON, written and flushed as it comes."""
    sys.stdout.flush()
    for value in values:
        sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE))
        sys.stdout.buffer.flush()


def print_result(console: Console, result: Any, as_json: bool) -> None:
    """A use case's result: its ``to_json()`` with ``--json``, else the result itself (a renderable).

    Lines are never cropped to the console's width: on a terminal the renderables fit it, and
    in a file or a pipe (where rich assumes 80 columns) tables keep every name whole.
    """
    if as_json:
        print_json(result.to_json())
    else:
        console.print(result, crop=False)


def print_error(exc: RelayVizError) -> int:
    """Print ``exc`` as one line on standard error (its text never read as markup); its exit status."""
    line = Text()
    line.append("error: ", style="bold red")
    line.append(printable(str(exc), _MESSAGE_CHARS))  # one line: a line break in a name is escaped too
    OutputConsole(stderr=True, soft_wrap=True, highlight=False).print(line)
    for cls in type(exc).__mro__:
        if cls in EXIT_STATUS:
            return EXIT_STATUS[cls]
    return 2


@contextmanager
def warnings_as_lines() -> Iterator[None]:
    """The package's warnings raised inside the block, printed after it as ``warning: ...`` lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelayVizWarning)
        yield
    errors = OutputConsole(stderr=True, soft_wrap=True, highlight=False)
    for warning in caught:
        if issubclass(warning.category, RelayVizWarning):
            errors.print(Text(f"warning: {printable(str(warning.message), _MESSAGE_CHARS)}", style="yellow"))
