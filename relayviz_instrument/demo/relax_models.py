"""Built-in Relax models for the demo, the tests and the benchmarks.

Two ways into Relax, as its users take them: a PyTorch module through ``torch.export`` and
``tvm.relax.frontend.torch.from_exported_program`` (needs ``torch`` and TVM 0.2x), and a
``tvm.relax.frontend.nn`` module (every TVM with Relax, hhb-tvm's 0.16 too). Each entry makes
an ``IRModule`` whose functions are all Relax, small enough to compile on a CPU in seconds.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

__all__ = ["RELAX_MODELS", "relax_workload", "torch_available", "relax_host_target"]


def torch_available() -> bool:
    """Whether PyTorch and TVM's PyTorch frontend can be imported here."""
    try:
        import torch  # noqa: F401
        from tvm.relax.frontend.torch import from_exported_program  # noqa: F401
    except ImportError:
        return False
    return True


def relax_host_target() -> Any:
    """An LLVM target for this machine, in the form the installed TVM accepts: TVM 0.2x takes
    no target strings with options, and its ``llvm`` is the host; hhb-tvm's (0.16) ``llvm``
    is RISC-V, so the host's triple is named (:func:`relayviz_instrument.demo.relay_models.host_target`)."""
    import tvm

    if hasattr(tvm, "compile"):
        return "llvm"
    from .relay_models import host_target

    return host_target()


def _nn_mlp() -> Any:
    """A two-layer perceptron written with ``tvm.relax.frontend.nn``, batch size symbolic (``n``)."""
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.fc1 = nn.Linear(64, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x: nn.Tensor) -> nn.Tensor:
            return self.fc2(nn.op.relu(self.fc1(x)))

    mod, _ = MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 64), "float32")}})
    return mod


def _torch_cnn() -> Any:
    """A small convolutional network (conv, batch norm, ReLU, pooling, linear) exported from
    PyTorch with ``torch.export`` and imported with ``from_exported_program``."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    class SmallCNN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn1 = torch.nn.BatchNorm2d(8)
            self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
            self.pool = torch.nn.AdaptiveAvgPool2d(1)
            self.fc = torch.nn.Linear(16, 10)

        def forward(self, x: "torch.Tensor") -> "torch.Tensor":
            x = torch.relu(self.bn1(self.conv1(x)))
            x = torch.relu(self.conv2(x))
            return self.fc(torch.flatten(self.pool(x), 1))

    torch.manual_seed(0)  # the weights are constants of the module: the same every run
    model = SmallCNN().eval()
    with torch.no_grad():
        exported = torch.export.export(model, (torch.randn(1, 3, 16, 16),))
    return from_exported_program(exported)


#: Model name -> a function making its Relax ``IRModule``.
RELAX_MODELS: Dict[str, Callable[[], Any]] = {
    "cnn": _torch_cnn,
    "mlp": _nn_mlp,
}


def relax_workload(name: str) -> Any:
    """The Relax ``IRModule`` of the built-in model ``name`` (one of :data:`RELAX_MODELS`)."""
    from ..errors import RelayVizDependencyError, RelayVizUsageError

    try:
        make = RELAX_MODELS[name]
    except KeyError:
        raise RelayVizUsageError(f"unknown Relax model {name!r}; choose one of: {', '.join(RELAX_MODELS)}") from None
    if name == "cnn" and not torch_available():
        raise RelayVizDependencyError(
            "the 'cnn' model is exported from PyTorch: install torch (pip install torch==2.13.0) "
            "and a TVM with tvm.relax.frontend.torch (apache-tvm 0.2x), or use --model mlp")
    return make()
