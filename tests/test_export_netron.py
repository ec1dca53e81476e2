"""RelayViz documents exported as graph executor JSON for Netron (export/netron.py).

``netron_open`` below restates, independently, the rules of Netron's TVM reader
(``source/tvm.js`` in lutzroeder/netron): how it recognises the file, finds the ``.params``
beside it, decodes that file, and turns nodes, entries, ``arg_nodes`` and ``heads`` into
a graph. Exports are checked against those rules, read back with ``from_graph_json``, and
compared with what TVM reports (relay.build's own graph JSON, Relay's types, TVM's
parameter loader and graph executor).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from relayviz_instrument import (RelayVizExportError, RelayVizFormatError, RelayVizUsageError, from_graph_json,
                                 summarize_graph,
                                 to_graph_executor_json, to_relayviz, write_netron)
from relayviz_instrument.graph_json import params_path
from relayviz_instrument.format import SMALL_TENSOR_ELEMENTS

DATA = Path(__file__).parent / "data" / "graph_json"
X86 = "llvm -mtriple=x86_64-linux-gnu"


# -- Netron's rules, restated -------------------------------------------------------------------

_PARAMS_SIGNATURE = bytes([0xB7, 0x9C, 0x04, 0x05, 0x4F, 0x8D, 0xE5, 0xF7])
_NDARRAY_SIGNATURE = bytes([0x3F, 0xA1, 0xB4, 0x96, 0xF0, 0x40, 0x5E, 0xDD])


@dataclass
class NetronGraph:
    inputs: List[str] = field(default_factory=list)  # graph inputs (arguments without weights)
    initializers: Dict[str, Tuple[str, List[int]]] = field(default_factory=dict)  # name -> (type, shape)
    outputs: List[str] = field(default_factory=list)  # value identifiers
    nodes: List[Dict[str, Any]] = field(default_factory=list)


def _netron_params(data: bytes) -> Dict[str, Tuple[str, List[int]]]:
    """Decode a .params file the way Netron does; fail where Netron would throw."""
    assert data[:8] == _PARAMS_SIGNATURE, "Invalid signature."
    offset = 16  # signature and 8 reserved bytes

    def u64() -> int:
        nonlocal offset
        (value,) = struct.unpack_from("<Q", data, offset)
        offset += 8
        return value

    names = []
    for _ in range(u64()):
        size = u64()
        names.append(data[offset:offset + size].decode("latin-1"))
        offset += size
    count = u64()
    assert len(names) == count, "Invalid parameters."
    out = {}
    for name in names:
        assert data[offset:offset + 8] == _NDARRAY_SIGNATURE, "Invalid signature."
        offset += 16
        _device_type, _device_id, ndim, code, bits, lanes = struct.unpack_from("<IIIBBH", data, offset)
        offset += 16
        shape = list(struct.unpack_from(f"<{ndim}Q", data, offset))
        offset += 8 * ndim
        size = u64()
        assert code in (0, 1, 2), f"Unsupported data type code '{code}'."
        assert lanes == 1, f"Unsupported data type lanes '{lanes}'."
        assert size == math.prod(shape) * bits // 8
        offset += size
        out[name] = (f"{('int', 'uint', 'float')[code]}{bits}", shape)
    assert offset == len(data)
    return out


def netron_open(path: Path) -> NetronGraph:
    """What Netron makes of ``path``; asserts every rule it relies on."""
    # Recognition: a .json file whose root has the lists nodes, arg_nodes and heads, and
    # whose every node is an object with op 'null' or 'tvm_op'.
    assert path.name.lower().endswith(".json") and path.name.rfind(".") > 0
    obj = json.loads(path.read_text())
    assert isinstance(obj, dict)
    for key in ("nodes", "arg_nodes", "heads"):
        assert isinstance(obj[key], list), key
    nodes = obj["nodes"]
    assert all(isinstance(n, dict) and n and n.get("op") in ("null", "tvm_op") for n in nodes)
    # The weights: the .json name with .params instead, if it exists.
    weights_path = path.with_name(path.name[:-len(".json")] + ".params")
    weights = _netron_params(weights_path.read_bytes()) if weights_path.exists() else {}

    # Entries are [node, output, ...]; a node has as many outputs as the entries that use it ask.
    outputs_of = [0] * len(nodes)

    def use(entry: Any) -> Tuple[int, int]:
        assert isinstance(entry, list) and len(entry) >= 2 and all(isinstance(v, int) for v in entry)
        nid, index = entry[0], entry[1]
        assert 0 <= nid < len(nodes) and index >= 0
        outputs_of[nid] = max(outputs_of[nid], index + 1)
        return nid, index

    inputs_of = []
    for node in nodes:
        assert isinstance(node.get("inputs", []), list)
        assert isinstance(node.get("name"), str)
        assert isinstance(node.get("attrs", {}), dict)
        inputs_of.append([use(e) for e in node.get("inputs", [])])
    graph = NetronGraph()
    values: Dict[str, Optional[str]] = {}  # identifier -> initializer name

    def value(identifier: str, initializer: Optional[str] = None) -> str:
        if identifier in values:
            assert initializer is None or initializer == values[identifier], f"Duplicate value '{identifier}'."
        else:
            values[identifier] = initializer
        return identifier

    for head in obj["heads"]:
        nid, index = use(head)
        graph.outputs.append(value(f"[{nid},{index}]"))
    arg_nodes = {i: nodes[i] for i in obj["arg_nodes"] if isinstance(i, int) and i < len(nodes)}
    initializers: Dict[str, str] = {}
    body = [i for i in range(len(nodes)) if i not in arg_nodes]
    for nid in body:
        for src, index in inputs_of[nid]:
            identifier = f"[{src},{index}]"
            arg = arg_nodes.get(src)
            if identifier not in initializers and arg is not None and not arg.get("inputs") \
                    and outputs_of[src] == 1 and arg["name"] in weights:
                initializers[identifier] = arg["name"]
                graph.initializers[arg["name"]] = weights[arg["name"]]
                del arg_nodes[src]
    for nid, arg in arg_nodes.items():
        if not arg.get("inputs") and outputs_of[nid] == 1:
            graph.inputs.append(arg["name"])
            value(f"[{nid},0]")
    for nid in body:
        node = nodes[nid]
        graph.nodes.append({
            "type": node["op"], "name": node["name"], "attributes": dict(node.get("attrs", {})),
            "inputs": [value(f"[{s},{i}]", initializers.get(f"[{s},{i}]")) for s, i in inputs_of[nid]],
            "outputs": [value(f"[{nid},{k}]") for k in range(outputs_of[nid])],
        })
    return graph


def check_netron(path: Path, *, weights: Optional[List[str]] = None) -> NetronGraph:
    """Open ``path`` as Netron would and check the graph is connected and complete."""
    graph = netron_open(path)
    produced = {o for n in graph.nodes for o in n["outputs"]}
    obj = json.loads(path.read_text())
    arguments = {f"[{i},0]" for i in obj["arg_nodes"]}
    for node in graph.nodes:
        assert node["type"] == "tvm_op"
        assert isinstance(node["attributes"]["func_name"], str)
        # TVM's graph executor reads attributes as strings; Netron shows them as they are.
        assert all(isinstance(v, str) for v in node["attributes"].values())
        for identifier in node["inputs"]:
            assert identifier in produced or identifier in arguments
    if weights is not None:
        assert sorted(graph.initializers) == sorted(weights)
        assert not set(graph.inputs) & set(weights)
    return graph


# -- models -------------------------------------------------------------------------------------


def _relay_calls(mod: Any) -> List[Tuple[str, List[List[int]], List[List[int]]]]:
    """(operator, input shapes, output shapes) of every operator call of main, as TVM types them."""
    import tvm
    from tvm import relay

    def shapes(ty: Any) -> List[List[int]]:
        if isinstance(ty, tvm.ir.TupleType):
            return [s for f in ty.fields for s in shapes(f)]
        return [[int(d) for d in ty.shape]]

    calls = []

    def visit(expr: Any) -> None:
        if isinstance(expr, relay.Call) and isinstance(expr.op, tvm.ir.Op):
            calls.append((str(expr.op.name), [s for a in expr.args for s in shapes(a.checked_type)],
                          shapes(expr.checked_type)))
    relay.analysis.post_order_visit(mod["main"], visit)
    return calls


def _rows(summary: Any) -> List[Tuple[str, List[List[int]], List[List[int]]]]:
    return [(r["op"], [i["shape"] for i in r["inputs"]], [o["shape"] for o in r["outputs"]])
            for r in summary.operators]


def _split_model() -> Any:
    import tvm
    from tvm import relay

    x = relay.var("x", shape=(1, 6, 4, 4))
    parts = relay.split(x, 3, axis=1)
    out = relay.Tuple([relay.nn.relu(parts[0]), parts[1] * relay.const(2.0), relay.sigmoid(parts[2])])
    return tvm.IRModule.from_expr(relay.Function([x], out))


def _optimize(mod: Any, params: Dict[str, Any], target: str) -> Any:
    import tvm
    from tvm import relay

    with tvm.transform.PassContext(opt_level=3):
        return relay.optimize(mod, target=target, params=params)[0]


@pytest.fixture(scope="module")
def split_x86() -> Tuple[Any, Any]:
    """``(optimized module, lib)`` of the split model, built for x86 so that it can run."""
    import tvm
    from tvm import relay

    mod = _split_model()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=X86)
    return _optimize(mod, {}, X86), lib


@pytest.fixture(scope="module")
def mlp_x86(mlp: Tuple[Any, Dict[str, Any]]) -> Tuple[Any, Any]:
    import tvm
    from tvm import relay

    mod, params = mlp
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=X86, params=params)
    return _optimize(mod, params, X86), lib


# -- graph JSON goes back unchanged ---------------------------------------------------------------


@pytest.mark.parametrize("built", ["mlp_built", "resnet18_built"])
def test_graphs_built_by_tvm_are_written_back_unchanged(built, request):
    lib = request.getfixturevalue(built)
    export = to_graph_executor_json(from_graph_json(lib.get_graph_json()))
    assert export.graph == json.loads(lib.get_graph_json())
    assert json.loads(export.to_json()) == json.loads(lib.get_graph_json())


def test_seed_and_nnvm_graphs_are_written_back():
    seed = json.loads((DATA / "seed_001.json").read_text())
    assert to_graph_executor_json(from_graph_json(seed)).graph == seed
    nnvm = json.loads((DATA / "nnvm_split.json").read_text())
    graph = to_graph_executor_json(from_graph_json(nnvm)).graph
    assert [n["op"] for n in graph["nodes"]] == ["null"] * 3 + ["tvm_op"] * 4
    assert [n["attrs"]["func_name"] for n in graph["nodes"][3:]] == [n["op"] for n in nnvm["nodes"][3:]]
    assert graph["nodes"][3]["attrs"]["kernel_size"] == "[3, 3]"
    assert graph["nodes"][4]["attrs"]["num_outputs"] == "2"
    assert graph["attrs"]["shape"][1] == nnvm["attrs"]["shape"][1]
    assert graph["node_row_ptr"] == [0, 1, 2, 3, 4, 6, 7, 8]
    assert graph["heads"] == nnvm["heads"] and graph["arg_nodes"] == nnvm["arg_nodes"]


# -- a Relay module after FuseOps maps the way TVM's codegen maps it ---------------------------------


def _compare_with_tvm(exported: Dict[str, Any], built: Dict[str, Any]) -> None:
    for key in ("nodes", "arg_nodes", "heads", "node_row_ptr"):
        assert exported[key] == built[key], key
    for key in ("shape", "dltype"):
        assert exported["attrs"][key] == built["attrs"][key], key
    # No memory plan in a Relay module: one storage per entry, except that a __nop (which the
    # executor skips) shares its input's, as relay.build's plan has it.
    storage, rows = exported["attrs"]["storage_id"][1], exported["node_row_ptr"]
    nops = {rows[i]: rows[n["inputs"][0][0]] + n["inputs"][0][1] for i, n in enumerate(exported["nodes"])
            if n["op"] == "tvm_op" and n["attrs"]["func_name"] == "__nop"}
    built_storage = built["attrs"]["storage_id"][1]
    for eid, source in nops.items():
        assert storage[eid] == storage[source] and built_storage[eid] == built_storage[source]
    assert len(set(storage)) == len(storage) - len(nops)


def test_optimized_relay_module_exports_as_relay_build_writes_it(mlp, mlp_built):
    mod, params = mlp
    exported = to_graph_executor_json(to_relayviz(_optimize(mod, params, "llvm"))).graph
    _compare_with_tvm(exported, json.loads(mlp_built.get_graph_json()))


def test_multi_output_kernels_and_tuple_arguments_export_as_tvm_does(split_x86):
    optimized, lib = split_x86
    exported = to_graph_executor_json(to_relayviz(optimized)).graph
    _compare_with_tvm(exported, json.loads(lib.get_graph_json()))
    assert exported["nodes"][1]["attrs"]["num_outputs"] == "3"


def test_tvm_runs_the_exported_graph_with_the_exported_parameters(mlp_x86, tmp_path):
    import numpy as np
    import tvm
    from tvm.contrib import graph_executor

    optimized, lib = mlp_x86
    paths = write_netron(to_relayviz(optimized, full_values=True), tmp_path / "mlp.json")
    assert paths == [tmp_path / "mlp.json", tmp_path / "mlp.params"]
    reference = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    exported = graph_executor.create(paths[0].read_text(), lib.get_lib(), tvm.cpu())
    exported.load_params(paths[1].read_bytes())
    data = np.random.RandomState(0).uniform(size=(1, 1, 28, 28)).astype("float32")
    for module in (reference, exported):
        module.set_input("data", data)
        module.run()
    np.testing.assert_array_equal(exported.get_output(0).numpy(), reference.get_output(0).numpy())


# -- Netron opens what we write, and it reads back ---------------------------------------------------


def test_seed_graph_for_netron(tmp_path):
    out = tmp_path / "seed.json"
    assert write_netron(from_graph_json(DATA / "seed_001.json"), out) == [out]
    graph = check_netron(out)
    assert graph.inputs == [str(i) for i in range(1, 10)]
    assert [n["name"] for n in graph.nodes][0] == "tvmgen_default_fused_nn_conv2d_expand_dims_add_nn_relu"
    assert graph.outputs == ["[13,0]"]
    assert json.loads(out.read_text()) == json.loads((DATA / "seed_001.json").read_text())


def test_built_graph_with_its_parameters_for_netron(mlp_built, tmp_path):
    import numpy as np
    import tvm

    out = tmp_path / "mlp.json"
    params = mlp_built.get_params()
    write_netron(from_graph_json(mlp_built.get_graph_json()), out, params=params)
    graph = check_netron(out, weights=list(params))
    assert graph.inputs == ["data"]
    loaded = tvm.runtime.load_param_dict(params_path(out).read_bytes())
    assert sorted(loaded) == sorted(params)
    for name in params:
        np.testing.assert_array_equal(loaded[name].numpy(), params[name].numpy())
        # array by array, the bytes are those TVM's own writer gives
        one = bytes(tvm.runtime.save_param_dict({name: params[name]}))
        assert one[one.index(b"\x3f\xa1\xb4\x96"):] in params_path(out).read_bytes()
    for name, (dtype, shape) in graph.initializers.items():
        assert (dtype, shape) == (params[name].dtype, list(params[name].shape))
    reloaded = from_graph_json(out)
    assert _rows(summarize_graph(reloaded)) == _rows(summarize_graph(from_graph_json(mlp_built.get_graph_json())))


def test_relay_module_with_separate_parameters_for_netron(resnet18, tmp_path):
    import numpy as np
    import tvm

    mod, params = resnet18
    out = tmp_path / "resnet18.json"
    write_netron(to_relayviz(mod), out, params=params)
    graph = check_netron(out, weights=list(params))
    assert graph.inputs == ["data"]
    loaded = tvm.runtime.load_param_dict(params_path(out).read_bytes())
    assert sorted(loaded) == sorted(params)
    for name, array in params.items():
        np.testing.assert_array_equal(loaded[name].numpy(), array.numpy())
    assert _rows(summarize_graph(from_graph_json(out))) == _relay_calls(mod)


def test_relay_module_with_bound_constants_for_netron(mlp, tmp_path):
    import numpy as np
    import tvm
    from tvm import relay

    mod, params = mlp
    bound = tvm.IRModule.from_expr(relay.build_module.bind_params_by_name(mod["main"], params))
    bound = relay.transform.InferType()(bound)
    out = tmp_path / "mlp.json"
    write_netron(to_relayviz(bound, full_values=True), out)
    constants = []
    relay.analysis.post_order_visit(bound["main"], lambda e: constants.append(e.data.numpy())
                                    if isinstance(e, relay.Constant) else None)
    names = [f"p{i}" for i in range(len(constants))]
    graph = check_netron(out, weights=names)
    assert graph.inputs == ["data"]
    loaded = tvm.runtime.load_param_dict(params_path(out).read_bytes())
    for name, array in zip(names, constants):
        np.testing.assert_array_equal(loaded[name].numpy(), array)
    assert _rows(summarize_graph(from_graph_json(out))) == _relay_calls(bound)


def test_constants_known_only_by_digest_have_no_values(mlp, tmp_path):
    import tvm
    from tvm import relay

    mod, params = mlp
    bound = relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.build_module.bind_params_by_name(mod["main"], params)))
    sizes = []
    relay.analysis.post_order_visit(bound["main"], lambda e: sizes.append(e.data.numpy().size)
                                    if isinstance(e, relay.Constant) else None)
    small = [f"p{i}" for i, size in enumerate(sizes) if size <= SMALL_TENSOR_ELEMENTS]
    assert 0 < len(small) < len(sizes)
    out = tmp_path / "mlp.json"
    write_netron(to_relayviz(bound), out)  # large weights carry digests, not values
    graph = check_netron(out, weights=small)
    assert sorted(graph.inputs) == sorted(["data"] + [f"p{i}" for i in range(len(sizes)) if f"p{i}" not in small])


def test_nnvm_graph_for_netron(tmp_path):
    out = tmp_path / "nnvm.json"
    write_netron(from_graph_json(DATA / "nnvm_split.json"), out)
    graph = check_netron(out)
    assert [n["attributes"]["func_name"] for n in graph.nodes] == ["conv2d", "split", "relu", "elemwise_add"]
    assert graph.nodes[1]["outputs"] == ["[4,0]", "[4,1]"]
    assert graph.nodes[3]["inputs"] == ["[5,0]", "[4,1]"]
    raw = json.loads((DATA / "nnvm_split.json").read_text())
    assert [o["shape"] for r in summarize_graph(from_graph_json(out)).operators for o in r["outputs"]] == \
        raw["attrs"]["shape"][1][3:]


def test_output_is_deterministic(resnet18, tmp_path):
    mod, params = resnet18
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_netron(to_relayviz(mod), first, params=params)
    write_netron(to_relayviz(mod), second, params=params)
    assert first.read_bytes() == second.read_bytes()
    assert params_path(first).read_bytes() == params_path(second).read_bytes()


# -- what cannot be exported ----------------------------------------------------------------------


def test_control_flow_is_refused_naming_the_node():
    import tvm
    from tvm import relay

    x = relay.var("x", shape=(2,))
    cond = relay.var("c", shape=(), dtype="bool")
    func = relay.Function([x, cond], relay.If(cond, relay.nn.relu(x), relay.negative(x)))
    doc = to_relayviz(relay.transform.InferType()(tvm.IRModule.from_expr(func)))
    if_id = next(i for i, n in enumerate(doc["nodes"]) if n["node_kind"] == "If")
    with pytest.raises(RelayVizExportError, match=rf"node {if_id} \(If\): not a dataflow expression"):
        to_graph_executor_json(doc)


def test_netron_needs_a_json_file_name(tmp_path):
    with pytest.raises(RelayVizUsageError, match=r"only in files named \*\.json"):
        write_netron(from_graph_json(DATA / "seed_001.json"), tmp_path / "graph.txt")
    assert list(tmp_path.iterdir()) == []


def test_parameters_of_the_wrong_shape_are_refused(mlp_built, tmp_path):
    import numpy as np

    params = dict(mlp_built.get_params())
    params["p1"] = np.zeros((3, 3), "float32")
    with pytest.raises(RelayVizFormatError, match=r"parameter 'p1' has shape \[3, 3\] but the graph's node 3"):
        write_netron(from_graph_json(mlp_built.get_graph_json()), tmp_path / "mlp.json", params=params)
    assert list(tmp_path.iterdir()) == []
