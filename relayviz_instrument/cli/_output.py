"""How every command writes: a renderable to the console, or JSON to standard output, and
errors as one escaped line on standard error."""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import orjson
from rich.console import Console
from rich.text import Text

from ..errors import EXIT_STATUS, RelayVizError, RelayVizWarning

__all__ = ["print_json", "print_json_lines", "print_result", "print_error", "warnings_as_lines"]


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
    line.append(str(exc))
    Console(stderr=True, soft_wrap=True, highlight=False).print(line)
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
    errors = Console(stderr=True, soft_wrap=True, highlight=False)
    for warning in caught:
        if issubclass(warning.category, RelayVizWarning):
            errors.print(Text(f"warning: {warning.message}", style="yellow"))
