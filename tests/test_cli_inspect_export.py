"""``relayviz inspect`` and ``relayviz export``, run through the command line entry point."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from relayviz_instrument import from_graph_json, summarize_graph, to_relayviz
from relayviz_instrument.cli import main
from relayviz_instrument.views.inspect import GraphReport
from relayviz_instrument.format import encode

DATA = Path(__file__).parent / "data" / "graph_json"
SEED = DATA / "seed_001.json"

# What the table says about the NNVM file, every number read from that file by hand.
NNVM_TABLE = """\
┏━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┓
┃ node ┃ operator       ┃ inputs  (<- the node each comes from) ┃ outputs              ┃ storage ┃
┡━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━┩
│    3 │ conv1          │ [1, 3, 8, 8] float32 <- data          │ [1, 4, 8, 8] float32 │       ? │
│      │ = conv2d       │ [4, 3, 3, 3] float32 <- conv1_weight  │                      │         │
│      │                │ [4] float32 <- conv1_bias             │                      │         │
├──────┼────────────────┼───────────────────────────────────────┼──────────────────────┼─────────┤
│    4 │ split1         │ [1, 4, 8, 8] float32 <- conv1         │ [1, 2, 8, 8] float32 │       ? │
│      │ = split        │                                       │ [1, 2, 8, 8] float32 │       ? │
├──────┼────────────────┼───────────────────────────────────────┼──────────────────────┼─────────┤
│    5 │ relu1          │ [1, 2, 8, 8] float32 <- split1        │ [1, 2, 8, 8] float32 │       ? │
│      │ = relu         │                                       │                      │         │
├──────┼────────────────┼───────────────────────────────────────┼──────────────────────┼─────────┤
│    6 │ add1           │ [1, 2, 8, 8] float32 <- relu1         │ [1, 2, 8, 8] float32 │       ? │
│      │ = elemwise_add │ [1, 2, 8, 8] float32 <- split1:1      │                      │         │
└──────┴────────────────┴───────────────────────────────────────┴──────────────────────┴─────────┘
inputs (1)  data [1, 3, 8, 8] float32
parameters (2)  conv1_weight [4, 3, 3, 3] float32, conv1_bias [4] float32  (from nnvm_split.params)
outputs (2)  [1, 2, 8, 8] float32 <- add1, [1, 2, 8, 8] float32 <- split1:1
"""


def test_the_table_of_the_nnvm_graph():
    console = Console(width=100, color_system=None, record=True)
    summary = summarize_graph(from_graph_json(DATA / "nnvm_split.json"), param_names=["conv1_weight", "conv1_bias"])
    console.print(GraphReport(summary, params_file=Path("nnvm_split.params")))
    assert console.export_text() == NNVM_TABLE


def test_inspect_seed_json(capsys):
    assert main(["inspect", str(SEED), "--json"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out)
    assert [set(r) for r in rows] == [{"name", "op", "inputs", "outputs"}] * 5
    first = rows[0]
    assert first["op"] == "tvmgen_default_fused_nn_conv2d_expand_dims_add_nn_relu"
    assert [i["shape"] for i in first["inputs"]] == [[1, 1, 224, 224], [64, 1, 5, 5], [64]]
    assert [set(i) for i in first["inputs"]] == [{"node", "index", "shape", "dtype"}] * 3
    assert first["outputs"] == [{"shape": [1, 64, 224, 224], "dtype": "float32", "storage_id": 9}]
    assert rows[-1]["outputs"][0]["shape"] == [1, 1, 672, 672]
    assert main(["inspect", str(SEED), "--json"]) == 0
    assert capsys.readouterr().out == out  # byte-identical


def test_inspect_seed_text(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["inspect", str(SEED)]) == 0
    out = capsys.readouterr().out
    assert "outputs (1)  [1, 1, 672, 672] float32 <- tvmgen_default_fused_reshape_transpose_reshape\n" in out
    assert "inputs (9)  1 [1, 1, 224, 224] float32, 2 [64, 1, 5, 5] float32, 3 [64] float32, " in out
    assert "parameters  unknown without a .params file" in out
    assert "[1, 64, 224, 224] float32" in out


def test_inspect_finds_the_params_file_beside_the_graph(mlp, mlp_built, tmp_path, capsys, monkeypatch):
    import tvm

    monkeypatch.setenv("COLUMNS", "300")
    mod, _ = mlp
    graph = tmp_path / "mlp.json"
    graph.write_text(mlp_built.get_graph_json())
    (tmp_path / "mlp.params").write_bytes(tvm.runtime.save_param_dict(mlp_built.get_params()))
    assert main(["inspect", str(graph)]) == 0
    out = capsys.readouterr().out
    data = mod["main"].params[0]
    shape = ", ".join(str(int(d)) for d in data.checked_type.shape)
    assert f"inputs (1)  {data.name_hint} [{shape}] {data.checked_type.dtype}" in out
    assert f"parameters ({len(mlp_built.get_params())})  " in out
    assert "(from " in out


def test_inspect_reads_a_relayviz_snapshot_of_a_graph(tmp_path, capsys):
    snapshot = tmp_path / "graph.relayviz.json"
    snapshot.write_bytes(encode(from_graph_json(SEED)))
    assert main(["inspect", str(snapshot), "--json"]) == 0
    from_snapshot = capsys.readouterr().out
    assert main(["inspect", str(SEED), "--json"]) == 0
    assert capsys.readouterr().out == from_snapshot


@pytest.mark.parametrize("name", ["entry_past_end.json", "row_ptr_inconsistent.json", "shape_list_too_short.json"])
def test_inspect_rejects_malformed_graphs_with_one_line(name, capsys):
    assert main(["inspect", str(DATA / "malformed" / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and str(DATA / "malformed" / name) in err
    fields = {"entry_past_end.json": "nodes[3].inputs[3]", "row_ptr_inconsistent.json": "node_row_ptr[2]",
              "shape_list_too_short.json": "attrs.shape[1]"}
    assert f"field '{fields[name]}'" in err


def test_inspect_refuses_a_relay_snapshot(mlp, tmp_path, capsys):
    mod, _ = mlp
    snapshot = tmp_path / "relay.json"
    snapshot.write_bytes(encode(to_relayviz(mod)))
    assert main(["inspect", str(snapshot)]) == 2
    err = capsys.readouterr().err
    assert "'ir' is 'relay'" in err and str(snapshot) in err


def test_export_graph_json_with_params(mlp_built, tmp_path, capsys):
    import numpy as np
    import tvm

    source = tmp_path / "in" / "mlp.json"
    source.parent.mkdir()
    source.write_text(mlp_built.get_graph_json())
    params = tmp_path / "in" / "weights.params"
    params.write_bytes(tvm.runtime.save_param_dict(mlp_built.get_params()))
    out = tmp_path / "mlp.json"
    assert main(["export", str(source), "--to", "netron", "-o", str(out), "--params", str(params)]) == 0
    assert capsys.readouterr().out.split() == ["wrote", str(out), "wrote", str(tmp_path / "mlp.params")]
    assert json.loads(out.read_text()) == json.loads(mlp_built.get_graph_json())
    loaded = tvm.runtime.load_param_dict((tmp_path / "mlp.params").read_bytes())
    for name, value in mlp_built.get_params().items():
        np.testing.assert_array_equal(loaded[name].numpy(), value.numpy())
    first = (out.read_bytes(), (tmp_path / "mlp.params").read_bytes())
    assert main(["export", str(source), "--to", "netron", "-o", str(out), "--params", str(params)]) == 0
    assert (out.read_bytes(), (tmp_path / "mlp.params").read_bytes()) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "mlp.json", "mlp.params"]  # no temp files


def test_export_a_relay_snapshot(resnet18, tmp_path, capsys):
    mod, _ = resnet18
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_bytes(encode(to_relayviz(mod)))
    out = tmp_path / "resnet18.json"
    assert main(["export", str(snapshot), "--to", "netron", "-o", str(out)]) == 0
    graph = json.loads(out.read_text())
    assert {n["op"] for n in graph["nodes"]} == {"null", "tvm_op"}
    assert [n["name"] for n in graph["nodes"] if n["op"] == "null"] == [p.name_hint for p in mod["main"].params]
    assert not (tmp_path / "resnet18.params").exists()


@pytest.mark.parametrize("args, fragment", [
    (["-o", "{tmp}/graph.txt"], "only in files named *.json"),
    (["-o", "{tmp}/missing/graph.json"], "cannot write the file"),
    (["-o", "{tmp}/graph.json", "--params", "{tmp}/none.params"], "cannot read the file"),
    (["-o", "{tmp}/graph.json", "--params", "{seed}"], "not a TVM parameter file"),
])
def test_export_errors_are_one_line_with_status_2(args, fragment, tmp_path, capsys):
    argv = ["export", str(SEED), "--to", "netron"] + [a.format(tmp=tmp_path, seed=SEED) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and fragment in err and "\n" not in err
    named = [a.format(tmp=tmp_path, seed=SEED) for a in args if "{" in a]
    assert any(path in err for path in named)  # the file at fault is named
    assert not (tmp_path / "graph.json").exists()


def test_export_refuses_control_flow(tmp_path, capsys):
    import tvm
    from tvm import relay

    x = relay.var("x", shape=(2,))
    cond = relay.var("c", shape=(), dtype="bool")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x, cond], relay.If(cond, relay.nn.relu(x), relay.negative(x)))))
    snapshot = tmp_path / "if.json"
    snapshot.write_bytes(encode(to_relayviz(mod)))
    assert main(["export", str(snapshot), "--to", "netron", "-o", str(tmp_path / "if_graph.json")]) == 2
    err = capsys.readouterr().err
    assert "(If): not a dataflow expression" in err and str(snapshot) in err
    assert not (tmp_path / "if_graph.json").exists()


def test_export_copies_nothing_when_the_snapshot_is_bad(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    shutil.copy(DATA / "malformed" / "head_past_end.json", bad)
    assert main(["export", str(bad), "--to", "netron", "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert "field 'heads[0]'" in err and str(bad) in err
    assert not (tmp_path / "out.json").exists()


def test_an_untyped_module_is_refused_for_its_real_cause(tmp_path, capsys):
    """A model as first imported has no inferred types: the graph executor needs them."""
    import tvm
    from tvm import relay

    x = relay.var("x", shape=(1, 8, 4, 4))
    parts = relay.split(x, 2, axis=1)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(parts[0], parts[1])))
    snapshot = tmp_path / "imported.json"
    snapshot.write_bytes(encode(to_relayviz(mod)))
    assert main(["export", str(snapshot), "--to", "netron", "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert str(snapshot) in err and "without an inferred type" in err and "InferType" in err
    assert "not a tuple" not in err and "\n" not in err


def test_inspect_and_export_refuse_another_models_parameters_alike(mlp_built, tmp_path, capsys):
    import tvm
    import tvm.relay.testing
    from tvm import relay

    graph = tmp_path / "mlp.json"
    graph.write_text(mlp_built.get_graph_json())
    other, other_params = tvm.relay.testing.mlp.get_workload(batch_size=1, num_classes=4)
    with tvm.transform.PassContext(opt_level=3):
        other_lib = relay.build(other, target="llvm -mtriple=x86_64-linux-gnu", params=other_params)
    wrong = tmp_path / "other.params"
    wrong.write_bytes(tvm.runtime.save_param_dict(other_lib.get_params()))
    assert main(["inspect", str(graph), "--params", str(wrong)]) == 2
    inspect_err = capsys.readouterr().err.strip()
    assert main(["export", str(graph), "--to", "netron", "-o", str(tmp_path / "out.json"), "--params", str(wrong)]) == 2
    export_err = capsys.readouterr().err.strip()
    for err in (inspect_err, export_err):
        assert str(wrong) in err and "has shape" in err and "pass the parameters of this model" in err


@pytest.mark.parametrize("command", [["inspect"], ["diff", "{other}"], ["export", "--to", "netron", "-o", "{out}"],
                                     ["validate"]])
def test_a_binary_file_is_not_a_text_file(command, tmp_path, capsys):
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\xff\xfe")
    args = [a.format(other=SEED, out=tmp_path / "o.json") for a in command[1:]]
    assert main([command[0], str(png), *args]) == 2
    err = capsys.readouterr().err
    assert str(png) in err and "not a text file" in err and "UTF-8" not in err


def test_validate_accepts_the_graph_json_every_other_command_accepts(capsys):
    assert main(["validate", str(SEED)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"valid   {SEED}: graph executor JSON, 5 operators")


def test_inspect_never_splits_a_name(mlp_built, tmp_path):
    """At 80 columns on a terminal, each operator gets a block of its own; piped, the table is whole."""
    from relayviz_instrument import inspect_graph

    graph = tmp_path / "mlp.json"
    graph.write_text(mlp_built.get_graph_json())
    report = inspect_graph(graph)
    names = [row["name"] for row in report.summary.operators]
    assert max(len(n) for n in names) > 40
    terminal = Console(width=80, color_system=None, record=True, force_terminal=True)
    terminal.print(report)
    text = terminal.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    for name in names:
        assert any(name in line for line in text.splitlines())
    piped = Console(width=80, color_system=None, record=True)
    piped.print(report, crop=False)
    table = piped.export_text()
    assert "┏" in table and all(any(name in line for line in table.splitlines()) for name in names)
