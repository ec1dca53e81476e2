"""The RelayViz loader and validator: a corpus of malformed files, the CLI, and properties.

Every file in ``tests/data/malformed/`` is written by hand and listed in ``MALFORMED`` with
the node, the field and the reason its error message must name. The hypothesis tests build
documents from their own description of the format (not from the kind tables in
``relayviz_instrument.format``), so they check the validator against the documentation.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import jsonschema
import pytest
from hypothesis import assume, given, strategies as st

from relayviz_instrument import format as fmt
from relayviz_instrument.errors import RelayVizFormatError, RelayVizIOError, UnknownNodeKindWarning

DATA = Path(__file__).parent / "data"
MALFORMED_DIR = DATA / "malformed"
VALID_DIR = DATA / "valid"

# file -> (node label or None for a root-level error, field or None, the reason)
MALFORMED: Dict[str, Tuple[Optional[str], Optional[str], str]] = {
    "invalid_json.json": (None, None, "invalid JSON"),
    "root_not_object.json": (None, None, "the root must be a JSON object, not a list"),
    "wrong_format_tag.json": (None, "format", "'format' is 'relay-viz', expected 'relayviz'"),
    "unknown_major_version.json": (None, "version", "unknown major version 2.0"),
    "version_not_pair.json": (None, "version", "'version' must be [major, minor]"),
    "nodes_not_list.json": (None, "nodes", "'nodes' must be a list, not an object"),
    "ir_not_string.json": (None, "ir", "'ir' must be a string"),
    "node_not_object.json": ("node 1", None, "a node must be a JSON object, not a list"),
    "missing_node_kind.json": ("node 2", "node_kind", "missing or non-string 'node_kind'"),
    "unknown_kind_known_version.json": ("node 1 (Lambda)", "node_kind", "unknown node kind 'Lambda'"),
    "missing_required_field.json": ("node 2 (Call)", "args", "missing required field 'args'"),
    "var_name_not_string.json": ("node 0 (Var)", "name", "must be a string, not the number 3"),
    "bool_as_reference.json": ("node 2 (Call)", "op", "must be a node id (integer), not a boolean"),
    "string_as_reference.json": ("node 3 (Call)", "args[1]", "not the string '1'"),
    "args_not_list.json": ("node 2 (Call)", "args", "must be a list of node ids"),
    "index_not_integer.json": ("node 1 (TupleGetItem)", "index", "must be an integer, not the string '1'"),
    "reference_out_of_range.json": ("node 2 (Call)", "args[1]",
                                    "reference 7 is out of range (the document has 3 nodes)"),
    "negative_reference.json": ("node 1 (Tuple)", "fields[1]", "reference -1 is out of range"),
    "call_op_is_tuple.json": ("node 2 (Call)", "op",
                              "points at a Tuple node; expected an Op or a callable expression"),
    "call_op_is_const.json": ("node 1 (Call)", "op",
                              "points at a Const node; expected an Op or a callable expression"),
    "function_param_not_var.json": ("node 2 (Function)", "params[1]", "points at a Const node; expected Var"),
    "let_variable_not_var.json": ("node 2 (Let)", "variable", "points at an Op node; expected Var"),
    "clause_lhs_not_pattern.json": ("node 2 (Clause)", "lhs", "points at a Var node; expected PatternConstructor"),
    "match_clause_not_clause.json": ("node 2 (Match)", "clauses[0]",
                                     "points at a PatternWildcard node; expected Clause"),
    "pattern_var_not_var.json": ("node 1 (PatternVar)", "var", "points at a PatternWildcard node; expected Var"),
    "self_loop.json": ("node 1 (Tuple)", "fields[1]", "reference cycle 1 -> 1"),
    "cycle_of_three.json": ("node 3 (Tuple)", "fields[0]", "reference cycle 2 -> 4 -> 3 -> 2"),
    "cycle_through_let_body.json": ("node 2 (If)", "false_branch", "reference cycle 1 -> 2 -> 1"),
    "unknown_type_kind.json": ("node 0 (Var)", "type.kind", "unknown type kind 'function'"),
    "tensor_type_dtype_not_string.json": ("node 1 (Function)", "ret_type.dtype",
                                          "a tensor type needs a string 'dtype'"),
    "nested_type_missing_ret.json": ("node 1 (Tuple)", "type.fields[0].ret", "a type must be an object, not null"),
    "shape_not_list.json": ("node 0 (Var)", "shape", "a shape must be a list, not the string '1x3'"),
    "fractional_dimension.json": ("node 0 (Var)", "shape[1]", "a dimension must be an integer"),
    "const_value_is_list.json": ("node 0 (Const)", "value", "a constant value must be a number"),
    "const_value_count_mismatch.json": ("node 0 (Const)", "value.array_value",
                                        "holds 3 values but array_shape [2, 2] has 4 elements"),
    "const_neither_values_nor_digest.json": ("node 0 (Const)", "value",
                                             "needs 'array_value' or a string 'digest'"),
    "const_nonfinite_spelling.json": ("node 0 (Const)", "value.array_value", "must be a flat list of numbers"),
    "match_complete_not_bool.json": ("node 3 (Match)", "complete", "must be true or false"),
    "binds_value_not_reference.json": ("node 1 (Bind)", "binds.x", "not the string 'node_0'"),
    "functions_out_of_range.json": (None, "functions.main", "refers to 2, not a node id in range"),
    "functions_names_a_var.json": (None, "functions.main", "function 'main' refers to a Var node"),
    "root_out_of_range.json": (None, "root", "'root' must be a node id in range, not 5"),
}


def test_the_table_lists_every_malformed_file() -> None:
    assert sorted(p.name for p in MALFORMED_DIR.glob("*.json")) == sorted(MALFORMED)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_load_rejects_malformed_file_with_one_line_naming_file_node_field(name: str) -> None:
    node, field, reason = MALFORMED[name]
    path = MALFORMED_DIR / name
    with pytest.raises(RelayVizFormatError) as info:
        fmt.load(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert reason in message
    if node is None:
        assert "node " not in message.split(":")[0]
    else:
        assert node in message
    if field is not None:
        assert f"field '{field}'" in message
        assert info.value.field == field
    # The same bytes, without a file, are rejected with the same reason.
    with pytest.raises(RelayVizFormatError, match=re.escape(reason)):
        fmt.loads(path.read_bytes())


def test_load_names_an_unreadable_path() -> None:
    missing = DATA / "no_such_file.json"
    with pytest.raises(RelayVizIOError, match="cannot read the file") as info:  # not a format error
        fmt.load(missing)
    assert str(missing) in str(info.value) and not isinstance(info.value, RelayVizFormatError)
    with pytest.raises(RelayVizIOError, match="cannot read the file"):
        fmt.load(DATA)  # a directory


def test_newer_minor_version_keeps_unknown_kinds_and_warns() -> None:
    path = VALID_DIR / "newer_minor_unknown_kind.json"
    with pytest.warns(UnknownNodeKindWarning) as caught:
        doc = fmt.load(path)
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "'Hint'" in messages[0] and "'QuantizedOp'" in messages[1]
    assert all(str(path) in m for m in messages)
    assert doc["nodes"][1] == {"node_kind": "QuantizedOp", "name": "qnn.requantize", "scale": 0.5}
    assert doc["nodes"][3]["note"] == "from a newer writer"
    report = fmt.validate(doc)
    assert report.version == (1, 7)
    assert dict(report.unknown_kinds) == {"QuantizedOp": 1, "Hint": 1}


def test_the_same_unknown_kind_is_fatal_at_a_known_version() -> None:
    doc = json.loads((VALID_DIR / "newer_minor_unknown_kind.json").read_text())
    doc["version"] = [1, 1]
    with pytest.raises(RelayVizFormatError, match="node 1 .*unknown node kind 'QuantizedOp'"):
        fmt.validate(doc)


def test_a_document_written_to_the_1_0_proposal_validates() -> None:
    doc = fmt.load(VALID_DIR / "spec_1_0_example.json")
    report = fmt.validate(doc)
    assert report.version == (1, 0) and report.node_count == 12 and not report.unknown_kinds
    _schema_validator().validate(doc)


def test_a_cycle_is_reported_even_when_every_reference_is_of_the_right_kind() -> None:
    doc = _doc([
        {"node_kind": "Var", "name": "f"},
        {"node_kind": "Call", "op": 2, "args": []},
        {"node_kind": "Call", "op": 1, "args": [0]},
    ])
    with pytest.raises(RelayVizFormatError, match=r"reference cycle (1 -> 2 -> 1|2 -> 1 -> 2)"):
        fmt.validate(doc)


def test_recursion_through_a_global_var_is_not_a_cycle() -> None:
    doc = _doc([
        {"node_kind": "Var", "name": "n", "dtype": "int32", "shape": []},
        {"node_kind": "GlobalVar", "name": "f"},
        {"node_kind": "Call", "op": 1, "args": [0]},
        {"node_kind": "Function", "params": [0], "body": 2},
    ], functions={"f": 3})
    assert fmt.validate(doc).node_count == 4


def test_deeply_nested_types_do_not_exhaust_the_stack() -> None:
    depth = 3000  # far beyond Python's recursion limit

    def nested(dtype: Any) -> Dict[str, Any]:
        ty: Dict[str, Any] = {"dtype": dtype, "shape": [2]}
        for _ in range(depth):
            ty = {"kind": "ref", "value": ty}
        return ty

    doc = {"format": "relayviz", "version": [1, 1], "nodes": [{"node_kind": "Var", "name": "r", "type": nested("f32")}]}
    assert fmt.validate(doc).node_count == 1
    doc["nodes"][0]["type"] = nested(32)
    with pytest.raises(RelayVizFormatError, match="a tensor type needs a string 'dtype'") as info:
        fmt.validate(doc)
    assert info.value.field == "type" + ".value" * depth + ".dtype"


def test_json_nested_deeper_than_the_parser_allows_is_a_format_error() -> None:
    with pytest.raises(RelayVizFormatError, match="invalid JSON"):
        fmt.loads(b"[" * 5000 + b"]" * 5000)


def test_a_map_key_with_a_line_break_does_not_break_the_one_line_message() -> None:
    doc = _doc([{"node_kind": "Var", "name": "x"}, {"node_kind": "Bind", "expr": 0, "binds": {"a\nb": 9}}])
    with pytest.raises(RelayVizFormatError, match="out of range") as info:
        fmt.validate(doc)
    assert "\n" not in str(info.value)
    doc = _doc([{"node_kind": "Var", "name": "x"}], functions={"ma\nin": 4})
    with pytest.raises(RelayVizFormatError) as info:
        fmt.validate(doc)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------------------
# The shipped JSON Schema
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _schema_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(fmt.SCHEMA_PATH.read_bytes()))


def test_the_shipped_schema_is_the_generated_one() -> None:
    assert json.loads(fmt.SCHEMA_PATH.read_bytes()) == fmt.json_schema(), "run `make schema`"


def test_the_shipped_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = json.loads(fmt.SCHEMA_PATH.read_bytes())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", ["wrong_format_tag.json", "unknown_major_version.json", "ir_not_string.json",
                                  "var_name_not_string.json", "bool_as_reference.json", "args_not_list.json",
                                  "missing_required_field.json", "unknown_type_kind.json",
                                  "fractional_dimension.json", "const_value_is_list.json"])
def test_the_schema_rejects_structural_errors_too(name: str) -> None:
    doc = json.loads((MALFORMED_DIR / name).read_bytes())
    assert not _schema_validator().is_valid(doc)


# --------------------------------------------------------------------------------------
# relayviz validate
# --------------------------------------------------------------------------------------


def _relayviz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relayviz_instrument", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_validate_rejects_every_malformed_file_with_one_line_each() -> None:
    paths = [str(MALFORMED_DIR / name) for name in sorted(MALFORMED)]
    result = _relayviz("validate", *paths)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == len(paths)
    for line, path in zip(lines, paths):
        node, field, reason = MALFORMED[Path(path).name]
        assert line.startswith(f"invalid {path}")
        assert reason in line
        if node is not None:
            assert node in line
        if field is not None:
            assert f"field '{field}'" in line
    assert result.stdout == ""


def test_cli_validate_reports_valid_files_and_notes_unknown_kinds(tmp_path: Path) -> None:
    newer = VALID_DIR / "newer_minor_unknown_kind.json"
    spec = VALID_DIR / "spec_1_0_example.json"
    result = _relayviz("validate", str(spec), str(newer))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = result.stdout.splitlines()
    assert out[0].startswith("valid") and str(spec) in out[0] and "RelayViz 1.0, 12 nodes" in out[0]
    assert out[1].startswith("valid") and str(newer) in out[1] and "RelayViz 1.7, 5 nodes" in out[1]
    assert sum("note:" in line and "unknown to this reader" in line for line in out[2:]) == 2


def test_cli_validate_exits_2_when_any_file_is_invalid() -> None:
    good = VALID_DIR / "spec_1_0_example.json"
    bad = MALFORMED_DIR / "self_loop.json"
    result = _relayviz("validate", str(good), str(bad))
    assert result.returncode == 2
    assert result.stdout.startswith("valid") and str(good) in result.stdout
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert str(bad) in result.stderr and "node 1 (Tuple)" in result.stderr and "field 'fields[1]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_validate_names_a_file_it_cannot_read(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    result = _relayviz("validate", str(missing), str(tmp_path))
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and "Traceback" not in result.stderr
    assert str(missing) in lines[0] and "cannot read the file" in lines[0]
    assert str(tmp_path) in lines[1] and "cannot read the file" in lines[1]


def test_cli_validate_accepts_a_serialized_model(tmp_path: Path) -> None:
    import tvm.relay.testing

    from relayviz_instrument import dumps

    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    path = tmp_path / "mlp.relayviz.json"
    path.write_bytes(dumps(mod, indent=True))
    result = _relayviz("validate", str(path))
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith(f"valid   {path}: RelayViz {fmt.VERSION[0]}.{fmt.VERSION[1]}, ")


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------

# The format as docs/format.md describes it, for the node kinds the generator uses:
# required fields, and the kinds each reference field may point at.
_EXPR = {"Var", "Const", "Call", "Tuple", "TupleGetItem", "Let", "Function", "If", "Op"}  # an Op may be a value
_CALLABLE = {"Op", "Var", "Function", "Call", "Let", "TupleGetItem", "If"}
REQUIRED: Dict[str, Set[str]] = {
    "Var": {"name"}, "Op": {"name"}, "Const": {"value", "dtype"}, "Call": {"op", "args"},
    "Tuple": {"fields"}, "TupleGetItem": {"tuple_value", "index"}, "Let": {"variable", "value", "body"},
    "Function": {"params", "body"}, "If": {"cond", "true_branch", "false_branch"},
}
REF_FIELDS: Dict[str, Dict[str, Tuple[bool, Set[str]]]] = {  # field -> (is a list, allowed kinds)
    "Call": {"op": (False, _CALLABLE), "args": (True, _EXPR)},
    "Tuple": {"fields": (True, _EXPR)},
    "TupleGetItem": {"tuple_value": (False, _EXPR)},
    "Let": {"variable": (False, {"Var"}), "value": (False, _EXPR), "body": (False, _EXPR)},
    "Function": {"params": (True, {"Var"}), "body": (False, _EXPR)},
    "If": {"cond": (False, _EXPR), "true_branch": (False, _EXPR),
           "false_branch": (False, _EXPR)},
}

names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
dims = st.one_of(st.integers(0, 4096), st.just("?"), st.sampled_from(["n", "batch"]))
shapes = st.lists(dims, max_size=4)
dtypes = st.sampled_from(["float32", "float16", "int8", "int32", "bool", "uint8"])
finite = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.one_of(st.integers(-2**63, 2**63 - 1), finite, st.booleans(), st.sampled_from(["nan", "inf", "-inf"]))
tensor_types = st.builds(lambda d, s: {"dtype": d, "shape": s}, dtypes, shapes)
types = st.recursive(
    tensor_types | st.builds(lambda n: {"kind": "typevar", "name": n}, names) | st.just({"kind": "incomplete"}),
    lambda inner: st.one_of(
        st.builds(lambda f: {"kind": "tuple", "fields": f}, st.lists(inner, max_size=3)),
        st.builds(lambda p, r: {"kind": "func", "params": p, "ret": r}, st.lists(inner, max_size=3), inner),
        st.builds(lambda n, a: {"kind": "adt", "name": n, "args": a}, names, st.lists(inner, max_size=2)),
        st.builds(lambda v: {"kind": "ref", "value": v}, inner),
    ),
    max_leaves=8,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | finite | names,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def const_values(draw: st.DrawFn) -> Any:
    form = draw(st.sampled_from(["scalar", "array", "digest"]))
    if form == "scalar":
        return draw(scalars)
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    if form == "digest":
        return {"array_shape": shape, "digest": "sha256:" + draw(st.text("0123456789abcdef", min_size=32, max_size=32))}
    count = 1
    for d in shape:
        count *= d
    return {"array_value": draw(st.lists(scalars, min_size=count, max_size=count)), "array_shape": shape}


@st.composite
def valid_documents(draw: st.DrawFn) -> Dict[str, Any]:
    """A random DAG of expression nodes, numbered in a random order."""
    nodes: List[Dict[str, Any]] = []

    def ids(kinds: Set[str]) -> List[int]:
        return [i for i, node in enumerate(nodes) if node["node_kind"] in kinds]

    for _ in range(draw(st.integers(1, 25))):
        values, callables, variables = ids(_EXPR), ids(_CALLABLE), ids({"Var"})
        options = ["Var", "Op", "Const"]
        if values:
            options += ["Tuple", "TupleGetItem", "If"]
            if callables:
                options.append("Call")
            if variables:
                options += ["Let", "Function"]
        kind = draw(st.sampled_from(options))
        node: Dict[str, Any] = {"node_kind": kind}
        if kind == "Var":
            node["name"] = draw(names)
            form = draw(st.sampled_from(["none", "tensor", "type"]))
            if form == "tensor":
                node["dtype"], node["shape"] = draw(dtypes), draw(shapes)
            elif form == "type":
                node["type"] = draw(types)
        elif kind == "Op":
            node["name"] = draw(st.sampled_from(["add", "nn.conv2d", "nn.relu", "split"]))
            if draw(st.booleans()):
                node["attrs"] = draw(st.dictionaries(names, json_values, max_size=3))
        elif kind == "Const":
            node["value"], node["dtype"] = draw(const_values()), draw(dtypes)
        elif kind == "Call":
            node["op"] = draw(st.sampled_from(callables))
            node["args"] = draw(st.lists(st.sampled_from(values), max_size=4))
        elif kind == "Tuple":
            node["fields"] = draw(st.lists(st.sampled_from(values), max_size=4))
        elif kind == "TupleGetItem":
            node["tuple_value"], node["index"] = draw(st.sampled_from(values)), draw(st.integers(0, 8))
        elif kind == "If":
            node["cond"], node["true_branch"], node["false_branch"] = (
                draw(st.sampled_from(values)) for _ in range(3))
        elif kind == "Let":
            node["variable"] = draw(st.sampled_from(variables))
            node["value"], node["body"] = draw(st.sampled_from(values)), draw(st.sampled_from(values))
        elif kind == "Function":
            node["params"] = draw(st.lists(st.sampled_from(variables), max_size=3, unique=True))
            node["body"] = draw(st.sampled_from(values))
            if draw(st.booleans()):
                node["ret_type"] = draw(types)
        if kind in ("Call", "Tuple", "TupleGetItem", "If", "Let") and draw(st.booleans()):
            node["type"] = draw(types)
        nodes.append(node)

    order = draw(st.permutations(range(len(nodes))))  # old id -> new id
    renumbered: List[Dict[str, Any]] = [{}] * len(nodes)
    for old, node in enumerate(nodes):
        node = dict(node)
        for field, (is_list, _) in REF_FIELDS.get(node["node_kind"], {}).items():
            node[field] = [order[t] for t in node[field]] if is_list else order[node[field]]
        renumbered[order[old]] = node
    extensions: Dict[str, Any] = {}
    functions = [i for i, node in enumerate(renumbered) if node["node_kind"] == "Function"]
    if functions and draw(st.booleans()):
        extensions["functions"] = {f"f{i}": i for i in functions}
    else:
        extensions["root"] = draw(st.integers(0, len(renumbered) - 1))
    return _doc(renumbered, **extensions)


def _doc(nodes: List[Dict[str, Any]], **extensions: Any) -> Dict[str, Any]:
    return {"format": "relayviz", "version": [1, 1], "ir": "relay", **extensions, "nodes": nodes}


def _edges(doc: Dict[str, Any]) -> List[Tuple[int, str, Optional[int], int]]:
    """(node, field, position, target) for every reference, read with REF_FIELDS."""
    out = []
    for nid, node in enumerate(doc["nodes"]):
        for field, (is_list, _) in REF_FIELDS.get(node["node_kind"], {}).items():
            if is_list:
                out.extend((nid, field, i, t) for i, t in enumerate(node[field]))
            else:
                out.append((nid, field, None, node[field]))
    return out


def _reaching(doc: Dict[str, Any], target: int) -> Set[int]:
    """The nodes from which ``target`` is reachable, ``target`` included."""
    users: Dict[int, Set[int]] = {}
    for nid, _, _, t in _edges(doc):
        users.setdefault(t, set()).add(nid)
    seen, todo = {target}, [target]
    while todo:
        for user in users.get(todo.pop(), ()):
            if user not in seen:
                seen.add(user)
                todo.append(user)
    return seen


@given(valid_documents())
def test_generated_documents_validate_and_round_trip(doc: Dict[str, Any]) -> None:
    report = fmt.validate(doc)
    assert report.node_count == len(doc["nodes"]) and not report.unknown_kinds
    _schema_validator().validate(doc)
    data = fmt.encode(doc)
    assert fmt.loads(data) == doc
    assert fmt.encode(fmt.loads(data)) == data
    assert fmt.loads(fmt.encode(doc, indent=True)) == doc


@given(valid_documents(), st.data())
def test_dropping_a_field_fails_exactly_when_it_is_required(doc: Dict[str, Any], data: st.DataObject) -> None:
    nid = data.draw(st.integers(0, len(doc["nodes"]) - 1))
    node = doc["nodes"][nid]
    field = data.draw(st.sampled_from(sorted(node)))
    del node[field]
    if field == "node_kind" or field in REQUIRED[node.get("node_kind", "")]:
        with pytest.raises(RelayVizFormatError) as info:
            fmt.validate(doc)
        assert (info.value.node, info.value.field) == (nid, field)
    else:
        fmt.validate(doc)
        _schema_validator().validate(doc)


@given(valid_documents(), st.data())
def test_a_reference_out_of_range_is_rejected(doc: Dict[str, Any], data: st.DataObject) -> None:
    edges = _edges(doc)
    assume(edges)
    nid, field, pos, _ = data.draw(st.sampled_from(edges))
    n = len(doc["nodes"])
    bad = data.draw(st.one_of(st.integers(n, n + 10**12), st.integers(-10**12, -1)))
    if pos is None:
        doc["nodes"][nid][field] = bad
    else:
        doc["nodes"][nid][field][pos] = bad
    with pytest.raises(RelayVizFormatError, match=f"reference {bad} is out of range") as info:
        fmt.validate(doc)
    assert info.value.node == nid
    assert info.value.field == (field if pos is None else f"{field}[{pos}]")


@given(valid_documents(), st.data())
def test_a_reference_that_closes_a_cycle_is_rejected(doc: Dict[str, Any], data: st.DataObject) -> None:
    edges = _edges(doc)
    assume(edges)
    nid, field, pos, _ = data.draw(st.sampled_from(edges))
    back = data.draw(st.sampled_from(sorted(_reaching(doc, nid))))
    if pos is None:
        doc["nodes"][nid][field] = back
    else:
        doc["nodes"][nid][field][pos] = back
    allowed = REF_FIELDS[doc["nodes"][nid]["node_kind"]][field][1]
    expected = "reference cycle" if doc["nodes"][back]["node_kind"] in allowed else f"reference {back} points at"
    with pytest.raises(RelayVizFormatError, match=expected):
        fmt.validate(doc)


@given(valid_documents(), st.data())
def test_a_changed_value_validates_or_raises_a_format_error(doc: Dict[str, Any], data: st.DataObject) -> None:
    target = data.draw(st.sampled_from(["root", "node", "nested"]))
    if target == "root":
        doc[data.draw(st.sampled_from(["format", "version", "ir", "nodes", "functions", "root",
                                       "type_definitions"]))] = data.draw(json_values)
    else:
        node = doc["nodes"][data.draw(st.integers(0, len(doc["nodes"]) - 1))]
        field = data.draw(st.sampled_from(sorted(node)))
        if target == "nested" and isinstance(node[field], (list, dict)) and node[field]:
            container = node[field]
            key = data.draw(st.sampled_from(sorted(container) if isinstance(container, dict)
                                            else range(len(container))))
            container[key] = data.draw(json_values)
        else:
            node[field] = data.draw(json_values)
    try:
        report = fmt.validate(doc)
    except RelayVizFormatError as exc:
        assert "\n" not in str(exc)
        return
    if report.version <= fmt.VERSION:  # whatever the reader accepts, the schema accepts too
        _schema_validator().validate(doc)


@given(json_values)
def test_arbitrary_json_values_raise_nothing_but_format_errors(value: Any) -> None:
    try:
        fmt.validate(value)
    except RelayVizFormatError:
        pass


_GARBAGE_KINDS = sorted(REQUIRED) + ["Match", "Clause", "PatternVar", "PatternConstructor", "Bind", "RefRead",
                                     "PrimFunc", "Constructor", "Future"]
_GARBAGE_FIELDS = ["name", "op", "args", "fields", "value", "dtype", "shape", "type", "index", "params", "body",
                   "variable", "clauses", "lhs", "rhs", "patterns", "var", "binds", "signature", "attrs", "ret_type"]
garbage_nodes = st.builds(
    lambda kind, fields: {"node_kind": kind, **fields},
    st.sampled_from(_GARBAGE_KINDS),
    st.dictionaries(st.sampled_from(_GARBAGE_FIELDS),
                    json_values | st.integers(0, 6) | st.lists(st.integers(-1, 6), max_size=3) | types),
)


@given(st.lists(json_values | garbage_nodes, max_size=8), st.sampled_from([[1, 0], [1, 1], [1, 9]]))
def test_document_shaped_garbage_raises_nothing_but_format_errors(nodes: List[Any], version: List[int]) -> None:
    doc = {"format": "relayviz", "version": version, "nodes": nodes}
    try:
        fmt.validate(doc)
    except RelayVizFormatError as exc:
        assert "\n" not in str(exc)
        return
    if version != [1, 9]:
        _schema_validator().validate(doc)


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_raise_nothing_but_format_errors(data: bytes) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnknownNodeKindWarning)
            fmt.loads(data)
    except RelayVizFormatError:
        pass
