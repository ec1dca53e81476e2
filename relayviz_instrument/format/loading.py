"""Loading and validating RelayViz documents: one line naming the file, the node and the
field of the first problem."""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union, cast

from .checks import is_int as _is_int, json_type_name as _json_type
from .._files import parse_json, read_input
from ..errors import RelayVizFormatError, UnknownNodeKindWarning
from .document import FORMAT, VERSION, Document
from .kinds import (FUNCTION_KINDS, NODE_KINDS, TARGET_GROUPS, TYPE_KINDS, Field, FieldKind,
                    labelled_references)

__all__ = ["load", "loads", "validate", "ValidationReport"]


def load(source: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]) -> Document:
    """Read and validate a RelayViz document from a path or from bytes.

    Raises :class:`RelayVizFormatError` naming the file, node and field of the first problem,
    or :class:`~relayviz_instrument.errors.RelayVizIOError` if the file cannot be read. Node
    kinds from a newer 1.x minor version are kept and reported with an :class:`UnknownNodeKindWarning`.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return loads(bytes(source))
    return loads(read_input(source), source=os.fspath(source))


def loads(data: Union[bytes, str], *, source: str = "<bytes>") -> Document:
    """Parse and validate a RelayViz document held in memory; see :func:`load`."""
    return checked(parse_json(data, source), source)


def checked(doc: Any, source: str) -> Document:
    """``doc`` (parsed JSON) once :func:`validate` accepts it; notes become warnings."""
    report = validate(doc, source=source)
    for note in report.notes:
        warnings.warn(f"{source}: {note}", UnknownNodeKindWarning, stacklevel=3)
    return cast(Document, doc)  # what validate() has just checked


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
        elif kind is FieldKind.TYPES:
            for path, ty in self.type_list(nid, name, value):
                self.check_type(nid, path, ty)
        elif kind is FieldKind.DIM:
            if not (_is_int(value) or isinstance(value, (str, float, bool))):
                raise self.fail(f"must be an integer or its text, not {_json_type(value)}", node=nid, field=name)
        elif kind is FieldKind.GRAPH:
            self.check_graph_node(nid, name, value)

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
        if target_kind not in TARGET_GROUPS[group]:
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
            elif kind in ("tensor", "prim"):
                if not isinstance(ty.get("dtype"), str):
                    raise self.fail(f"a {kind} type needs a string 'dtype'", node=nid, field=f"{path}.dtype")
            elif kind == "shape":
                if "values" in ty:
                    self.check_shape(nid, f"{path}.values", ty["values"])
            elif kind == "callable":
                if "ret" in ty:
                    children = [(f"{path}.ret", ty["ret"])]
            elif not (isinstance(kind, str) and kind in TYPE_KINDS):
                raise self.fail(f"unknown type kind {kind!r}", node=nid, field=f"{path}.kind",
                                hint="known type kinds: tensor (no 'kind'), " + ", ".join(TYPE_KINDS))
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

    def check_graph_node(self, nid: int, field: str, value: Any) -> None:
        """The facts of the graph JSON node a Var or Call came from (docs/format.md), which
        the graph readers (inspect, the graph executor writer) rely on."""
        if not isinstance(value, dict):
            raise self.fail(f"must be an object, not {_json_type(value)}", node=nid, field=field)
        if "node" in value and not (_is_int(value["node"]) and value["node"] >= 0):
            raise self.fail(f"must be a graph node id, not {_json_type(value['node'])}", node=nid,
                            field=f"{field}.node")
        if "name" in value and not isinstance(value["name"], str):
            raise self.fail(f"must be a string, not {_json_type(value['name'])}", node=nid, field=f"{field}.name")
        for key in ("storage_id", "device_index", "control_deps"):
            if key in value and not (isinstance(value[key], list) and all(_is_int(v) for v in value[key])):
                raise self.fail("must be a list of integers", node=nid, field=f"{field}.{key}")
        if "shape" in value:
            shapes = value["shape"]
            if not isinstance(shapes, list):
                raise self.fail(f"must be a list of shapes, not {_json_type(shapes)}", node=nid, field=f"{field}.shape")
            for i, shape in enumerate(shapes):
                if shape is not None:
                    self.check_shape(nid, f"{field}.shape[{i}]", shape)
        if "attrs" in value and not isinstance(value["attrs"], dict):
            raise self.fail(f"must be an object, not {_json_type(value['attrs'])}", node=nid, field=f"{field}.attrs")

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



def _is_scalar_value(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) or value in ("nan", "inf", "-inf")



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
    return " or ".join(sorted(TARGET_GROUPS[group]))
