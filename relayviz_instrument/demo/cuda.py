"""The CUDA target of the GPU workloads (``relayviz demo --relax --target cuda``, the tests, the
benchmarks), and whether a CUDA compile can run here.

No GPU is needed to compile for one: ``tvm.compile`` runs the whole CUDA pipeline (dlight's
default schedules, the host/device split, the CUDA code generator) on a CPU. TVM 0.2x hands the
kernels' CUDA source to its CUDA runtime, which compiles it (with NVRTC, or nvcc when
``TVM_CUDA_COMPILE_MODE=nvcc``) only where that runtime is loaded, that is where a CUDA driver
is; elsewhere the executable keeps the source, which nothing here can run.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import Any, Optional

__all__ = ["CUDA_ARCH", "cuda_target", "cuda_unavailable"]

#: The GPU generation compiled for: Hopper (H100), what LLMs are served on today.
CUDA_ARCH = "sm_90"


def cuda_target() -> Any:
    """``tvm.target.Target({"kind": "cuda", "arch": "sm_90"})``: the target the CUDA workloads are
    compiled for (its host is the LLVM target of this machine, TVM's default)."""
    import tvm

    return tvm.target.Target({"kind": "cuda", "arch": CUDA_ARCH})


def cuda_unavailable() -> Optional[str]:
    """Why ``tvm.compile`` cannot build a Relax module for :func:`cuda_target` here (one
    sentence, for an error message or a test's skip), or None when it can.

    A Relay-era TVM (before 0.20, hhb-tvm's 0.16) has no ``tvm.compile``; a TVM built without
    CUDA has no CUDA code generator (``target.build.cuda``); and where TVM's CUDA runtime is
    loaded, the build compiles the kernels with NVRTC (the ``cuda-bindings`` package) or with
    ``nvcc`` (``TVM_CUDA_COMPILE_MODE=nvcc``), which must then be there.
    """
    import tvm

    version = getattr(tvm, "__version__", "unknown")
    if not hasattr(tvm, "compile"):
        return (f"this TVM ({version}) is a Relay-era TVM without tvm.compile; CUDA compiles of Relax "
                "models need apache-tvm 0.20 or later (the .venv-relax leg)")
    if tvm.get_global_func("target.build.cuda", allow_missing=True) is None:
        return f"this TVM ({version}) has no CUDA code generator (target.build.cuda): install a TVM built with CUDA"
    if tvm.runtime.enabled("cuda"):
        mode = os.environ.get("TVM_CUDA_COMPILE_MODE", "nvrtc").lower()
        if mode == "nvcc" and shutil.which("nvcc") is None:
            return "TVM_CUDA_COMPILE_MODE=nvcc but there is no nvcc on PATH: install the CUDA toolkit or add its bin/"
        if mode != "nvcc" and not _installed("cuda.bindings"):
            return ("TVM compiles CUDA kernels with NVRTC here and cuda-bindings is not installed: "
                    "pip install cuda-bindings, or set TVM_CUDA_COMPILE_MODE=nvcc with nvcc on PATH")
    return None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False
