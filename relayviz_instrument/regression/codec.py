"""The regression snapshot file: one home for writing it and reading it back.

A snapshot pins what a compilation did, as UTF-8 text laid out for a reviewer reading its
``git diff``: a header, the pass list, then each distinct module once, content-addressed::

    relayviz snapshot format 1
    tvm 0.16.dev0
    python 3.10
    object trace
    options {"constants":"digests","exclude":null,"names":true,"passes":null}

    passes: row, depth, name, whether it changed the module, input -> output
       0 1 sequential                               changed    2a8681df5e1c -> 965a051a0b2d
       1 2   RemoveUnusedFunctions                  unchanged  2a8681df5e1c
       ...

    module 2a8681df5e1c: input of row 0 sequential, 214 nodes
      root {"format":"relayviz","functions":{"main":213},"ir":"relay","version":[1,1]}
      0 Var {"dtype":"float32","name":"data","shape":[1,3,224,224]}
      ...

A module's name is the first 12 hex digits of the SHA-256 of its lines, so a pass whose
output changed shows as a new name in its row, and an unchanged module keeps its block. The
pass list holds the trace's pass events on Relay or Relax modules (and what a build
produced), not the work on scratch modules (:mod:`relayviz_instrument.analysis.pipeline`); rows are
numbered in the file's own order and timings are never written. ``tvm`` and ``python`` say
what wrote the file and are not part of what a comparison pins (:func:`pinned_part`).
Everything is written in a fixed order with sorted keys: the same compilation gives the same
bytes in every process.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import orjson

from ..errors import RelayVizFormatError, RelayVizTraceError, RelayVizUsageError
from ..format import Document
from ..format.irs import ARTIFACT_IRS, GRAPH_IRS, MODULE_IRS
from ..format.loading import checked
from ..analysis.pipeline import FINISHING, SCRATCH
from ..analysis.reading import TraceReading
from ..store import PassRecord, TraceLike

__all__ = ["SNAPSHOT_FORMAT", "SnapshotOptions", "StoredSnapshot", "SnapshotFormatError", "encode_snapshot",
           "decode_snapshot", "pinned_part", "header_versions"]

#: The layout this package writes, and those it reads.
SNAPSHOT_FORMAT = 1
_READ_FORMATS = (1,)
_MAGIC = "relayviz snapshot format "
#: Hex digits of a module's digest used as its name.
_REF_DIGITS = 12
#: Pass names are padded to this width (with their indentation) so that rows line up
#: without one long name re-aligning every row.
_NAME_WIDTH = 40
_STATES = ("changed", "unchanged", "unknown", "failed", "unrecorded")
_PINNED_IRS = MODULE_IRS | ARTIFACT_IRS
_SHAPES_ONLY = "(not compared)"


class SnapshotFormatError(RelayVizFormatError):
    """A snapshot file written in a layout this package no longer reads (``format`` says which)."""

    hint = "run pytest --snapshot-update"

    def __init__(self, message: str, *, source: str, format: Optional[int] = None) -> None:
        self.format = format
        super().__init__(message, source=source)


@dataclass(frozen=True)
class SnapshotOptions:
    """What a snapshot leaves out, so that it does not fail a test.

    ``constants``: ``"digests"`` pins each constant's value (small tensors by their values,
    large ones by a digest of their bytes), ``"shapes"`` only its shape and dtype. ``names``:
    ``False`` blanks variable names. ``passes`` / ``exclude``: regular expressions
    (``re.search``) on pass names; only the events they keep are pinned.
    """

    constants: str = "digests"
    names: bool = True
    passes: Optional[str] = None
    exclude: Optional[str] = None

    def __post_init__(self) -> None:
        if self.constants not in ("digests", "shapes"):
            raise RelayVizUsageError(f"constants={self.constants!r}: choose 'digests' or 'shapes'")
        for what in ("passes", "exclude"):
            pattern = getattr(self, what)
            if pattern is not None:
                try:
                    re.compile(pattern)
                except (re.error, TypeError) as exc:
                    raise RelayVizUsageError(f"{what}={pattern!r}: not a regular expression: {exc}") from None

    def to_json(self) -> Dict[str, Any]:
        return {"constants": self.constants, "exclude": self.exclude, "names": self.names, "passes": self.passes}

    def keeps(self, name: str) -> bool:
        """Whether events of the pass ``name`` are pinned."""
        if self.passes is not None and not re.search(self.passes, name):
            return False
        return self.exclude is None or not re.search(self.exclude, name)


@dataclass
class StoredSnapshot:
    """A snapshot file read back: its header, and for a trace its pass events as records
    and its modules, so that :func:`~relayviz_instrument.analysis.alignment.align` takes it as a trace."""

    header: Dict[str, Any]
    records: List[PassRecord] = field(default_factory=list)
    modules: Dict[str, Document] = field(default_factory=dict)
    #: The module of a snapshot of one module, function or graph.
    root: Optional[str] = None
    path: None = None
    complete: bool = True
    problems: List[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """``trace``, ``module``, ``function`` or ``graph``."""
        return str(self.header.get("object"))

    def snapshot(self, ref: str) -> Document:
        """The module named ``ref``."""
        try:
            return self.modules[ref]
        except KeyError:
            raise RelayVizTraceError(f"the snapshot holds no module {ref}") from None


# -- writing ----------------------------------------------------------------------------------


def encode_snapshot(obj: Any, options: SnapshotOptions = SnapshotOptions()) -> bytes:
    """The snapshot file of ``obj``: a trace (anything with ``records`` and ``snapshot(ref)``:
    a :class:`~relayviz_instrument.RelayVizTrace`, a trace read with ``load_trace``), an
    ``IRModule``, a Relay function or expression, a built graph (what ``relay.build``
    returns, or its graph executor JSON) or a RelayViz document. Raises
    :class:`RelayVizUsageError` for an incomplete trace, whose pipeline would be pinned
    half-way, and :class:`~relayviz_instrument.errors.RelayVizSerializeError` for anything
    else."""
    versions = _versions(obj)
    if hasattr(obj, "records") and hasattr(obj, "snapshot"):
        if not getattr(obj, "complete", True):
            raise RelayVizUsageError("the trace is incomplete (" + "; ".join(getattr(obj, "problems", [])) +
                                     "): a snapshot would pin a pipeline cut short; fix the compilation first")
        kind, body = "trace", _trace_body(obj, options)
    else:
        doc = _document(obj)
        kind = ("graph" if doc.get("ir") in GRAPH_IRS
                else "module" if "functions" in doc else "function")
        ref, lines = _module_lines(_normalized(doc, options))
        body = [f"module {ref}: {len(doc['nodes'])} nodes", *lines]
    header = [f"{_MAGIC}{SNAPSHOT_FORMAT}", f"tvm {versions[0]}", f"python {versions[1]}", f"object {kind}",
              "options " + orjson.dumps(options.to_json(), option=orjson.OPT_SORT_KEYS).decode()]
    return ("\n".join(header + [""] + body) + "\n").encode()


def _versions(obj: Any) -> Tuple[str, str]:
    """The TVM and Python versions that made ``obj``: a trace's header says, else this process."""
    header = getattr(obj, "header", None) or {}
    tvm = sys.modules.get("tvm")
    python = header.get("python") or sys.version.split()[0]
    return (str(header.get("tvm") or getattr(tvm, "__version__", "none")),
            ".".join(str(python).split(".")[:2]))


def _document(obj: Any) -> Document:
    if isinstance(obj, dict):
        return checked(obj, "the document given to the snapshot")
    from ..graph_json import from_graph_json

    if isinstance(obj, (str, bytes, bytearray)):
        return from_graph_json(obj, source_name="the graph JSON given to the snapshot")
    if hasattr(obj, "get_graph_json"):
        return from_graph_json(obj.get_graph_json(), source_name="relay.build")
    from ..serialize import to_relayviz

    return to_relayviz(obj)


def _trace_body(trace: TraceLike, options: SnapshotOptions) -> List[str]:
    records: List[PassRecord] = list(trace.records)
    roles = TraceReading(trace).roles
    pinned = [r for r in records if (r.ir in _PINNED_IRS and roles.get(r.index) != SCRATCH
                                     and options.keeps(r.name))]
    names: Dict[str, str] = {}  # the trace's reference -> the module's name in the file
    lines: Dict[str, List[str]] = {}  # the trace's reference -> the module's lines
    modules: List[Tuple[str, List[str]]] = []  # (title, lines), in the order rows first name them
    described: Set[str] = set()

    def name_of(ref: Optional[str], stored: bool, what: str) -> Optional[str]:
        """The module's name; its lines are stored with it unless ``stored`` is false (the
        unfinished module the InferType nested in a pass receives is named, not stored)."""
        if ref is None:
            return None
        if ref not in names:
            names[ref], lines[ref] = _module_lines(_normalized(trace.snapshot(ref), options))
        name = names[ref]
        if stored and name not in described:
            described.add(name)
            modules.append((f"module {name}: {what}, {len(lines[ref]) - 1} nodes", lines[ref]))
        return name

    rows = ["passes: row, depth, name, whether it changed the module, input -> output"]
    for row, r in enumerate(pinned):
        label = f"row {row} {r.name}"
        before = name_of(r.before, roles.get(r.index) != FINISHING, f"input of {label}")
        after = name_of(r.after, True, f"output of {label}")
        if r.error is not None:
            state = "failed"
        elif r.before is None and r.after is None:
            state = "unrecorded"
        elif before is not None and after is not None and roles.get(r.index) != FINISHING:
            state = "changed" if before != after else "unchanged"
        else:
            state = {True: "changed", False: "unchanged", None: "unknown"}[r.changed]
        refs = before if state == "unchanged" else f"{before or '-'} -> {after or '-'}"
        name = r.name if re.fullmatch(r"\S+", r.name) else orjson.dumps(r.name).decode()
        rows.append(f"{row:4d} {r.depth} {('  ' * (r.depth - 1) + name).ljust(_NAME_WIDTH)} "
                    f"{state.ljust(10)} {refs if state != 'unrecorded' else ''}".rstrip())
    for title, body in modules:
        rows += ["", title, *body]
    return rows


def _normalized(doc: Document, options: SnapshotOptions) -> Document:
    """``doc`` with what the options leave out blanked: constant values (shapes and dtypes
    stay), variable names; and always without ``hash`` attributes. Those (LabelOps puts one on
    every fused function, and the built graph repeats it) are TVM's structural hashes of the
    IR they sit on, so they add nothing to it, and for a function that calls a global they
    hash object addresses, which differ from one process to the next."""
    nodes = []
    for node in doc["nodes"]:
        kind = node["node_kind"]
        if "hash" in (node.get("attrs") or {}):
            node = {**node, "attrs": {k: v for k, v in node["attrs"].items() if k != "hash"}}
        if kind == "Const" and options.constants == "shapes":
            value = node.get("value")
            shape = value.get("array_shape", []) if isinstance(value, dict) else []
            node = {**node, "value": {"array_shape": shape, "digest": _SHAPES_ONLY}}
        elif kind == "Var" and not options.names:
            node = {**node, "name": ""}
        nodes.append(node)
    return {**doc, "nodes": nodes}


def _module_lines(doc: Document) -> Tuple[str, List[str]]:
    """A module's name and its lines: its root fields, then one line per node."""
    sort = orjson.OPT_SORT_KEYS
    lines = ["  root " + orjson.dumps({k: v for k, v in doc.items() if k != "nodes"}, option=sort).decode()]
    for i, node in enumerate(doc["nodes"]):
        rest = {k: v for k, v in node.items() if k != "node_kind"}
        lines.append(f"  {i} {node['node_kind']} " + orjson.dumps(rest, option=sort).decode())
    return _digest("\n".join(lines).encode()), lines


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:_REF_DIGITS]


# -- reading ----------------------------------------------------------------------------------


def pinned_part(data: bytes) -> bytes:
    """The bytes a comparison pins: the file without the ``tvm`` and ``python`` lines of its
    header, which say what wrote it."""
    head, sep, body = data.partition(b"\n\n")
    kept = [line for line in head.split(b"\n") if not line.startswith((b"tvm ", b"python "))]
    return b"\n".join(kept) + sep + body


def header_versions(data: bytes) -> Dict[str, str]:
    """The ``tvm`` and ``python`` lines of a snapshot's header (those it has)."""
    head = data.partition(b"\n\n")[0].decode("utf-8", "replace")
    out = {}
    for line in head.split("\n")[1:]:
        key, _, value = line.partition(" ")
        if key in ("tvm", "python"):
            out[key] = value
    return out


def decode_snapshot(data: bytes, source: str = "<snapshot>") -> StoredSnapshot:
    """Read a snapshot file back. Raises :class:`SnapshotFormatError` for a file of another
    layout (or none), :class:`RelayVizFormatError` naming the line for a damaged one; a
    module whose lines do not match its name has been edited by hand and is refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotFormatError("not a relayviz snapshot (not UTF-8 text)", source=source) from None
    lines = text.split("\n")
    first = lines[0]
    if not first.startswith(_MAGIC):
        raise SnapshotFormatError("not a relayviz snapshot (its first line should read "
                                  f"'{_MAGIC}{SNAPSHOT_FORMAT}')", source=source)
    version = first[len(_MAGIC):].strip()
    if not (version.isdigit() and int(version) in _READ_FORMATS):
        raise SnapshotFormatError(f"snapshot written by format {version}; this relayviz_instrument reads "
                                  f"format {', '.join(map(str, _READ_FORMATS))}", source=source,
                                  format=int(version) if version.isdigit() else None)
    reader = _Reader(lines, source)
    try:
        return reader.read()
    except RelayVizFormatError:
        raise
    except (ValueError, IndexError, KeyError, TypeError) as exc:  # a line that is not what its place says
        raise reader.fail(f"cannot be read ({type(exc).__name__}: {exc})") from None


class _Reader:
    def __init__(self, lines: List[str], source: str) -> None:
        self.lines = lines
        self.source = source
        self.at = 1

    def fail(self, message: str) -> RelayVizFormatError:
        return RelayVizFormatError(message, source=f"{self.source}:{self.at + 1}",
                                   hint="the file was edited or cut short; run pytest --snapshot-update")

    def block(self) -> Iterator[str]:
        """The lines up to the next blank line (or the end), moving past it."""
        while self.at < len(self.lines) and self.lines[self.at] != "":
            yield self.lines[self.at]
            self.at += 1
        self.at += 1

    def read(self) -> StoredSnapshot:
        header: Dict[str, Any] = {}
        for line in self.block():
            key, _, value = line.partition(" ")
            header[key] = orjson.loads(value) if key == "options" else value
        stored = StoredSnapshot(header)
        if stored.kind == "trace":
            rows = list(self.block())
            stored.records = [self.record(line, i) for i, line in enumerate(rows[1:])]
            _link_parents(stored.records)
        while self.at < len(self.lines):
            title = self.lines[self.at]
            if title == "":
                self.at += 1
                continue
            match = re.match(r"module ([0-9a-f]+):", title)
            if match is None:
                raise self.fail("expected a 'module NAME:' line")
            start = self.at
            body = list(self.block())[1:]
            ref = match.group(1)
            if _digest("\n".join(body).encode()) != ref:
                self.at = start
                raise self.fail(f"module {ref} does not match its name (its lines were changed)")
            stored.modules[ref] = self.module(body, ref, start)
            if stored.kind != "trace" and stored.root is None:
                stored.root = ref
        return stored

    def record(self, line: str, row: int) -> PassRecord:
        match = re.match(r"\s*(\d+) (\d+) +(.*)$", line)
        if match is None or int(match.group(1)) != row:
            raise self.fail(f"expected pass row {row}")
        rest = match.group(3)
        if rest.startswith('"'):  # a name with spaces, written as a JSON string
            name, end = json.JSONDecoder().raw_decode(rest)
        else:
            name = rest.split()[0]
            end = len(name)
        fields = rest[end:].split()
        state = fields[0] if fields else ""
        if state not in _STATES:
            raise self.fail(f"pass row {row}: {state!r} is not one of {', '.join(_STATES)}")
        refs = [None if f == "-" else f for f in fields[1:] if f != "->"]
        before, after = (refs[0], refs[0]) if state == "unchanged" else (refs + [None, None])[:2]
        changed = {"changed": True, "unchanged": False}.get(state)
        return PassRecord(index=row, name=name, depth=int(match.group(2)), before=before, after=after,
                          changed=changed, error="failed" if state == "failed" else None)

    def module(self, body: List[str], ref: str, start: int) -> Document:
        if not body or not body[0].startswith("  root "):
            self.at = start
            raise self.fail(f"module {ref} has no root line")
        doc = orjson.loads(body[0][len("  root "):])
        nodes = []
        for i, line in enumerate(body[1:]):
            number, kind, fields = line.strip().split(" ", 2)
            if int(number) != i:
                raise self.fail(f"module {ref}: node {number} where node {i} was expected")
            nodes.append({"node_kind": kind, **orjson.loads(fields)})
        doc["nodes"] = nodes
        return checked(doc, f"{self.source}: module {ref}")


def _link_parents(records: List[PassRecord]) -> None:
    """Each record's parent: the nearest earlier record one level shallower."""
    open_: List[PassRecord] = []
    for r in records:
        while open_ and open_[-1].depth >= r.depth:
            open_.pop()
        r.parent = open_[-1].index if open_ else None
        open_.append(r)
