"""What every exporter takes and promises: the interface between the diff/trace stages and
the writers of other tools' formats."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Mapping, Optional, Protocol, Sequence, Union

from ..diff import GraphDiff

__all__ = ["ExportGraph", "Exporter", "OutputPath"]

OutputPath = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class ExportGraph:
    """One graph to write: a RelayViz document, where it came from, and optionally the diff
    that produced it.

    ``name`` labels the graph in the output (a pass name, a file name); ``source`` names the
    file it was read from, for error messages. With ``diff`` set, ``before`` is the document
    the diff started from and ``document`` the one it ended at, so a drawing can show both
    sides coloured by the diff.
    """

    name: str
    document: Mapping[str, Any]
    source: str = "<document>"
    before: Optional[Mapping[str, Any]] = None
    diff: Optional[GraphDiff] = None


class Exporter(Protocol):
    """A writer of one external format, registered in :data:`relayviz_instrument.export.EXPORTERS`.

    ``name`` is the value of ``relayviz export --to``; ``summary`` one line for ``--help``;
    ``extra`` the pip extra its optional dependencies come with (``None``: none needed);
    ``many`` whether one output can hold several graphs (a whole trace).
    """

    name: str
    summary: str
    extra: Optional[str]
    many: bool

    def write(self, graphs: Sequence[ExportGraph], out: OutputPath, *,
              params: Optional[Mapping[str, Any]] = None, params_source: str = "<params>") -> List[Path]:
        """Write ``graphs`` to ``out``; return the files written (atomically). ``params`` maps
        parameter names to arrays (read from the file ``params_source``, named in errors)."""
        ...
