"""Built-in models for the demo and the benchmarks: workloads of ``tvm.relay.testing``.

Each entry makes ``(mod, params)`` with settings that build on a CPU in seconds to a minute.
"""

from __future__ import annotations

import platform
import sys
from typing import Any, Callable, Dict, Tuple

__all__ = ["MODELS", "workload", "host_target"]

Workload = Tuple[Any, Dict[str, Any]]


def _resnet(layers: int) -> Callable[[], Workload]:
    def make() -> Workload:
        from tvm.relay.testing import resnet

        return resnet.get_workload(num_layers=layers, batch_size=1)
    return make


def _simple(module: str, **kwargs: Any) -> Callable[[], Workload]:
    def make() -> Workload:
        import importlib

        return importlib.import_module(f"tvm.relay.testing.{module}").get_workload(**kwargs)
    return make


#: Model name -> a function making its ``(mod, params)``.
MODELS: Dict[str, Callable[[], Workload]] = {
    "resnet18": _resnet(18),
    "resnet50": _resnet(50),
    "mobilenet": _simple("mobilenet", batch_size=1),
    "squeezenet": _simple("squeezenet", batch_size=1),
    "vgg11": _simple("vgg", batch_size=1, num_layers=11),
    "densenet121": _simple("densenet", batch_size=1, densenet_size=121),
    "inception_v3": _simple("inception_v3", batch_size=1),
    "dcgan": _simple("dcgan", batch_size=1),
    "dqn": _simple("dqn", batch_size=1),
    "mlp": _simple("mlp", batch_size=1),
    "lstm": _simple("lstm", iterations=4, num_hidden=16),
}


def workload(name: str) -> Workload:
    """``(mod, params)`` of the built-in model ``name`` (one of :data:`MODELS`)."""
    try:
        make = MODELS[name]
    except KeyError:
        from .errors import RelayVizUsageError

        raise RelayVizUsageError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}") from None
    try:
        return make()
    except ImportError as exc:
        from .errors import RelayVizDependencyError

        raise RelayVizDependencyError(
            f"model {name!r} comes from tvm.relay.testing, and this TVM has no Relay ({exc}): install a TVM with "
            "Relay (TVM <= 0.19, e.g. hhb-tvm==3.2.3 on Python 3.10), or trace a Relax model "
            "(relayviz demo --relax)") from None


def host_target() -> str:
    """An LLVM target for the machine this runs on, named explicitly.

    ``target="llvm"`` means the LLVM build's default triple, which on hhb-tvm (the Relay TVM
    on PyPI) is RISC-V: code built for it does not run here. This names the host's own CPU
    (``llvm -mtriple=x86_64-linux-gnu`` on an x86-64 Linux machine).
    """
    machine = platform.machine().lower()
    if sys.platform.startswith("linux") and machine in ("x86_64", "aarch64"):
        return f"llvm -mtriple={machine}-linux-gnu"
    return "llvm"
