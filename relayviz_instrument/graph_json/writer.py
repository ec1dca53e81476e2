"""RelayViz documents as graph executor JSON (what ``lib.get_graph_json()`` holds).

- a graph made from graph JSON goes back node for node (names, attributes, storage ids);
- a Relay module's ``main`` maps the way TVM's graph executor codegen maps it: parameters
  and constants become ``null`` nodes (constants named ``p0``, ``p1``, ... in visit order),
  each call of an operator one ``tvm_op``, each call of a primitive function (after
  ``FuseOps``) one ``tvm_op`` named the way TVM names fused kernels
  (``tvmgen_default_fused_nn_conv2d_add_nn_relu``), tuples flattened into entries and
  ``TupleGetItem`` an entry index. Control flow, closures and references have no graph
  executor form and are rejected.

Node attributes are written as strings, as TVM writes them, so TVM's own graph executor can
load the file too. See ``docs/graph_json.md``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import orjson

from ..errors import RelayVizExportError, RelayVizFormatError
from ..format import Document, labelled_references, topological_order
from ..format.irs import GRAPH_IRS
from .attrs import format_attr_value

__all__ = ["ConstantData", "GraphExecutorExport", "to_graph_executor_json"]

#: TVM truncates readable kernel names longer than this (kMaxFuncNameLength).
_MAX_KERNEL_NAME = 80
_KERNEL_PREFIX = "tvmgen_default_"

_Entry = Tuple[int, int]  # (graph node id, output index)
_Value = Union[_Entry, List["_Value"]]  # an entry, or a (nested) tuple of values


@dataclass(frozen=True)
class ConstantData:
    """The values of a constant that becomes a parameter: dtype, shape, flat row-major values."""

    dtype: str
    shape: List[int]
    values: List[Any]


@dataclass(frozen=True)
class GraphExecutorExport:
    """A document written as graph executor JSON.

    ``graph`` is the JSON object; ``constants`` maps the names of ``null`` nodes made from
    constants with known values to those values (they belong in the ``.params`` file).
    """

    graph: Dict[str, Any]
    constants: Dict[str, ConstantData] = field(default_factory=dict)

    def to_json(self) -> bytes:
        """The graph as JSON text, indented like ``lib.get_graph_json()``; deterministic."""
        return orjson.dumps(self.graph, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def to_graph_executor_json(doc: Document, *, source: str = "<document>") -> GraphExecutorExport:
    """Write the ``main`` function of a RelayViz document as graph executor JSON.

    Works for documents made from graph JSON (written back node for node) and for Relay
    modules at any stage (see the module docstring for the mapping). Raises
    :class:`RelayVizExportError` naming the node that has no graph executor form, or
    :class:`RelayVizFormatError` for a document with nothing to export. ``source`` names the
    document's file in those messages.
    """
    return _GraphWriter(doc, source).write()


# --------------------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------------------


class _GraphWriter:
    """Evaluates ``main`` symbolically: every value is a graph entry or a tuple of them."""

    def __init__(self, doc: Document, source: str) -> None:
        self.doc = doc
        self.source = source
        self.nodes: List[Dict[str, Any]] = doc["nodes"]
        self.is_graph = doc.get("ir") in GRAPH_IRS
        self.out: List[Dict[str, Any]] = []
        self.row_ptr = [0]
        self.entries: List[Tuple[Optional[List[Any]], Optional[str], Optional[int], Optional[int]]] = []
        self.values: Dict[int, _Value] = {}
        self.bindings: Dict[int, int] = {}  # let-bound Var -> its value
        self.node_names: Dict[str, int] = {}
        self.kernel_names: Dict[Any, str] = {}  # Function node (or its hash) -> kernel name
        self.kernels_used: Set[str] = set()
        self.constants: Dict[str, ConstantData] = {}
        self.aliases: Dict[int, int] = {}  # entry id of a __nop's output -> entry id of its input
        self.const_count = 0
        self.taken_names: Set[str] = set()

    def fail(self, nid: int, message: str) -> RelayVizExportError:
        kind = self.nodes[nid].get("node_kind")
        return RelayVizExportError(f"{self.source}, node {nid} ({kind}): {message}; graph executor JSON has "
                                   "no form for it (export a module whose main is a dataflow graph)")

    # -- which function, and in which order --------------------------------------------------

    def main(self) -> Tuple[List[int], int]:
        doc, nodes = self.doc, self.nodes
        functions = doc.get("functions") or {}
        if "main" in functions:
            fid = functions["main"]
        elif "root" in doc:
            fid = doc["root"]
        elif len(functions) == 1:
            fid = next(iter(functions.values()))
        else:
            raise RelayVizFormatError("the document has no 'main' function and no 'root' to export",
                                      source=self.source, field="functions",
                                      hint="export a module with a main function")
        node = nodes[fid]
        if node.get("node_kind") == "Function":
            return list(node["params"]), node["body"]
        if node.get("node_kind") == "PrimFunc":
            raise RelayVizExportError(f"{self.source}, node {fid} (PrimFunc): main is a TIR function; graph executor "
                                         "JSON describes a Relay main function")
        return [], fid

    def dependencies(self, nid: int) -> List[int]:
        node = self.nodes[nid]
        kind = node.get("node_kind")
        if kind == "Var":
            return [self.bindings[nid]] if nid in self.bindings else []
        if kind == "Const":
            return []
        if kind == "Call":
            callee = self.nodes[node["op"]].get("node_kind")
            if callee not in ("Op", "Function", "GlobalVar"):
                raise self.fail(nid, f"a call of a {callee}")
            return list(node["args"])
        if kind == "Tuple":
            return list(node["fields"])
        if kind == "TupleGetItem":
            return [node["tuple_value"]]
        if kind == "Let":
            self.bindings[node["variable"]] = node["value"]
            return [node["value"], node["body"]]
        raise self.fail(nid, "not a dataflow expression" if kind != "Function" else "a closure")

    def order(self, roots: List[int]) -> List[int]:
        """The nodes reachable from ``roots``, children first, smaller node ids first."""
        deps: Dict[int, List[int]] = {}
        stack = list(roots)
        while stack:
            nid = stack.pop()
            if nid in deps:
                continue
            deps[nid] = self.dependencies(nid)
            stack.extend(d for d in deps[nid] if d not in deps)
        order = topological_order(deps)
        if order is None:
            raise RelayVizFormatError("the expressions of main form a reference cycle", source=self.source,
                                      field="nodes",
                                      hint="check the document with `relayviz validate`")
        return order

    # -- emitting graph nodes ----------------------------------------------------------------

    def write(self) -> GraphExecutorExport:
        params, body = self.main()
        for nid in params:
            if self.nodes[nid].get("node_kind") != "Var":
                raise self.fail(nid, "a function parameter that is not a Var")
        # Constants are named p0, p1, ... as TVM names them, skipping the names of parameters.
        self.taken_names.update(self.nodes[nid]["name"] for nid in params)
        if not self.is_graph:
            for nid in params:  # TVM's codegen adds the parameters first
                self.values[nid] = self.var(nid)
        for nid in self.order(params + [body]):
            if nid not in self.values:
                self.values[nid] = self.visit(nid)
        heads = _flatten(self.values[body])
        return GraphExecutorExport(self.graph(heads), self.constants)

    def visit(self, nid: int) -> _Value:
        node = self.nodes[nid]
        kind = node["node_kind"]
        if kind == "Var":
            return self.values[self.bindings[nid]] if nid in self.bindings else self.var(nid)
        if kind == "Const":
            return self.const(nid)
        if kind == "Call":
            return self.call(nid)
        if kind == "Tuple":
            return [self.values[f] for f in node["fields"]]
        if kind == "TupleGetItem":
            value = self.values[node["tuple_value"]]
            index: int = node["index"]
            if not isinstance(value, list) or not 0 <= index < len(value):
                producer = self.nodes[node["tuple_value"]]
                if producer.get("node_kind") == "Call" and "type" not in producer:
                    raise RelayVizExportError(
                        f"{self.source}, node {nid} (TupleGetItem): takes item {node['index']} of node "
                        f"{node['tuple_value']}, a call without an inferred type, so its outputs are unknown: "
                        "the module was never type-checked; export a snapshot taken after InferType (any pass "
                        "of a trace after the first), or run relay.transform.InferType() on the module first")
                raise self.fail(nid, f"item {node['index']} of a value that is not a tuple of that size")
            return value[index]
        return self.values[node["body"]]  # Let

    def add(self, node: Dict[str, Any], outputs: List[Tuple[Optional[List[Any]], Optional[str]]],
            graph_info: Mapping[str, Any]) -> int:
        gid = len(self.out)
        self.out.append(node)
        storage = graph_info.get("storage_id") or []
        devices = graph_info.get("device_index") or []
        for k, (shape, dtype) in enumerate(outputs):
            self.entries.append((shape, dtype, storage[k] if k < len(storage) else None,
                                 devices[k] if k < len(devices) else None))
        self.row_ptr.append(self.row_ptr[-1] + len(outputs))
        return gid

    def var(self, nid: int) -> _Value:
        node = self.nodes[nid]
        ty = node.get("type")
        if ty is None:
            ty = {"dtype": node.get("dtype"), "shape": node.get("shape")}
        leaves = _leaves(ty, lambda: self.fail(nid, "a variable of a non-tensor type"))
        graph_info = node.get("graph", {})
        out: Dict[str, Any] = {"op": "null", "name": node["name"], "inputs": []}
        if graph_info.get("attrs"):
            out["attrs"] = {k: format_attr_value(v) for k, v in graph_info["attrs"].items()}
        gid = self.add(out, leaves, graph_info)
        return _shape_value(ty, gid)

    def const(self, nid: int) -> _Value:
        node = self.nodes[nid]
        value, dtype = node["value"], node["dtype"]
        while f"p{self.const_count}" in self.taken_names:
            self.const_count += 1
        name = f"p{self.const_count}"
        self.const_count += 1
        self.taken_names.add(name)
        if isinstance(value, dict):
            shape = value["array_shape"]
            if "array_value" in value:
                self.constants[name] = ConstantData(dtype, list(shape), list(value["array_value"]))
        else:
            shape = []
            self.constants[name] = ConstantData(dtype, [], [value])
        gid = self.add({"op": "null", "name": name, "inputs": []}, [(shape, dtype)], {})
        return (gid, 0)

    def call(self, nid: int) -> _Value:
        node = self.nodes[nid]
        callee_id = node["op"]
        callee = self.nodes[callee_id]
        graph_info = node.get("graph", {})
        inputs = [entry for arg in node["args"] for entry in _flatten(self.values[arg])]
        if callee["node_kind"] == "Op":
            func_name, source_attrs = callee["name"], callee.get("attrs") or {}
            name = graph_info.get("name") or self.unique_node_name(func_name)
            self.node_names.setdefault(name, 1)
        elif callee["node_kind"] == "GlobalVar":
            func_name, source_attrs = callee["name"], {}
            name = self.unique_node_name(func_name)
        else:
            fattrs = callee.get("attrs") or {}
            # TVM keeps a fused function's string attributes (hash, layouts) on its node.
            source_attrs = {k: v for k, v in fattrs.items() if isinstance(v, str)}
            if fattrs.get("relay.reshape_only"):
                func_name, name = "__nop", "reshape_nop"
            else:
                func_name = self.kernel_name(callee_id)
                name = self.unique_node_name(func_name)
        ty = node.get("type") or {"dtype": None, "shape": None}
        leaves = _leaves(ty, lambda: self.fail(nid, "a call whose result is not tensors"))
        attrs = {"num_outputs": str(len(leaves)), "num_inputs": str(len(inputs)),
                 "flatten_data": format_attr_value(source_attrs.get("flatten_data", 0)),
                 "func_name": func_name}
        for key, value in source_attrs.items():
            if key not in attrs:
                attrs[key] = format_attr_value(value)
        out = {"op": "tvm_op", "name": name, "attrs": attrs,
               "inputs": [[gid, index, 0] for gid, index in inputs]}
        gid = self.add(out, leaves, graph_info)
        if func_name == "__nop" and inputs:
            # The executor skips __nop: its output must live in its input's storage.
            self.aliases[self.row_ptr[gid]] = self.row_ptr[inputs[0][0]] + inputs[0][1]
        return _shape_value(ty, gid)

    def unique_node_name(self, name: str) -> str:
        """TVM's _GetUniqueName: the second ``f`` is ``f_1``, then ``f_2``..."""
        if name not in self.node_names:
            self.node_names[name] = 1
            return name
        index = self.node_names[name]
        self.node_names[name] += 1
        return self.unique_node_name(f"{name}_{index}")

    def kernel_name(self, fid: int) -> str:
        """The name TVM gives the kernel of a primitive function: ``fused`` and its operators.

        TVM compiles structurally equal functions once; their ``hash`` attribute (a structural
        hash) identifies them, so calls of equal functions share one kernel name.
        """
        fhash = (self.nodes[fid].get("attrs") or {}).get("hash")
        key: Any = ("hash", fhash) if isinstance(fhash, str) else fid
        if key not in self.kernel_names:
            readable = "fused" + "".join("_" + op for op in self.operator_names(self.nodes[fid]["body"]))
            if len(readable) > _MAX_KERNEL_NAME:
                # TVM appends std::hash of the full name; a stable digest stands in for it.
                digest = hashlib.sha256(readable.encode()).hexdigest()[:16]
                readable = f"{readable[:_MAX_KERNEL_NAME]}_{digest}_"
            base = _KERNEL_PREFIX + readable.replace(".", "_")
            name, k = base, 1
            while name in self.kernels_used:
                name, k = f"{base}_{k}", k + 1
            self.kernels_used.add(name)
            self.kernel_names[key] = name
        return self.kernel_names[key]

    def operator_names(self, body: int) -> List[str]:
        """Operators called in a function body, arguments first, each call once."""
        names: List[str] = []
        seen = set()
        stack: List[Tuple[int, bool]] = [(body, False)]
        while stack:
            nid, expanded = stack.pop()
            node = self.nodes[nid]
            if expanded:
                if node.get("node_kind") == "Call" and self.nodes[node["op"]].get("node_kind") == "Op":
                    names.append(self.nodes[node["op"]]["name"])
                continue
            if nid in seen:
                continue
            seen.add(nid)
            stack.append((nid, True))
            children = [t for f, _, t in labelled_references(node) if f != "op"]
            stack.extend((c, False) for c in reversed(children) if c not in seen)
        return names

    def plan_storage(self) -> List[int]:
        """Storage without a memory plan (a Relay module): one per entry, a __nop's shared with its input."""
        storage: List[int] = []
        fresh = 0
        for eid in range(len(self.entries)):
            if eid in self.aliases:
                storage.append(storage[self.aliases[eid]])
            else:
                storage.append(fresh)
                fresh += 1
        return storage

    # -- the root object -------------------------------------------------------------------------

    def graph(self, heads: List[_Entry]) -> Dict[str, Any]:
        shapes = [e[0] for e in self.entries]
        dtypes = [e[1] for e in self.entries]
        storage: Sequence[Optional[int]] = [e[2] for e in self.entries]
        devices = [e[3] for e in self.entries]
        attrs: Dict[str, Any] = {}
        if all(d is not None for d in dtypes):
            attrs["dltype"] = ["list_str", dtypes]
        if self.entries and all(d is not None for d in devices):
            attrs["device_index"] = ["list_int", devices]
        if not (self.is_graph and all(s is not None for s in storage)):
            storage = self.plan_storage()
        attrs["storage_id"] = ["list_int", storage]
        known = [s for s in shapes if s is not None]
        if len(known) == len(shapes) and all(isinstance(d, int) or d == "?" for s in known for d in s):
            attrs["shape"] = ["list_shape", [[-1 if d == "?" else d for d in s] for s in known]]
        return {
            "nodes": self.out,
            "arg_nodes": [gid for gid, node in enumerate(self.out) if node["op"] == "null"],
            "heads": [[gid, index, 0] for gid, index in heads],
            "attrs": attrs,
            "node_row_ptr": self.row_ptr,
        }


def _leaves(ty: Mapping[str, Any], failure: Any) -> List[Tuple[Optional[List[Any]], Optional[str]]]:
    """The (shape, dtype) of each tensor in a (tuple) type, depth first."""
    if ty.get("kind") is None:
        return [(ty.get("shape"), ty.get("dtype"))]
    if ty["kind"] == "tuple":
        return [leaf for f in ty["fields"] for leaf in _leaves(f, failure)]
    raise failure()


def _shape_value(ty: Mapping[str, Any], gid: int) -> _Value:
    """The value of node ``gid``'s outputs, shaped like its type (nested tuples kept)."""
    counter = iter(range(1 << 62))

    def build(t: Mapping[str, Any]) -> _Value:
        if t.get("kind") == "tuple":
            return [build(f) for f in t["fields"]]
        return (gid, next(counter))
    return build(ty)


def _flatten(value: _Value) -> List[_Entry]:
    if isinstance(value, tuple):
        return [value]
    return [entry for item in value for entry in _flatten(item)]


