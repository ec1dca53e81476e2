"""The traces the kernel readings are tested on, made once per session and shared by the test
modules that import them (``tests/test_loop_nest.py``, ``tests/test_kernel_story.py``,
``tests/test_html_kernels_browser.py``).

- :func:`cuda_llama`: the Llama-shaped ``tvm.relax.frontend.nn`` decoder of the demo, compiled
  by ``tvm.compile`` for ``{"kind": "cuda", "arch": "sm_90"}`` (the CUDA pipeline, dlight's
  default schedules) under ``RelayVizTrace(tir=True)``; and, from the same compilation, the
  Relax module FuseOps returned, kept by a second instrument (what the trace's kernels are
  checked against). Needs ``nvcc``: the build ends in NVRTC/nvcc; no GPU is needed.
- :func:`relay_mlp`: ``relay.build`` of the MLP of ``tvm.relay.testing`` for x86-64 under
  ``RelayVizTrace(tir=True)`` (CPU schedules: parallel and vectorized loops).

Each is made once per session however many modules ask (a module-level memo: a session
fixture imported into two test modules would be two fixtures, each made once).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict

import pytest

#: The fused matmul kernel of the decoder the tests read: ``o_proj`` and its residual add.
FUSED_MATMUL = "fused_matmul_add2"

_MADE: Dict[str, Any] = {}


def needs_nvcc() -> None:
    """Skip, with the reason, where the CUDA toolkit is missing (``tvm.compile`` for CUDA ends
    in nvcc)."""
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc (the CUDA toolkit): tvm.compile for a CUDA target compiles the kernels with it")


@dataclass(frozen=True)
class CudaTrace:
    """The trace directory of the decoder's CUDA build, and the module FuseOps returned in it."""

    path: Path
    fused: Any


class _KeepAfter:
    """A pass instrument (TVM's, no relayviz) that keeps the module a pass named ``name`` returned."""

    def __init__(self, name: str) -> None:
        self.pass_name = name
        self.kept: Any = None

    def run_after_pass(self, mod: Any, info: Any) -> None:
        if info.name == self.pass_name and self.kept is None:
            self.kept = mod


def cuda_llama(tmp_path_factory: pytest.TempPathFactory) -> CudaTrace:
    """The decoder's CUDA build under ``RelayVizTrace(tir=True)`` (see the module docstring)."""
    pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")
    import tvm

    if not hasattr(tvm, "compile"):
        pytest.skip(f"needs tvm.compile and dlight's CUDA pipeline (apache-tvm 0.2x; this is TVM {tvm.__version__})")
    needs_nvcc()
    if "cuda" not in _MADE:

        from relayviz_instrument import RelayVizTrace
        from relayviz_instrument.demo.relax_models import relax_workload

        path = tmp_path_factory.mktemp("cuda-llama") / "trace"
        mod = relax_workload("llama")
        keep = tvm.ir.instrument.pass_instrument(_KeepAfter)("FuseOps")
        trace = RelayVizTrace(path, tir=True)
        with tvm.transform.PassContext(opt_level=3, instruments=[trace, keep]):
            built = tvm.compile(mod, target=tvm.target.Target({"kind": "cuda", "arch": "sm_90"}))
        trace.record_graph(built)
        _MADE["cuda"] = CudaTrace(path, keep.kept)
    found: CudaTrace = _MADE["cuda"]
    return found


def relay_mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trace directory of ``relay.build`` of the MLP for x86-64 with ``tir=True``."""
    if "mlp" not in _MADE:
        import tvm.relay.testing

        from relayviz_instrument.capture import trace_build

        mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
        path = tmp_path_factory.mktemp("relay-mlp") / "trace"
        trace_build(mod, params=params, target="llvm -mtriple=x86_64-linux-gnu", out_dir=path, tir=True)
        _MADE["mlp"] = path
    found: Path = _MADE["mlp"]
    return found
