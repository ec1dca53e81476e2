"""Shared fixtures: real models from tvm.relay.testing, built once per session; and the two
environments the suite runs in.

Building is the expensive part (relay.build of a ResNet-18 takes 10-20 s here), so every
built artefact is session-scoped and shared by all test modules. Add area-specific fixtures
in the test module that uses them.

The suite runs twice (``make test``): in ``.venv`` on a TVM with Relay (hhb-tvm, TVM 0.16, which
also has a Relax) and in ``.venv-relax`` on a TVM without Relay (apache-tvm 0.2x, with
PyTorch). Tests that need Relay are skipped in the second, with the reason, however they
import it (at module level or inside a test or fixture); tests that need Relax, PyTorch or
``tvm.compile`` say so with the markers below.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
import sys
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

import pytest
from hypothesis import HealthCheck, settings

# The relayviz_snapshot fixture: its plugin is registered by the pytest11 entry point once the
# package is installed; named here too, for a checkout run without reinstalling it.
pytest_plugins = ["pytester", "relayviz_instrument.regression.plugin"]

# make test draws the same examples on every run (a red CI run is reproducible, a green one
# stays green for the same code); make fuzz draws new ones, many more of them.
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many damaged inputs the readers were given (tests/fuzzing.py counts them)."""
    fuzzing = sys.modules.get("fuzzing")
    if fuzzing is not None and fuzzing.COUNTS["inputs"]:
        terminalreporter.write_line(f"readers fuzzed: {fuzzing.COUNTS['inputs']} damaged inputs tried, "
                                    f"{fuzzing.COUNTS['escapes']} escapes")


@pytest.fixture(scope="session")
def resnet18() -> Tuple[Any, Dict[str, Any]]:
    """``(mod, params)`` of ResNet-18 (batch 1, 224x224), unoptimized, parameters unbound."""
    import tvm.relay.testing

    return tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)


def _build(workload: Tuple[Any, Dict[str, Any]], instruments: Sequence[Any] = ()) -> Any:
    import tvm
    from tvm import relay

    mod, params = workload
    with tvm.transform.PassContext(opt_level=3, instruments=list(instruments)):
        return relay.build(mod, target="llvm", params=params)


@pytest.fixture(scope="session")
def _resnet18_plain_build(resnet18: Tuple[Any, Dict[str, Any]]) -> Tuple[Any, Any]:
    """``(lib, counter)``: ResNet-18 built once, with no RelayVizTrace but an instrument that
    only counts the pass events (tests/passevents.py): one build serves the tests that compare a
    traced build with a plain one and those that compare a trace's records with the counts."""
    from passevents import EventCounter

    counter = EventCounter()
    return _build(resnet18, [counter]), counter


@pytest.fixture(scope="session")
def resnet18_built(_resnet18_plain_build: Tuple[Any, Any]) -> Any:
    """``relay.build(resnet18, target="llvm", params=params)`` at opt_level 3, built once."""
    return _resnet18_plain_build[0]


@pytest.fixture(scope="session")
def resnet18_build_events(_resnet18_plain_build: Tuple[Any, Any]) -> Any:
    """The pass events of the build of ``resnet18_built``, counted by an instrument of the tests
    (``names``: a Counter of pass names; ``max_depth``: the deepest nesting)."""
    return _resnet18_plain_build[1]


@pytest.fixture(scope="session")
def mlp() -> Tuple[Any, Dict[str, Any]]:
    """``(mod, params)`` of the small MLP of tvm.relay.testing (fast to build)."""
    import tvm.relay.testing

    return tvm.relay.testing.mlp.get_workload(batch_size=1)


@pytest.fixture(scope="session")
def mlp_built(mlp: Tuple[Any, Dict[str, Any]]) -> Any:
    """The MLP built with relay.build for llvm at opt_level 3."""
    return _build(mlp)


@pytest.fixture(scope="session")
def resnet18_traced(resnet18: Tuple[Any, Dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``(lib, trace)``: ResNet-18 built like ``resnet18_built`` but under a RelayVizTrace.

    The trace directory is ``trace.path``; read it back with ``load_trace(trace.path)``.
    """
    from relayviz_instrument.capture import trace_build

    mod, params = resnet18
    return trace_build(mod, params=params, target="llvm", opt_level=3,
                       out_dir=tmp_path_factory.mktemp("resnet18") / "trace")


@pytest.fixture(scope="session")
def resnet18_provenance(resnet18_traced: Any) -> Any:
    """The :class:`~relayviz_instrument.analysis.provenance.Provenance` of ``resnet18_traced``'s
    trace, its diffs computed once for the provenance tests (lowering and layout)."""
    from relayviz_instrument.analysis.provenance import provenance
    from relayviz_instrument.store import load_trace

    _, trace = resnet18_traced
    return provenance(load_trace(trace.path))


# -- two environments: a Relay TVM (hhb-tvm, TVM 0.16) and a Relax-only TVM (apache-tvm 0.2x) ----

#: Whether the installed TVM has each IR, and PyTorch (for models exported from it).
HAS_RELAY = importlib.util.find_spec("tvm.relay") is not None
HAS_RELAX = importlib.util.find_spec("tvm.relax") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _tvm_version() -> str:
    import tvm

    return str(getattr(tvm, "__version__", "unknown"))


def _needs_relay_reason(api: str = "Relay") -> str:
    return (f"needs {api}, which this TVM ({_tvm_version()}) does not have (Relay and its graph executor "
            "ended with TVM 0.19; the .venv leg runs it)")


def _relay_era_api(exc: BaseException) -> Optional[str]:
    """The Relay-era TVM API whose absence raised ``exc`` (``from tvm import relay``,
    ``tvm.contrib.graph_executor``, ``tvm.nd``), or None for any other error."""
    text = str(exc)
    if isinstance(exc, ImportError):
        if "tvm.relay" in text or "'relay' from 'tvm'" in text:
            return "Relay"
        if "graph_executor" in text:
            return "the graph executor (tvm.contrib.graph_executor)"
    if isinstance(exc, AttributeError) and "module 'tvm' has no attribute 'nd'" in text:
        return "tvm.nd"
    return None


class _RelayOptionalModule(pytest.Module):
    """A test module that imports Relay at module level is skipped, with its reason, on a TVM
    without Relay, instead of failing collection. Only the test module's own import counts: an
    ImportError raised inside relayviz_instrument is a bug and still fails."""

    def _getobj(self):  # pytest's own hook point for importing the module
        try:
            return super()._getobj()
        except self.CollectError as exc:
            cause = exc.__cause__
            if not HAS_RELAY and cause is not None and _relay_era_api(cause) \
                    and not _raised_in_package(cause):
                raise pytest.skip.Exception(f"{self.path.name} {_needs_relay_reason()}",
                                            allow_module_level=True) from None
            raise


def pytest_pycollect_makemodule(module_path: Path, parent: Any) -> Any:
    if module_path.name.startswith("test_"):
        return _RelayOptionalModule.from_parent(parent, path=module_path)
    return None


def _raised_in_package(exc: BaseException) -> bool:
    """Whether the ImportError came from an import statement inside relayviz_instrument
    (the package must import on every TVM; only serialize/relay.py may need Relay)."""
    tb = exc.__traceback__
    last_ours = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if "relayviz_instrument" + os.sep in filename and os.sep + "tests" + os.sep not in filename:
            last_ours = filename
        elif os.sep + "tests" + os.sep in filename:
            last_ours = None
        tb = tb.tb_next
    return last_ours is not None and not last_ours.endswith(os.path.join("serialize", "relay.py"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A test (or fixture) that uses Relay or another Relay-era API inside its body is reported
    as skipped, with the reason, on a TVM without Relay; any other failure stays a failure."""
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    api = _relay_era_api(excinfo.value) if excinfo is not None else None
    if not HAS_RELAY and report.failed and api and not _raised_in_package(excinfo.value):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, "Skipped: " + _needs_relay_reason(api))


def pytest_report_header(config: pytest.Config) -> str:
    import sys

    irs = [name for name, present in (("Relay", HAS_RELAY), ("Relax", HAS_RELAX)) if present]
    return (f"TVM {_tvm_version()} ({', '.join(irs) or 'no Relay, no Relax'}), Python {sys.version.split()[0]}"
            + (", PyTorch" if HAS_TORCH else ""))


#: ``@needs_relax`` / ``@needs_torch`` / ``@needs_tvm_compile``: skip, with the reason, where absent.
needs_relax = pytest.mark.skipif(not HAS_RELAX, reason="needs a TVM with Relax")
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch (installed in the .venv-relax leg)")


@pytest.fixture(scope="session")
def mlp_optimized(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """Trace directories of ``relay.optimize`` of the MLP (parameters bound): at opt_level 2
    (``"o2"``), at opt_level 3 (``"o3"``), and at opt_level 3 with FoldConstant disabled
    (``"nofold"``). Seconds in all; the alignment and ``diff TRACE_A TRACE_B`` tests share them.

    Each compilation gets a module of its own: ``relay.optimize`` binds the parameters into the
    IRModule it is given, in place, so the session's ``mlp`` is not used."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    root = tmp_path_factory.mktemp("mlp-optimized")
    out = {}
    for name, opt_level, disabled in (("o2", 2, []), ("o3", 3, []), ("nofold", 3, ["FoldConstant"])):
        mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
        trace = RelayVizTrace(root / name)
        with tvm.transform.PassContext(opt_level=opt_level, instruments=[trace], disabled_pass=disabled):
            relay.optimize(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
        out[name] = root / name
    return out


# -- real Relax models (tvm.relax.frontend.nn, and PyTorch through torch.export) -------------------

@pytest.fixture(scope="session")
def relax_llama() -> Any:
    """The Llama-shaped decoder of ``relayviz_instrument.demo.relax_models`` (4 layers,
    random weights bound), made once per session."""
    pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")
    from relayviz_instrument.demo.relax_models import relax_workload

    return relax_workload("llama")


@pytest.fixture(scope="session")
def torch_resnet18() -> Any:
    """ResNet-18 exported from PyTorch with ``torch.export`` and imported into Relax, made once
    per session (the export and import take about 20 s here)."""
    pytest.importorskip("torch", reason="needs PyTorch (installed in the .venv-relax leg)")
    from relayviz_instrument.demo.relax_models import relax_workload

    return relax_workload("resnet18")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Playwright, for the pages' tests: a test that needs it fails
    (never skips) when it cannot run, saying why."""
    from browser import chromium, missing

    why = missing()
    if why:
        pytest.fail(f"the browser tests cannot run: {why}")
    with chromium() as context:
        yield context


# -- CUDA: the MLC-LLM-shaped decoder through tvm.compile's CUDA pipeline (no GPU needed) -------

def _cuda_or_skip() -> Any:
    """The CUDA target, or a skip saying why CUDA compiles cannot run here."""
    pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")
    from relayviz_instrument.demo.cuda import cuda_target, cuda_unavailable

    why = cuda_unavailable()
    if why is not None:
        pytest.skip(f"CUDA compiles cannot run here: {why}")
    return cuda_target()


@pytest.fixture(scope="session")
def cuda_decoder() -> Any:
    """The small MLC-LLM-shaped decoder (``relax_models`` ``decoder``: 4 layers, the paged KV
    cache's kernels made for CUDA sm_90), weights unbound, made once per session. A compile of
    it takes ``cuda_decoder.clone()``: a module of its own, the same functions."""
    target = _cuda_or_skip()
    from relayviz_instrument.demo.relax_models import relax_workload

    return relax_workload("decoder", target=target)


def _trace_cuda_compile(mod: Any, out: Path, **options: Any) -> Tuple[Any, Any]:
    from relayviz_instrument.capture import trace_compile
    from relayviz_instrument.demo.cuda import cuda_target

    # tvm.compile's default pipeline for a CUDA target is the CUDA one (dlight), as MLC-LLM runs it.
    return trace_compile(mod.clone(), target=cuda_target(), pipeline=None, out_dir=out, **options)


@pytest.fixture(scope="session")
def cuda_decoder_trace(cuda_decoder: Any, tmp_path_factory: pytest.TempPathFactory) -> Tuple[Any, Any]:
    """``(executable, trace)``: ``tvm.compile`` of ``cuda_decoder`` for CUDA under a RelayVizTrace
    (the trace in ``trace.path``, the executable recorded with ``record_graph``, as
    ``trace_compile`` does). Skips, saying why, where CUDA cannot be compiled."""
    return _trace_cuda_compile(cuda_decoder, tmp_path_factory.mktemp("cuda-decoder") / "trace")


@pytest.fixture(scope="session")
def cuda_decoder_trace_tir(cuda_decoder: Any, tmp_path_factory: pytest.TempPathFactory) -> Tuple[Any, Any]:
    """``cuda_decoder_trace`` with ``RelayVizTrace(tir=True)``: every TIR pass of the build
    snapshotted too."""
    return _trace_cuda_compile(cuda_decoder, tmp_path_factory.mktemp("cuda-decoder-tir") / "trace", tir=True)
