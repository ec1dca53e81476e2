"""Tracing Relax builds end to end: a PyTorch model and a tvm.relax.frontend.nn one, through
the zero pipeline and tvm.compile (relax.build on TVM 0.16), then ``relayviz show`` and
``relayviz report`` on the trace, as a user would run them."""

from __future__ import annotations

import numpy as np
import pytest

relax = pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

import tvm  # noqa: E402  # after the importorskip above

from conftest import needs_torch  # noqa: E402  # after the importorskip above
from relayviz_instrument import format as fmt  # noqa: E402  # after the importorskip above
from relayviz_instrument import load_trace  # noqa: E402  # after the importorskip above
from relayviz_instrument.capture import compile_relax, trace_compile  # noqa: E402  # after the importorskip above
from relayviz_instrument.cli import main  # noqa: E402  # after the importorskip above
from relayviz_instrument.analysis.pass_diffs import PassDiffs  # noqa: E402  # after the importorskip above
from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload  # noqa: E402  # after the importorskip above


def _tensor(array):
    return tvm.runtime.tensor(array) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(array)


def _run(executable, entry, *inputs):
    vm = relax.VirtualMachine(executable, tvm.cpu())
    out = vm[entry](*[_tensor(x) for x in inputs])
    outs = out if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else [out]
    return [o.numpy() for o in outs]


@pytest.fixture(scope="module")
def cnn_traced(tmp_path_factory):
    """The PyTorch CNN built under a trace with ``tir=True``, and the same build untraced."""
    pytest.importorskip("torch")
    mod = relax_workload("cnn")
    path = tmp_path_factory.mktemp("cnn") / "trace"
    built, trace = trace_compile(mod, target=relax_host_target(), out_dir=path, tir=True)
    return built, trace, compile_relax(mod, target=relax_host_target())


@pytest.fixture(scope="module")
def mlp_traced(tmp_path_factory):
    """The tvm.relax.frontend.nn MLP built under a trace (both legs)."""
    path = tmp_path_factory.mktemp("mlp") / "trace"
    return trace_compile(relax_workload("mlp"), target=relax_host_target(), out_dir=path)


@needs_torch
@pytest.mark.slow
def test_a_traced_build_computes_what_an_untraced_one_does(cnn_traced):
    built, trace, untraced = cnn_traced
    assert trace.complete and trace.problems == []
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype("float32")
    for got, want in zip(_run(built, "main", x), _run(untraced, "main", x)):
        np.testing.assert_array_equal(got, want)


@needs_torch
def test_every_snapshot_is_a_valid_document(cnn_traced):
    _, trace, _ = cnn_traced
    stored = load_trace(trace.path)
    refs = {ref for r in stored.records for ref in (r.before, r.after) if ref}
    irs = {r.ir for r in stored.records if r.before}
    assert irs == {"relax", "tir", "vm_executable"}  # the last: what tvm.compile built
    for ref in refs:
        fmt.validate(stored.snapshot(ref))


@needs_torch
def test_show_lists_legalize_fuse_and_fuse_tir_as_changing_the_module(cnn_traced, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    _, trace, _ = cnn_traced
    assert main(["show", str(trace.path)]) == 0
    table = capsys.readouterr().out
    for name in ("LegalizeOps", "FuseOps", "FuseTIR"):
        row = next(line for line in table.splitlines() if line.split()[1:2] == [name])
        assert " yes " in row, row
    assert "relay.build ran" not in table  # no graph note for a Relax build


@needs_torch
def test_report_legalize_ops_shows_each_call_changed_into_call_tir(cnn_traced, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    _, trace, _ = cnn_traced
    assert main(["report", str(trace.path), "--pass", "^LegalizeOps$"]) == 0
    text = capsys.readouterr().out
    changed = [line for line in text.splitlines() if "changed" in line]
    assert any("relax.nn.conv2d → relax.call_tir" in line for line in changed), changed
    assert any("relax.nn.relu → relax.call_tir" in line for line in changed), changed
    # The operator table counts the high-level calls that went and the kernels that came.
    assert "relax.nn.conv2d" in text and "kernel @conv2d" in text


@needs_torch
def test_report_json_of_legalize_ops_names_the_kernels(cnn_traced, capsys):
    import orjson

    _, trace, _ = cnn_traced
    assert main(["report", str(trace.path), "--pass", "^LegalizeOps$", "--json"]) == 0
    (entry,) = orjson.loads(capsys.readouterr().out)["passes"]
    hunks = [h for h in entry["hunks"] if h["kind"] == "replaced"]
    assert hunks and all("relax.call_tir" in h["label"] for h in hunks)
    assert entry["summary"]["ops"]["relax.call_tir"] > 0


@needs_torch
def test_report_fuse_ops_shows_wrapped_hunks(cnn_traced, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    _, trace, _ = cnn_traced
    assert main(["report", str(trace.path), "--pass", "^FuseOps$"]) == 0
    text = capsys.readouterr().out
    assert "wrapped" in text and "relax.call_tir" in text


@needs_torch
def test_a_tir_pass_changes_a_loop_nest_inside_one_primfunc(cnn_traced):
    _, trace, _ = cnn_traced
    diffs = PassDiffs(trace)
    found = []
    for record in trace.records:
        if record.ir != "tir" or not record.changed:
            continue
        result = diffs.diff(record)
        after = diffs.document(record.after)
        loops = {m.after for m in result.changed if result.info_after[m.after].kind == "For"}
        loops |= {b for b in result.added if result.info_after[b].kind == "For"}
        for name, fid in after["functions"].items():
            inside = loops & _scope(after["nodes"], fid)
            if inside and inside == loops:  # every changed loop of the pass is in this one PrimFunc
                found.append((record.name, name))
    assert found, "no TIR pass changed the loops of a single PrimFunc"


def _scope(nodes, start):
    seen, stack = set(), [start]
    while stack:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        stack.extend(fmt.references(nodes[nid]))
    return seen


def test_an_nn_module_traces_on_this_tvm(mlp_traced, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    built, trace = mlp_traced
    assert trace.complete
    by_name = {}
    for r in trace.records:
        by_name.setdefault(r.name, r)
    assert by_name["LegalizeOps"].changed and by_name["FuseOps"].changed and by_name["FuseTIR"].changed
    assert all(r.note is None for r in trace.records if r.ir == "relax")
    assert main(["report", str(trace.path), "--pass", "^LegalizeOps$"]) == 0
    assert "relax.matmul → relax.call_tir" in capsys.readouterr().out
    x = np.ones((2, 64), "float32")
    assert _run(built, "forward", x, *_mlp_weights())[0].shape == (2, 10)


def _mlp_weights():
    rng = np.random.default_rng(1)
    return [rng.standard_normal(shape).astype("float32") for shape in ((128, 64), (128,), (10, 128), (10,))]


def test_tir_modules_are_counted_but_not_snapshotted_by_default(mlp_traced):
    _, trace = mlp_traced
    tir = [r for r in trace.records if r.ir == "tir"]
    assert tir and all(r.before is None and r.note is None for r in tir)
