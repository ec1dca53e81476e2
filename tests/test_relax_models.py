"""Real Relax models traced end to end: the Llama-shaped decoder written with
tvm.relax.frontend.nn and ResNet-18 exported from PyTorch, through the zero pipeline and
tvm.compile. A pass that raises after LegalizeOps reaches the user's code and the process goes
on; the input modules the trace keeps (as TVMScript: TVM 0.27's save_json crashes the process
on every Relax module) are replayed by ``relayviz replay`` in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

relax = pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

import tvm  # noqa: E402  # after the importorskip above

from conftest import needs_torch  # noqa: E402  # after the importorskip above
from relayviz_instrument import RelayVizTrace, load_trace  # noqa: E402  # after the importorskip above
from relayviz_instrument.capture import compile_relax, trace_compile  # noqa: E402  # after the importorskip above
from relayviz_instrument.capture.kept_module import TVMSCRIPT, keep_module, load_kept_module  # noqa: E402  # after the importorskip above
from relayviz_instrument.demo.relax_models import relax_host_target, torch_model  # noqa: E402  # after the importorskip above
from relayviz_instrument.errors import RelayVizTraceError  # noqa: E402  # after the importorskip above

TESTS = Path(__file__).parent


@tvm.transform.module_pass(opt_level=0, name="RejectLegalized")
def reject_legalized(mod: Any, ctx: Any) -> Any:
    """A user's pass that refuses the module it is given (replay imports it from here)."""
    raise ValueError("RejectLegalized refuses the legalized module")


def _structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> bool:
    equal = getattr(tvm.ir, "structural_equal", None)
    if equal is None:  # TVM 0.2x: tvm-ffi's
        import tvm_ffi

        equal = tvm_ffi.structural_equal
    return bool(equal(a, b, map_free_vars=map_free_vars))


def _relayviz(*args: str) -> subprocess.CompletedProcess:
    """``relayviz ARGS`` in a fresh process that can import this test module (for --pass-from), run
    from the tests' folder: this module's ``conftest`` is the tests' one, not the checkout's."""
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "relayviz_instrument", *args], capture_output=True, text=True,
                          timeout=600, cwd=TESTS, env={**os.environ, "COLUMNS": "200", "PYTHONPATH": path})


def _tensor(array: np.ndarray) -> Any:
    return tvm.runtime.tensor(array) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(array)


def _run(executable: Any, entry: str, array: np.ndarray) -> np.ndarray:
    out = relax.VirtualMachine(executable, tvm.cpu())[entry](_tensor(array))
    first = out[0] if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else out
    return first.numpy()


def _legalized(mod: Any) -> Any:
    with tvm.target.Target(relax_host_target()):
        return relax.transform.LegalizeOps()(mod)


TOKENS = (np.arange(16, dtype="int32") * 37 % 256).reshape(1, 16)


def test_the_llama_traced_through_the_zero_pipeline_computes_what_an_untraced_build_does(relax_llama, tmp_path):
    built, trace = trace_compile(relax_llama, target=relax_host_target(), out_dir=tmp_path / "t")
    assert trace.complete and trace.problems == []
    names = [r.name for r in load_trace(tmp_path / "t").records]
    assert {"LegalizeOps", "FuseOps", "FuseTIR"} <= set(names)
    logits = _run(built, "forward", TOKENS)
    assert logits.shape == (1, 16, 256) and np.isfinite(logits).all()
    np.testing.assert_array_equal(logits, _run(compile_relax(relax_llama, target=relax_host_target()), "forward",
                                               TOKENS))


@pytest.mark.parametrize("keep", [None, ".*"], ids=["failing-pass-only", "keep-every-module"])
def test_a_pass_raising_after_legalize_ops_on_the_llama_reaches_the_user_and_is_replayed(relax_llama, tmp_path,
                                                                                         keep):
    trace = RelayVizTrace(tmp_path / "t", keep_modules=keep)
    with pytest.raises(ValueError, match="RejectLegalized refuses the legalized module"):
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            with tvm.target.Target(relax_host_target()):
                tvm.transform.Sequential([relax.transform.LegalizeOps(), reject_legalized])(relax_llama)
    assert trace.complete and trace.problems == []
    loaded = load_trace(tmp_path / "t")
    failed = loaded.failed
    assert failed is not None and failed.name == "RejectLegalized"
    assert failed.error.startswith("ValueError: RejectLegalized refuses the legalized module")
    assert failed.replay["module_form"] == TVMSCRIPT and failed.replay["context"]["opt_level"] == 3
    kept = [r.name for r in loaded.records if r.replay is not None]
    assert kept == (["RejectLegalized"] if keep is None else ["sequential", "LegalizeOps", "RejectLegalized"])

    # What the trace kept is the pass's input, every weight included: the Relax function reads
    # back equal to LegalizeOps' output; whether the whole module does is what `exact` says.
    legalized = _legalized(relax_llama)
    module, exact = load_kept_module(TVMSCRIPT, loaded.module(failed.replay["module"]), "test")
    assert sorted(g.name_hint for g in module.get_global_vars()) == \
        sorted(g.name_hint for g in legalized.get_global_vars())
    assert _structural_equal(module["forward"], legalized["forward"], map_free_vars=True)  # its GlobalVars
    assert exact is _structural_equal(module, legalized)

    replayed = _relayviz("replay", str(tmp_path / "t"), "--pass-from", "test_relax_models:reject_legalized")
    assert replayed.returncode == 1, replayed.stderr
    assert f"replayed RejectLegalized (#{failed.index})" in replayed.stdout
    assert "the pass fails the same way as recorded" in replayed.stdout
    assert "ValueError: RejectLegalized refuses the legalized module" in replayed.stdout
    assert ("reads back different from the pass's input" in replayed.stdout) is (not exact)
    if keep is not None:  # LegalizeOps' input is the exported model itself, read back exactly
        again = _relayviz("replay", str(tmp_path / "t"), "--pass", "LegalizeOps", "--json")
        assert again.returncode == 0, again.stderr
        result = json.loads(again.stdout)
        assert result["outcome"] == "the pass succeeds, with the recorded output" and result["module_exact"] is True


@needs_torch
@pytest.mark.slow
def test_keep_modules_on_resnet18_through_the_zero_pipeline_and_replay_of_fuse_ops(torch_resnet18, tmp_path):
    built, trace = trace_compile(torch_resnet18, target=relax_host_target(), out_dir=tmp_path / "t",
                                 keep_modules="^FuseOps$")
    assert trace.complete and trace.problems == []
    loaded = load_trace(tmp_path / "t")
    kept = [r for r in loaded.records if r.replay is not None]
    assert [r.name for r in kept] == ["FuseOps"] and kept[0].replay["module_form"] == TVMSCRIPT
    # The traced build computes what PyTorch does.
    import torch

    model, example = torch_model("resnet18")
    with torch.no_grad():
        expected = model(example).numpy()
    np.testing.assert_allclose(_run(built, "main", example.numpy()), expected, rtol=1e-4, atol=1e-4)

    replayed = _relayviz("replay", str(tmp_path / "t"), "--pass", "FuseOps", "--json")
    assert replayed.returncode == 0, replayed.stderr
    result = json.loads(replayed.stdout)
    # TVMScript makes the names of a PrimFunc's buffers unique (LegalizeOps' batch_norm has two
    # outputs named T_multiply on TVM 0.27): the output then differs from the recorded one just
    # where the module read back differs from the recorded input, which replay tells apart.
    _assert_the_recorded_output(result)
    if not result["module_exact"]:
        assert {c["node"] for c in result["diff"]["changed"]} == {"PrimFunc"}


def _assert_the_recorded_output(result: Any) -> None:
    """The replayed pass made the recorded output, or differs from it only where the module read
    back differs from the recorded input (and the result says the module is not exact)."""
    if result["module_exact"] is not False:
        assert result["outcome"] == "the pass succeeds, with the recorded output"
        assert result["diff"]["summary"]["changed"] == 0
    else:
        assert result["outcome"] == ("the pass succeeds, with the recorded output but for what reading the module "
                                     "back changed in its input")
        assert result["diff"]["summary"]["changed"] > 0
    assert result["status"] == 0 and result["diff"]["summary"]["added"] == result["diff"]["summary"]["removed"] == 0


@needs_torch
def test_resnet18_kept_as_tvmscript_reads_back_with_every_weight_in_place(torch_resnet18):
    form, data = keep_module(torch_resnet18)
    doc = orjson.loads(data)
    assert form == TVMSCRIPT and doc["form"] == TVMSCRIPT
    assert 'metadata["' in doc["script"] and len(doc["constants"]) > 20
    module, exact = load_kept_module(form, data, "test")
    # Structural equality compares the constants' bytes: a weight put back in the wrong place
    # (the printer numbers them in its own order) would differ.
    assert exact is True and _structural_equal(module, torch_resnet18)


def test_whether_a_kept_module_is_exact_is_what_structural_equality_says(relax_llama):
    for mod in (relax_llama, _legalized(relax_llama)):
        form, data = keep_module(mod)
        module, exact = load_kept_module(form, data, "test")
        assert form == TVMSCRIPT and exact is _structural_equal(module, mod)


def test_a_damaged_kept_module_raises_the_packages_error(relax_llama):
    _, data = keep_module(relax_llama)
    doc = orjson.loads(data)
    damaged = {
        "not JSON": b"{" + data,
        "no script": orjson.dumps({**doc, "script": None}),
        "data not base64": orjson.dumps({**doc, "constants": [{**doc["constants"][0], "data": "%%%"}]}),
        "shape of other size": orjson.dumps({**doc, "constants": [{**doc["constants"][0], "shape": [3, 5]}]}),
        "unknown dtype": orjson.dumps({**doc, "constants": [{**doc["constants"][0], "dtype": "float33"}]}),
        "script that does not parse": orjson.dumps({**doc, "script": doc["script"].replace("def ", "df ", 1)}),
    }
    for what, content in damaged.items():
        with pytest.raises(RelayVizTraceError, match="kept input module") as raised:
            load_kept_module(TVMSCRIPT, content, "t: pass event #1 (X)")
        assert raised.value.args[0].startswith("t: pass event #1 (X): ") and "\n" not in raised.value.args[0], what
    with pytest.raises(RelayVizTraceError, match="unknown form 'pickle'"):
        load_kept_module("pickle", data, "t")


def test_a_kept_tir_pass_of_tvm_compile_is_made_again_by_name_and_replayed(tmp_path):
    from relayviz_instrument.demo.relax_models import relax_workload

    _, trace = trace_compile(relax_workload("mlp"), target=relax_host_target(), out_dir=tmp_path / "t", tir=True,
                             keep_modules=r"\.FlattenBuffer$")
    assert trace.complete and trace.problems == []
    kept = [r for r in load_trace(tmp_path / "t").records if r.replay is not None]
    assert kept and {r.ir for r in kept} == {"tir"} and all(r.name.endswith(".FlattenBuffer") for r in kept)
    replayed = _relayviz("replay", str(tmp_path / "t"), "--pass", str(kept[0].index), "--json")
    assert replayed.returncode == 0, replayed.stderr
    result = json.loads(replayed.stdout)
    assert result["made_by"] == f"tvm.{kept[0].name.split('.')[0]}.transform.FlattenBuffer()"
    _assert_the_recorded_output(result)  # TVMScript reads fc2.bias back as fc2_bias (TVM 0.27)
    # A recorded output the pass does not make (here its input: FlattenBuffer flattens what it
    # reads) is told apart from what reading the module back changed.
    manifest = tmp_path / "t" / "manifest.jsonl"
    lines = [orjson.loads(line) for line in manifest.read_bytes().splitlines()]
    for line in lines:
        if line.get("index") == kept[0].index and line.get("after"):
            line["after"] = kept[0].before
    manifest.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    replayed = _relayviz("replay", str(tmp_path / "t"), "--pass", str(kept[0].index), "--json")
    assert replayed.returncode == 3, replayed.stderr
    assert json.loads(replayed.stdout)["outcome"] == "the pass succeeds, with another output than recorded"
