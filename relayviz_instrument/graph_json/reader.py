"""Graph executor JSON and NNVM graph JSON to RelayViz documents.

``relay.build`` hands the graph executor a JSON graph (``lib.get_graph_json()``), the
descendant of NNVM's graph JSON: a list of nodes in topological order, ``null`` nodes for
inputs and parameters and ``tvm_op`` nodes for kernels, edges written as *entries*
``[node_id, output_index, version]``, and per-entry facts (shape, dtype, storage id,
device) in flat lists indexed by *entry id* ``node_row_ptr[node_id] + output_index``.
This module reads that graph, checks it, and writes it as a RelayViz document; the
mapping is described in ``docs/graph_json.md``. It never imports TVM and never writes files.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import orjson

from ..format.checks import is_int as _is_int, json_type_name as _describe
from .._files import parse_json, read_input
from ..errors import GraphJSONError
from ..format import Document, new_document
from ..format.irs import GRAPH_EXECUTOR, GRAPH_IRS, NNVM
from .attrs import parse_attr_value

__all__ = ["GRAPH_IRS", "from_graph_json", "document_from_graph"]

GraphSource = Union[str, bytes, bytearray, "os.PathLike[str]", Mapping[str, Any]]

#: Node attributes that are names or digests, never numbers, whatever their characters.
_STRING_ATTRS = frozenset({"func_name", "hash", "global_symbol"})

#: NNVM's type codes (mshadow's TypeFlag), used by its ``dtype`` graph attribute.
_NNVM_TYPE_CODES = {
    0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8", 6: "int64",
    7: "int16", 8: "uint16", 9: "uint32", 10: "uint64", 11: "bool",
}

#: More outputs than this on one node is a damaged file, not a graph (and would exhaust memory).
_MAX_OUTPUTS = 1 << 16


def from_graph_json(source: GraphSource, *, source_name: Optional[str] = None) -> Document:
    """Read graph executor JSON or NNVM graph JSON and return it as a RelayViz document.

    ``source`` is the JSON text, its bytes, a path to the file, or the parsed object. Null
    nodes become ``Var``s, every other node a ``Call`` of an ``Op`` named by its
    ``func_name`` (``tvm_op``) or its ``op`` (NNVM), outputs of multi-output nodes are taken
    with ``TupleGetItem``, and the ``heads`` are the result of a function ``main`` whose
    parameters are the ``arg_nodes``. Shapes and dtypes come from the graph's ``attrs``
    through entry ids. A malformed graph raises :class:`GraphJSONError` naming the key and
    index of the first problem.
    """
    graph, name = _read_graph(source)
    return _GraphReader(graph, source_name or name).document()


def _read_graph(source: GraphSource) -> Tuple[Any, str]:
    if not isinstance(source, (str, bytes, bytearray, os.PathLike)):  # parsed already (an object, or not)
        return source, "<graph json>"
    if isinstance(source, (bytes, bytearray)):
        return parse_json(bytes(source), "<graph json>", GraphJSONError), "<graph json>"
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        return parse_json(source, "<graph json>", GraphJSONError), "<graph json>"
    return parse_json(read_input(source), os.fspath(source), GraphJSONError), os.fspath(source)


def document_from_graph(graph: Any, source: str) -> Document:
    """The RelayViz document of a graph JSON object already parsed from ``source``."""
    return _GraphReader(graph, source).document()


# --------------------------------------------------------------------------------------
# Checking the graph and building the document
# --------------------------------------------------------------------------------------

# The per-entry lists a graph's ``attrs`` may hold: key -> (type tag, element check).
_ENTRY_ATTRS = {
    "shape": "list_shape",
    "dltype": "list_str",
    "dtype": "list_int",
    "storage_id": "list_int",
    "device_index": "list_int",
}


class _GraphReader:
    """Checks one parsed graph and turns it into a document; one instance per graph."""

    def __init__(self, graph: Any, source: str) -> None:
        self.graph = graph
        self.source = source

    def fail(self, message: str, field: Optional[str] = None) -> GraphJSONError:
        return GraphJSONError(message, source=self.source, field=field)

    # -- checks ----------------------------------------------------------------------------

    def document(self) -> Document:
        graph = self.graph
        if not isinstance(graph, dict):
            raise self.fail(f"the root must be a JSON object, not {_describe(graph)}")
        for key in ("nodes", "arg_nodes", "heads"):
            if key not in graph:
                raise self.fail(f"missing required key '{key}' (graph JSON needs 'nodes', "
                                "'arg_nodes' and 'heads')", key)
        nodes = graph["nodes"]
        if not isinstance(nodes, list):
            raise self.fail(f"must be a list of nodes, not {_describe(nodes)}", "nodes")
        self.nodes = nodes
        self.attrs = [self.check_node(i, node) for i, node in enumerate(nodes)]
        highest = self.check_entries()
        self.num_outputs, self.row_ptr = self.count_outputs(highest)
        self.check_indices()
        self.arg_nodes = self.check_arg_nodes()
        self.entry_attrs = self.check_graph_attrs()
        return self.build()

    def check_node(self, i: int, node: Any) -> Dict[str, Any]:
        where = f"nodes[{i}]"
        if not isinstance(node, dict):
            raise self.fail(f"a node must be a JSON object, not {_describe(node)}", where)
        for key in ("op", "name", "inputs"):
            if key not in node:
                raise self.fail(f"missing required key '{key}'", f"{where}.{key}")
        for key in ("op", "name"):
            if not isinstance(node[key], str):
                raise self.fail(f"must be a string, not {_describe(node[key])}", f"{where}.{key}")
        if not isinstance(node["inputs"], list):
            raise self.fail(f"must be a list of entries, not {_describe(node['inputs'])}", f"{where}.inputs")
        key = "attrs" if "attrs" in node else "attr"  # NNVM wrote "attr" before "attrs"
        raw = node.get(key, {})
        if not isinstance(raw, dict):
            raise self.fail(f"must be an object, not {_describe(raw)}", f"{where}.{key}")
        attrs = {k: (v if k in _STRING_ATTRS else parse_attr_value(v)) for k, v in raw.items()}
        try:
            orjson.dumps(attrs)
        except TypeError as exc:  # only a graph built in Python can hold what JSON cannot
            raise self.fail(f"holds a value JSON cannot carry ({exc})", f"{where}.{key}") from None
        for name in ("num_inputs", "num_outputs"):
            if name in attrs and not (_is_int(attrs[name]) and 0 <= attrs[name] <= _MAX_OUTPUTS):
                raise self.fail(f"must be an integer from 0 to {_MAX_OUTPUTS}, not {_describe(raw[name])}",
                                f"{where}.{key}.{name}")
        if "num_inputs" in attrs and attrs["num_inputs"] != len(node["inputs"]):
            raise self.fail(f"num_inputs is {attrs['num_inputs']} but the node has "
                            f"{len(node['inputs'])} inputs", f"{where}.{key}.num_inputs")
        if node["op"] == "tvm_op" and not isinstance(attrs.get("func_name"), str):
            raise self.fail("a tvm_op node needs a string 'func_name' attribute",
                            f"{where}.{key}.func_name")
        deps = node.get("control_deps", [])
        if not (isinstance(deps, list) and all(_is_int(d) and 0 <= d < i for d in deps)):
            raise self.fail("must be a list of ids of earlier nodes", f"{where}.control_deps")
        return attrs

    def check_entry(self, entry: Any, where: str, before: int) -> Tuple[int, int]:
        n = len(self.nodes)
        if not (isinstance(entry, list) and len(entry) in (2, 3) and all(_is_int(v) for v in entry)):
            raise self.fail("an entry must be a list [node_id, index, version] of integers, not "
                            + (json.dumps(entry, separators=(",", ":"), default=repr)[:60] if isinstance(entry, list)
                               else _describe(entry)),
                            where)
        nid, index = entry[0], entry[1]
        if nid < 0:
            raise self.fail(f"node id {nid} is negative", where)
        if nid >= n:
            raise self.fail(f"points at node {nid}, past the end of the node list ({n} nodes)", where)
        if nid >= before:
            raise self.fail(f"points at node {nid}, which is not before this node: graph JSON lists "
                            "nodes in topological order", where)
        if not 0 <= index < _MAX_OUTPUTS:
            raise self.fail(f"output index {index} is out of range (0 to {_MAX_OUTPUTS - 1})", where)
        return nid, index

    def check_entries(self) -> List[int]:
        """Check every entry's form and node id; return each node's highest output index used."""
        highest = [-1] * len(self.nodes)
        heads = self.graph["heads"]
        if not isinstance(heads, list):
            raise self.fail(f"must be a list of entries, not {_describe(heads)}", "heads")
        self.entries: List[Tuple[str, int, int]] = []
        for i, node in enumerate(self.nodes):
            for k, entry in enumerate(node["inputs"]):
                where = f"nodes[{i}].inputs[{k}]"
                nid, index = self.check_entry(entry, where, i)
                self.entries.append((where, nid, index))
                highest[nid] = max(highest[nid], index)
        for k, entry in enumerate(heads):
            where = f"heads[{k}]"
            nid, index = self.check_entry(entry, where, len(self.nodes))
            self.entries.append((where, nid, index))
            highest[nid] = max(highest[nid], index)
        return highest

    def count_outputs(self, highest: List[int]) -> Tuple[List[int], List[int]]:
        """Each node's number of outputs, and the row pointers that turn entries into ids."""
        explicit: List[Optional[int]] = []
        for node, attrs in zip(self.nodes, self.attrs):
            if "num_outputs" in attrs:
                explicit.append(attrs["num_outputs"])
            else:
                explicit.append(1 if node["op"] == "null" else None)
        row_ptr = self.graph.get("node_row_ptr")
        n = len(self.nodes)
        if row_ptr is None:
            # NNVM may leave node_row_ptr out: the running sum of the outputs counts. An operator
            # without num_outputs has as many outputs as its consumers use (at least one).
            counts = [c if c is not None else max(1, h + 1) for c, h in zip(explicit, highest)]
            running = [0]
            for c in counts:
                running.append(running[-1] + c)
            return counts, running
        if not (isinstance(row_ptr, list) and all(_is_int(v) for v in row_ptr)):
            raise self.fail("must be a list of integers", "node_row_ptr")
        if len(row_ptr) != n + 1:
            raise self.fail(f"has {len(row_ptr)} items but the graph has {n} nodes: it needs "
                            f"one per node and a final total ({n + 1})", "node_row_ptr")
        if row_ptr[0] != 0:
            raise self.fail(f"must start at 0, not {row_ptr[0]}", "node_row_ptr[0]")
        counts = []
        for i in range(n):
            count = row_ptr[i + 1] - row_ptr[i]
            if count < 0:
                raise self.fail(f"decreases ({row_ptr[i]} then {row_ptr[i + 1]})", f"node_row_ptr[{i + 1}]")
            if count > _MAX_OUTPUTS:
                raise self.fail(f"gives nodes[{i}] {count} outputs (at most {_MAX_OUTPUTS})",
                                f"node_row_ptr[{i + 1}]")
            if explicit[i] is not None and count != explicit[i]:
                what = "a null node has 1 output" if self.nodes[i]["op"] == "null" and \
                    "num_outputs" not in self.attrs[i] else f"nodes[{i}] has num_outputs {explicit[i]}"
                raise self.fail(f"node_row_ptr gives nodes[{i}] {count} outputs "
                                f"({row_ptr[i + 1]} - {row_ptr[i]}) but {what}", f"node_row_ptr[{i + 1}]")
            counts.append(count)
        return counts, list(row_ptr)

    def check_indices(self) -> None:
        for where, nid, index in self.entries:
            if index >= self.num_outputs[nid]:
                count = self.num_outputs[nid]
                raise self.fail(f"asks for output {index} of node {nid}, which has {count} "
                                f"output{'s' if count != 1 else ''}", where)

    def check_arg_nodes(self) -> List[int]:
        arg_nodes = self.graph["arg_nodes"]
        if not isinstance(arg_nodes, list):
            raise self.fail(f"must be a list of node ids, not {_describe(arg_nodes)}", "arg_nodes")
        seen = set()
        for k, nid in enumerate(arg_nodes):
            where = f"arg_nodes[{k}]"
            if not _is_int(nid):
                raise self.fail(f"must be a node id, not {_describe(nid)}", where)
            if not 0 <= nid < len(self.nodes):
                raise self.fail(f"node {nid} is past the end of the node list ({len(self.nodes)} nodes)", where)
            if self.nodes[nid]["op"] != "null":
                raise self.fail(f"node {nid} is a {self.nodes[nid]['op']!r} node; arg_nodes lists "
                                "null nodes (inputs and parameters)", where)
            if nid in seen:
                raise self.fail(f"node {nid} is listed twice", where)
            seen.add(nid)
        return arg_nodes

    def check_graph_attrs(self) -> Dict[str, List[Any]]:
        """The per-entry lists of the graph's ``attrs``, checked against the entry count."""
        attrs = self.graph.get("attrs", {})
        if not isinstance(attrs, dict):
            raise self.fail(f"must be an object, not {_describe(attrs)}", "attrs")
        total = self.row_ptr[-1]
        out: Dict[str, List[Any]] = {}
        for key, tag in _ENTRY_ATTRS.items():
            if key not in attrs:
                continue
            value, where = attrs[key], f"attrs.{key}"
            if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], list)):
                raise self.fail(f"must be a pair [\"{tag}\", [...]]", where)
            if value[0] != tag:
                raise self.fail(f"the type tag is {value[0]!r}, expected {tag!r}", f"{where}[0]")
            items = value[1]
            if len(items) != total:
                raise self.fail(f"lists {len(items)} values but the graph has {total} output entries "
                                "(one per output of every node)", f"{where}[1]")
            for eid, item in enumerate(items):
                self.check_entry_attr(key, item, f"{where}[1][{eid}]")
            out[key] = items
        if "dltype" not in out and "dtype" in out:
            out["dltype"] = [_NNVM_TYPE_CODES[code] for code in out["dtype"]]
        return out

    def check_entry_attr(self, key: str, item: Any, where: str) -> None:
        if key == "shape":
            if not isinstance(item, list):
                raise self.fail(f"a shape must be a list of integers, not {_describe(item)}", where)
            for d, dim in enumerate(item):
                if not (_is_int(dim) and dim >= -1):
                    raise self.fail(f"a dimension must be an integer >= -1, not {_describe(dim)}",
                                    f"{where}[{d}]")
        elif key == "dltype":
            if not isinstance(item, str):
                raise self.fail(f"a dtype must be a string, not {_describe(item)}", where)
        elif not _is_int(item):
            raise self.fail(f"must be an integer, not {_describe(item)}", where)
        elif key == "dtype" and item not in _NNVM_TYPE_CODES:
            raise self.fail(f"unknown NNVM type code {item} (known: 0 to {max(_NNVM_TYPE_CODES)})", where)

    # -- building ----------------------------------------------------------------------------

    def entry_type(self, eid: int) -> Tuple[Optional[Dict[str, Any]], Optional[List[Any]]]:
        """The tensor type of an entry (None unless dtype and shape are known), and its shape."""
        shapes, dtypes = self.entry_attrs.get("shape"), self.entry_attrs.get("dltype")
        shape = [("?" if d == -1 else d) for d in shapes[eid]] if shapes is not None else None
        if shape is not None and dtypes is not None:
            return {"dtype": dtypes[eid], "shape": shape}, shape
        return None, shape

    def build(self) -> Document:
        out: List[Dict[str, Any]] = []
        value_of: List[int] = []  # graph node id -> RelayViz node id
        ops: Dict[Tuple[str, bytes], int] = {}
        items: Dict[Tuple[int, int], int] = {}
        types: List[Optional[Dict[str, Any]]] = []  # graph node id -> its (tuple) type

        def add(node: Dict[str, Any]) -> int:
            out.append(node)
            return len(out) - 1

        def ref(nid: int, index: int) -> int:
            if self.num_outputs[nid] == 1:
                return value_of[nid]
            key = (nid, index)
            if key not in items:
                node: Dict[str, Any] = {"node_kind": "TupleGetItem", "tuple_value": value_of[nid], "index": index}
                tuple_type = types[nid]
                field_type = tuple_type["fields"][index] if tuple_type is not None else None
                if field_type is not None:
                    node["type"] = field_type
                items[key] = add(node)
            return items[key]

        is_nnvm = any(node["op"] not in ("null", "tvm_op") for node in self.nodes)
        for nid, (node, attrs) in enumerate(zip(self.nodes, self.attrs)):
            count, first = self.num_outputs[nid], self.row_ptr[nid]
            entry_types = [self.entry_type(first + k) for k in range(count)]
            ty: Optional[Dict[str, Any]] = None
            if count == 1:
                ty = entry_types[0][0]
            elif all(t is not None for t, _ in entry_types):
                ty = {"kind": "tuple", "fields": [t for t, _ in entry_types]}
            types.append(ty)
            extra: Dict[str, Any] = {"node": nid}
            for key in ("storage_id", "device_index"):
                if key in self.entry_attrs:
                    extra[key] = self.entry_attrs[key][first:first + count]
            if any(t is None and s is not None for t, s in entry_types):
                extra["shape"] = [s for _, s in entry_types]  # shapes without dtypes (NNVM)
            if node.get("control_deps"):
                extra["control_deps"] = node["control_deps"]
            if node["op"] == "null":
                var: Dict[str, Any] = {"node_kind": "Var", "name": node["name"]}
                if count == 1 and entry_types[0][0] is not None:
                    var.update(entry_types[0][0])
                elif count == 1 and entry_types[0][1] is not None:
                    var["shape"] = entry_types[0][1]
                elif ty is not None:
                    var["type"] = ty
                if attrs:
                    extra["attrs"] = attrs
                var["graph"] = extra
                value_of.append(add(var))
                continue
            op_name = attrs["func_name"] if node["op"] == "tvm_op" else node["op"]
            op_key = (op_name, orjson.dumps(attrs))
            if op_key not in ops:
                op_node: Dict[str, Any] = {"node_kind": "Op", "name": op_name}
                if attrs:
                    op_node["attrs"] = attrs
                ops[op_key] = add(op_node)
            args = [ref(entry[0], entry[1]) for entry in node["inputs"]]
            call: Dict[str, Any] = {"node_kind": "Call", "op": ops[op_key], "args": args}
            if ty is not None:
                call["type"] = ty
            extra["name"] = node["name"]
            call["graph"] = extra
            value_of.append(add(call))

        heads = [ref(entry[0], entry[1]) for entry in self.graph["heads"]]
        head_types = [out[h].get("type") if out[h]["node_kind"] != "Var" else _var_type(out[h]) for h in heads]
        ret_type = None
        if len(heads) == 1:
            body, ret_type = heads[0], head_types[0]
        else:
            tuple_node: Dict[str, Any] = {"node_kind": "Tuple", "fields": heads}
            if all(t is not None for t in head_types):
                ret_type = tuple_node["type"] = {"kind": "tuple", "fields": head_types}
            body = add(tuple_node)
        function: Dict[str, Any] = {"node_kind": "Function", "body": body,
                                    "params": [value_of[nid] for nid in self.arg_nodes]}
        if ret_type is not None:
            function["ret_type"] = ret_type
        main = add(function)
        return new_document(out, ir=NNVM if is_nnvm else GRAPH_EXECUTOR, functions={"main": main})


def _var_type(var: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    if "type" in var:
        ty: Dict[str, Any] = var["type"]
        return ty
    if "dtype" in var and "shape" in var:
        return {"dtype": var["dtype"], "shape": var["shape"]}
    return None


