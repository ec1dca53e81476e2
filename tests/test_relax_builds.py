"""A Relax build read as one: one ``tvm.compile`` after ``relax.get_pipeline("zero")`` is one
build, nothing said of a Relax trace names Relay's API, and a compile that fails after its last
pass (in code generation) is shown as failed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Tuple

import pytest
import tvm
from tvm import relax

from conftest import needs_torch
from relayviz_instrument import RelayVizTrace, load_trace, show_trace
from relayviz_instrument.store.builds import split_builds
from relayviz_instrument.capture import trace_compile
from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

#: hhb-tvm 0.16 has relax.build, with no way to compile without its pipeline.
needs_tvm_compile = pytest.mark.skipif(not hasattr(tvm, "compile"), reason="needs tvm.compile (TVM 0.2x, the "
                                       ".venv-relax leg)")
#: What only Relay's build and advice say.
_RELAY_WORDS = ("relay.build", "record_graph", "relay.quantize", "relay.vm", "Relay module")


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def cnn_compiled(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Any]:
    path = tmp_path_factory.mktemp("relax_build") / "trace"
    built, _ = trace_compile(relax_workload("cnn"), target=relax_host_target(), out_dir=path)
    return path, built


@needs_torch
def test_one_tvm_compile_is_one_build(cnn_compiled) -> None:
    # Before: FoldConstant of the zero pipeline builds the PrimFuncs it evaluates (TIR passes
    # nested in it), and the compile after it was read as a second build.
    path, _ = cnn_compiled
    trace = load_trace(path)
    nested_tir = [r for r in trace.records if r.ir == "tir" and r.depth > 1 and r.index < next(
        r.index for r in trace.records if r.depth == 1 and r.index > 0 and r.ir == "relax")]
    assert nested_tir  # what split it: TIR passes inside the pipeline's passes
    (build,) = split_builds(trace.records)
    assert build.relax and build.lowered and [a.name for a in build.artifacts] == ["VMCodeGen"]
    assert build.events + [a.index for a in build.artifacts] == [r.index for r in trace.records]
    assert "build 2" not in _cli("show", str(path), "--all")


@needs_torch
def test_no_text_of_a_relax_trace_names_relay_api(cnn_compiled) -> None:
    path, _ = cnn_compiled
    texts = {"show": _cli("show", str(path), "--all"), "show --json": _cli("show", str(path), "--json"),
             "report": _cli("report", str(path)), "report --json": _cli("report", str(path), "--json"),
             "notes": "\n".join(show_trace(load_trace(path)).notes)}
    for what, text in texts.items():
        assert not [w for w in _RELAY_WORDS if w in text], what


def _compile_fails_in_codegen(path: Path) -> Tuple[RelayVizTrace, BaseException]:
    """A pass, then ``tvm.compile`` of a module no pass legalized: VM code generation raises
    after the last pass ended."""
    mod = relax_workload("mlp")
    trace = RelayVizTrace(path)
    with pytest.raises(tvm.error.InternalError, match="CodeGenVM") as caught:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            mod = relax.transform.FoldConstant()(mod)
            tvm.compile(mod, target=relax_host_target(), relax_pipeline=None)
    return trace, caught.value


@needs_tvm_compile
def test_a_compile_that_fails_in_code_generation_is_shown_as_failed(tmp_path: Path) -> None:
    # Before: the trace was complete and show said nothing of the failure.
    trace, error = _compile_fails_in_codegen(tmp_path / "t")
    assert [r.name for r in trace.records] == ["FoldConstant"] and trace.records[0].error is None
    loaded = load_trace(tmp_path / "t")
    assert loaded.build_failure is not None and loaded.build_failure.startswith("InternalError: CodeGenVM")
    assert loaded.complete  # every pass was recorded; the compilation failed
    shown = _cli("show", str(tmp_path / "t"))
    assert "the compilation failed after its last pass: InternalError: CodeGenVM cannot emit" in shown
    assert "the process stopped" not in shown
    assert str(error).splitlines()[0].split(": ", 1)[-1][:40] in shown


def test_an_error_of_the_users_own_after_the_passes_is_no_build_failure(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="own"):
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "t")]):
            relax.transform.FoldConstant()(relax_workload("mlp"))
            raise RuntimeError("an error of the user's own")
    assert load_trace(tmp_path / "t").build_failure is None
    assert "failed" not in _cli("show", str(tmp_path / "t"))


@needs_tvm_compile
def test_replay_of_a_compile_that_failed_after_its_passes_says_no_pass_failed_and_why(tmp_path: Path) -> None:
    _compile_fails_in_codegen(tmp_path / "t")
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "replay", str(tmp_path / "t")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no pass failed in this trace (the compilation failed after its last pass, in no pass: InternalError: " \
           "CodeGenVM" in done.stderr
