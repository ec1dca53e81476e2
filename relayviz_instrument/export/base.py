"""What every exporter takes and promises: the interface between the diff/trace stages and
the writers of other tools' formats."""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, List, Mapping, Optional, Protocol, Sequence, Union

from ..diff import GraphDiff
from ..errors import RelayVizDependencyError, RelayVizIOError
from ..format import Document

__all__ = ["ExportGraph", "ExportOptions", "Exporter", "OutputPath", "require", "slug", "graph_files", "make_dir"]

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
    document: Document
    source: str = "<document>"
    before: Optional[Document] = None
    diff: Optional[GraphDiff] = None


@dataclass(frozen=True)
class ExportOptions:
    """How to draw: options the drawing exporters share (the others ignore them).

    ``max_nodes`` caps the nodes of each drawn graph: unchanged regions of a diff are
    collapsed first, then single-use inputs folded into their users, then functions without
    changes collapsed to one node each, and only then are the last nodes left out (a node says
    how many). ``None`` draws everything (with a warning where the format has a
    :attr:`Exporter.node_limit`). ``legend`` adds the colour key to a diff drawing.
    ``params_source`` names the file the ``params`` came from, in error messages.
    """

    max_nodes: Optional[int] = None
    legend: bool = True
    params_source: str = "<params>"


class Exporter(Protocol):
    """A writer of one external format, registered in :data:`relayviz_instrument.export.EXPORTERS`.

    ``name`` is the value of ``relayviz export --to``; ``summary`` one line for ``--help``;
    ``extra`` the pip extra its optional dependencies come with (``None``: none needed);
    ``many`` whether one output can hold several graphs (a whole trace); ``node_limit`` the
    node count above which the format draws slowly or illegibly (``None``: no such limit).
    """

    name: str
    summary: str
    extra: Optional[str]
    many: bool
    node_limit: Optional[int]

    def write(self, graphs: Sequence[ExportGraph], out: OutputPath, *,
              params: Optional[Mapping[str, Any]] = None, options: ExportOptions = ExportOptions()) -> List[Path]:
        """Write ``graphs`` to ``out``; return the files written (atomically)."""
        ...


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import the optional dependency ``module``, or raise :class:`RelayVizDependencyError`
    with the one line that installs it (``what`` names the format in the message)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise RelayVizDependencyError(
            f"{what} needs the Python package '{module.split('.')[0]}', which is not installed: "
            f"pip install 'relayviz_instrument[{extra}]'") from None


def slug(name: str) -> str:
    """``name`` as a file or run name: letters, digits, ``_``, ``-`` and ``.`` only."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "graph"


def graph_files(graphs: Sequence[ExportGraph], out: OutputPath, suffix: str) -> List[Path]:
    """Where each graph of a one-file-per-graph format goes: ``out`` itself for one graph, else
    ``out/<name>.<suffix>`` in the directory ``out`` (created), one file per graph."""
    out = Path(out)
    if len(graphs) == 1:
        return [out]
    make_dir(out)
    return [out / f"{slug(g.name)}{suffix}" for g in graphs]


def make_dir(path: Path) -> None:
    """Create the output directory ``path`` (and its parents); :class:`RelayVizIOError` if it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RelayVizIOError(f"{path}: cannot create the output directory: {exc.strerror or exc}") from None
