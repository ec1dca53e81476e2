"""The loop nest of a PrimFunc, read from a snapshot: what a schedule made of a kernel. Pure.

A PrimFunc written with its statements (``RelayVizTrace(tir=True)``, ``docs/format.md``) is
read into a small tree of what a GPU or CPU compiler engineer looks at, and nothing else:

- :class:`Loop`: a loop with its variable, range and kind (``serial``, ``parallel``,
  ``vectorized``, ``unrolled``, ``thread_binding`` with its thread: ``blockIdx.x``,
  ``threadIdx.y``, ``vthread.x``); a thread launch (``AttrStmt thread_extent`` /
  ``virtual_thread``, what lowering makes of a bound loop) is a loop of that thread without a
  variable of its own;
- :class:`Block`: a block with its iteration variables (and the values they are bound to),
  the regions it reads and writes; its buffers are :class:`Alloc` items at its top;
- :class:`Alloc`: an allocation with its buffer, dtype, shape and scope (``global``,
  ``shared``, ``shared.dyn``, ``local``, ...);
- :class:`Sync`: ``tvm_storage_sync``; :class:`Intrinsic`: a cross-thread reduction
  (``tvm_thread_allreduce``) or the launch of a device kernel of the module from its host
  function;
- :class:`Store`: a store outside any block (blocks say what they write); :class:`Branch`: a
  conditional.

Let bindings, declarations of buffers, other attributes, the root block and the nameless
blocks lowering wraps around allocations are read through: they hold their body, not a step
of the schedule; a conditional with nothing of the schedule under it is left out.
Consecutive equal items are one item with a ``repeat`` count (an unrolled loop's copies of
its body, a run of stores into one buffer), so a nest stays as long as its schedule, not as
its code. Two readings are equal exactly when the schedule did not
change: the kernel reports and ``relayviz kernel`` compare them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import RelayVizFormatError
from ..format import Document
from .pass_diffs import PassDiffs

__all__ = ["KernelNests", "Dim", "IterVar", "Loop", "Block", "Alloc", "Sync", "Store", "Branch", "Intrinsic",
           "NestItem", "LoopNest", "read_loop_nest", "loop_nests", "kernel_names", "launched_kernels", "walk_items",
           "children", "THREAD_BINDING", "ALLREDUCE", "LAUNCH", "MAX_DEPTH"]

#: A loop's extent or bound, a buffer's dimension: an integer, or the text of an expression.
Dim = Union[int, str]

#: The kind of a loop bound to a thread (``For.kind``), and of a thread launch.
THREAD_BINDING = "thread_binding"
#: What an :class:`Intrinsic` is.
ALLREDUCE, LAUNCH = "allreduce", "launch"

#: How deep loops, blocks and conditionals may nest in a kernel that is read (a real one: tens).
MAX_DEPTH = 200

#: ``Evaluate`` calls that launch a kernel by name (their first argument).
_LAUNCH_CALLS = ("call_ffi_kernel", "tvm_call_packed", "tvm_call_cpacked", "call_packed")
#: ``AttrStmt`` keys that bind a thread: what lowering makes of a thread-bound loop.
_LAUNCH_ATTRS = ("thread_extent", "virtual_thread")
#: Statements read through: they hold their body (``LetStmt`` and ``AssertStmt`` when scoped).
_THROUGH = ("LetStmt", "AssertStmt", "AttrStmt")


def _dim(value: Any) -> Dim:
    if isinstance(value, bool):
        return str(value)
    return value if isinstance(value, (int, str)) else str(value)


@dataclass(frozen=True)
class IterVar:
    """A block's iteration variable: its name, kind (``spatial``, ``reduce``, ...), extent, and
    the value the block is bound to (``ax1_0 * 32 + ax1_2 * 4 + ax1_3``)."""

    name: str
    kind: str
    extent: Dim
    binding: Dim = ""

    def to_json(self) -> Dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "extent": self.extent, "binding": self.binding}


@dataclass(frozen=True)
class Loop:
    """A loop (``var`` set) or a thread launch (``var`` empty, ``thread`` set).

    ``kind`` is the loop's (``serial``, ``parallel``, ``vectorized``, ``unrolled``,
    ``thread_binding``, or ``while``, whose ``extent`` is its condition); ``thread`` the thread
    a bound loop or a launch runs on."""

    var: str
    extent: Dim
    kind: str = "serial"
    thread: str = ""
    min: Dim = 0
    body: Tuple["NestItem", ...] = ()
    repeat: int = 1

    @property
    def bound(self) -> bool:
        """Whether the loop runs on a thread (block, thread or virtual thread)."""
        return bool(self.thread)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"item": "loop", "var": self.var, "min": self.min, "extent": self.extent,
                               "kind": self.kind}
        if self.thread:
            out["thread"] = self.thread
        return _finish(out, self.repeat, body=self.body)


@dataclass(frozen=True)
class Block:
    """A block: name, iteration variables, regions read and written (as text), the predicate
    of its realization, and its init and body."""

    name: str
    iter_vars: Tuple[IterVar, ...] = ()
    reads: Tuple[str, ...] = ()
    writes: Tuple[str, ...] = ()
    predicate: str = ""
    init: Tuple["NestItem", ...] = ()
    body: Tuple["NestItem", ...] = ()
    repeat: int = 1

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"item": "block", "name": self.name,
                               "iter_vars": [iv.to_json() for iv in self.iter_vars],
                               "reads": list(self.reads), "writes": list(self.writes)}
        if self.predicate:
            out["predicate"] = self.predicate
        if self.init:
            out["init"] = [item.to_json() for item in self.init]
        return _finish(out, self.repeat, body=self.body)


@dataclass(frozen=True)
class Alloc:
    """An allocation: buffer, element type, shape and memory scope."""

    buffer: str
    dtype: str
    shape: Tuple[Dim, ...]
    scope: str = "global"
    repeat: int = 1

    def bits(self) -> Optional[int]:
        """The allocation's size in bits, when its shape and dtype are known (``float32x2``:
        64 bits an element)."""
        lanes = 1
        dtype = self.dtype
        if "x" in dtype:
            dtype, _, count = dtype.partition("x")
            if not count.isdigit():
                return None
            lanes = int(count)
        width = "".join(c for c in dtype if c.isdigit())
        if not width or not all(isinstance(d, int) for d in self.shape):
            return None
        elements = 1
        for d in self.shape:
            elements *= int(d)
        return elements * lanes * int(width)

    def to_json(self) -> Dict[str, Any]:
        return _finish({"item": "alloc", "buffer": self.buffer, "dtype": self.dtype, "shape": list(self.shape),
                        "scope": self.scope}, self.repeat)


@dataclass(frozen=True)
class Sync:
    """A barrier: ``tvm_storage_sync`` of a scope (``shared``, ``global``, ``warp``)."""

    scope: str
    repeat: int = 1

    def to_json(self) -> Dict[str, Any]:
        return _finish({"item": "sync", "scope": self.scope}, self.repeat)


@dataclass(frozen=True)
class Store:
    """A store into ``buffer`` outside any block."""

    buffer: str
    repeat: int = 1

    def to_json(self) -> Dict[str, Any]:
        return _finish({"item": "store", "buffer": self.buffer}, self.repeat)


@dataclass(frozen=True)
class Branch:
    """A conditional: its condition, then and else items."""

    condition: str
    then: Tuple["NestItem", ...] = ()
    orelse: Tuple["NestItem", ...] = ()
    repeat: int = 1

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"item": "if", "condition": self.condition}
        if self.orelse:
            out["else"] = [item.to_json() for item in self.orelse]
        return _finish(out, self.repeat, body=self.then)


@dataclass(frozen=True)
class Intrinsic:
    """A call made for its effect that a schedule reader wants: :data:`ALLREDUCE` (a reduction
    across threads) or :data:`LAUNCH` of the device kernel ``target``."""

    op: str
    target: str = ""
    repeat: int = 1

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"item": self.op}
        if self.target:
            out["target"] = self.target
        return _finish(out, self.repeat)


NestItem = Union[Loop, Block, Alloc, Sync, Store, Branch, Intrinsic]


def _finish(out: Dict[str, Any], repeat: int, body: Sequence[NestItem] = ()) -> Dict[str, Any]:
    if body:
        out["body"] = [item.to_json() for item in body]
    if repeat != 1:
        out["repeat"] = repeat
    return out


@dataclass(frozen=True)
class LoopNest:
    """The loop nest of the PrimFunc ``name``: its items, outermost first."""

    name: str
    items: Tuple[NestItem, ...]

    def walk(self) -> Iterator[NestItem]:
        """Every item, depth first, in order (see :func:`walk_items`)."""
        return walk_items(self.items)

    def launch(self) -> Dict[str, Dim]:
        """Each thread the nest binds (``blockIdx.x``, ``threadIdx.y``, ``vthread.x``) and its
        extent, outermost first (a thread bound twice, as a cooperative copy inside the main
        loops rebinds ``threadIdx.x``, keeps its first extent)."""
        out: Dict[str, Dim] = {}
        for item in self.walk():
            if isinstance(item, Loop) and item.thread and item.thread not in out:
                out[item.thread] = item.extent
        return out

    def allocations(self) -> List[Alloc]:
        """Every allocation, in order."""
        return [item for item in self.walk() if isinstance(item, Alloc)]

    def to_json(self) -> Dict[str, Any]:
        return {"kernel": self.name, "items": [item.to_json() for item in self.items]}


def walk_items(items: Sequence[NestItem]) -> Iterator[NestItem]:
    """``items`` and everything nested in them, depth first, each before its children."""
    stack: List[NestItem] = list(reversed(items))
    while stack:
        item = stack.pop()
        yield item
        stack.extend(reversed(children(item)))


def children(item: NestItem) -> Tuple[NestItem, ...]:
    """The items nested in ``item`` (a block's init before its body; a branch's else after
    its then)."""
    if isinstance(item, Loop):
        return item.body
    if isinstance(item, Block):
        return item.init + item.body
    if isinstance(item, Branch):
        return item.then + item.orelse
    return ()


def kernel_names(doc: Document) -> List[str]:
    """The names of the PrimFuncs of ``doc`` that carry their statements, sorted."""
    nodes = doc["nodes"]
    out = []
    for name, i in (doc.get("functions") or {}).items():
        if 0 <= i < len(nodes) and nodes[i].get("node_kind") == "PrimFunc" and isinstance(nodes[i].get("body"), int):
            out.append(name)
    return sorted(out)


def read_loop_nest(doc: Document, name: str) -> Optional[LoopNest]:
    """The loop nest of the PrimFunc ``name`` of ``doc``, or None when ``doc`` has no such
    PrimFunc with its statements (a trace without ``tir=True``, a Relax function).

    Raises :class:`~relayviz_instrument.errors.RelayVizFormatError` for statements nested more
    than :data:`MAX_DEPTH` deep (a document made to exhaust the reader)."""
    nodes = doc["nodes"]
    index = (doc.get("functions") or {}).get(name)
    if not isinstance(index, int) or not 0 <= index < len(nodes):
        return None
    func = nodes[index]
    body = func.get("body")
    if func.get("node_kind") != "PrimFunc" or not isinstance(body, int):
        return None
    params = {str(p.get("buffer", p.get("name"))) for p in func.get("signature") or () if isinstance(p, dict)}
    reader = _Reader(nodes, set(doc.get("functions") or {}), params)
    try:
        return LoopNest(name, reader.statements(body, in_block=False))
    except _TooDeep:
        raise RelayVizFormatError(f"PrimFunc {name!r}: statements nested more than {MAX_DEPTH} loops, blocks or "
                                  "conditionals deep; no compiler writes such a kernel") from None


def loop_nests(doc: Document) -> Dict[str, LoopNest]:
    """The loop nest of every PrimFunc of ``doc`` that carries its statements, by name (one
    nested beyond :data:`MAX_DEPTH` is left out: the reports go on without it)."""
    out = {}
    for name in kernel_names(doc):
        try:
            nest = read_loop_nest(doc, name)
        except RelayVizFormatError:
            continue
        if nest is not None:
            out[name] = nest
    return out


def launched_kernels(nest: LoopNest) -> List[str]:
    """The kernels of the module a host function's nest launches, in order."""
    return [item.target for item in nest.walk() if isinstance(item, Intrinsic) and item.op == LAUNCH]


class _TooDeep(Exception):
    pass


class _Reader:
    """Reads statements of one document into nest items (each statement once per place)."""

    def __init__(self, nodes: Sequence[Mapping[str, Any]], functions: "set[str]", params: "set[str]") -> None:
        self.nodes = nodes
        self.functions = functions
        self.params = params
        self.depth = 0

    def node(self, ref: Any) -> Mapping[str, Any]:
        if isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(self.nodes):
            return self.nodes[ref]
        return {}

    def statements(self, ref: Any, *, in_block: bool) -> Tuple[NestItem, ...]:
        """The items of the statement ``ref`` and of what it holds, compacted."""
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:  # a document from anyone: no kernel nests this deep
                raise _TooDeep
            return self._statements(ref, in_block=in_block)
        finally:
            self.depth -= 1

    def _statements(self, ref: Any, *, in_block: bool) -> Tuple[NestItem, ...]:
        out: List[NestItem] = []
        # A worklist rather than recursion through sequences and the statements read through:
        # lowered code chains thousands of them (a let per common subexpression).
        pending: List[Any] = [ref]
        while pending:
            node = self.node(pending.pop())
            kind = node.get("node_kind")
            if kind == "SeqStmt":
                pending.extend(reversed(node.get("seq") or ()))
            elif kind == "AttrStmt" and node.get("attr_key") in _LAUNCH_ATTRS:
                out.append(Loop("", _dim(node.get("value")), THREAD_BINDING, str(node.get("node", "")),
                                body=self.statements(node.get("body"), in_block=in_block)))
            elif kind in _THROUGH:
                if "body" in node:
                    pending.append(node["body"])
            elif kind == "Allocate":
                alloc = self.alloc(node)
                if alloc is not None:
                    out.append(alloc)
                if "body" in node:
                    pending.append(node["body"])
            else:
                out.extend(self.item(node, kind, in_block))
        return _compact(out)

    def item(self, node: Mapping[str, Any], kind: Any, in_block: bool) -> List[NestItem]:
        if kind == "For":
            return [Loop(str(node.get("loop_var", "")), _dim(node.get("extent")), str(node.get("kind", "serial")),
                         str(node.get("thread", "")), _dim(node.get("min", 0)),
                         self.statements(node.get("body"), in_block=in_block))]
        if kind == "While":
            return [Loop("", _dim(node.get("condition")), "while",
                         body=self.statements(node.get("body"), in_block=in_block))]
        if kind == "BlockRealize":
            return self.block(self.node(node.get("block")), node)
        if kind == "Block":
            return self.block(node, {})
        if kind == "IfThenElse":
            then = self.statements(node.get("then_case"), in_block=in_block)
            orelse = self.statements(node.get("else_case"), in_block=in_block) if "else_case" in node else ()
            # A check with nothing of the schedule under it (the argument checks of a host
            # function) is left out.
            return [Branch(str(node.get("condition")), then, orelse)] if then or orelse else []
        if kind == "BufferStore":
            return [] if in_block else [Store(str(node.get("buffer")))]
        if kind == "Evaluate":
            return self.call(self.node(node.get("value")))
        return []

    def alloc(self, node: Mapping[str, Any]) -> Optional[Alloc]:
        if node.get("declared"):  # a name for a buffer allocated elsewhere
            return None
        name = str(node.get("name"))
        if node.get("realize") and name in self.params:  # an output made real before flattening
            return None
        return Alloc(name, str(node.get("dtype")), tuple(_dim(d) for d in node.get("shape") or ()),
                     str(node.get("scope") or "global"))

    def block(self, block: Mapping[str, Any], realize: Mapping[str, Any]) -> List[NestItem]:
        allocs: List[NestItem] = []
        for b in block.get("alloc_buffers") or ():
            if isinstance(b, dict):
                allocs.append(Alloc(str(b.get("name")), str(b.get("dtype")),
                                    tuple(_dim(d) for d in b.get("shape") or ()), str(b.get("scope") or "global")))
        raw = block.get("iter_vars") or ()
        if not raw and block.get("name") in ("root", "") and "init" not in block:
            # The function's root block, or a nameless one a lowering pass wraps around
            # allocations: their buffers and body, nothing a schedule would name.
            return allocs + list(self.statements(block.get("body"), in_block=False))
        values = realize.get("iter_values") or ()
        iter_vars = tuple(IterVar(str(iv.get("name")), str(iv.get("kind", "spatial")), _dim(iv.get("extent")),
                                  _dim(values[i]) if i < len(values) else "")
                          for i, iv in enumerate(raw) if isinstance(iv, dict))
        predicate = realize.get("predicate")
        init = self.statements(block.get("init"), in_block=True) if "init" in block else ()
        body = tuple(allocs) + self.statements(block.get("body"), in_block=True)
        return [Block(str(block.get("name")), iter_vars, tuple(map(str, block.get("reads") or ())),
                      tuple(map(str, block.get("writes") or ())), "" if predicate is None else str(predicate),
                      init, body)]

    def call(self, call: Mapping[str, Any]) -> List[NestItem]:
        if call.get("node_kind") != "Call":
            return []
        op = str(self.node(call.get("op")).get("name", ""))
        short = op.rsplit(".", 1)[-1]
        args = call.get("args") or ()
        first = self.node(args[0]) if args else {}
        if short == "tvm_storage_sync":
            return [Sync(str(first.get("value", "")))]
        if short == "tvm_thread_allreduce":
            return [Intrinsic(ALLREDUCE)]
        if short in _LAUNCH_CALLS and first.get("node_kind") == "StringImm" and first.get("value") in self.functions:
            return [Intrinsic(LAUNCH, str(first["value"]))]
        return []


def _compact(items: List[NestItem]) -> Tuple[NestItem, ...]:
    """Consecutive equal items as one, with the sum of their ``repeat``."""
    out: List[NestItem] = []
    for item in items:
        if out and replace(out[-1], repeat=item.repeat) == item:
            out[-1] = replace(out[-1], repeat=out[-1].repeat + item.repeat)
        else:
            out.append(item)
    return tuple(out)


class KernelNests:
    """The loop nests of every snapshot of a trace, read once each (kept by reference)."""

    def __init__(self, cache: PassDiffs) -> None:
        self.cache = cache
        self._nests: Dict[str, Dict[str, LoopNest]] = {}

    def __call__(self, ref: str) -> Dict[str, LoopNest]:
        found = self._nests.get(ref)
        if found is None:
            found = self._nests[ref] = loop_nests(self.cache.document(ref))
        return found
