"""TIR to RelayViz documents: a PrimFunc as a node, and below it the statements of its body.

With ``tir_bodies`` (``RelayVizTrace(tir=True)``) a PrimFunc node refers to its body, a
statement-level graph: loops (``For``: variable, extent, kind), blocks (``Block``: name,
iteration variables, regions read and written, buffers allocated), buffer stores and loads,
allocations, conditionals, and the value computed by each store as a small expression graph
(``Call`` of ``tir.*`` operators, ``BufferLoad``, ``Var``, ``Const``), so a diff shows a
split, reordered or vectorized loop and an inlined block. Indices, extents, conditions and
regions are kept as short text (``i_0 * 8 + i_1``): addressing changes with every
scheduling step, and text keeps the graph small. Without ``tir_bodies`` a PrimFunc is one
node: name, signature and attributes.

The serializer reads both generations of TIR: ``tvm.tir`` (TVM <= 0.19: ``Block``,
``LetStmt``, ``Allocate``, buffers in ``buffer_map``) and ``tvm.tirx``/``tvm.s_tir`` (TVM 0.2x:
``SBlock``, ``Bind``, ``AllocBuffer``, buffer-typed parameters), by class name. Like every
serializer it remembers, for two snapshots, what it read from each object: most TIR passes
rewrite one statement and share the rest.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ..format import SMALL_TENSOR_ELEMENTS, Document
from . import nodes
from .attributes import attrs_to_json
from .cache import GenerationalCache
from .nodes import leaf
from .reflection import field, items, object_key, optional_field, type_key
from .tensors import scalar_json
from .tir_text import dim_value, leaf_text, prim_dtype
from .walk import DocumentWriter, Expansion, Walk

__all__ = ["TirSerializer", "buffer_json", "primfunc_signature"]

#: ``For.kind`` values (the same numbering in every TVM).
_FOR_KINDS = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled", 4: "thread_binding"}
#: ``IterVar.iter_type`` values.
_ITER_TYPES = {0: "spatial", 1: "thread", 2: "reduce", 3: "ordered", 4: "opaque", 5: "unrolled",
               6: "vectorized", 7: "parallelized", 8: "tensorized"}
#: TIR arithmetic classes and the operator names their calls get in a document.
_ARITH = {
    "Add": "tir.add", "Sub": "tir.sub", "Mul": "tir.mul", "Div": "tir.div", "Mod": "tir.mod",
    "FloorDiv": "tir.floordiv", "FloorMod": "tir.floormod", "Min": "tir.min", "Max": "tir.max",
    "EQ": "tir.eq", "NE": "tir.ne", "LT": "tir.lt", "LE": "tir.le", "GT": "tir.gt", "GE": "tir.ge",
    "And": "tir.and", "Or": "tir.or", "Not": "tir.not", "Select": "tir.select", "Cast": "tir.cast",
    "Ramp": "tir.ramp", "Broadcast": "tir.broadcast", "BitwiseAnd": "tir.bitwise_and",
    "BitwiseOr": "tir.bitwise_or", "BitwiseXor": "tir.bitwise_xor", "BitwiseNot": "tir.bitwise_not",
    "LShift": "tir.shift_left", "RShift": "tir.shift_right",
}
#: The operands of each arithmetic class, in order.
_OPERANDS = {"Not": ("a",), "BitwiseNot": ("a",), "Select": ("condition", "true_value", "false_value"),
             "Cast": ("value",), "Ramp": ("base", "stride"), "Broadcast": ("value",)}


def buffer_json(buffer: Any) -> Dict[str, Any]:
    """A buffer as ``{"name", "dtype", "shape", "scope"}`` (scope only when not ``global``)."""
    out: Dict[str, Any] = {"name": str(field(buffer, "name")), "dtype": str(field(buffer, "dtype")),
                           "shape": [dim_value(d) for d in items(field(buffer, "shape"))]}
    scope = buffer.scope() if callable(getattr(buffer, "scope", None)) else getattr(buffer, "scope", "")
    if scope and str(scope) != "global":
        out["scope"] = str(scope)
    return out


def primfunc_signature(func: Any, describe: Callable[[Any], Dict[str, Any]] = buffer_json) -> List[Dict[str, Any]]:
    """A PrimFunc's parameters: ``{"name", "dtype"}``, with the buffer's ``shape`` (and
    ``buffer`` name and ``scope`` where they say more) for a buffer parameter.
    ``describe``: what gives a buffer's :func:`buffer_json` (a serializer's cache of it)."""
    buffer_map = optional_field(func, "buffer_map")
    out = []
    for param in items(func.params):
        entry: Dict[str, Any] = {"name": str(field(param, "name")), "dtype": prim_dtype(param)}
        buffer = buffer_map.get(param) if buffer_map is not None else None
        if buffer is None and type(optional_field(param, "ty")).__name__ == "BufferType":
            buffer = param  # TVM 0.2x: the parameter is the buffer
        if buffer is not None:
            described = describe(buffer)
            entry["dtype"], entry["shape"] = described["dtype"], described["shape"]
            if described["name"] != entry["name"]:
                entry["buffer"] = described["name"]
            if "scope" in described:
                entry["scope"] = described["scope"]
        out.append(entry)
    return out


class TirSerializer:
    """Writes TIR modules and PrimFuncs as RelayViz documents (see the module docstring).

    ``tir_bodies``: write each PrimFunc's body as statements (else one node per PrimFunc).
    ``full_values`` and ``small_elements`` are accepted for the serializer protocol; TIR
    constants are scalars and always carry their value.
    """

    def __init__(self, *, full_values: bool = False, small_elements: int = SMALL_TENSOR_ELEMENTS,
                 tir_bodies: bool = True) -> None:
        self.tir_bodies = tir_bodies
        self._writer = DocumentWriter("tir", replay=True)
        self._expansions: GenerationalCache[Expansion] = self._writer.cache(by_node=True)
        self._texts: GenerationalCache[str] = self._writer.cache()
        #: The text of sub-expressions, for :func:`~relayviz_instrument.serialize.tir_text.prim_text`.
        self._subtexts: GenerationalCache[str] = self._writer.cache()
        #: Attributes and annotations by object (a PrimFunc's print its target, a long text).
        self._attrs: GenerationalCache[Dict[str, Any]] = self._writer.cache()
        #: What :func:`buffer_json` says of each buffer, and the text of each region: one buffer
        #: is declared, allocated and read by many statements, and outlives most passes.
        self._buffers: GenerationalCache[Dict[str, Any]] = self._writer.cache()
        self._regions: GenerationalCache[str] = self._writer.cache()
        #: A block's iteration variables, by object: a pass that rewrites a block's body keeps them.
        self._iter_vars: GenerationalCache[Dict[str, Any]] = self._writer.cache()
        self._handlers: Dict[str, Callable[[Any], Expansion]] = {
            "PrimFunc": self._primfunc,
            "For": self._for, "While": self._while,
            "Block": self._block, "SBlock": self._block,
            "BlockRealize": self._block_realize, "SBlockRealize": self._block_realize,
            "BufferStore": self._buffer_store,
            "BufferLoad": self._buffer_load, "TensorLoad": self._buffer_load,
            "SeqStmt": self._seq, "IfThenElse": self._if_then_else,
            "LetStmt": self._let, "Bind": self._let,
            "AttrStmt": self._attr_stmt, "AssertStmt": self._assert,
            "Allocate": self._allocate, "AllocBuffer": self._allocate, "AllocateConst": self._allocate,
            "DeclBuffer": self._allocate, "BufferRealize": self._realize,
            "Evaluate": self._evaluate,
            "Call": self._call, "IntImm": self._constant, "FloatImm": self._constant,
            "Var": self._var, "SizeVar": self._var, "StringImm": self._string,
        }

    # -- the serializer protocol ---------------------------------------------------------

    def module(self, mod: Any) -> Document:
        """Serialize every PrimFunc of ``mod``, sorted by name."""
        return self._writer.module(mod, self.expansion)

    def expr(self, obj: Any) -> Document:
        """Serialize one PrimFunc, statement or TIR expression; the root's ``root`` names its node."""
        return self._writer.expr(obj, self.expansion)

    def rotate(self) -> None:
        """Start a new snapshot (a serializer that embeds this one rotates it with its own)."""
        self._writer.rotate()

    def keep(self, keys: List[Any]) -> None:
        """Keep what was read of the objects ``keys`` (a walk that embeds this one replayed them)."""
        self._writer.keep(keys)

    def expansion(self, obj: Any, key: int) -> Expansion:
        """What to write for one TIR object (cached by identity for two snapshots)."""
        return self._expansions.get(obj, self._expand, key)

    # -- helpers ---------------------------------------------------------------------------

    def _expand(self, obj: Any) -> Expansion:
        handler = self._handlers.get(type(obj).__name__)
        if handler is None:
            if type(obj).__name__ in _ARITH:
                return self._arith(obj)
            return nodes.opaque(type_key(obj))
        return handler(obj)

    def attrs_of(self, attrs: Any) -> Dict[str, Any]:
        """Attributes or annotations as JSON (cached by identity for two snapshots)."""
        return self._attrs.get(attrs, attrs_to_json)

    def text(self, expr: Any) -> Any:
        """An index, extent or condition as a JSON value: an int, or short text."""
        if isinstance(expr, int):
            return expr
        found = leaf_text(expr)  # a constant or a variable: one read, cheaper than a cache entry
        return found if found is not None else self._texts.get(expr, self._text_of)

    def _text_of(self, expr: Any) -> Any:
        return dim_value(expr, self._subtexts)

    def buffer(self, buffer: Any) -> Dict[str, Any]:
        """:func:`buffer_json` of ``buffer`` (cached by identity for two snapshots; shared, never
        to be changed in place)."""
        return self._buffers.get(buffer, buffer_json)

    def _region(self, region: Any) -> str:
        return self._regions.get(region, self._region_text)

    def _region_text(self, region: Any) -> str:
        source = optional_field(region, "buffer") or optional_field(region, "source")
        ranges = []
        for r in items(field(region, "region")):
            lo, extent = self.text(field(r, "min")), field(r, "extent")
            ranges.append(str(lo) if extent is not None and _is_one(extent)
                          else f"{lo}:{_plus(lo, self.text(extent))}")
        return f"{getattr(source, 'name', '?')}[{', '.join(ranges)}]"

    # -- PrimFunc --------------------------------------------------------------------------

    def _primfunc(self, func: Any) -> Expansion:
        func_attrs = func.attrs
        attrs = self.attrs_of(func_attrs) if func_attrs is not None and len(func_attrs.keys()) else {}
        symbol = attrs.get("global_symbol")
        node: Dict[str, Any] = {"node_kind": "PrimFunc", "signature": primfunc_signature(func, self.buffer)}
        if attrs:
            node["attrs"] = attrs
        fkey = object_key(func)

        def build(walk: Walk, ids: List[int]) -> Dict[str, Any]:
            name = walk.names.get(fkey, symbol if isinstance(symbol, str) else "")
            out = {"node_kind": "PrimFunc", "name": name, **node}
            if ids:
                out["body"] = ids[0]
            return out
        return Expansion([func.body] if self.tir_bodies else [], build)

    # -- statements ------------------------------------------------------------------------

    def _for(self, loop: Any) -> Expansion:
        kind = field(loop, "kind")
        node: Dict[str, Any] = {"node_kind": "For", "loop_var": str(field(field(loop, "loop_var"), "name")),
                                "min": self.text(field(loop, "min")), "extent": self.text(field(loop, "extent")),
                                "kind": _FOR_KINDS.get(int(kind), str(kind))}
        binding = optional_field(loop, "thread_binding")
        if binding is not None:
            node["thread"] = str(binding.thread_tag)
        step = optional_field(loop, "step")
        if step is not None:
            node["step"] = self.text(step)
        annotations = optional_field(loop, "annotations")
        if annotations is not None and len(annotations):
            node["annotations"] = self.attrs_of(annotations)
        return _with_body(node, field(loop, "body"))

    def _while(self, loop: Any) -> Expansion:
        return _with_body({"node_kind": "While", "condition": self.text(loop.condition)}, loop.body)

    def _block(self, block: Any) -> Expansion:
        node: Dict[str, Any] = {
            "node_kind": "Block", "name": str(block.name_hint),
            "iter_vars": [self._iter_vars.get(iv, self._iter_var) for iv in items(block.iter_vars)],
            "reads": [self._region(r) for r in items(block.reads)],
            "writes": [self._region(r) for r in items(block.writes)],
        }
        if len(block.alloc_buffers):
            node["alloc_buffers"] = [self.buffer(b) for b in items(block.alloc_buffers)]
        if len(block.match_buffers):
            node["match_buffers"] = [{"buffer": str(m.buffer.name), "source": self._region(m.source)}
                                     for m in items(block.match_buffers)]
        if block.annotations is not None and len(block.annotations):
            node["annotations"] = self.attrs_of(block.annotations)
        init = block.init
        children = [block.body] + ([init] if init is not None else [])

        def build(walk: Walk, ids: List[int]) -> Dict[str, Any]:
            out = {**node, "body": ids[0]}
            if len(ids) > 1:
                out["init"] = ids[1]
            return out
        return Expansion(children, build)

    def _iter_var(self, iv: Any) -> Dict[str, Any]:
        return {"name": str(iv.var.name), "kind": _ITER_TYPES.get(int(iv.iter_type), str(iv.iter_type)),
                "min": self.text(iv.dom.min), "extent": self.text(iv.dom.extent)}

    def _block_realize(self, realize: Any) -> Expansion:
        node: Dict[str, Any] = {"node_kind": "BlockRealize",
                                "iter_values": [self.text(v) for v in items(realize.iter_values)]}
        predicate = self.text(realize.predicate)
        if predicate not in (True, 1, "True"):
            node["predicate"] = predicate
        return Expansion([realize.block], _block_of, None, node)

    def _buffer_store(self, store: Any) -> Expansion:
        node = {"node_kind": "BufferStore", "buffer": str(field(field(store, "buffer"), "name")),
                "indices": [self.text(i) for i in items(field(store, "indices"))]}
        return Expansion([field(store, "value")], _value, None, node)

    def _seq(self, seq: Any) -> Expansion:
        return Expansion(items(field(seq, "seq")), _seq_of)

    def _if_then_else(self, stmt: Any) -> Expansion:
        node = {"node_kind": "IfThenElse", "condition": self.text(stmt.condition)}
        children = [stmt.then_case] + ([stmt.else_case] if stmt.else_case is not None else [])

        def build(walk: Walk, ids: List[int]) -> Dict[str, Any]:
            out = {**node, "then_case": ids[0]}
            if len(ids) > 1:
                out["else_case"] = ids[1]
            return out
        return Expansion(children, build)

    def _let(self, stmt: Any) -> Expansion:
        return _with_body({"node_kind": "LetStmt", "var": str(field(field(stmt, "var"), "name")),
                           "value": self.text(field(stmt, "value"))}, optional_field(stmt, "body"))

    def _attr_stmt(self, stmt: Any) -> Expansion:
        node = {"node_kind": "AttrStmt", "attr_key": str(field(stmt, "attr_key")),
                "value": self.text(field(stmt, "value"))}
        target = field(stmt, "node")
        name = optional_field(target, "name") or optional_field(optional_field(target, "var"), "name")
        if name is not None:
            node["node"] = str(name)
        return _with_body(node, field(stmt, "body"))

    def _assert(self, stmt: Any) -> Expansion:
        return _with_body({"node_kind": "AssertStmt", "condition": self.text(field(stmt, "condition"))},
                          optional_field(stmt, "body"))

    def _allocate(self, stmt: Any) -> Expansion:
        buffer = optional_field(stmt, "buffer")
        if buffer is not None:
            node: Dict[str, Any] = {"node_kind": "Allocate", **self.buffer(buffer)}
        else:  # TVM <= 0.19's Allocate: a data variable, its dtype and extents
            node = {"node_kind": "Allocate", "name": str(stmt.buffer_var.name), "dtype": str(stmt.dtype),
                    "shape": [dim_value(e) for e in items(stmt.extents)]}
            scope = getattr(optional_field(stmt.buffer_var, "type_annotation"), "storage_scope", "")
            if scope and scope != "global":
                node["scope"] = str(scope)
        if type(stmt).__name__ == "DeclBuffer":
            node["declared"] = True
        return _with_body(node, optional_field(stmt, "body"))

    def _realize(self, stmt: Any) -> Expansion:
        # TVM <= 0.19, before storage flattening: a buffer region made real around a body.
        node = {"node_kind": "Allocate", **self.buffer(stmt.buffer),
                "shape": [self.text(r.extent) for r in items(stmt.bounds)], "realize": True}
        return _with_body(node, stmt.body)

    def _evaluate(self, stmt: Any) -> Expansion:
        return Expansion([stmt.value], _value, None, {"node_kind": "Evaluate"})

    # -- expressions -----------------------------------------------------------------------

    def _buffer_load(self, load: Any) -> Expansion:
        buffer = optional_field(load, "buffer") or optional_field(load, "source")
        return leaf({"node_kind": "BufferLoad", "buffer": str(getattr(buffer, "name", "?")),
                     "indices": [self.text(i) for i in items(field(load, "indices"))], "type": _scalar_type(load)})

    def _call(self, call: Any) -> Expansion:
        op = field(call, "op")
        name = str(op.name) if hasattr(op, "name") and type(op).__name__ == "Op" else str(getattr(op, "name_hint", op))
        return nodes.op_call(items(field(call, "args")), ("Op", name), name, None, _scalar_type(call))

    def _arith(self, expr: Any) -> Expansion:
        cls = type(expr).__name__
        name = _ARITH[cls]
        operands = [field(expr, f) for f in _OPERANDS.get(cls, ("a", "b"))]
        return nodes.op_call(operands, ("Op", name), name, None, _scalar_type(expr))

    def _constant(self, imm: Any) -> Expansion:
        dtype = prim_dtype(imm)
        raw = field(imm, "value")
        value = scalar_json(bool(raw) if dtype == "bool" else raw)
        return Expansion((), _constant_of, None, (("Const", dtype, repr(value)), value, dtype))

    def _var(self, var: Any) -> Expansion:
        return leaf({"node_kind": "Var", "name": str(field(var, "name")), "dtype": prim_dtype(var), "shape": []})

    def _string(self, imm: Any) -> Expansion:
        return leaf({"node_kind": "StringImm", "value": str(imm.value)})


def _with_body(node: Dict[str, Any], body: Optional[Any]) -> Expansion:
    if body is None:
        return leaf(node)
    return Expansion([body], _body, None, node)


def _one_child(name: str) -> Callable[[Walk, List[int], Dict[str, Any]], Dict[str, Any]]:
    """The builder of a node with one child: its fields, and the child's id as ``name``."""
    def build(walk: Walk, ids: List[int], node: Dict[str, Any]) -> Dict[str, Any]:
        return {**node, name: ids[0]}
    return build


_body, _value, _block_of = _one_child("body"), _one_child("value"), _one_child("block")


def _seq_of(walk: Walk, ids: List[int]) -> Dict[str, Any]:
    return {"node_kind": "SeqStmt", "seq": ids}


def _constant_of(walk: Walk, ids: List[int], data: Tuple[Tuple[str, str, str], Any, str]) -> int:
    key, value, dtype = data
    return walk.shared(key, lambda: {"node_kind": "Const", "value": value, "dtype": dtype})


def _scalar_type(expr: Any) -> Dict[str, Any]:
    dtype = prim_dtype(expr)
    found = _SCALAR_TYPES.get(dtype)
    if found is None:
        found = _SCALAR_TYPES[dtype] = {"dtype": dtype, "shape": []}
    return found


#: The type of a TIR scalar of each dtype: one dict shared by every node of that type (nodes'
#: nested values are never changed in place; a replayed node shares them with its original).
_SCALAR_TYPES: Dict[str, Dict[str, Any]] = {}


def _is_one(expr: Any) -> bool:
    value = getattr(expr, "value", expr)
    return isinstance(value, int) and value == 1


def _plus(lo: Any, extent: Any) -> Any:
    if isinstance(lo, int) and isinstance(extent, int):
        return lo + extent
    if lo == 0:
        return extent
    return f"{lo} + {extent}"
