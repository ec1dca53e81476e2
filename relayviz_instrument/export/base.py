"""What every exporter takes and promises: the interface between the diff/trace stages and
the writers of other tools' formats."""

from __future__ import annotations

import importlib
import importlib.util
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
    in one line (``what`` names the format): the install command when it is missing; when it
    is installed but its import fails (any exception: a package built for another torch), the
    error, the versions found and what to install."""
    top = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        try:
            installed = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            installed = True
        if not installed:
            raise RelayVizDependencyError(
                f"{what} needs the Python package '{top}', which is not installed: "
                f"pip install 'relayviz_instrument[{extra}]'") from None
        failure: Exception = exc
    except Exception as exc:  # whatever the package's own import raises
        failure = exc
    raise RelayVizDependencyError(_import_failure(top, extra, what, failure)) from None


def _import_failure(top: str, extra: str, what: str, exc: Exception) -> str:
    """The one line saying that ``top`` is installed and fails to import, and what to do."""
    from importlib import metadata

    def found(name: str) -> str:
        dists = metadata.packages_distributions().get(name) or [name]
        try:
            return f"{dists[0]} {metadata.version(dists[0])}"
        except metadata.PackageNotFoundError:
            return f"{name} (version unknown)"

    text = str(exc).strip().splitlines()
    why = f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
    culprit = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    owner = getattr(exc, "obj", None) if isinstance(exc, AttributeError) else None  # .obj: Python 3.10+
    if isinstance(owner, ModuleType):
        culprit = owner.__name__
    culprit = culprit.split(".")[0] if culprit else None
    needs = [r.split(";")[0].strip() for r in _requirements() if f'extra == "{extra}"' in r]
    package = found(top)
    line = f"{what} needs the Python package '{top}': {package} is installed but fails to import ({why})"
    if culprit and culprit != top:
        line += (f"; {found(culprit)} is installed beside it: upgrade {culprit}, or install a version of "
                 f"{package.split()[0]} that works with it")
    else:
        line += f"; reinstall it: pip install --force-reinstall '{needs[0] if needs else top}'"
    return line + f" (relayviz_instrument[{extra}] needs {', '.join(needs) or top})"


def _requirements() -> List[str]:
    from importlib import metadata

    try:
        return metadata.requires("relayviz_instrument") or []
    except metadata.PackageNotFoundError:
        return []


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
