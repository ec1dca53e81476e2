"""Relax -> RelayViz on programs no one here wrote: TVMScript modules, tvm.relax.frontend.nn and
PyTorch models, and what TVM's own pipelines make of them.

Per node kind, the counts in a document must equal the counts of a walk of the IR made with
TVM's visitors (``relaxprograms.ir_census``), never the serializer's own output. Runs on both
legs: TVM 0.16's Relax (struct info, PrimValue, DataTypeImm) and TVM 0.2x's (types).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

relax = pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

import tvm  # noqa: E402  # after the importorskip above

from conftest import needs_torch  # noqa: E402  # after the importorskip above
from relaxprograms import NEW_TVM, build_pipeline, doc_census, ir_census, load_program, tensor  # noqa: E402  # after the importorskip above
from relayviz_instrument import format as fmt  # noqa: E402  # after the importorskip above
from relayviz_instrument import to_relayviz  # noqa: E402  # after the importorskip above
from relayviz_instrument.demo.relax_models import relax_workload  # noqa: E402  # after the importorskip above
from relayviz_instrument.serialize import module_ir, serializer_for  # noqa: E402  # after the importorskip above

#: Every Relax node kind a document can hold (DataflowVar: a Var with "dataflow": true).
RELAX_KINDS = {"Function", "Var", "DataflowVar", "Call", "Op", "ExternFunc", "GlobalVar", "Const", "Tuple",
               "TupleGetItem", "If", "SeqExpr", "BindingBlock", "DataflowBlock", "VarBinding", "MatchCast",
               "ShapeExpr", "PrimValue", "StringImm", "DataTypeImm", "PrimFunc"}


def _programs():
    yield "every_kind", load_program("every_kind")
    mlp = relax_workload("mlp")
    yield "mlp", mlp
    zero = relax.get_pipeline("zero")(mlp)
    yield "mlp_zero", zero
    yield "mlp_built", build_pipeline()(zero)


@pytest.fixture(scope="module")
def programs():
    return dict(_programs())


def _document(mod):
    doc = serializer_for("relax", tir_bodies=False).module(mod)
    fmt.validate(doc)
    return doc


@pytest.mark.parametrize("name", ["every_kind", "mlp", "mlp_zero", "mlp_built"])
def test_counts_per_kind_equal_tvms_own_walk(programs, name):
    mod = programs[name]
    assert module_ir(mod) == "relax"
    assert doc_census(_document(mod)) == ir_census(mod)


@needs_torch
@pytest.mark.parametrize("stage", ["imported", "zero", "built"])
def test_counts_of_a_pytorch_model_equal_tvms_own_walk(stage):
    mod = relax_workload("cnn")
    if stage != "imported":
        mod = relax.get_pipeline("zero")(mod)
    if stage == "built":
        mod = build_pipeline()(mod)
    assert doc_census(_document(mod)) == ir_census(mod)


def test_every_relax_node_kind_is_produced(programs):
    produced = set()
    for mod in programs.values():
        produced |= set(doc_census(_document(mod))[0]) | {"Op", "GlobalVar"}
    assert produced == RELAX_KINDS
    # TVM 0.2x has no PrimValue or DataTypeImm classes: scalars and dtypes used as values are.
    assert hasattr(relax, "PrimValue") is (not NEW_TVM)


def test_struct_info_becomes_types_with_symbolic_dimensions():
    n = tvm.tirx.Var("n", "int64") if NEW_TVM else tvm.tir.Var("n", "int64")
    x = relax.Var("x", tensor([n, 4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            doubled = bb.emit(relax.op.concat([x, x], axis=0))
            pair = bb.emit(relax.Tuple([doubled, x]))
            out = bb.emit_output(relax.TupleGetItem(pair, 0))
        bb.emit_func_output(out)
    doc = to_relayviz(bb.get())
    nodes = doc["nodes"]
    x_node = next(n for n in nodes if n["node_kind"] == "Var" and n["name"] == "x")
    assert x_node["dtype"] == "float32" and x_node["shape"] == ["n", 4]
    concat = next(n for n in nodes if n["node_kind"] == "Call" and nodes[n["op"]]["name"] == "relax.concat")
    assert concat["type"] == {"dtype": "float32", "shape": ["n * 2", 4]}
    tup = next(nodes[b["value"]] for b in nodes if b["node_kind"] == "VarBinding"
               and nodes[b["value"]]["node_kind"] == "Tuple")  # the pair, not concat's argument
    assert tup["type"] == {"kind": "tuple", "fields": [{"dtype": "float32", "shape": ["n * 2", 4]},
                                                       {"dtype": "float32", "shape": ["n", 4]}]}
    func = nodes[doc["functions"]["main"]]
    assert func["ret_type"] == {"dtype": "float32", "shape": ["n * 2", 4]}
    bound = [nodes[b["var"]] for b in nodes if b["node_kind"] == "VarBinding"]
    assert [v.get("dataflow", False) for v in bound] == [True, True, False]  # the output is visible


def test_shapes_objects_scalars_and_callables_are_types(programs):
    nodes = to_relayviz(programs["every_kind"])["nodes"]
    by_name = {n["name"]: n for n in nodes if n["node_kind"] == "Var"}
    assert by_name["s"]["type"] == {"kind": "shape", "values": ["n", 2]}
    assert by_name["p"]["type"] == {"kind": "object"}
    assert by_name["t"]["type"]["kind"] == "tuple"
    extern = next(n for n in nodes if n["node_kind"] == "ExternFunc")
    assert extern["global_symbol"] == "my_func"
    packed = next(n for n in nodes if n["node_kind"] == "Call" and nodes[n["op"]]["node_kind"] == "ExternFunc")
    assert packed["sinfo_args"] == [{"kind": "object"}]
    assert [nodes[a]["node_kind"] for a in packed["args"]] == ["Var", "PrimValue", "StringImm", "DataTypeImm"]
    assert nodes[packed["args"][1]]["value"] == 3 and nodes[packed["args"][3]]["value"] == "float32"
    match = next(n for n in nodes if n["node_kind"] == "MatchCast")
    assert match["type"] == {"dtype": "float32", "shape": ["n"]}
    main = nodes[to_relayviz(programs["every_kind"])["functions"]["main"]]
    assert main["pure"] is False


def test_call_tir_refers_to_the_primfunc_it_calls(programs):
    doc = to_relayviz(programs["mlp_zero"])
    nodes, functions = doc["nodes"], doc["functions"]
    calls = [n for n in nodes if n["node_kind"] == "Call" and nodes[n["op"]].get("name") == "relax.call_tir"]
    assert calls
    for call in calls:
        callee = nodes[call["args"][0]]
        assert callee["node_kind"] == "GlobalVar"
        assert nodes[functions[callee["name"]]]["node_kind"] == "PrimFunc"
        assert nodes[functions[callee["name"]]]["name"] == callee["name"]
        assert call["sinfo_args"] == [call["type"]]


def test_fused_functions_keep_their_attributes(programs):
    doc = to_relayviz(relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(
        relax.transform.LegalizeOps()(programs["mlp"]))))
    nodes = doc["nodes"]
    fused = [nodes[i] for name, i in doc["functions"].items() if name.startswith("fused_")]
    assert fused and all(f["node_kind"] == "Function" and f["attrs"]["Primitive"] in (1, True) for f in fused)


def test_a_deep_binding_chain_needs_no_recursion():
    depth = 3 * sys.getrecursionlimit()
    x = relax.Var("x", tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            value = x
            for _ in range(depth):
                value = bb.emit(relax.op.negative(value))
            out = bb.emit_output(value)
        bb.emit_func_output(out)
    doc = to_relayviz(bb.get())
    fmt.validate(doc)
    assert sum(n["node_kind"] == "VarBinding" for n in doc["nodes"]) == depth + 1


def test_a_shared_subexpression_is_one_node():
    x = relax.Var("x", tensor([2]))
    const = relax.const([1.0, 2.0], "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.add(x, const))
            b = bb.emit(relax.op.multiply(a, const))
            out = bb.emit_output(relax.Tuple([a, b, a]))
        bb.emit_func_output(out)
    nodes = to_relayviz(bb.get())["nodes"]
    consts = [i for i, n in enumerate(nodes) if n["node_kind"] == "Const"]
    assert len(consts) == 1 and nodes[consts[0]]["value"] == {"array_value": [1.0, 2.0], "array_shape": [2]}
    tup = next(n for n in nodes if n["node_kind"] == "Tuple")
    assert tup["fields"][0] == tup["fields"][2] != tup["fields"][1]


def test_documents_follow_the_shipped_json_schema(programs):
    jsonschema = pytest.importorskip("jsonschema")
    import orjson

    schema = orjson.loads(fmt.SCHEMA_PATH.read_bytes())
    for mod in programs.values():
        jsonschema.validate(to_relayviz(mod), schema)


def test_one_function_serializes_with_a_root(programs):
    doc = to_relayviz(programs["every_kind"]["main"])
    assert doc["ir"] == "relax" and doc["nodes"][doc["root"]]["node_kind"] == "Function"


def test_the_same_module_gives_the_same_bytes_in_another_process(tmp_path):
    # The mlp model is built in each process anew: nothing is shared but the code.
    script = textwrap.dedent("""
        import sys
        from tvm import relax
        from relayviz_instrument import dumps
        from relayviz_instrument.demo.relax_models import relax_workload
        sys.stdout.buffer.write(dumps(relax.get_pipeline("zero")(relax_workload("mlp"))))
    """)
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] == runs[1] and runs[0].startswith(b'{"format":"relayviz"')


def test_the_package_never_imports_relay():
    # Importing the package and making a trace import no Relay, on a TVM that has it (hhb-tvm,
    # whose own tvm.relax imports it) as on one that does not.
    script = textwrap.dedent("""
        import sys
        import tvm
        import relayviz_instrument
        from relayviz_instrument import RelayVizTrace, load, show_trace
        trace = RelayVizTrace(False)
        print(sorted(m for m in sys.modules if m == "tvm.relay" or m.startswith("tvm.relay.")))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
