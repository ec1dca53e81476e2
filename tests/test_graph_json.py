"""Graph executor JSON and NNVM graph JSON read as RelayViz (serialize/graph_json.py).

Expected values come from the files themselves (the seed's numbers, read straight from the
JSON in the test) or from TVM (graphs built by relay.build), never from our own output.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relayviz_instrument import (GraphJSONError, RelayVizFormatError, RelayVizIOError, dumps, from_graph_json,
                                 read_document, validate)
from relayviz_instrument.format import encode, new_document
from relayviz_instrument.graph_json import format_attr_value, param_names, parse_attr_value

DATA = Path(__file__).parent / "data" / "graph_json"
SEED = DATA / "seed_001.json"
NNVM = DATA / "nnvm_split.json"
TINY = DATA / "tiny_split.json"
MALFORMED = DATA / "malformed"


def _raw(path: Path) -> Dict[str, Any]:
    return json.loads(path.read_text())


def _calls(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [n for n in doc["nodes"] if n["node_kind"] == "Call"]


def _by_graph_node(doc: Dict[str, Any]) -> Dict[int, Dict[str, Any]]:
    return {n["graph"]["node"]: n for n in doc["nodes"] if "graph" in n}


def _entry_lists(graph: Dict[str, Any]) -> Tuple[List[int], Dict[str, List[Any]]]:
    """Row pointers and per-entry lists, computed here from the raw file."""
    if "node_row_ptr" in graph:
        rows = graph["node_row_ptr"]
    else:  # the NNVM file gives num_outputs of the split by its consumers: 2
        counts = [2 if node["op"] == "split" else 1 for node in graph["nodes"]]
        rows = [sum(counts[:i]) for i in range(len(counts) + 1)]
    return rows, {key: value[1] for key, value in graph.get("attrs", {}).items()}


# -- the seed ------------------------------------------------------------------------------


def test_seed_graph_becomes_vars_calls_and_a_main_function():
    graph = _raw(SEED)
    doc = from_graph_json(SEED)
    validate(doc)
    assert doc["ir"] == "graph_executor"
    rows, lists = _entry_lists(graph)
    by_node = _by_graph_node(doc)
    assert sorted(by_node) == list(range(len(graph["nodes"])))
    for nid, raw in enumerate(graph["nodes"]):
        node, eid = by_node[nid], rows[nid]
        if raw["op"] == "null":
            assert node["node_kind"] == "Var"
            assert (node["name"], node["shape"], node["dtype"]) == (
                raw["name"], lists["shape"][eid], lists["dltype"][eid])
        else:
            assert node["node_kind"] == "Call"
            assert doc["nodes"][node["op"]]["name"] == raw["attrs"]["func_name"]
            assert node["graph"]["name"] == raw["name"]
            assert node["type"] == {"dtype": lists["dltype"][eid], "shape": lists["shape"][eid]}
            producers = [by_node[entry[0]] for entry in raw["inputs"]]
            assert [doc["nodes"][a] for a in node["args"]] == producers
        assert node["graph"]["storage_id"] == [lists["storage_id"][eid]]
        assert node["graph"]["device_index"] == [lists["device_index"][eid]]
    main = doc["nodes"][doc["functions"]["main"]]
    assert [doc["nodes"][p]["name"] for p in main["params"]] == [graph["nodes"][i]["name"] for i in graph["arg_nodes"]]
    head = graph["heads"][0][0]
    assert doc["nodes"][main["body"]] is by_node[head]
    assert main["ret_type"] == {"dtype": "float32", "shape": [1, 1, 672, 672]}


def test_seed_attributes_are_parsed():
    doc = from_graph_json(SEED)
    op = doc["nodes"][_calls(doc)[0]["op"]]
    assert op["attrs"] == {
        "num_outputs": 1, "num_inputs": 3, "flatten_data": 0,
        "func_name": "tvmgen_default_fused_nn_conv2d_expand_dims_add_nn_relu",
        "out_layout": "", "kernel_layout": "OIHW", "data_layout": "NCHW", "hash": "30113ca1003060b9",
    }


@pytest.mark.parametrize("text, value", [
    ("(1, 1)", [1, 1]),
    ("[3, 3]", [3, 3]),
    ("1", 1),
    ("-2", -2),
    ("0.5", 0.5),
    ("1e-05", 1e-05),
    ("True", True),
    ("False", False),
    ("None", None),
    ("((1, 2), (3, 4))", [[1, 2], [3, 4]]),
    ('["NCHW", 1]', ["NCHW", 1]),
    ("NCHW", "NCHW"),
    ("", ""),
    ("float32", "float32"),
    ("0x10", "0x10"),
    ("1_000", "1_000"),
    ("(1, 1j)", "(1, 1j)"),
    ("[1, 2", "[1, 2"),
    ("inf", "inf"),
    (3, 3),
])
def test_attribute_strings(text, value):
    assert parse_attr_value(text) == value
    assert type(parse_attr_value(text)) is type(value)


@pytest.mark.parametrize("value", [1, -2, 0.5, 1e-05, True, False, None, [1, 1], [[1, 2], [3, 4]],
                                   ["NCHW", 1], "NCHW", ""])
def test_attribute_values_survive_a_round_trip_through_strings(value):
    assert parse_attr_value(format_attr_value(value)) == value


def test_names_and_digests_stay_strings_even_when_they_look_like_numbers():
    graph = _raw(TINY)
    graph["nodes"][1]["attrs"]["hash"] = "1234567890123456"
    doc = from_graph_json(graph)
    op = doc["nodes"][_calls(doc)[0]["op"]]
    assert op["attrs"]["hash"] == "1234567890123456"


# -- entry ids -------------------------------------------------------------------------------


def test_entry_ids_follow_node_row_ptr_through_a_multi_output_node():
    graph = _raw(TINY)
    rows, lists = _entry_lists(graph)
    doc = from_graph_json(TINY)
    validate(doc)
    by_node = _by_graph_node(doc)
    split, concat = by_node[1], by_node[3]
    assert split["type"] == {"kind": "tuple", "fields": [
        {"dtype": "float32", "shape": lists["shape"][rows[1] + k]} for k in range(3)]}
    args = [doc["nodes"][a] for a in concat["args"]]
    for entry, arg in zip(graph["nodes"][3]["inputs"], args):
        nid, index = entry[0], entry[1]
        if nid == 1:
            assert arg["node_kind"] == "TupleGetItem" and doc["nodes"][arg["tuple_value"]] is split
            assert arg["index"] == index
            assert arg["type"]["shape"] == lists["shape"][rows[nid] + index]
        else:
            assert arg is by_node[nid]
    # p0 is entry 4 (after the split's three outputs), not entry 2
    assert by_node[2]["shape"] == lists["shape"][rows[2]] == [1, 6, 4, 4]
    assert split["graph"]["storage_id"] == lists["storage_id"][rows[1]:rows[2]]


def test_nnvm_graph_without_node_row_ptr():
    graph = _raw(NNVM)
    assert "node_row_ptr" not in graph
    rows, lists = _entry_lists(graph)
    doc = from_graph_json(NNVM)
    validate(doc)
    assert doc["ir"] == "nnvm"
    by_node = _by_graph_node(doc)
    for nid, raw in enumerate(graph["nodes"]):
        node = by_node[nid]
        count = rows[nid + 1] - rows[nid]
        expected = [{"dtype": "float32", "shape": lists["shape"][rows[nid] + k]} for k in range(count)]
        if raw["op"] == "null":
            assert {"dtype": node["dtype"], "shape": node["shape"]} == expected[0]
            continue
        assert doc["nodes"][node["op"]]["name"] == raw["op"]
        assert node["type"] == (expected[0] if count == 1 else {"kind": "tuple", "fields": expected})
    conv = doc["nodes"][by_node[3]["op"]]
    assert conv["attrs"] == {"channels": 4, "kernel_size": [3, 3], "padding": [1, 1], "strides": [1, 1],
                             "dilation": [1, 1], "groups": 1, "use_bias": True, "layout": "NCHW"}
    add = by_node[6]
    second = doc["nodes"][add["args"][1]]
    assert second["node_kind"] == "TupleGetItem" and second["index"] == 1
    main = doc["nodes"][doc["functions"]["main"]]
    body = doc["nodes"][main["body"]]
    assert body["node_kind"] == "Tuple"
    assert body["fields"] == [doc["nodes"].index(add), add["args"][1]]


def test_nnvm_attr_key_and_shapes_without_dtypes():
    graph = _raw(NNVM)
    del graph["attrs"]["dtype"]
    graph["nodes"][3]["attr"] = graph["nodes"][3].pop("attrs")
    doc = from_graph_json(graph)
    validate(doc)
    by_node = _by_graph_node(doc)
    assert doc["nodes"][by_node[3]["op"]]["attrs"]["kernel_size"] == [3, 3]
    assert "type" not in by_node[4]
    assert by_node[4]["graph"]["shape"] == [graph["attrs"]["shape"][1][4], graph["attrs"]["shape"][1][5]]
    assert by_node[0]["shape"] == graph["attrs"]["shape"][1][0] and "dtype" not in by_node[0]


def test_graph_without_attrs_keeps_its_structure():
    graph = _raw(TINY)
    del graph["attrs"]
    doc = from_graph_json(graph)
    validate(doc)
    assert [n.get("type") for n in _calls(doc)] == [None, None]
    assert len(_calls(doc)[1]["args"]) == 4


# -- graphs built by TVM ------------------------------------------------------------------------


@pytest.mark.parametrize("built", ["mlp_built", "resnet18_built"])
def test_graphs_built_by_tvm(built, request):
    lib = request.getfixturevalue(built)
    graph = json.loads(lib.get_graph_json())
    doc = from_graph_json(lib.get_graph_json())
    validate(doc)
    rows, lists = _entry_lists(graph)
    by_node = _by_graph_node(doc)
    for nid in range(len(graph["nodes"])):
        node, eid = by_node[nid], rows[nid]
        ty = node["type"] if node["node_kind"] == "Call" else {"dtype": node["dtype"], "shape": node["shape"]}
        assert ty == {"dtype": lists["dltype"][eid], "shape": lists["shape"][eid]}
        assert node["graph"]["storage_id"] == [lists["storage_id"][eid]]
    names = {doc["nodes"][c["op"]]["name"] for c in _calls(doc)}
    assert names == {n["attrs"]["func_name"] for n in graph["nodes"] if n["op"] == "tvm_op"}
    assert {doc["nodes"][p]["name"] for p in doc["nodes"][doc["functions"]["main"]]["params"]} == \
        set(lib.get_params()) | {"data"}


def test_the_same_graph_gives_the_same_bytes_from_text_bytes_path_and_object():
    text = SEED.read_text()
    docs = [from_graph_json(text), from_graph_json(text.encode()), from_graph_json(SEED),
            from_graph_json(str(SEED)), from_graph_json(json.loads(text))]
    assert len({encode(d) for d in docs}) == 1


# -- read_document ---------------------------------------------------------------------------


def test_read_document_reads_relayviz_and_graph_json(tmp_path):
    rv = tmp_path / "doc.json"
    doc = new_document([{"node_kind": "Var", "name": "x"}], ir="relay", root=0)
    rv.write_bytes(dumps(doc))
    assert read_document(rv) == doc
    assert read_document(SEED) == from_graph_json(SEED)
    assert read_document(NNVM)["ir"] == "nnvm"


@pytest.mark.parametrize("content, error, fragment", [
    ('{"hello": 1}', RelayVizFormatError, "neither a RelayViz document"),
    ('[1, 2]', RelayVizFormatError, "neither a RelayViz document"),
    ('{"format": "relayviz", "version": [1, 1], "nodes": [{"node_kind": "Var"}]}', RelayVizFormatError,
     "missing required field 'name'"),
    ('{"nodes": []}', GraphJSONError, "missing required key 'arg_nodes'"),
    ('{"nodes": [', RelayVizFormatError, "invalid JSON"),
])
def test_read_document_rejects_other_files(tmp_path, content, error, fragment):
    path = tmp_path / "file.json"
    path.write_text(content)
    with pytest.raises(error) as info:
        read_document(path)
    assert fragment in str(info.value) and str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_read_document_names_a_missing_file(tmp_path):
    with pytest.raises(RelayVizIOError, match="cannot read the file") as info:
        read_document(tmp_path / "missing.json")
    assert str(tmp_path / "missing.json") in str(info.value)


# -- the malformed corpus -------------------------------------------------------------------------


def _expected_errors() -> List[Tuple[str, str, str]]:
    rows = []
    for line in (MALFORMED / "EXPECTED.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            name, field, message = line.split("\t")
            rows.append((name, field, message))
    return rows


def test_the_table_lists_every_malformed_file():
    assert sorted(name for name, _, _ in _expected_errors()) == \
        sorted(p.name for p in MALFORMED.glob("*.json"))


def test_the_corpus_base_is_valid():
    validate(from_graph_json(TINY))


@pytest.mark.parametrize("name, field, message", _expected_errors(), ids=lambda v: str(v)[:40])
def test_malformed_graph_json_is_rejected_with_one_line(name, field, message):
    with pytest.raises(GraphJSONError) as info:
        from_graph_json(MALFORMED / name)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(str(MALFORMED / name))
    assert message in text
    if field != "-":
        assert f"field {field}" in text


# -- any damage gives GraphJSONError or a valid document, never a crash ----------------------------


def _paths(value: Any, prefix: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_paths(item, prefix + (i,)))
    return out


_BASES = [_raw(TINY), _raw(NNVM), _raw(SEED)]
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 20) | st.sampled_from(
    ["", "1", "(1, 1)", "tvm_op", "null", "list_int", "list_shape", "[0, 0, 0]"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["op", "name", "inputs", "attrs", "num_outputs", "func_name"]), inner, max_size=3), max_leaves=8)


@given(base=st.sampled_from(range(len(_BASES))), data=st.data())
def test_damaged_graphs_are_rejected_cleanly_or_read_validly(base, data):
    graph = copy.deepcopy(_BASES[base])
    paths = _paths(graph)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        if not path:
            continue
        parent = graph
        try:
            for key in path[:-1]:
                parent = parent[key]
            if data.draw(st.booleans()):
                parent[path[-1]] = data.draw(_JSON)
            elif isinstance(parent, dict):
                del parent[path[-1]]
            else:
                del parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed this path
    try:
        doc = from_graph_json(graph)
    except GraphJSONError as exc:
        assert "\n" not in str(exc)
        return
    validate(doc)


# -- parameter files ----------------------------------------------------------------------------


def test_param_names_reads_the_names_tvm_writes():
    import numpy as np
    import tvm

    params = {"weight": np.ones((2, 3), "float32"), "bias": np.zeros(3, "int8"), "p10": np.float32(1.0)}
    data = bytes(tvm.runtime.save_param_dict({k: tvm.nd.array(v) for k, v in params.items()}))
    assert param_names(data) == list(tvm.runtime.load_param_dict(data).keys())
    assert sorted(param_names(data)) == sorted(params)
    with pytest.raises(RelayVizFormatError, match="not a TVM parameter file"):
        param_names(b"\0" * 40, source="x.params")
    with pytest.raises(RelayVizFormatError, match="truncated"):
        param_names(data[:30])
