"""The errors and warnings of relayviz_instrument.

One small hierarchy. Each error also inherits the builtin it resembles, so callers that
already catch ``ValueError`` or ``OSError`` keep working::

    RelayVizError
    ├── RelayVizUsageError         (ValueError)    a bad argument to the public API or the CLI
    ├── RelayVizFormatError        (ValueError)    a document that breaks the RelayViz format
    │   └── GraphJSONError                          a malformed graph executor / NNVM graph JSON
    ├── RelayVizIOError            (OSError)       a file or directory that cannot be read or written
    │   └── RelayVizTraceError                      a trace directory that cannot be read or written
    ├── RelayVizSerializeError     (TypeError)     an IR object the serializers cannot represent
    ├── RelayVizExportError        (ValueError)    a document another tool's format cannot hold
    └── RelayVizDependencyError    (ImportError)   an optional dependency that is not installed

    CompilationInterrupted         (KeyboardInterrupt, Exception)   Ctrl-C carried through TVM

    RelayVizWarning                (UserWarning)
    ├── UnknownNodeKindWarning                      a node kind from a newer minor version, kept as is
    ├── TraceIncompleteWarning                      the instrument failed; the compilation went on
    └── LargeGraphWarning                           a graph too big to draw well in the chosen format

Every message says what was wrong, where (file, node id, field) and what to do. The CLI
prints any of them as one line and exits with status 2 (see :data:`EXIT_STATUS`).
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "RelayVizError",
    "RelayVizUsageError",
    "RelayVizFormatError",
    "GraphJSONError",
    "RelayVizIOError",
    "RelayVizTraceError",
    "RelayVizSerializeError",
    "RelayVizExportError",
    "RelayVizDependencyError",
    "CompilationInterrupted",
    "RelayVizWarning",
    "UnknownNodeKindWarning",
    "TraceIncompleteWarning",
    "LargeGraphWarning",
    "EXIT_STATUS",
]


class RelayVizError(Exception):
    """Base class of every error raised by relayviz_instrument."""


class RelayVizUsageError(RelayVizError, ValueError):
    """A bad argument: an invalid regular expression, an unknown model or pass, a wrong option."""


class RelayVizFormatError(RelayVizError, ValueError):
    """A document that is not valid RelayViz.

    ``source`` names the file (or ``<bytes>``), ``node`` the node id and ``field`` the
    field path inside that node, when they are known. ``str()`` gives one line.
    """

    hint = "regenerate the document with relayviz_instrument.dumps() or fix the file by hand"

    def __init__(
        self,
        message: str,
        *,
        source: str = "<document>",
        node: Optional[int] = None,
        kind: Optional[str] = None,
        field: Optional[str] = None,
        hint: Optional[str] = None,
    ) -> None:
        self.message = message
        self.source = source
        self.node = node
        self.kind = kind
        self.field = field
        if hint is not None:
            self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = [self.source]
        if self.node is not None:
            where.append(f"node {self.node}" + (f" ({self.kind})" if self.kind else ""))
        if self.field is not None:
            where.append(f"field '{self.field}'")
        text = ": ".join([", ".join(where), self.message])
        return f"{text} ({self.hint})" if self.hint else text


class GraphJSONError(RelayVizFormatError):
    """A graph executor or NNVM graph JSON that cannot be read.

    ``field`` names the key (``nodes[12].inputs[0]``, ``attrs.shape``...).
    """

    hint = "check the file was written by relay.build (lib.get_graph_json()) or an NNVM graph"


class RelayVizIOError(RelayVizError, OSError):
    """A file or directory that cannot be read or written; the message names the path."""


class RelayVizTraceError(RelayVizIOError):
    """A trace directory that cannot be created, written or read back."""


class RelayVizSerializeError(RelayVizError, TypeError):
    """An IR object the serializer does not know how to write."""


class RelayVizExportError(RelayVizError, ValueError):
    """A document the chosen export format cannot represent (the message says which node)."""


class RelayVizDependencyError(RelayVizError, ImportError):
    """An optional dependency is missing; the message carries the install command."""


class CompilationInterrupted(KeyboardInterrupt, Exception):
    """Ctrl-C (a ``KeyboardInterrupt``) that arrived while the pass instrument's code ran.

    TVM's FFI drops a ``KeyboardInterrupt`` raised inside a Python callback: the compilation
    goes on, or TVM crashes. Being an ``Exception`` too, this one is carried by TVM to the
    code that started the compilation, where ``except KeyboardInterrupt`` catches it.
    ``original`` is the interrupt that arrived (None where TVM's FFI rebuilt the exception
    from its name and message, as TVM 0.2x's does).
    """

    original: Optional[BaseException] = None


#: The CLI's exit status for each error class (the most specific class that matches wins).
#: Every one of them is the user's input or environment, never a bug: status 2, as diff(1).
EXIT_STATUS: Dict[Type[RelayVizError], int] = {
    RelayVizUsageError: 2,
    RelayVizFormatError: 2,
    RelayVizIOError: 2,
    RelayVizSerializeError: 2,
    RelayVizExportError: 2,
    RelayVizDependencyError: 2,
    RelayVizError: 2,
}


class RelayVizWarning(UserWarning):
    """Base class of the warnings relayviz_instrument emits."""


class UnknownNodeKindWarning(RelayVizWarning):
    """A document from a newer minor version holds node kinds this reader does not know."""


class TraceIncompleteWarning(RelayVizWarning):
    """The instrument failed inside a pass; the compilation went on and the trace is incomplete."""


class LargeGraphWarning(RelayVizWarning):
    """A graph has more nodes than the export format draws well; the message says how to cut it."""
