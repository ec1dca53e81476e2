"""The operator table of a built graph (graph_inspect.py), checked against TVM.

Oracles: the seed's own numbers; Relay type inference rerun on each fused function that
relay.build compiled (``lib.function_metadata``); and TVM's graph executor, which reports
the shapes of the graph's inputs and outputs. This TVM build targets RISC-V by default, so
graphs that must run are built for ``llvm -mtriple=x86_64-linux-gnu``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from relayviz_instrument import RelayVizFormatError, from_graph_json, summarize_graph, to_relayviz

DATA = Path(__file__).parent / "data" / "graph_json"
X86 = "llvm -mtriple=x86_64-linux-gnu"


def _build(mod: Any, params: Dict[str, Any], target: str) -> Any:
    import tvm
    from tvm import relay

    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target=target, params=params)


def _split_model() -> Any:
    """A split whose three outputs feed three kernels: a multi-output tvm_op and tuple inputs."""
    import tvm
    from tvm import relay

    x = relay.var("x", shape=(1, 6, 4, 4))
    parts = relay.split(x, 3, axis=1)
    out = relay.Tuple([relay.nn.relu(parts[0]), parts[1] * relay.const(2.0), relay.sigmoid(parts[2])])
    return tvm.IRModule.from_expr(relay.Function([x], out))


@pytest.fixture(scope="module")
def dqn_x86() -> Any:
    import tvm.relay.testing

    mod, params = tvm.relay.testing.dqn.get_workload(batch_size=1)
    return _build(mod, params, X86)


@pytest.fixture(scope="module")
def split_x86() -> Any:
    return _build(_split_model(), {}, X86)


# -- the seed ------------------------------------------------------------------------------------


def test_seed_001_answers_the_question():
    summary = summarize_graph(from_graph_json(DATA / "seed_001.json"))
    first = summary.operators[0]
    assert first["name"] == first["op"] == "tvmgen_default_fused_nn_conv2d_expand_dims_add_nn_relu"
    assert [(i["node"], i["index"], i["shape"], i["dtype"]) for i in first["inputs"]] == [
        ("1", 0, [1, 1, 224, 224], "float32"), ("2", 0, [64, 1, 5, 5], "float32"), ("3", 0, [64], "float32")]
    assert first["outputs"] == [{"shape": [1, 64, 224, 224], "dtype": "float32", "storage_id": 9}]
    assert summary.outputs == [{"node": "tvmgen_default_fused_reshape_transpose_reshape", "index": 0,
                                "shape": [1, 1, 672, 672], "dtype": "float32"}]
    assert [r["outputs"][0]["storage_id"] for r in summary.operators] == [9, 10, 9, 10, 9]
    assert [r["inputs"][0]["node"] for r in summary.operators[1:]] == [r["name"] for r in summary.operators[:-1]]
    assert [a["name"] for a in summary.inputs] == [str(i) for i in range(1, 10)]
    assert summary.params == []


def test_parameter_names_split_the_arguments():
    summary = summarize_graph(from_graph_json(DATA / "seed_001.json"),
                              param_names=[str(i) for i in range(2, 10)])
    assert summary.inputs == [{"name": "1", "shape": [1, 1, 224, 224], "dtype": "float32"}]
    assert [p["name"] for p in summary.params] == [str(i) for i in range(2, 10)]


def test_nnvm_multi_output_node():
    summary = summarize_graph(from_graph_json(DATA / "nnvm_split.json"))
    rows = {r["name"]: r for r in summary.operators}
    assert [r["name"] for r in summary.operators] == ["conv1", "split1", "relu1", "add1"]
    assert rows["split1"]["outputs"] == [{"shape": [1, 2, 8, 8], "dtype": "float32", "storage_id": None}] * 2
    assert [(i["node"], i["index"]) for i in rows["add1"]["inputs"]] == [("relu1", 0), ("split1", 1)]
    assert [(o["node"], o["index"]) for o in summary.outputs] == [("add1", 0), ("split1", 1)]


def test_documents_of_other_dialects_are_refused(mlp):
    mod, _ = mlp
    with pytest.raises(RelayVizFormatError, match="'ir' is 'relay'"):
        summarize_graph(to_relayviz(mod))


# -- against Relay type inference ----------------------------------------------------------------


def _flat(ty: Any) -> List[Tuple[List[int], str]]:
    import tvm

    if isinstance(ty, tvm.ir.TupleType):
        return [leaf for field in ty.fields for leaf in _flat(field)]
    return [([int(d) for d in ty.shape], str(ty.dtype))]


def _inferred_signatures(lib: Any) -> Dict[str, Tuple[List[Any], List[Any]]]:
    """Kernel name (and ``hash:<h>``) -> flattened parameter and result types, from type inference."""
    import tvm
    from tvm import relay

    out = {}
    for name, info in lib.function_metadata.items():
        if name == "__tvm_main__":
            continue
        (func,) = info.relay_primfuncs.values()
        fresh = relay.Function(list(func.params), func.body)  # no attributes: infer from scratch
        ty = relay.transform.InferType()(tvm.IRModule.from_expr(fresh))["main"].checked_type
        signature = ([leaf for arg in ty.arg_types for leaf in _flat(arg)], _flat(ty.ret_type))
        out[str(name)] = signature
        out["hash:" + str(func.attrs["hash"])] = signature
    return out


@pytest.mark.parametrize("built", ["mlp_built", "resnet18_built", "dqn_x86", "split_x86"])
def test_every_operator_matches_relay_type_inference(built, request):
    lib = request.getfixturevalue(built)
    graph = json.loads(lib.get_graph_json())
    signatures = _inferred_signatures(lib)
    summary = summarize_graph(from_graph_json(lib.get_graph_json()))
    assert len(summary.operators) == sum(1 for n in graph["nodes"] if n["op"] == "tvm_op")
    checked = 0
    for row, node in zip(summary.operators, [n for n in graph["nodes"] if n["op"] == "tvm_op"]):
        key = row["op"] if row["op"] != "__nop" else "hash:" + node["attrs"]["hash"]
        params, results = signatures[key]
        assert [(i["shape"], i["dtype"]) for i in row["inputs"]] == params, row["name"]
        assert [(o["shape"], o["dtype"]) for o in row["outputs"]] == results, row["name"]
        checked += 1
    assert checked == len(summary.operators) > 0


# -- against TVM's graph executor ----------------------------------------------------------------


@pytest.mark.parametrize("built", ["dqn_x86", "split_x86"])
def test_graph_inputs_and_outputs_match_the_graph_executor(built, request):
    import tvm
    from tvm.contrib import graph_executor

    lib = request.getfixturevalue(built)
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    params = set(lib.get_params())
    summary = summarize_graph(from_graph_json(lib.get_graph_json()), param_names=params)

    shapes, dtypes = module.get_input_info()
    arguments = summary.inputs + summary.params
    assert len(arguments) == module.get_num_inputs() == len(shapes)
    for arg in arguments:
        assert arg["shape"] == [int(d) for d in shapes[arg["name"]]], arg["name"]
        assert arg["dtype"] == str(dtypes[arg["name"]])
        assert tuple(arg["shape"]) == module.get_input(arg["name"]).shape
    assert {p["name"] for p in summary.params} == params
    assert len(summary.inputs) == len(arguments) - len(params)

    assert len(summary.outputs) == module.get_num_outputs()
    for i, out in enumerate(summary.outputs):
        assert tuple(out["shape"]) == module.get_output(i).shape
        assert out["dtype"] == module.get_output(i).dtype

    by_name = {a["name"]: a for a in arguments}
    for row in summary.operators:
        for item in row["inputs"]:
            if item["node"] in by_name:
                assert tuple(item["shape"]) == module.get_input(item["node"]).shape
