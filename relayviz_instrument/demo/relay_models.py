"""Built-in models for the demo and the benchmarks: workloads of ``tvm.relay.testing``, and two
shapes it lacks, a transformer encoder and a quantized (QNN) MobileNet, written with Relay's own
operators (no framework is needed to make them).

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

        mod, params = resnet.get_workload(num_layers=layers, batch_size=1)
        return mod, params
    return make


def _simple(module: str, **kwargs: Any) -> Callable[[], Workload]:
    def make() -> Workload:
        import importlib

        mod, params = importlib.import_module(f"tvm.relay.testing.{module}").get_workload(**kwargs)
        return mod, params
    return make


def _transformer(layers: int = 2, seq: int = 64, width: int = 256, heads: int = 4, hidden: int = 1024) -> Workload:
    """A transformer encoder (BERT-like post-norm layers): self-attention with ``heads`` heads,
    a ReLU feed-forward block, residual adds and layer norms; weights as parameters."""
    import numpy as np
    import tvm
    from tvm import relay

    rng = np.random.default_rng(0)
    params: Dict[str, Any] = {}

    def weight(name: str, *shape: int) -> Any:
        params[name] = tvm.nd.array((rng.standard_normal(shape) * 0.02).astype("float32"))
        return relay.var(name, shape=shape, dtype="float32")

    def dense(x: Any, name: str, units: int, inputs: int) -> Any:
        return relay.nn.bias_add(relay.nn.dense(x, weight(f"{name}_weight", units, inputs)),
                                 weight(f"{name}_bias", units), axis=-1)

    def heads_first(x: Any) -> Any:  # [seq, width] -> [heads, seq, width / heads]
        return relay.transpose(relay.reshape(x, (seq, heads, width // heads)), (1, 0, 2))

    data = relay.var("data", shape=(seq, width), dtype="float32")
    x = data
    for i in range(layers):
        q, k, v = (heads_first(dense(x, f"l{i}_{n}", width, width)) for n in "qkv")
        scores = relay.nn.softmax(relay.divide(relay.nn.batch_matmul(q, k),
                                               relay.const(float(np.sqrt(width // heads)))), axis=-1)
        attended = relay.nn.batch_matmul(scores, relay.transpose(v, (0, 2, 1)))
        merged = relay.reshape(relay.transpose(attended, (1, 0, 2)), (seq, width))
        x = relay.nn.layer_norm(relay.add(x, dense(merged, f"l{i}_out", width, width)),
                                weight(f"l{i}_ln1_gamma", width), weight(f"l{i}_ln1_beta", width))
        ffn = dense(relay.nn.relu(dense(x, f"l{i}_ffn1", hidden, width)), f"l{i}_ffn2", width, hidden)
        x = relay.nn.layer_norm(relay.add(x, ffn), weight(f"l{i}_ln2_gamma", width), weight(f"l{i}_ln2_beta", width))
    func = relay.Function(relay.analysis.free_vars(x), x)
    return relay.transform.InferType()(tvm.IRModule.from_expr(func)), params


def _qnn_mobilenet(image: int = 224) -> Workload:
    """A quantized MobileNet (v1 layout) in Relay's QNN dialect, as quantizing frontends write it:
    int8 depthwise and pointwise ``qnn.conv2d`` with per-layer ``qnn.requantize`` and clipped
    ReLU6, weights bound as constants, float input quantized and the logits dequantized."""
    import numpy as np
    import tvm
    from tvm import relay

    rng = np.random.default_rng(0)

    def const(value: Any, dtype: str) -> Any:
        return relay.const(np.asarray(value, dtype=dtype), dtype)

    def conv(x: Any, channels: int, inputs: int, kernel: int, stride: int, groups: int) -> Any:
        shape = (channels, inputs // groups, kernel, kernel)
        w = const(rng.integers(-127, 128, shape), "int8")
        y = relay.qnn.op.conv2d(x, w, const(0, "int32"), const(0, "int32"), const(0.02, "float32"),
                                const(0.01, "float32"), kernel_size=(kernel, kernel), channels=channels,
                                strides=(stride, stride), padding=(kernel // 2, kernel // 2), groups=groups,
                                out_dtype="int32")
        y = relay.nn.bias_add(y, const(rng.integers(-1000, 1000, (channels,)), "int32"))
        y = relay.qnn.op.requantize(y, const(0.0002, "float32"), const(0, "int32"), const(0.02, "float32"),
                                    const(0, "int32"), out_dtype="int8")
        return relay.clip(y, 0, 127)

    data = relay.var("data", shape=(1, 3, image, image), dtype="float32")
    x = relay.qnn.op.quantize(data, const(0.02, "float32"), const(0, "int32"), out_dtype="int8")
    x = conv(x, 32, 3, 3, 2, 1)
    channels = 32
    for out, stride in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [
            (1024, 2), (1024, 1)]:
        x = conv(x, channels, channels, 3, stride, channels)  # depthwise
        x = conv(x, out, channels, 1, 1, 1)  # pointwise
        channels = out
    x = relay.qnn.op.dequantize(x, const(0.02, "float32"), const(0, "int32"))
    x = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x))
    w = const((rng.standard_normal((1000, channels)) * 0.02).astype("float32"), "float32")
    x = relay.nn.softmax(relay.nn.dense(x, w))
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([data], x))), {}


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
    "transformer": _transformer,
    "qnn_mobilenet": _qnn_mobilenet,
}


def workload(name: str) -> Workload:
    """``(mod, params)`` of the built-in model ``name`` (one of :data:`MODELS`)."""
    try:
        make = MODELS[name]
    except KeyError:
        from ..errors import RelayVizUsageError

        raise RelayVizUsageError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}") from None
    try:
        return make()
    except ImportError as exc:
        from ..errors import RelayVizDependencyError

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
