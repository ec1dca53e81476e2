"""The RelayViz node kinds: what each kind holds, which kinds a reference may point at, and
the one walker over a node's references that every other stage uses.

The tables here are the single source of truth: the validator checks documents against
them, the JSON Schema is generated from them and ``docs/format.md`` documents them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "FieldKind",
    "Field",
    "NodeKind",
    "NODE_KINDS",
    "KIND_LIST",
    "EXPR_KINDS",
    "CALLABLE_KINDS",
    "PATTERN_KINDS",
    "BLOCK_KINDS",
    "BINDING_KINDS",
    "STMT_KINDS",
    "FUNCTION_KINDS",
    "TARGET_GROUPS",
    "TYPE_KINDS",
    "INFERRED_TYPE_KINDS",
    "references",
    "renumbered",
    "moved_run",
    "reference_field_names",
    "labelled_references",
    "topological_order",
]

class FieldKind(enum.Enum):
    """What a node field holds."""

    REF = "ref"  # one node id
    REFS = "refs"  # a list of node ids
    REF_MAP = "ref_map"  # an object mapping names to node ids
    STR = "str"
    INT = "int"
    BOOL = "bool"
    TYPE = "type"  # a type object (see docs/format.md)
    SHAPE = "shape"  # a list of dimensions: integers, "?" or symbolic names
    ATTRS = "attrs"  # an object of attribute values (JSON scalars, lists, objects)
    VALUE = "value"  # a constant's value: scalar, small array or digest
    STRS = "strs"  # a list of strings
    SIGNATURE = "signature"  # a PrimFunc's parameters: [{"name", "dtype", "shape"?}]
    TYPES = "types"  # a list of type objects
    DIM = "dim"  # one dimension or TIR value: an integer, or its text ("n", "i_0 * 8 + i_1")
    GRAPH = "graph"  # the graph JSON node a Var or Call came from: {"node", "name", "storage_id", ...}
    ANY = "any"


_REF_KINDS = (FieldKind.REF, FieldKind.REFS, FieldKind.REF_MAP)


@dataclass(frozen=True)
class Field:
    """One field of a node kind. ``targets`` limits the kinds a reference may point at."""

    name: str
    kind: FieldKind
    required: bool = True
    targets: Optional[str] = None  # name of a kind group: "expr", "callable", "var", ...
    since: Tuple[int, int] = (1, 0)


@dataclass(frozen=True)
class NodeKind:
    """A node kind: its name, fields, the version that introduced it and a one-line summary."""

    name: str
    fields: Tuple[Field, ...]
    since: Tuple[int, int]
    summary: str

    @property
    def reference_fields(self) -> Tuple[Field, ...]:
        return tuple(f for f in self.fields if f.kind in _REF_KINDS)


def _f(name: str, kind: FieldKind, required: bool = True, targets: Optional[str] = None,
       since: Tuple[int, int] = (1, 0)) -> Field:
    return Field(name, kind, required, targets, since)


_V11 = (1, 1)
_V12 = (1, 2)
_R, _RS, _RM = FieldKind.REF, FieldKind.REFS, FieldKind.REF_MAP
_TYPE = FieldKind.TYPE

KIND_LIST: Tuple[NodeKind, ...] = (
    # --- the kinds of the 1.0 specification, with its field names -----------------------
    NodeKind("Function", (
        _f("body", _R, targets="expr"),
        _f("params", _RS, targets="var"),
        _f("ret_type", _TYPE, required=False),
        _f("attrs", FieldKind.ATTRS, required=False, since=_V11),
        _f("type_params", FieldKind.STRS, required=False, since=_V11),
        _f("virtual_device", FieldKind.ATTRS, required=False, since=_V11),
        _f("pure", FieldKind.BOOL, required=False, since=_V12),
    ), (1, 0), "a function: parameters, body, return type; attrs such as Primitive or Composite"),
    NodeKind("Var", (
        _f("name", FieldKind.STR),
        _f("dtype", FieldKind.STR, required=False),
        _f("shape", FieldKind.SHAPE, required=False),
        _f("type", _TYPE, required=False, since=_V11),
        _f("virtual_device", FieldKind.ATTRS, required=False, since=_V11),
        _f("graph", FieldKind.GRAPH, required=False, since=_V11),
        _f("dataflow", FieldKind.BOOL, required=False, since=_V12),
    ), (1, 0), "a variable; tensor-typed ones carry dtype and shape, others a type object"),
    NodeKind("Call", (
        _f("op", _R, targets="callable"),
        _f("args", _RS, targets="expr"),
        _f("attrs", FieldKind.ATTRS, required=False, since=_V11),
        _f("type", _TYPE, required=False, since=_V11),
        _f("graph", FieldKind.GRAPH, required=False, since=_V11),
        _f("sinfo_args", FieldKind.TYPES, required=False, since=_V12),
    ), (1, 0), "a call of an operator, a function, a global or a constructor"),
    NodeKind("Op", (
        _f("name", FieldKind.STR),
        _f("attrs", FieldKind.ATTRS, required=False),
    ), (1, 0), "a primitive operator together with the attributes of the calls that use it"),
    NodeKind("Const", (
        _f("value", FieldKind.VALUE),
        _f("dtype", FieldKind.STR),
    ), (1, 0), "a constant: a scalar, a small tensor's values, or a large tensor's digest"),
    NodeKind("Bind", (
        _f("expr", _R, targets="expr"),
        _f("binds", _RM, targets="expr"),
    ), (1, 0), "relay.bind(expr, binds); kept for the 1.0 specification, never produced from an IRModule"),
    NodeKind("Tuple", (
        _f("fields", _RS, targets="expr"),
        _f("type", _TYPE, required=False, since=_V11),
    ), (1, 0), "a tuple of expressions"),
    NodeKind("Let", (
        _f("variable", _R, targets="var"),
        _f("value", _R, targets="expr"),
        _f("body", _R, targets="expr"),
        _f("type", _TYPE, required=False, since=_V11),
    ), (1, 0), "let variable = value; body"),
    NodeKind("If", (
        _f("cond", _R, targets="expr"),
        _f("true_branch", _R, targets="expr"),
        _f("false_branch", _R, targets="expr"),
        _f("type", _TYPE, required=False, since=_V11),
    ), (1, 0), "a conditional"),
    NodeKind("TupleGetItem", (
        _f("tuple_value", _R, targets="expr"),
        _f("index", FieldKind.INT),
        _f("type", _TYPE, required=False, since=_V11),
    ), (1, 0), "one field of a tuple"),
    # --- extensions of 1.1 ---------------------------------------------------------------
    NodeKind("GlobalVar", (
        _f("name", FieldKind.STR),
    ), _V11, "a reference to a module-level function, resolved through the root's 'functions'"),
    NodeKind("Constructor", (
        _f("name", FieldKind.STR),
        _f("adt", FieldKind.STR),
    ), _V11, "a constructor of an algebraic data type, defined in the root's 'type_definitions'"),
    NodeKind("Match", (
        _f("data", _R, targets="expr"),
        _f("clauses", _RS, targets="clause"),
        _f("complete", FieldKind.BOOL, required=False),
        _f("type", _TYPE, required=False),
    ), _V11, "pattern matching over an ADT value"),
    NodeKind("Clause", (
        _f("lhs", _R, targets="pattern"),
        _f("rhs", _R, targets="expr"),
    ), _V11, "one clause of a Match: a pattern and the expression it selects"),
    NodeKind("PatternWildcard", (), _V11, "the pattern _"),
    NodeKind("PatternVar", (
        _f("var", _R, targets="var"),
    ), _V11, "a pattern binding a variable"),
    NodeKind("PatternConstructor", (
        _f("constructor", _R, targets="constructor"),
        _f("patterns", _RS, targets="pattern"),
    ), _V11, "a pattern matching a constructor and its fields"),
    NodeKind("PatternTuple", (
        _f("patterns", _RS, targets="pattern"),
    ), _V11, "a pattern matching a tuple"),
    NodeKind("RefCreate", (
        _f("value", _R, targets="expr"),
        _f("type", _TYPE, required=False),
    ), _V11, "ref(value): a new mutable reference"),
    NodeKind("RefRead", (
        _f("ref", _R, targets="expr"),
        _f("type", _TYPE, required=False),
    ), _V11, "ref_read(ref)"),
    NodeKind("RefWrite", (
        _f("ref", _R, targets="expr"),
        _f("value", _R, targets="expr"),
        _f("type", _TYPE, required=False),
    ), _V11, "ref_write(ref, value)"),
    NodeKind("PrimFunc", (
        _f("name", FieldKind.STR),
        _f("signature", FieldKind.SIGNATURE),
        _f("digest", FieldKind.STR, required=False),
        _f("attrs", FieldKind.ATTRS, required=False),
        _f("body", _R, required=False, targets="stmt", since=_V12),
    ), _V11, "a TIR PrimFunc: name, parameter signature, attributes; its body's digest or (1.2) statements"),
    NodeKind("Opaque", (
        _f("type_key", FieldKind.STR),
        _f("text", FieldKind.STR, required=False),
    ), _V11, "an IR object this version does not model, kept by its TVM type key"),
    # --- extensions of 1.2: Relax ----------------------------------------------------------
    NodeKind("SeqExpr", (
        _f("blocks", _RS, targets="block"),
        _f("body", _R, targets="expr"),
        _f("type", _TYPE, required=False),
    ), _V12, "Relax: binding blocks run in order, then the body is the value"),
    NodeKind("BindingBlock", (
        _f("bindings", _RS, targets="binding"),
    ), _V12, "Relax: bindings that may have side effects or control flow"),
    NodeKind("DataflowBlock", (
        _f("bindings", _RS, targets="binding"),
    ), _V12, "Relax: pure bindings without control flow (R.dataflow())"),
    NodeKind("VarBinding", (
        _f("var", _R, targets="var"),
        _f("value", _R, targets="expr"),
    ), _V12, "Relax: var = value"),
    NodeKind("MatchCast", (
        _f("var", _R, targets="var"),
        _f("value", _R, targets="expr"),
        _f("type", _TYPE),
    ), _V12, "Relax: var = R.match_cast(value, type), binding the type's symbolic variables"),
    NodeKind("ExternFunc", (
        _f("global_symbol", FieldKind.STR),
        _f("type", _TYPE, required=False),
    ), _V12, "Relax: a function outside the module, by symbol (R.call_packed's callee)"),
    NodeKind("ShapeExpr", (
        _f("values", FieldKind.SHAPE),
        _f("type", _TYPE, required=False),
    ), _V12, "Relax: a shape value, R.shape([n, 4])"),
    NodeKind("PrimValue", (
        _f("value", FieldKind.DIM),
        _f("dtype", FieldKind.STR),
    ), _V12, "Relax: a scalar TIR value used as a Relax value, R.prim_value(3)"),
    NodeKind("StringImm", (
        _f("value", FieldKind.STR),
    ), _V12, "a string value, R.str(\"...\") (also a TIR string)"),
    NodeKind("DataTypeImm", (
        _f("value", FieldKind.STR),
    ), _V12, "Relax: a data type used as a value, R.dtype(\"float32\")"),
    # --- extensions of 1.2: TIR statements (a PrimFunc's body) ----------------------------
    NodeKind("For", (
        _f("loop_var", FieldKind.STR),
        _f("min", FieldKind.DIM),
        _f("extent", FieldKind.DIM),
        _f("kind", FieldKind.STR),
        _f("body", _R, targets="stmt"),
        _f("thread", FieldKind.STR, required=False),
        _f("step", FieldKind.DIM, required=False),
        _f("annotations", FieldKind.ATTRS, required=False),
    ), _V12, "TIR: a loop; kind serial, parallel, vectorized, unrolled or thread_binding"),
    NodeKind("While", (
        _f("condition", FieldKind.DIM),
        _f("body", _R, targets="stmt"),
    ), _V12, "TIR: a while loop"),
    NodeKind("Block", (
        _f("name", FieldKind.STR),
        _f("iter_vars", FieldKind.ANY),
        _f("reads", FieldKind.STRS),
        _f("writes", FieldKind.STRS),
        _f("body", _R, targets="stmt"),
        _f("init", _R, required=False, targets="stmt"),
        _f("alloc_buffers", FieldKind.ANY, required=False),
        _f("match_buffers", FieldKind.ANY, required=False),
        _f("annotations", FieldKind.ATTRS, required=False),
    ), _V12, "TIR: a block with its iteration variables and the buffer regions it reads and writes"),
    NodeKind("BlockRealize", (
        _f("iter_values", FieldKind.ANY),
        _f("block", _R, targets="tir_block"),
        _f("predicate", FieldKind.DIM, required=False),
    ), _V12, "TIR: a block bound to the values of the loops around it"),
    NodeKind("BufferStore", (
        _f("buffer", FieldKind.STR),
        _f("indices", FieldKind.ANY),
        _f("value", _R, targets="expr"),
    ), _V12, "TIR: buffer[indices] = value"),
    NodeKind("BufferLoad", (
        _f("buffer", FieldKind.STR),
        _f("indices", FieldKind.ANY),
        _f("type", _TYPE, required=False),
    ), _V12, "TIR: the expression buffer[indices]"),
    NodeKind("SeqStmt", (
        _f("seq", _RS, targets="stmt"),
    ), _V12, "TIR: statements in order"),
    NodeKind("IfThenElse", (
        _f("condition", FieldKind.DIM),
        _f("then_case", _R, targets="stmt"),
        _f("else_case", _R, required=False, targets="stmt"),
    ), _V12, "TIR: a conditional statement"),
    NodeKind("LetStmt", (
        _f("var", FieldKind.STR),
        _f("value", FieldKind.DIM),
        _f("body", _R, required=False, targets="stmt"),
    ), _V12, "TIR: binds a scalar variable (around body, or for the statements after it)"),
    NodeKind("AttrStmt", (
        _f("attr_key", FieldKind.STR),
        _f("value", FieldKind.DIM),
        _f("body", _R, targets="stmt"),
        _f("node", FieldKind.STR, required=False),
    ), _V12, "TIR: an attribute (thread extent, storage alignment, ...) around a statement"),
    NodeKind("AssertStmt", (
        _f("condition", FieldKind.DIM),
        _f("body", _R, required=False, targets="stmt"),
    ), _V12, "TIR: a runtime check"),
    NodeKind("Allocate", (
        _f("name", FieldKind.STR),
        _f("dtype", FieldKind.STR),
        _f("shape", FieldKind.SHAPE),
        _f("scope", FieldKind.STR, required=False),
        _f("declared", FieldKind.BOOL, required=False),
        _f("body", _R, required=False, targets="stmt"),
    ), _V12, "TIR: a buffer allocated (or, declared: only declared) in a scope"),
    NodeKind("Evaluate", (
        _f("value", _R, targets="expr"),
    ), _V12, "TIR: an expression evaluated for its effect (an intrinsic call)"),
)

NODE_KINDS: Mapping[str, NodeKind] = {k.name: k for k in KIND_LIST}

PATTERN_KINDS = frozenset({"PatternWildcard", "PatternVar", "PatternConstructor", "PatternTuple"})
#: Relax's binding blocks and bindings: the parts of a SeqExpr, not expressions themselves.
BLOCK_KINDS = frozenset({"BindingBlock", "DataflowBlock"})
BINDING_KINDS = frozenset({"VarBinding", "MatchCast"})
#: TIR statements (a PrimFunc's body); Opaque stands for a statement this version does not model.
STMT_KINDS = frozenset({"For", "While", "Block", "BlockRealize", "BufferStore", "SeqStmt", "IfThenElse",
                        "LetStmt", "AttrStmt", "AssertStmt", "Allocate", "Evaluate", "Opaque"})
#: Kinds that are expressions: anything but clauses, patterns, PrimFuncs, blocks, bindings and statements.
EXPR_KINDS = (frozenset(NODE_KINDS) - PATTERN_KINDS - BLOCK_KINDS - BINDING_KINDS - STMT_KINDS
              - {"Clause", "PrimFunc"}) | {"Opaque"}
#: Kinds a Call's ``op`` may point at: operators and anything that can evaluate to a function.
CALLABLE_KINDS = frozenset({
    "Op", "Function", "GlobalVar", "Var", "Constructor", "Call", "Let", "If", "TupleGetItem",
    "Match", "RefRead", "Bind", "Opaque", "ExternFunc", "SeqExpr",
})
TARGET_GROUPS: Mapping[str, FrozenSet[str]] = {
    "expr": EXPR_KINDS,
    "callable": CALLABLE_KINDS,
    "var": frozenset({"Var"}),
    "clause": frozenset({"Clause"}),
    "pattern": PATTERN_KINDS,
    "constructor": frozenset({"Constructor"}),
    "block": BLOCK_KINDS,
    "binding": BINDING_KINDS,
    "stmt": STMT_KINDS,
    "tir_block": frozenset({"Block"}),
}
#: Kinds the root's ``functions`` index may name.
FUNCTION_KINDS = frozenset({"Function", "PrimFunc", "ExternFunc", "Opaque"})

#: The ``kind`` values of a type object; a tensor type of known rank has no ``kind`` (see
#: docs/format.md). 1.2 adds Relax's: a tensor of unknown rank, shapes, objects, scalars
#: (``prim``), opaque functions (``callable``) and strings.
TYPE_KINDS = ("tuple", "func", "adt", "typevar", "ref", "incomplete", "other",
              "tensor", "shape", "object", "prim", "callable", "string")
#: Kinds whose ``type`` field is filled by type inference (a Var's type is its annotation, a
#: MatchCast's its target, so they are not among them): a node of these kinds without
#: ``type`` was never type-checked.
INFERRED_TYPE_KINDS = frozenset(
    name for name, spec in NODE_KINDS.items()
    if name not in ("Var", "MatchCast", "ExternFunc", "BufferLoad") and any(f.name == "type" for f in spec.fields))

#: The reference fields of each kind as ``(name, mode)``, mode 0: one id, 1: a list, 2: a map.
#: Read once from the tables: walking documents of 50k nodes calls :func:`references` per node.
_REF_MODES = {FieldKind.REF: 0, FieldKind.REFS: 1, FieldKind.REF_MAP: 2}
_REF_FIELDS: Mapping[str, Tuple[Tuple[str, int], ...]] = {
    name: tuple((f.name, _REF_MODES[f.kind]) for f in spec.reference_fields)
    for name, spec in NODE_KINDS.items()
}
_REF_NAMES: Mapping[str, FrozenSet[str]] = {
    name: frozenset(f for f, _ in fields) for name, fields in _REF_FIELDS.items()}


def references(node: Mapping[str, Any]) -> List[int]:
    """The node ids ``node`` refers to, in field order (a ``binds`` map in key order).

    Nodes of unknown kinds have no known references and give an empty list.
    """
    kind = node.get("node_kind")
    if kind == "Call":  # most nodes: op, then args
        return [node["op"], *node["args"]]
    fields = _REF_FIELDS.get(kind, ()) if isinstance(kind, str) else ()
    out: List[int] = []
    for name, mode in fields:
        value = node.get(name)
        if value is None:
            continue
        if mode == 0:
            out.append(value)
        elif mode == 1:
            out.extend(value)
        else:
            out.extend(value[k] for k in sorted(value))
    return out


def renumbered(node: Mapping[str, Any], move: Callable[[int], int]) -> Dict[str, Any]:
    """A copy of ``node`` whose references are ``move(id)`` of what they were (the node moved
    to another document). Nodes of unknown kinds are copied as they are: they refer to none."""
    out = dict(node)
    kind = node.get("node_kind")
    for name, mode in _REF_FIELDS.get(kind, ()) if isinstance(kind, str) else ():
        value = node.get(name)
        if value is None:
            continue
        if mode == 0:
            out[name] = move(value)
        elif mode == 1:
            out[name] = [move(v) for v in value]
        else:
            out[name] = {k: move(v) for k, v in value.items()}
    return out


def moved_run(nodes: Sequence[Mapping[str, Any]], start: int, offset: int,
              outside: Callable[[int], int]) -> List[Dict[str, Any]]:
    """The nodes of a run that began at id ``start`` in one document, moved to begin at
    ``start + offset`` in another: a reference into the run moves by ``offset``, one before it
    becomes ``outside(id)``. As :func:`renumbered` of each node, without a call per reference
    (a snapshot copies thousands of runs from the one before it)."""
    out: List[Dict[str, Any]] = []
    append = out.append
    for node in nodes:
        kind = node.get("node_kind")
        fields = _REF_FIELDS.get(kind) if type(kind) is str else None
        moved = dict(node)
        if fields:
            for name, mode in fields:
                value = node.get(name)
                if value is None:
                    continue
                if mode == 0:
                    moved[name] = value + offset if value >= start else outside(value)
                elif mode == 1:
                    moved[name] = [v + offset if v >= start else outside(v) for v in value]
                else:
                    moved[name] = {k: v + offset if v >= start else outside(v) for k, v in value.items()}
        append(moved)
    return out


def reference_field_names(kind: Any) -> FrozenSet[str]:
    """The names of the reference fields of node kind ``kind`` (none for an unknown kind)."""
    return _REF_NAMES.get(kind, frozenset()) if isinstance(kind, str) else frozenset()


def labelled_references(node: Mapping[str, Any]) -> List[Tuple[str, Union[int, str, None], int]]:
    """The references of ``node`` as ``(field, position, target)`` triples.

    ``position`` is the index in a list field, the key in a map field, ``None`` for a
    single reference. The order is deterministic: field order, then position.
    """
    kind = node.get("node_kind")
    spec = NODE_KINDS.get(kind) if isinstance(kind, str) else None
    if spec is None:
        return []
    out: List[Tuple[str, Union[int, str, None], int]] = []
    for field in spec.reference_fields:
        value = node.get(field.name)
        if value is None:
            continue
        if field.kind is FieldKind.REF:
            out.append((field.name, None, value))
        elif field.kind is FieldKind.REFS:
            out.extend((field.name, i, t) for i, t in enumerate(value))
        else:
            out.extend((field.name, k, value[k]) for k in sorted(value))
    return out



def topological_order(inputs: Union[Sequence[Sequence[int]], Mapping[int, Sequence[int]]]) -> Optional[List[int]]:
    """An order of the nodes in which every node comes after its inputs, or ``None`` if the
    references form a cycle.

    ``inputs`` maps each node to the nodes it reads: a list indexed by node id, or a mapping
    for a part of a document (every input must be a key too). Among nodes that are ready,
    the smallest id comes first, so the order depends only on the graph.
    """
    import heapq

    items = list(inputs.items()) if isinstance(inputs, Mapping) else list(enumerate(inputs))
    pending: Dict[int, int] = {}
    users: Dict[int, List[int]] = {}
    for node, ins in items:
        distinct = set(ins)
        pending[node] = len(distinct)
        for i in distinct:
            users.setdefault(i, []).append(node)
    ready = [node for node, count in pending.items() if count == 0]
    heapq.heapify(ready)
    order: List[int] = []
    while ready:
        node = heapq.heappop(ready)
        order.append(node)
        for user in users.get(node, ()):
            pending[user] -= 1
            if pending[user] == 0:
                heapq.heappush(ready, user)
    return order if len(order) == len(items) else None
