"""The RelayViz document: node kinds, format version, encoding, loading and validation.

This module is the only place that knows the shape of a RelayViz document; every other
stage imports it. The format is the one specified in the RelayViz proposal (version 1.0):
a root object ``{"format": "relayviz", "version": [1, 0], "nodes": [...]}`` whose nodes
refer to each other by their index in ``nodes``. Version 1.1 adds node kinds and optional
fields for the rest of Relay (and for PrimFuncs and graph executor JSON); it never changes
what a 1.0 field means, so a 1.0 reader still understands a 1.1 document. ``docs/format.md``
documents every node kind; ``schema/relayviz.schema.json`` is generated from the tables here.
"""

from __future__ import annotations

import enum
import hashlib
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import orjson

from .errors import RelayVizFormatError, UnknownNodeKindWarning

__all__ = [
    "FORMAT",
    "VERSION",
    "NODE_KINDS",
    "EXPR_KINDS",
    "CALLABLE_KINDS",
    "PATTERN_KINDS",
    "SMALL_TENSOR_ELEMENTS",
    "Field",
    "FieldKind",
    "NodeKind",
    "ValidationReport",
    "new_document",
    "digest_bytes",
    "references",
    "reference_field_names",
    "labelled_references",
    "encode",
    "load",
    "loads",
    "validate",
    "json_schema",
    "SCHEMA_PATH",
]

FORMAT = "relayviz"
#: The version this package writes. Readers accept any 1.x; unknown kinds of a newer 1.x are kept.
VERSION: Tuple[int, int] = (1, 1)

#: Tensor constants with at most this many elements carry their values (``array_value``);
#: larger ones carry their shape and a content digest, unless full values are asked for.
SMALL_TENSOR_ELEMENTS = 16

SCHEMA_PATH = Path(__file__).with_name("schema") / "relayviz.schema.json"


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
_R, _RS, _RM = FieldKind.REF, FieldKind.REFS, FieldKind.REF_MAP
_TYPE = FieldKind.TYPE

_KIND_LIST: Tuple[NodeKind, ...] = (
    # --- the kinds of the 1.0 specification, with its field names -----------------------
    NodeKind("Function", (
        _f("body", _R, targets="expr"),
        _f("params", _RS, targets="var"),
        _f("ret_type", _TYPE, required=False),
        _f("attrs", FieldKind.ATTRS, required=False, since=_V11),
        _f("type_params", FieldKind.STRS, required=False, since=_V11),
        _f("virtual_device", FieldKind.ATTRS, required=False, since=_V11),
    ), (1, 0), "a function: parameters, body, return type; attrs such as Primitive or Composite"),
    NodeKind("Var", (
        _f("name", FieldKind.STR),
        _f("dtype", FieldKind.STR, required=False),
        _f("shape", FieldKind.SHAPE, required=False),
        _f("type", _TYPE, required=False, since=_V11),
        _f("virtual_device", FieldKind.ATTRS, required=False, since=_V11),
        _f("graph", FieldKind.ATTRS, required=False, since=_V11),
    ), (1, 0), "a variable; tensor-typed ones carry dtype and shape, others a type object"),
    NodeKind("Call", (
        _f("op", _R, targets="callable"),
        _f("args", _RS, targets="expr"),
        _f("attrs", FieldKind.ATTRS, required=False, since=_V11),
        _f("type", _TYPE, required=False, since=_V11),
        _f("graph", FieldKind.ATTRS, required=False, since=_V11),
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
    ), _V11, "a TIR PrimFunc, as one node: name, parameter signature and a digest of its body"),
    NodeKind("Opaque", (
        _f("type_key", FieldKind.STR),
        _f("text", FieldKind.STR, required=False),
    ), _V11, "an IR object this version does not model, kept by its TVM type key"),
)

NODE_KINDS: Mapping[str, NodeKind] = {k.name: k for k in _KIND_LIST}

PATTERN_KINDS = frozenset({"PatternWildcard", "PatternVar", "PatternConstructor", "PatternTuple"})
#: Kinds that are expressions: anything but clauses, patterns and PrimFuncs.
EXPR_KINDS = frozenset(NODE_KINDS) - PATTERN_KINDS - {"Clause", "PrimFunc"}
#: Kinds a Call's ``op`` may point at: operators and anything that can evaluate to a function.
CALLABLE_KINDS = frozenset({
    "Op", "Function", "GlobalVar", "Var", "Constructor", "Call", "Let", "If", "TupleGetItem",
    "Match", "RefRead", "Bind", "Opaque",
})
_TARGET_GROUPS: Mapping[str, frozenset] = {
    "expr": EXPR_KINDS,
    "callable": CALLABLE_KINDS,
    "var": frozenset({"Var"}),
    "clause": frozenset({"Clause"}),
    "pattern": PATTERN_KINDS,
    "constructor": frozenset({"Constructor"}),
}
#: Kinds the root's ``functions`` index may name.
FUNCTION_KINDS = frozenset({"Function", "PrimFunc", "Opaque"})

_TYPE_KINDS = ("tuple", "func", "adt", "typevar", "ref", "incomplete", "other")


def digest_bytes(data: bytes) -> str:
    """A content digest as the format writes it: ``sha256:`` and 32 hex digits (128 bits)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()[:32]


# --------------------------------------------------------------------------------------
# Building and walking documents
# --------------------------------------------------------------------------------------


def new_document(nodes: List[Dict[str, Any]], *, ir: str, **extensions: Any) -> Dict[str, Any]:
    """Wrap ``nodes`` in a root object of the current version.

    ``ir`` names the dialect the nodes come from (``"relay"``, ``"graph_executor"``, ...);
    ``extensions`` are further root fields (``functions``, ``root``, ``type_definitions``).
    """
    doc: Dict[str, Any] = {"format": FORMAT, "version": list(VERSION), "ir": ir}
    doc.update({k: v for k, v in extensions.items() if v is not None})
    doc["nodes"] = nodes
    return doc


#: The reference fields of each kind as ``(name, mode)``, mode 0: one id, 1: a list, 2: a map.
#: Read once from the tables: walking documents of 50k nodes calls :func:`references` per node.
_REF_MODES = {FieldKind.REF: 0, FieldKind.REFS: 1, FieldKind.REF_MAP: 2}
_REF_FIELDS: Mapping[str, Tuple[Tuple[str, int], ...]] = {
    name: tuple((f.name, _REF_MODES[f.kind]) for f in spec.reference_fields)
    for name, spec in NODE_KINDS.items()
}
_REF_NAMES: Mapping[str, frozenset] = {
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


def reference_field_names(kind: Any) -> frozenset:
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


# --------------------------------------------------------------------------------------
# Encoding and loading
# --------------------------------------------------------------------------------------


def encode(doc: Mapping[str, Any], *, indent: bool = False) -> bytes:
    """Encode a document with orjson. Deterministic: the same document gives the same bytes."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(doc, option=option | orjson.OPT_APPEND_NEWLINE)


def load(source: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]) -> Dict[str, Any]:
    """Read and validate a RelayViz document from a path or from bytes.

    Raises :class:`RelayVizFormatError` naming the file, node and field of the first problem.
    Node kinds from a newer 1.x minor version are kept and reported with an
    :class:`UnknownNodeKindWarning`.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return loads(bytes(source))
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RelayVizFormatError(
            f"cannot read the file: {exc.strerror or exc}", source=str(path),
            hint="check the path") from None
    return loads(data, source=str(path))


def loads(data: Union[bytes, str], *, source: str = "<bytes>") -> Dict[str, Any]:
    """Parse and validate a RelayViz document held in memory; see :func:`load`."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RelayVizFormatError(f"invalid JSON: {exc}", source=source,
                                  hint="the file is not JSON; was it truncated?") from None
    report = validate(doc, source=source)
    for note in report.notes:
        warnings.warn(f"{source}: {note}", UnknownNodeKindWarning, stacklevel=2)
    return doc


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`validate` found besides errors: notes about nodes kept without checks."""

    version: Tuple[int, int]
    node_count: int
    unknown_kinds: Mapping[str, int]

    @property
    def notes(self) -> List[str]:
        return [f"{count} node(s) of kind '{kind}' unknown to this reader "
                f"(version {VERSION[0]}.{VERSION[1]}) kept unchecked"
                for kind, count in sorted(self.unknown_kinds.items())]


def validate(doc: Any, *, source: str = "<document>") -> ValidationReport:
    """Check that ``doc`` is a valid RelayViz document; raise on the first problem.

    Checks the root (format tag, major version, node list, index fields), every node's
    required fields and their types, that every reference is in range and points at a
    node of an allowed kind, and that references form no cycle.
    """
    return _Validator(doc, source).run()


class _Validator:
    def __init__(self, doc: Any, source: str) -> None:
        self.doc = doc
        self.source = source
        self.unknown: Dict[str, int] = {}

    def fail(self, message: str, *, node: Optional[int] = None, field: Optional[str] = None,
             hint: Optional[str] = None) -> RelayVizFormatError:
        kind = None
        if node is not None:
            raw = self.doc["nodes"][node]
            if isinstance(raw, dict) and isinstance(raw.get("node_kind"), str):
                kind = _key_label(raw["node_kind"])
        return RelayVizFormatError(message, source=self.source, node=node, kind=kind,
                                   field=field, hint=hint)

    def run(self) -> ValidationReport:
        doc = self.doc
        if not isinstance(doc, dict):
            raise self.fail(f"the root must be a JSON object, not {_json_type(doc)}")
        if doc.get("format") != FORMAT:
            raise self.fail(f"'format' is {doc.get('format')!r}, expected 'relayviz'", field="format",
                            hint="this file is not a RelayViz document")
        version = doc.get("version")
        if not (isinstance(version, list) and len(version) == 2
                and all(_is_int(v) and v >= 0 for v in version)):
            raise self.fail(f"'version' must be [major, minor], got {version!r}", field="version")
        major, minor = version
        if major != VERSION[0]:
            raise self.fail(f"unknown major version {major}.{minor}; this reader reads {VERSION[0]}.x",
                            field="version", hint="upgrade relayviz_instrument")
        if "ir" in doc and not isinstance(doc["ir"], str):
            raise self.fail(f"'ir' must be a string, not {_json_type(doc['ir'])}", field="ir")
        nodes = doc.get("nodes")
        if not isinstance(nodes, list):
            raise self.fail(f"'nodes' must be a list, not {_json_type(nodes)}", field="nodes")
        newer = (major, minor) > VERSION
        for nid, node in enumerate(nodes):
            self.check_node(nid, node, newer)
        self.check_root_index()
        self.check_cycles()
        return ValidationReport((major, minor), len(nodes), dict(self.unknown))

    # -- nodes ---------------------------------------------------------------------------

    def check_node(self, nid: int, node: Any, newer: bool) -> None:
        if not isinstance(node, dict):
            raise self.fail(f"a node must be a JSON object, not {_json_type(node)}", node=nid)
        kind_name = node.get("node_kind")
        if not isinstance(kind_name, str):
            raise self.fail("missing or non-string 'node_kind'", node=nid, field="node_kind")
        spec = NODE_KINDS.get(kind_name)
        if spec is None:
            if newer:
                self.unknown[kind_name] = self.unknown.get(kind_name, 0) + 1
                return
            raise self.fail(f"unknown node kind {kind_name!r}", node=nid, field="node_kind",
                            hint="known kinds: " + ", ".join(sorted(NODE_KINDS)))
        for field in spec.fields:
            if field.name not in node:
                if field.required:
                    raise self.fail(f"missing required field '{field.name}'", node=nid, field=field.name)
                continue
            self.check_field(nid, field, node[field.name])

    def check_field(self, nid: int, field: Field, value: Any) -> None:
        kind, name = field.kind, field.name
        if kind is FieldKind.REF:
            self.check_ref(nid, name, value, field.targets)
        elif kind is FieldKind.REFS:
            if not isinstance(value, list):
                raise self.fail(f"must be a list of node ids, not {_json_type(value)}", node=nid, field=name)
            for i, target in enumerate(value):
                self.check_ref(nid, f"{name}[{i}]", target, field.targets)
        elif kind is FieldKind.REF_MAP:
            if not isinstance(value, dict):
                raise self.fail(f"must be an object of node ids, not {_json_type(value)}", node=nid, field=name)
            for key, target in value.items():
                self.check_ref(nid, f"{name}.{_key_label(key)}", target, field.targets)
        elif kind is FieldKind.STR:
            if not isinstance(value, str):
                raise self.fail(f"must be a string, not {_json_type(value)}", node=nid, field=name)
        elif kind is FieldKind.INT:
            if not _is_int(value):
                raise self.fail(f"must be an integer, not {_json_type(value)}", node=nid, field=name)
        elif kind is FieldKind.BOOL:
            if not isinstance(value, bool):
                raise self.fail(f"must be true or false, not {_json_type(value)}", node=nid, field=name)
        elif kind is FieldKind.STRS:
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise self.fail("must be a list of strings", node=nid, field=name)
        elif kind is FieldKind.SHAPE:
            self.check_shape(nid, name, value)
        elif kind is FieldKind.TYPE:
            self.check_type(nid, name, value)
        elif kind is FieldKind.ATTRS:
            if not isinstance(value, dict):
                raise self.fail(f"must be an object, not {_json_type(value)}", node=nid, field=name)
        elif kind is FieldKind.VALUE:
            self.check_value(nid, name, value)
        elif kind is FieldKind.SIGNATURE:
            self.check_signature(nid, name, value)

    def check_ref(self, nid: int, field: str, target: Any, group: Optional[str]) -> None:
        nodes = self.doc["nodes"]
        if not _is_int(target):
            raise self.fail(f"a reference must be a node id (integer), not {_json_type(target)}",
                            node=nid, field=field)
        if not 0 <= target < len(nodes):
            raise self.fail(f"reference {target} is out of range (the document has {len(nodes)} nodes)",
                            node=nid, field=field)
        if group is None:
            return
        target_node = nodes[target]
        target_kind = target_node.get("node_kind") if isinstance(target_node, dict) else None
        if not isinstance(target_kind, str) or target_kind not in NODE_KINDS:
            return  # unknown kinds are checked when their own node is checked
        if target_kind not in _TARGET_GROUPS[group]:
            raise self.fail(f"reference {target} points at {_a(target_kind)} node; expected "
                            + _describe_group(group), node=nid, field=field)

    def check_shape(self, nid: int, field: str, value: Any) -> None:
        if not isinstance(value, list):
            raise self.fail(f"a shape must be a list, not {_json_type(value)}", node=nid, field=field)
        for i, dim in enumerate(value):
            if not ((_is_int(dim) and dim >= -1) or isinstance(dim, str)):
                raise self.fail(f"a dimension must be an integer, '?' or a symbolic name, not {dim!r}",
                                node=nid, field=f"{field}[{i}]")

    def check_type(self, nid: int, field: str, value: Any) -> None:
        # A work list, not recursion: a type nested a thousand levels deep is valid JSON.
        pending: List[Tuple[str, Any]] = [(field, value)]
        while pending:
            path, ty = pending.pop()
            if not isinstance(ty, dict):
                raise self.fail(f"a type must be an object, not {_json_type(ty)}", node=nid, field=path)
            if "kind" not in ty:  # a tensor type, exactly as in 1.0
                if not isinstance(ty.get("dtype"), str):
                    raise self.fail("a tensor type needs a string 'dtype'", node=nid, field=f"{path}.dtype")
                if "shape" not in ty:
                    raise self.fail("a tensor type needs a 'shape'", node=nid, field=f"{path}.shape")
                self.check_shape(nid, f"{path}.shape", ty["shape"])
                continue
            kind, children = ty["kind"], []
            if kind == "tuple":
                children = self.type_list(nid, f"{path}.fields", ty.get("fields"))
            elif kind == "func":
                children = self.type_list(nid, f"{path}.params", ty.get("params"))
                children.append((f"{path}.ret", ty.get("ret")))
            elif kind == "adt":
                if not isinstance(ty.get("name"), str):
                    raise self.fail("an adt type needs a string 'name'", node=nid, field=f"{path}.name")
                children = self.type_list(nid, f"{path}.args", ty.get("args", []))
            elif kind == "typevar":
                if not isinstance(ty.get("name"), str):
                    raise self.fail("a typevar needs a string 'name'", node=nid, field=f"{path}.name")
            elif kind == "ref":
                children = [(f"{path}.value", ty.get("value"))]
            elif not (isinstance(kind, str) and kind in _TYPE_KINDS):
                raise self.fail(f"unknown type kind {kind!r}", node=nid, field=f"{path}.kind",
                                hint="known type kinds: tensor (no 'kind'), " + ", ".join(_TYPE_KINDS))
            pending.extend(reversed(children))  # report problems in field order

    def type_list(self, nid: int, field: str, value: Any) -> List[Tuple[str, Any]]:
        if not isinstance(value, list):
            raise self.fail(f"must be a list of types, not {_json_type(value)}", node=nid, field=field)
        return [(f"{field}[{i}]", item) for i, item in enumerate(value)]

    def check_value(self, nid: int, field: str, value: Any) -> None:
        if _is_scalar_value(value):
            return
        if not isinstance(value, dict):
            raise self.fail(f"a constant value must be a number, a boolean or an object, not "
                            f"{_json_type(value)}", node=nid, field=field)
        self.check_shape(nid, f"{field}.array_shape", value.get("array_shape"))
        shape = value["array_shape"]
        if "array_value" in value:
            flat = value["array_value"]
            if not (isinstance(flat, list) and all(_is_scalar_value(v) for v in flat)):
                raise self.fail("must be a flat list of numbers", node=nid, field=f"{field}.array_value")
            if all(_is_int(d) for d in shape) and len(flat) != math.prod(shape):
                raise self.fail(f"holds {len(flat)} values but array_shape {shape} has "
                                f"{math.prod(shape)} elements", node=nid, field=f"{field}.array_value")
        elif not isinstance(value.get("digest"), str):
            raise self.fail("a tensor value needs 'array_value' or a string 'digest'",
                            node=nid, field=field)

    def check_signature(self, nid: int, field: str, value: Any) -> None:
        if not isinstance(value, list):
            raise self.fail(f"must be a list of parameters, not {_json_type(value)}", node=nid, field=field)
        for i, param in enumerate(value):
            if not (isinstance(param, dict) and isinstance(param.get("name"), str)):
                raise self.fail("a parameter must be an object with a string 'name'",
                                node=nid, field=f"{field}[{i}]")
            if "shape" in param:
                self.check_shape(nid, f"{field}[{i}].shape", param["shape"])

    # -- root index fields and cycles ----------------------------------------------------

    def check_root_index(self) -> None:
        # An optional root field is absent or well-formed; null is not a way to leave it out.
        doc, nodes = self.doc, self.doc["nodes"]
        if "functions" in doc:
            functions = doc["functions"]
            if not isinstance(functions, dict):
                raise self.fail(f"'functions' must map names to node ids, not {_json_type(functions)}",
                                field="functions")
            for name, target in functions.items():
                label = f"functions.{_key_label(name)}"
                if not _is_int(target) or not 0 <= target < len(nodes):
                    raise self.fail(f"function {name!r} refers to {target!r}, not a node id in range",
                                    field=label)
                kind = nodes[target].get("node_kind")
                if kind in NODE_KINDS and kind not in FUNCTION_KINDS:
                    raise self.fail(f"function {name!r} refers to {_a(kind)} node", field=label)
        if "root" in doc:
            root = doc["root"]
            if not _is_int(root) or not 0 <= root < len(nodes):
                raise self.fail(f"'root' must be a node id in range, not {root!r}", field="root")
        if "type_definitions" in doc and not isinstance(doc["type_definitions"], dict):
            raise self.fail("'type_definitions' must be an object, not "
                            + _json_type(doc["type_definitions"]), field="type_definitions")

    def check_cycles(self) -> None:
        nodes = self.doc["nodes"]
        state = bytearray(len(nodes))  # 0 new, 1 on the stack, 2 done
        for start in range(len(nodes)):
            if state[start]:
                continue
            stack: List[Tuple[int, Iterator[Tuple[str, Any, int]]]] = [
                (start, iter(labelled_references(nodes[start])))]
            state[start] = 1
            while stack:
                nid, edges = stack[-1]
                for field, pos, target in edges:
                    if state[target] == 1:
                        path = [n for n, _ in stack]
                        cycle = path[path.index(target):] + [target]
                        label = field if pos is None else f"{field}[{pos}]"
                        raise self.fail("reference cycle " + " -> ".join(map(str, cycle)),
                                        node=nid, field=label,
                                        hint="a RelayViz document is a DAG; recursion goes through "
                                             "GlobalVar nodes")
                    if state[target] == 0:
                        state[target] = 1
                        stack.append((target, iter(labelled_references(nodes[target]))))
                        break
                else:
                    state[nid] = 2
                    stack.pop()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_scalar_value(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) or value in ("nan", "inf", "-inf")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _a(kind: str) -> str:
    return ("an " if kind[:1] in "AEIOU" else "a ") + kind


def _key_label(key: Any) -> str:
    """A map key as it appears in a field path: as is, or quoted if it would break the line."""
    return key if isinstance(key, str) and key.isprintable() else repr(key)


def _describe_group(group: str) -> str:
    if group == "expr":
        return "an expression"
    if group == "callable":
        return "an Op or a callable expression"
    return " or ".join(sorted(_TARGET_GROUPS[group]))


# --------------------------------------------------------------------------------------
# JSON Schema
# --------------------------------------------------------------------------------------

_SCHEMA_ID = "https://github.com/relayviz/relayviz_instrument/schema/relayviz.schema.json"


def json_schema() -> Dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the current version, generated from the kind tables.

    The schema checks structure only; references (range, kinds, cycles) are checked by
    :func:`validate`. The shipped ``schema/relayviz.schema.json`` equals this value.
    """
    defs: Dict[str, Any] = {
        "nodeId": {"type": "integer", "minimum": 0},
        "nodeIds": {"type": "array", "items": {"$ref": "#/$defs/nodeId"}},
        "dim": {"oneOf": [{"type": "integer", "minimum": -1}, {"type": "string"}]},
        "shape": {"type": "array", "items": {"$ref": "#/$defs/dim"}},
        "scalar": {"oneOf": [{"type": "number"}, {"type": "boolean"},
                             {"enum": ["nan", "inf", "-inf"]}]},
        "type": {
            "type": "object",
            "oneOf": [
                {"required": ["dtype", "shape"], "not": {"required": ["kind"]},
                 "properties": {"dtype": {"type": "string"}, "shape": {"$ref": "#/$defs/shape"}}},
                {"required": ["kind", "fields"], "properties": {
                    "kind": {"const": "tuple"},
                    "fields": {"type": "array", "items": {"$ref": "#/$defs/type"}}}},
                {"required": ["kind", "params", "ret"], "properties": {
                    "kind": {"const": "func"},
                    "params": {"type": "array", "items": {"$ref": "#/$defs/type"}},
                    "ret": {"$ref": "#/$defs/type"},
                    "type_params": {"type": "array", "items": {"type": "string"}}}},
                {"required": ["kind", "name"], "properties": {
                    "kind": {"const": "adt"}, "name": {"type": "string"},
                    "args": {"type": "array", "items": {"$ref": "#/$defs/type"}}}},
                {"required": ["kind", "name"], "properties": {
                    "kind": {"const": "typevar"}, "name": {"type": "string"}}},
                {"required": ["kind", "value"], "properties": {
                    "kind": {"const": "ref"}, "value": {"$ref": "#/$defs/type"}}},
                {"required": ["kind"], "properties": {"kind": {"enum": ["incomplete", "other"]}}},
            ],
        },
        "value": {"oneOf": [
            {"$ref": "#/$defs/scalar"},
            {"type": "object", "required": ["array_shape", "array_value"], "properties": {
                "array_shape": {"$ref": "#/$defs/shape"},
                "array_value": {"type": "array", "items": {"$ref": "#/$defs/scalar"}}}},
            {"type": "object", "required": ["array_shape", "digest"],
             "not": {"required": ["array_value"]}, "properties": {
                "array_shape": {"$ref": "#/$defs/shape"}, "digest": {"type": "string"}}},
        ]},
        "signature": {"type": "array", "items": {
            "type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "dtype": {"type": "string"},
                "shape": {"$ref": "#/$defs/shape"}}}},
    }
    field_schema = {
        FieldKind.REF: {"$ref": "#/$defs/nodeId"},
        FieldKind.REFS: {"$ref": "#/$defs/nodeIds"},
        FieldKind.REF_MAP: {"type": "object", "additionalProperties": {"$ref": "#/$defs/nodeId"}},
        FieldKind.STR: {"type": "string"},
        FieldKind.INT: {"type": "integer"},
        FieldKind.BOOL: {"type": "boolean"},
        FieldKind.TYPE: {"$ref": "#/$defs/type"},
        FieldKind.SHAPE: {"$ref": "#/$defs/shape"},
        FieldKind.ATTRS: {"type": "object"},
        FieldKind.VALUE: {"$ref": "#/$defs/value"},
        FieldKind.STRS: {"type": "array", "items": {"type": "string"}},
        FieldKind.SIGNATURE: {"$ref": "#/$defs/signature"},
        FieldKind.ANY: {},
    }
    branches = []
    for spec in _KIND_LIST:
        defs[spec.name] = {
            "type": "object",
            "description": spec.summary + f" (since {spec.since[0]}.{spec.since[1]})",
            "required": ["node_kind"] + [f.name for f in spec.fields if f.required],
            "properties": {"node_kind": {"const": spec.name},
                           **{f.name: field_schema[f.kind] for f in spec.fields}},
        }
        branches.append({"if": {"properties": {"node_kind": {"const": spec.name}}},
                         "then": {"$ref": f"#/$defs/{spec.name}"}})
    defs["node"] = {"type": "object", "required": ["node_kind"],
                    "properties": {"node_kind": {"type": "string"}}, "allOf": branches}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": _SCHEMA_ID,
        "title": f"RelayViz document {VERSION[0]}.{VERSION[1]}",
        "type": "object",
        "required": ["format", "version", "nodes"],
        "properties": {
            "format": {"const": FORMAT},
            "version": {"type": "array", "prefixItems": [{"const": VERSION[0]}, {"type": "integer"}],
                        "minItems": 2, "maxItems": 2},
            "ir": {"type": "string"},
            "nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            "functions": {"type": "object", "additionalProperties": {"$ref": "#/$defs/nodeId"}},
            "root": {"$ref": "#/$defs/nodeId"},
            "type_definitions": {"type": "object"},
        },
        "$defs": defs,
    }


def _write_schema(path: Path = SCHEMA_PATH) -> None:
    """Regenerate the shipped schema file (``python -m relayviz_instrument.format``)."""
    path.write_bytes(orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    _write_schema()
