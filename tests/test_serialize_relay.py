"""Relay -> RelayViz on programs no one here wrote: relay.testing models, the Prelude, text programs.

Every document is checked three ways: against the shipped JSON Schema (jsonschema), by
``relayviz_instrument.validate``, and by a census: the number of Calls per operator, Vars,
Lets, Ifs, TupleGetItems, Constants (and the other kinds) counted by an independent walk of
the IR with ``relay.analysis.post_order_visit`` must equal the same counts read from the
document. Field contents are compared with values read from the IR objects or the program
text, never with our own output.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import jsonschema
import numpy as np
import pytest
import tvm
import tvm.relay.testing
from tvm import relay
from tvm.relay.build_module import bind_params_by_name

from relayviz_instrument import format as fmt
from relayviz_instrument import to_relayviz
from relayviz_instrument.serialize.relay import RelaySerializer

PROGRAMS = Path(__file__).parent / "relay_programs"
SMALL_TENSOR = 16  # docs/format.md: tensors of at most 16 elements carry their values

# --------------------------------------------------------------------------------------
# The census: what the IR holds, and what the document says it holds
# --------------------------------------------------------------------------------------

#: How a Call whose callee is not an Op is counted, by the callee's IR class ...
_IR_CALLEES = {relay.Function: "call of a Function", tvm.ir.GlobalVar: "call of a GlobalVar",
               relay.Constructor: "call of a Constructor", relay.Var: "call of a Var"}
#: ... and by the callee's node kind in the document.
_DOC_CALLEES = {"Function": "call of a Function", "GlobalVar": "call of a GlobalVar",
                "Constructor": "call of a Constructor", "Var": "call of a Var"}
_OTHER_CALLEE = "call of another expression"

#: IR classes counted one per distinct object, and the node kind each becomes.
_COUNTED = {relay.Var: "Var", relay.Let: "Let", relay.If: "If", relay.TupleGetItem: "TupleGetItem",
            relay.Constant: "Const", relay.Tuple: "Tuple", relay.Function: "Function", relay.Match: "Match",
            relay.RefCreate: "RefCreate", relay.RefRead: "RefRead", relay.RefWrite: "RefWrite",
            relay.Constructor: "Constructor", relay.Clause: "Clause", relay.PatternVar: "PatternVar",
            relay.PatternWildcard: "PatternWildcard", relay.PatternConstructor: "PatternConstructor",
            relay.PatternTuple: "PatternTuple"}


def _identity(obj: Any) -> int:
    return tvm.runtime._ffi_api.ObjectPtrHash(obj)


def ir_objects(ir: Any) -> List[Any]:
    """Every distinct expression, clause and pattern reachable from a module or expression.

    ``post_order_visit`` reaches expressions only; the clauses and patterns of each Match (and
    the variables and constructors the patterns hold) are walked here.
    """
    seen: Dict[int, Any] = {}

    def add(obj: Any) -> None:
        seen.setdefault(_identity(obj), obj)

    roots = [func for _, func in ir.functions.items()] if isinstance(ir, tvm.IRModule) else [ir]
    for root in roots:
        relay.analysis.post_order_visit(root, add)
    patterns = []
    for obj in list(seen.values()):
        if isinstance(obj, relay.Match):
            for clause in obj.clauses:
                add(clause)
                patterns.append(clause.lhs)
    while patterns:
        pattern = patterns.pop()
        add(pattern)
        if isinstance(pattern, relay.PatternVar):
            add(pattern.var)
        elif isinstance(pattern, relay.PatternConstructor):
            add(pattern.constructor)
            patterns.extend(pattern.patterns)
        elif isinstance(pattern, relay.PatternTuple):
            patterns.extend(pattern.patterns)
    return list(seen.values())


def ir_census(ir: Any) -> Counter:
    counts: Counter = Counter()
    globals_ = set()
    for obj in ir_objects(ir):
        if isinstance(obj, relay.Call):
            if isinstance(obj.op, tvm.ir.Op):
                counts["call " + obj.op.name] += 1
            else:
                counts[next((key for cls, key in _IR_CALLEES.items() if isinstance(obj.op, cls)), _OTHER_CALLEE)] += 1
        elif isinstance(obj, tvm.ir.GlobalVar):
            globals_.add(obj.name_hint)
        else:
            kind = next((kind for cls, kind in _COUNTED.items() if isinstance(obj, cls)), None)
            if kind is not None:
                counts[kind] += 1
    if isinstance(ir, tvm.IRModule):
        globals_.update(gvar.name_hint for gvar in ir.get_global_vars())
    counts["GlobalVar names"] = len(globals_)
    return +counts


def doc_census(doc: Dict[str, Any], *, functions: bool = True) -> Counter:
    nodes = doc["nodes"]
    counts: Counter = Counter()
    globals_ = {n["name"] for n in nodes if n["node_kind"] == "GlobalVar"}
    if functions:
        globals_.update(doc.get("functions", {}))
    for node in nodes:
        kind = node["node_kind"]
        if kind == "Call":
            callee = nodes[node["op"]]
            if callee["node_kind"] == "Op":
                counts["call " + callee["name"]] += 1
            else:
                counts[_DOC_CALLEES.get(callee["node_kind"], _OTHER_CALLEE)] += 1
        elif kind in _COUNTED.values():
            counts[kind] += 1
    counts["GlobalVar names"] = len(globals_)
    return +counts


@functools.lru_cache(maxsize=None)
def schema_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(fmt.SCHEMA_PATH.read_bytes()))


def check_document(ir: Any, **options: Any) -> Dict[str, Any]:
    """Serialize ``ir``, validate the document both ways, compare the census; return the document."""
    doc = to_relayviz(ir, **options)
    data = fmt.encode(doc)
    loaded = json.loads(data)
    # The schema checks each node on its own, so equal nodes need checking once (Calls never repeat).
    distinct = {json.dumps(node, sort_keys=True): node for node in loaded["nodes"]}
    errors = list(schema_validator().iter_errors(dict(loaded, nodes=list(distinct.values()))))
    assert not errors, errors[0]
    report = fmt.validate(loaded)
    assert report.node_count == len(doc["nodes"]) and not report.unknown_kinds
    assert doc_census(loaded) == ir_census(ir)
    return loaded


def calls_of(doc: Dict[str, Any], op_name: str) -> List[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """``(call node, Op node)`` for every Call of the operator ``op_name``."""
    nodes = doc["nodes"]
    return [(n, nodes[n["op"]]) for n in nodes
            if n["node_kind"] == "Call" and nodes[n["op"]]["node_kind"] == "Op" and nodes[n["op"]]["name"] == op_name]


def main_function(doc: Dict[str, Any]) -> Dict[str, Any]:
    return doc["nodes"][doc["functions"]["main"]]


def tensor_type(ty: Any) -> Dict[str, Any]:
    """A static TensorType as the 1.0 spec writes it."""
    return {"dtype": str(ty.dtype), "shape": [int(d) for d in ty.shape]}


# --------------------------------------------------------------------------------------
# tvm.relay.testing models
# --------------------------------------------------------------------------------------

T = tvm.relay.testing
# Small configurations where the API allows; every one builds on CPU.
WORKLOADS: Dict[str, Callable[[], Tuple[tvm.IRModule, Dict[str, Any]]]] = {
    "resnet18": lambda: T.resnet.get_workload(num_layers=18, batch_size=1),
    "mobilenet": lambda: T.mobilenet.get_workload(batch_size=1),
    "squeezenet1.1": lambda: T.squeezenet.get_workload(batch_size=1, version="1.1"),
    "inception_v3": lambda: T.inception_v3.get_workload(batch_size=1),
    "densenet121": lambda: T.densenet.get_workload(batch_size=1),
    "vgg11": lambda: T.vgg.get_workload(batch_size=1, image_shape=(3, 32, 32), num_classes=10),
    "lstm": lambda: T.lstm.get_workload(iterations=4, num_hidden=8),
    "dcgan": lambda: T.dcgan.get_workload(batch_size=1, ngf=16),
    "dqn": lambda: T.dqn.get_workload(batch_size=1),
    "mlp": lambda: T.mlp.get_workload(batch_size=1),
    "synthetic": lambda: T.synthetic.get_workload(),
}
#: The networks as functions, before create_workload runs type inference on them.
UNTYPED_NETS: Dict[str, Callable[[], Any]] = {
    "resnet18": lambda: T.resnet.get_net(batch_size=1, num_classes=10, num_layers=18),
    "lstm": lambda: T.lstm.get_net(iterations=3, num_hidden=8),
    "dqn": lambda: T.dqn.get_net(batch_size=1),
    "mlp": lambda: T.mlp.get_net(batch_size=1),
}
BOUND = ["resnet18", "squeezenet1.1", "dqn", "mlp", "synthetic"]


@functools.lru_cache(maxsize=None)
def workload(name: str) -> Tuple[tvm.IRModule, Dict[str, Any]]:
    return WORKLOADS[name]()


@functools.lru_cache(maxsize=None)
def workload_document(name: str) -> Dict[str, Any]:
    """The checked document of a workload, made once for the tests that read it."""
    return check_document(workload(name)[0])


@functools.lru_cache(maxsize=None)
def bound_module(name: str) -> tvm.IRModule:
    mod, params = workload(name)
    return tvm.IRModule.from_expr(bind_params_by_name(mod["main"], params))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_document_validates_and_matches_the_ir(name: str) -> None:
    mod, params = workload(name)
    doc = workload_document(name)
    assert sorted(doc["functions"]) == sorted(gv.name_hint for gv in mod.get_global_vars())
    main = main_function(doc)
    ir_main = mod["main"]
    params_doc = [doc["nodes"][p] for p in main["params"]]
    assert [p["name"] for p in params_doc] == [p.name_hint for p in ir_main.params]
    # Every parameter is a tensor: dtype and shape as the checked type says, no other type.
    assert [{"dtype": p["dtype"], "shape": p["shape"]} for p in params_doc] == [
        tensor_type(p.checked_type) for p in ir_main.params]
    assert not any("type" in p for p in params_doc)
    assert set(params) <= {p["name"] for p in params_doc}
    ret = ir_main.checked_type.ret_type
    expected_ret = (tensor_type(ret) if isinstance(ret, tvm.ir.TensorType)
                    else {"kind": "tuple", "fields": [tensor_type(f) for f in ret.fields]})
    assert main["ret_type"] == expected_ret


@pytest.mark.parametrize("name", sorted(UNTYPED_NETS))
def test_untyped_network_and_after_infer_type(name: str) -> None:
    mod = tvm.IRModule.from_expr(UNTYPED_NETS[name]())
    untyped = check_document(mod)
    typed_mod = relay.transform.InferType()(mod)
    typed = check_document(typed_mod)
    assert doc_census(untyped) == doc_census(typed)
    # Before inference nothing is typed but the annotated parameters; after it every Call is.
    assert not any("type" in n for n in untyped["nodes"] if n["node_kind"] == "Call")
    ir_calls = [o for o in ir_objects(typed_mod) if isinstance(o, relay.Call)]
    expected = Counter(json.dumps(_ir_type_json(c.checked_type), sort_keys=True) for c in ir_calls)
    got = Counter(json.dumps(n["type"], sort_keys=True) for n in typed["nodes"] if n["node_kind"] == "Call")
    assert got == expected


def _ir_type_json(ty: Any) -> Any:
    """The RelayViz form of the tensor and tuple types these networks use, from docs/format.md."""
    if isinstance(ty, tvm.ir.TensorType):
        return tensor_type(ty)
    assert isinstance(ty, tvm.ir.TupleType), ty
    return {"kind": "tuple", "fields": [_ir_type_json(f) for f in ty.fields]}


@pytest.mark.parametrize("name", BOUND)
def test_bound_parameters_become_constants(name: str) -> None:
    mod, params = workload(name)
    bound = bound_module(name)
    doc = check_document(bound)
    # Each parameter became one constant, next to those the network already had.
    assert doc_census(doc)["Const"] == len(params) + ir_census(mod)["Const"]
    main = main_function(doc)
    assert [doc["nodes"][p]["name"] for p in main["params"]] == [p.name_hint for p in bound["main"].params]
    consts = [n for n in doc["nodes"] if n["node_kind"] == "Const"]
    ir_consts = [o for o in ir_objects(bound) if isinstance(o, relay.Constant)]
    # array_shape is the NDArray's shape, dtype its dtype, for every constant.
    assert Counter((tuple(c["value"]["array_shape"]), c["dtype"]) for c in consts if isinstance(c["value"], dict)) \
        == Counter((tuple(c.data.shape), c.data.dtype) for c in ir_consts if len(c.data.shape))
    for const in consts:
        if not isinstance(const["value"], dict):
            continue
        if math.prod(const["value"]["array_shape"]) > SMALL_TENSOR:
            assert set(const["value"]) == {"array_shape", "digest"}
            assert re.fullmatch(r"sha256:[0-9a-f]{32}", const["value"]["digest"])
        else:
            assert set(const["value"]) == {"array_shape", "array_value"}
    # A digest identifies dtype, shape and values: as many digests as distinct large arrays.
    large = [c.data.numpy() for c in ir_consts if math.prod(c.data.shape) > SMALL_TENSOR]
    digests = {c["value"]["digest"] for c in consts if isinstance(c["value"], dict) and "digest" in c["value"]}
    assert len(digests) == len({(a.dtype.str, a.shape, a.tobytes()) for a in large})


def _ir_attr(value: Any) -> Any:
    """A conv2d / batch_norm attribute value read from the IR: integer arrays, integers, strings, floats."""
    if isinstance(value, tvm.ir.container.Array):
        return [_ir_attr(v) for v in value]
    if isinstance(value, tvm.tir.IntImm):
        return int(value)
    if isinstance(value, tvm.tir.FloatImm):
        return float(value)
    return value if isinstance(value, (int, float)) else str(value)


def test_conv2d_attributes_are_on_the_op_nodes() -> None:
    mod, _ = workload("resnet18")
    doc = workload_document("resnet18")
    convs = [o for o in ir_objects(mod) if isinstance(o, relay.Call) and getattr(o.op, "name", "") == "nn.conv2d"]
    # a TVM Attrs has keys() but neither iterates nor answers `in`
    expected = Counter(json.dumps({k: _ir_attr(c.attrs[k]) for k in c.attrs.keys()}, sort_keys=True)  # noqa: SIM118  # a TVM Attrs, not a dict
                       for c in convs)
    got = Counter(json.dumps(op["attrs"], sort_keys=True) for _, op in calls_of(doc, "nn.conv2d"))
    assert got == expected
    some = json.loads(next(iter(expected)))
    assert {"strides", "padding", "data_layout", "kernel_layout", "channels", "kernel_size"} <= set(some)
    assert len(expected) > 1  # several distinct configurations ...
    conv_ops = {id(op) for _, op in calls_of(doc, "nn.conv2d")}
    assert len(conv_ops) == len(expected)  # ... one Op node each, shared by the calls that agree
    relus = calls_of(doc, "nn.relu")
    assert relus and all("attrs" not in op for _, op in relus)  # an operator without attributes
    ir_bn = [o for o in ir_objects(mod) if isinstance(o, relay.Call) and getattr(o.op, "name", "") == "nn.batch_norm"]
    # TVM hands bool fields to Python as 0 and 1; their declared type says they are booleans
    booleans = {str(f.name) for f in ir_bn[0].attrs.list_field_info() if str(f.type_info).startswith("bool")}
    assert booleans == {"center", "scale"}
    expected_bn = Counter(json.dumps({k: bool(c.attrs[k]) if k in booleans else _ir_attr(c.attrs[k])
                                      for k in c.attrs.keys()}, sort_keys=True) for c in ir_bn)  # noqa: SIM118  # a TVM Attrs, not a dict
    assert Counter(json.dumps(op["attrs"], sort_keys=True) for _, op in calls_of(doc, "nn.batch_norm")) == expected_bn


def test_a_single_expression_has_a_root_and_no_functions() -> None:
    mod, _ = workload("mlp")
    doc = check_document(mod["main"].body)
    assert "functions" not in doc
    root = doc["nodes"][doc["root"]]
    assert root["node_kind"] == "Call" and doc["nodes"][root["op"]]["name"] == mod["main"].body.op.name
    assert doc["root"] == len(doc["nodes"]) - 1  # children before the nodes that use them


def test_node_ids_are_a_topological_order() -> None:
    doc = workload_document("inception_v3")
    for nid, node in enumerate(doc["nodes"]):
        assert all(target < nid for target in fmt.references(node)), nid


# --------------------------------------------------------------------------------------
# The Relay Prelude: List, Option and Tree ADTs with match
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prelude() -> tvm.IRModule:
    mod = tvm.IRModule()
    relay.prelude.Prelude(mod)
    return mod


@pytest.fixture(scope="module")
def prelude_doc(prelude: tvm.IRModule) -> Dict[str, Any]:
    return check_document(prelude)


def test_prelude_validates_and_matches_the_ir(prelude: tvm.IRModule, prelude_doc: Dict[str, Any]) -> None:
    doc = prelude_doc
    census = doc_census(doc)
    for kind in ("Match", "Clause", "PatternConstructor", "PatternVar", "PatternWildcard", "Constructor"):
        assert census[kind] > 0, kind
    assert len(doc["functions"]) == len(prelude.functions) > 200
    functions = doc["functions"]
    assert all(doc["nodes"][nid]["node_kind"] == "Function" for nid in functions.values())


def test_prelude_type_definitions_follow_the_ir(prelude: tvm.IRModule, prelude_doc: Dict[str, Any]) -> None:
    doc = prelude_doc
    tdefs = doc["type_definitions"]
    expected = {gtv.name_hint: ([tv.name_hint for tv in data.type_vars], [c.name_hint for c in data.constructors],
                                [len(c.inputs) for c in data.constructors])
                for gtv, data in prelude.type_definitions.items()}
    assert {name: ([*d["type_params"]], [c["name"] for c in d["constructors"]],
                   [len(c["inputs"]) for c in d["constructors"]])
            for name, d in tdefs.items()} == expected
    assert {"List", "Option", "Tree"} <= set(tdefs)
    cons = next(c for c in tdefs["List"]["constructors"] if c["name"] == "Cons")
    # Cons(A, List[A]), read from the Prelude's source.
    assert cons["inputs"] == [{"kind": "typevar", "name": "A"},
                              {"kind": "adt", "name": "List", "args": [{"kind": "typevar", "name": "A"}]}]


def _ir_pattern(pattern: Any) -> Any:
    if isinstance(pattern, relay.PatternWildcard):
        return "_"
    if isinstance(pattern, relay.PatternVar):
        return "var " + pattern.var.name_hint
    if isinstance(pattern, relay.PatternConstructor):
        return (pattern.constructor.name_hint, tuple(_ir_pattern(p) for p in pattern.patterns))
    return tuple(_ir_pattern(p) for p in pattern.patterns)


def _doc_pattern(nodes: List[Dict[str, Any]], nid: int) -> Any:
    node = nodes[nid]
    kind = node["node_kind"]
    if kind == "PatternWildcard":
        return "_"
    if kind == "PatternVar":
        return "var " + nodes[node["var"]]["name"]
    if kind == "PatternConstructor":
        return (nodes[node["constructor"]]["name"], tuple(_doc_pattern(nodes, p) for p in node["patterns"]))
    assert kind == "PatternTuple"
    return tuple(_doc_pattern(nodes, p) for p in node["patterns"])


def test_prelude_matches_keep_their_clauses_and_patterns(prelude: tvm.IRModule,
                                                         prelude_doc: Dict[str, Any]) -> None:
    doc = prelude_doc
    nodes = doc["nodes"]
    expected = Counter((bool(m.complete), tuple(_ir_pattern(c.lhs) for c in m.clauses))
                       for m in ir_objects(prelude) if isinstance(m, relay.Match))
    got = Counter((m["complete"], tuple(_doc_pattern(nodes, nodes[c]["lhs"]) for c in m["clauses"]))
                  for m in nodes if m["node_kind"] == "Match")
    assert got == expected
    # A pattern's constructor is the Constructor node of the right ADT.
    for node in nodes:
        if node["node_kind"] == "PatternConstructor":
            ctor = nodes[node["constructor"]]
            assert ctor["node_kind"] == "Constructor"
            assert ctor["name"] in [c["name"] for c in doc["type_definitions"][ctor["adt"]]["constructors"]]


def test_prelude_generic_function_keeps_type_params(prelude: tvm.IRModule, prelude_doc: Dict[str, Any]) -> None:
    doc = prelude_doc
    for name in ("map", "foldl", "hd"):
        func = prelude[name]
        node = doc["nodes"][doc["functions"][name]]
        assert node["type_params"] == [tp.name_hint for tp in func.type_params]
        params = [doc["nodes"][p] for p in node["params"]]
        assert [p["name"] for p in params] == [p.name_hint for p in func.params]
        assert all("type" in p and "dtype" not in p for p in params)  # ADTs and functions, not tensors


# --------------------------------------------------------------------------------------
# Text programs: let, if, recursion, closures, higher-order functions, references, tuples, Any
# --------------------------------------------------------------------------------------


def parse(name: str) -> tvm.IRModule:
    return tvm.relay.fromtext((PROGRAMS / f"{name}.relay").read_text())


PROGRAM_NAMES = sorted(p.stem for p in PROGRAMS.glob("*.relay"))


def test_the_program_set_covers_the_issue() -> None:
    assert {"recursion", "closures", "higher_order", "references", "nested_tuples", "dynamic_shapes",
            "let_if"} <= set(PROGRAM_NAMES)


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_program_validates_and_matches_the_ir(name: str) -> None:
    mod = parse(name)
    check_document(mod)
    check_document(relay.transform.InferType()(mod))
    for _gvar, func in mod.functions.items():  # each function alone, as an expression
        check_document(func)


def test_recursion_goes_through_a_global_var() -> None:
    doc = check_document(parse("recursion"))
    nodes = doc["nodes"]
    sum_to = nodes[doc["functions"]["sum_to"]]
    globals_ = [i for i, n in enumerate(nodes) if n["node_kind"] == "GlobalVar" and n["name"] == "sum_to"]
    assert len(globals_) == 1  # one node, used by both calls (from @main and from @sum_to itself)
    callers = [n for n in nodes if n["node_kind"] == "Call" and n["op"] == globals_[0]]
    assert len(callers) == 2
    body = nodes[sum_to["body"]]
    assert body["node_kind"] == "If"
    assert nodes[body["true_branch"]] is nodes[sum_to["params"][1]]  # `%acc`
    assert nodes[body["false_branch"]] in callers
    assert [nodes[p]["name"] for p in sum_to["params"]] == ["n", "acc"]
    assert sum_to["ret_type"] == {"dtype": "int32", "shape": []}


def test_a_closure_refers_to_the_captured_variable_node() -> None:
    doc = check_document(parse("closures"))
    nodes = doc["nodes"]
    main = main_function(doc)
    x = main["params"][0]
    assert nodes[x]["name"] == "x"
    closures = [n for n in nodes if n["node_kind"] == "Function" and [nodes[p]["name"] for p in n["params"]] == ["z"]]
    assert len(closures) == 1
    body = nodes[closures[0]["body"]]
    assert nodes[body["op"]]["name"] == "multiply"
    assert body["args"][1] == x  # the captured %x is main's parameter node, not a copy
    make_adder = nodes[doc["functions"]["make_adder"]]
    # `-> fn (Tensor[(3), float32]) -> Tensor[(3), float32]`, from the program text.
    tensor3 = {"dtype": "float32", "shape": [3]}
    assert make_adder["ret_type"] == {"kind": "func", "params": [tensor3], "ret": tensor3}
    let_vars = [nodes[n["variable"]] for n in nodes if n["node_kind"] == "Let"]
    assert {v["name"] for v in let_vars} == {"scale_x", "add_y"}
    assert all(v["type"] == {"kind": "func", "params": [tensor3], "ret": tensor3} for v in let_vars)


def test_a_function_typed_parameter_carries_a_type_object() -> None:
    doc = check_document(parse("higher_order"))
    nodes = doc["nodes"]
    twice = nodes[doc["functions"]["twice"]]
    f, t = (nodes[p] for p in twice["params"])
    mat = {"dtype": "float32", "shape": [2, 2]}
    assert f == {"node_kind": "Var", "name": "f", "type": {"kind": "func", "params": [mat], "ret": mat}}
    assert t == {"node_kind": "Var", "name": "t", **mat}
    outer = nodes[twice["body"]]
    inner = nodes[outer["args"][0]]
    assert outer["op"] == inner["op"] == twice["params"][0]  # %f(%f(%t))
    main = main_function(doc)
    calls = [n for n in nodes if n["node_kind"] == "Call" and nodes[n["op"]]["node_kind"] == "GlobalVar"]
    assert len(calls) == 2
    assert all(nodes[c["args"][0]]["node_kind"] == "Var" for c in calls)  # %negate, %square passed as values
    assert main["ret_type"] == mat


def test_references_read_and_write() -> None:
    mod = relay.transform.InferType()(parse("references"))
    doc = check_document(mod)
    nodes = doc["nodes"]
    census = Counter(n["node_kind"] for n in nodes)
    assert (census["RefCreate"], census["RefRead"], census["RefWrite"]) == (1, 3, 2)
    r = next(n for n in nodes if n["node_kind"] == "Var" and n["name"] == "r")
    assert r["type"] == {"kind": "ref", "value": {"dtype": "float32", "shape": []}}
    assert "dtype" not in r
    create = next(n for n in nodes if n["node_kind"] == "RefCreate")
    assert nodes[create["value"]]["name"] == "x"
    for node in nodes:
        if node["node_kind"] in ("RefRead", "RefWrite"):
            assert nodes[node["ref"]] is r
        if node["node_kind"] == "RefWrite":
            assert node["type"] == {"kind": "tuple", "fields": []}  # ref_write returns ()


def test_nested_tuples_and_tuple_get_item_chains() -> None:
    doc = check_document(parse("nested_tuples"))
    nodes = doc["nodes"]

    def chain(nid: int) -> Tuple[str, List[int]]:
        """The variable a TupleGetItem chain starts from, and its indices outermost last."""
        path = []
        while nodes[nid]["node_kind"] == "TupleGetItem":
            path.append(nodes[nid]["index"])
            nid = nodes[nid]["tuple_value"]
        return nodes[nid]["name"], path[::-1]

    out = nodes[main_function(doc)["body"]]
    while out["node_kind"] == "Let":
        out = nodes[out["body"]]
    assert out["node_kind"] == "Tuple"
    first, second, third, fourth = (nodes[f] for f in out["fields"])
    # (%deep.0, (%t.0).1, ((%t.1).1).0, (((%t.0).0,),)), from the program text
    assert chain(out["fields"][0]) == ("deep", [0])
    assert chain(out["fields"][1]) == ("t", [0, 1])
    assert chain(out["fields"][2]) == ("t", [1, 1, 0])
    assert fourth["node_kind"] == "Tuple" and nodes[fourth["fields"][0]]["node_kind"] == "Tuple"
    assert chain(nodes[fourth["fields"][0]]["fields"][0]) == ("t", [0, 0])
    deep_let = next(n for n in nodes if n["node_kind"] == "Let" and nodes[n["variable"]]["name"] == "deep")
    assert chain(deep_let["value"]) == ("t", [1, 1, 1])
    t = next(n for n in nodes if n["node_kind"] == "Var" and n["name"] == "t")
    a, b = {"dtype": "float32", "shape": [2]}, {"dtype": "int32", "shape": [3]}

    def tup(*fields: Any) -> Dict[str, Any]:
        return {"kind": "tuple", "fields": list(fields)}

    assert t["type"] == tup(tup(a, b), tup(b, tup(a, tup(a, b))))
    assert first["type"] == a and second["type"] == b and third["type"] == a


def test_dynamic_dimensions_are_question_marks() -> None:
    doc = check_document(parse("dynamic_shapes"))
    nodes = doc["nodes"]
    main = main_function(doc)
    params = {nodes[p]["name"]: nodes[p] for p in main["params"]}
    assert params["x"]["shape"] == ["?", 3]
    assert params["y"]["shape"] == ["?", "?"]
    assert params["w"]["shape"] == [4, 3]
    assert main["ret_type"] == {"kind": "tuple", "fields": [{"dtype": "float32", "shape": ["?", 4]},
                                                            {"dtype": "float32", "shape": ["?", "?"]}]}
    (dense, op), = calls_of(doc, "nn.dense")
    assert op["attrs"]["units"] == 4
    assert dense["type"] == {"dtype": "float32", "shape": ["?", 4]}


def test_let_chain_with_nested_ifs() -> None:
    doc = check_document(parse("let_if"))
    nodes = doc["nodes"]
    body, names = nodes[main_function(doc)["body"]], []
    while body["node_kind"] == "Let":
        names.append(nodes[body["variable"]]["name"])
        body = nodes[body["body"]]
    assert names == ["a", "b", "c", "d"]
    ifs = [n for n in nodes if n["node_kind"] == "If"]
    assert len(ifs) == 3
    flag = next(i for i, n in enumerate(nodes) if n["node_kind"] == "Var" and n["name"] == "flag")
    assert sum(n["cond"] == flag for n in ifs) == 2  # both `if (%flag)` use the one %flag node
    consts = sorted(n["value"] for n in nodes if n["node_kind"] == "Const" and n["dtype"] == "float32")
    assert consts == [1.0, 2.0, 3.0]
    (greater, _), = calls_of(doc, "greater")
    assert nodes[greater["args"][1]] == {"node_kind": "Const", "value": 3, "dtype": "int32"}


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------
# The Const nodes of a document; tensor values and digests themselves: test_serialize_tensors.py.


def const_node(array: np.ndarray, **options: Any) -> Dict[str, Any]:
    doc = to_relayviz(relay.Constant(tvm.nd.array(array)), **options)
    fmt.validate(doc)
    schema_validator().validate(json.loads(fmt.encode(doc)))
    (node,) = doc["nodes"]
    assert node["node_kind"] == "Const" and node["dtype"] == str(array.dtype)
    return node


def test_a_scalar_constant_is_a_number() -> None:
    assert const_node(np.array(3.25, "float32"))["value"] == 3.25
    assert const_node(np.array(-7, "int64"))["value"] == -7
    assert const_node(np.array(200, "uint8"))["value"] == 200
    flag = const_node(np.array(True))["value"]
    assert flag is True  # a JSON boolean, not 1


@pytest.mark.parametrize("shape", [(16,), (4, 4), (2, 2, 2, 2), (1,), (0, 5)])
def test_a_tensor_of_at_most_16_elements_carries_its_values(shape: Tuple[int, ...]) -> None:
    array = np.arange(math.prod(shape), dtype="int32").reshape(shape) - 5
    node = const_node(array)
    assert node["value"] == {"array_value": array.ravel().tolist(), "array_shape": list(shape)}


@pytest.mark.parametrize("shape", [(17,), (3, 6), (64, 3, 7, 7)])
def test_a_larger_tensor_carries_shape_and_digest(shape: Tuple[int, ...]) -> None:
    array = np.ones(shape, dtype="float32")
    value = const_node(array)["value"]
    assert set(value) == {"array_shape", "digest"}
    assert value["array_shape"] == list(shape)
    assert re.fullmatch(r"sha256:[0-9a-f]{32}", value["digest"])
    full = const_node(array, full_values=True)["value"]
    assert full == {"array_value": array.ravel().tolist(), "array_shape": list(shape)}


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_non_finite_values_are_strings(dtype: str) -> None:
    array = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=dtype)
    assert const_node(array)["value"]["array_value"] == ["nan", "inf", "-inf", 1.5]
    assert const_node(np.array(np.nan, dtype))["value"] == "nan"
    assert const_node(np.array(-np.inf, dtype))["value"] == "-inf"
    big = np.full(40, np.inf, dtype=dtype)
    assert const_node(big, full_values=True)["value"]["array_value"] == ["inf"] * 40
    data = fmt.encode(to_relayviz(relay.Constant(tvm.nd.array(array))))
    assert b"NaN" not in data and b"Infinity" not in data and b"null" not in data
    fmt.loads(data)


def test_equal_constants_in_one_module_share_a_digest_not_a_node() -> None:
    x = relay.var("x", shape=(20,))
    w1 = relay.Constant(tvm.nd.array(np.arange(20, dtype="float32")))
    w2 = relay.Constant(tvm.nd.array(np.arange(20, dtype="float32")))
    w3 = relay.Constant(tvm.nd.array(np.arange(20, dtype="float32") * 2))
    body = relay.add(relay.add(relay.add(x, w1), w2), relay.add(w3, w1))
    doc = check_document(relay.Function([x], body))
    consts = [n for n in doc["nodes"] if n["node_kind"] == "Const"]
    assert len(consts) == 3  # w1 is one node, used twice
    assert consts[0]["value"]["digest"] == consts[1]["value"]["digest"] != consts[2]["value"]["digest"]


# --------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------


def test_fresh_serializers_give_the_same_bytes(prelude: tvm.IRModule) -> None:
    for mod in (bound_module("resnet18"), prelude, parse("closures")):
        first = fmt.encode(RelaySerializer().module(mod))
        assert fmt.encode(RelaySerializer().module(mod)) == first
        assert fmt.encode(to_relayviz(mod)) == first


def test_a_warm_serializer_gives_the_bytes_of_a_fresh_one() -> None:
    # One serializer across the snapshots of a compilation: each pass's output reuses most
    # objects of its input, and the cache must not change a byte of any document.
    serializer = RelaySerializer()
    snapshots = [workload("resnet18")[0], relay.transform.InferType()(bound_module("mlp"))]
    with tvm.transform.PassContext(opt_level=3):
        for mod in list(snapshots):
            for transform in (relay.transform.SimplifyInference(), relay.transform.FoldConstant(),
                              relay.transform.FoldScaleAxis(), relay.transform.FuseOps(fuse_opt_level=2)):
                mod = transform(mod)
                snapshots.append(mod)
    for mod in snapshots:
        warm = fmt.encode(serializer.module(mod))
        assert fmt.encode(serializer.module(mod)) == warm  # the same module again, all from the cache
        assert warm == fmt.encode(RelaySerializer().module(mod))
    fused = check_document(snapshots[5])  # resnet18 after FuseOps
    assert any(n["node_kind"] == "Function" and n.get("attrs", {}).get("Primitive") == 1 for n in fused["nodes"])


def test_a_warm_serializer_sees_types_that_inference_sets_in_place() -> None:
    # InferTypeLocal types an expression without copying it: the same objects gain a
    # checked_type, and a warm serializer must not return what it read before.
    x = relay.var("x", shape=(2, 3))
    body = relay.add(relay.nn.relu(x), relay.const(1.0))
    func = relay.Function([x], body)
    serializer = RelaySerializer()
    untyped = serializer.expr(func)
    assert "type" not in untyped["nodes"][untyped["nodes"][untyped["root"]]["body"]]
    relay.transform.InferTypeLocal(body)
    warm, fresh = serializer.expr(func), RelaySerializer().expr(func)
    assert warm == fresh
    assert warm["nodes"][warm["nodes"][warm["root"]]["body"]]["type"] == {"dtype": "float32", "shape": [2, 3]}


_CHILD = """
import sys, tvm, tvm.relay.testing
from tvm import relay
from tvm.relay.build_module import bind_params_by_name
from relayviz_instrument import dumps
mod, params = tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
bound = tvm.IRModule.from_expr(bind_params_by_name(mod["main"], params))
prelude = tvm.IRModule()
relay.prelude.Prelude(prelude)
for m in (mod, bound, prelude):
    sys.stdout.buffer.write(dumps(m))
"""


def test_documents_are_byte_identical_across_processes() -> None:
    children = []
    for seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        children.append(subprocess.Popen([sys.executable, "-c", _CHILD], env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outputs = [child.communicate(timeout=300) for child in children]
    for child, (_, err) in zip(children, outputs):
        assert child.returncode == 0, err.decode()[-2000:]
    first, second = (out for out, _ in outputs)
    assert first == second
    docs = first.splitlines()
    assert len(docs) == 3
    assert docs[0] == fmt.encode(to_relayviz(workload("resnet18")[0])).rstrip(b"\n")
