"""Built-in Relax models for the demo, the tests and the benchmarks.

Two ways into Relax, as its users take them: a PyTorch module through ``torch.export`` and
``tvm.relax.frontend.torch.from_exported_program`` (needs ``torch`` and TVM 0.2x), and a
``tvm.relax.frontend.nn`` module (every TVM with Relax, hhb-tvm's 0.16 too). Each entry makes
an ``IRModule`` whose functions are all Relax, most with their weights bound in it as constants
(random, from a fixed seed: nothing is downloaded), small enough to compile on a CPU in seconds:

- ``cnn``: a small convolutional network (PyTorch);
- ``resnet18``: ResNet-18 as torchvision defines it (basic blocks, 1x1 downsample, 11.7 M
  weights), written in plain PyTorch, for a 1x3x224x224 image (PyTorch);
- ``mlp``: a two-layer perceptron with a symbolic batch size (``nn``; weights unbound);
- ``llama``: a Llama-shaped decoder (``nn``): token embedding, four layers of RMSNorm,
  attention with rotary position embedding and a causal mask, RMSNorm and a SwiGLU MLP, a
  final RMSNorm and the vocabulary projection; 16 tokens in, logits out;
- ``decoder``: a Llama decoder shaped as MLC-LLM compiles one for a GPU (``nn``,
  ``relax_decoder.py``): ``embed``, ``prefill`` and ``decode`` functions whose weights are
  inputs (unbound), attention in the paged KV cache of ``tvm.relax.frontend.nn.llm`` and its
  ``create_paged_kv_cache``; 4 layers, hidden size 128. Its cache's attention kernels are made
  for the target it is compiled for (:func:`relax_workload`'s ``target``, CUDA by default);
- ``decoder-7b``: the same with Llama-2-7B's widths (32 layers, hidden 4096, 32 heads, MLP
  11008, vocabulary 32000), for the benchmarks (seconds to make and to compile for CUDA).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Dict, List, Optional, Tuple

from .relax_decoder import LLAMA2_7B_DECODER, SMALL_DECODER, decoder_module

__all__ = ["RELAX_MODELS", "TORCH_MODELS", "DECODER_MODELS", "relax_workload", "torch_model", "torch_available",
           "relax_host_target"]


def torch_available() -> bool:
    """Whether PyTorch and TVM's PyTorch frontend can be imported here."""
    try:
        import torch  # noqa: F401  # imported only to see whether it can be
        from tvm.relax.frontend.torch import from_exported_program  # noqa: F401  # imported only to see whether it can be
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


#: The Llama-shaped decoder's sizes: small, so that the zero pipeline and tvm.compile take seconds.
LLAMA_LAYERS, LLAMA_HIDDEN, LLAMA_HEADS, LLAMA_FFN, LLAMA_VOCAB, LLAMA_TOKENS = 4, 64, 4, 172, 256, 16


def _nn_llama() -> Any:
    """The Llama-shaped decoder, exported with ``export_tvm`` and its parameters bound: random
    weights from a fixed seed, the rotary tables and the causal mask computed."""
    import numpy as np
    import tvm
    from tvm import relax
    from tvm.relax.frontend import nn

    hidden, heads, ffn, tokens = LLAMA_HIDDEN, LLAMA_HEADS, LLAMA_FFN, LLAMA_TOKENS
    head_dim = hidden // heads

    def linear(n_in: int, n_out: int) -> Any:
        return nn.Linear(n_in, n_out, bias=False)

    class Attention(nn.Module):
        def __init__(self) -> None:
            self.q_proj, self.k_proj = linear(hidden, hidden), linear(hidden, hidden)
            self.v_proj, self.o_proj = linear(hidden, hidden), linear(hidden, hidden)

        def forward(self, x: nn.Tensor, cos: nn.Tensor, sin: nn.Tensor, mask: nn.Tensor) -> nn.Tensor:
            def heads_of(t: nn.Tensor) -> nn.Tensor:  # (1, tokens, heads, head_dim)
                return nn.op.reshape(t, (1, tokens, heads, head_dim))

            def rotary(t: nn.Tensor) -> nn.Tensor:  # rotate_half, as Llama applies it
                first, second = nn.op.split(t, 2, axis=-1)
                return t * cos + nn.op.concat([second * -1.0, first], dim=-1) * sin

            q, k, v = rotary(heads_of(self.q_proj(x))), rotary(heads_of(self.k_proj(x))), heads_of(self.v_proj(x))
            q, k, v = (nn.op.permute_dims(t, [0, 2, 1, 3]) for t in (q, k, v))
            scores = nn.op.matmul(q, nn.op.permute_dims(k, [0, 1, 3, 2])) * (1.0 / head_dim ** 0.5) + mask
            out = nn.op.matmul(nn.op.softmax(scores, axis=-1), v)
            return self.o_proj(nn.op.reshape(nn.op.permute_dims(out, [0, 2, 1, 3]), (1, tokens, hidden)))

    class SwiGLU(nn.Module):
        def __init__(self) -> None:
            self.gate_proj, self.up_proj, self.down_proj = linear(hidden, ffn), linear(hidden, ffn), linear(ffn, hidden)

        def forward(self, x: nn.Tensor) -> nn.Tensor:
            return self.down_proj(nn.op.silu(self.gate_proj(x)) * self.up_proj(x))

    class DecoderLayer(nn.Module):
        def __init__(self) -> None:
            self.input_norm, self.attn = nn.RMSNorm(hidden, axes=-1, bias=False), Attention()
            self.post_attention_norm, self.mlp = nn.RMSNorm(hidden, axes=-1, bias=False), SwiGLU()

        def forward(self, x: nn.Tensor, cos: nn.Tensor, sin: nn.Tensor, mask: nn.Tensor) -> nn.Tensor:
            x = x + self.attn(self.input_norm(x), cos, sin, mask)
            return x + self.mlp(self.post_attention_norm(x))

    class Llama(nn.Module):
        def __init__(self) -> None:
            self.embed_tokens = nn.Embedding(LLAMA_VOCAB, hidden)
            self.layers = nn.ModuleList([DecoderLayer() for _ in range(LLAMA_LAYERS)])
            self.norm = nn.RMSNorm(hidden, axes=-1, bias=False)
            self.lm_head = linear(hidden, LLAMA_VOCAB)
            self.rope_cos, self.rope_sin = nn.Parameter((tokens, 1, head_dim)), nn.Parameter((tokens, 1, head_dim))
            self.causal_mask = nn.Parameter((tokens, tokens))

        def forward(self, input_ids: nn.Tensor) -> nn.Tensor:
            x = self.embed_tokens(input_ids)
            for layer in self.layers:
                x = layer(x, self.rope_cos, self.rope_sin, self.causal_mask)
            return self.lm_head(self.norm(x))

    mod, params = Llama().export_tvm(spec={"forward": {"input_ids": nn.spec.Tensor((1, tokens), "int32")}})
    rng = np.random.default_rng(0)
    angles = np.outer(np.arange(tokens), 10000.0 ** (-np.arange(0, head_dim, 2) / head_dim))
    angles = np.concatenate([angles, angles], axis=-1)[:, None, :]  # (tokens, 1, head_dim)
    computed = {"rope_cos": np.cos(angles), "rope_sin": np.sin(angles),
                "causal_mask": np.triu(np.full((tokens, tokens), -1e9), k=1)}
    values: Dict[str, Any] = {}
    for name, param in params:
        shape = tuple(int(d) for d in param.shape)
        value = computed.get(name)
        if value is None:
            value = 1.0 + 0.1 * rng.standard_normal(shape) if name.endswith("norm.weight") \
                else rng.standard_normal(shape) / np.sqrt(shape[-1])
        values[name] = _tensor(tvm, value.astype("float32"))
    return relax.transform.BindParams("forward", values)(mod)


def _tensor(tvm: Any, array: Any) -> Any:
    """A TVM tensor of ``array`` (``tvm.runtime.tensor`` on TVM 0.2x, ``tvm.nd.array`` before)."""
    return tvm.runtime.tensor(array) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(array)


def _torch_cnn() -> Tuple[Any, Tuple[int, ...]]:
    """A small convolutional network (conv, batch norm, ReLU, pooling, linear), for a 16x16 image."""
    import torch

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

    return SmallCNN(), (1, 3, 16, 16)


def _torch_resnet18() -> Tuple[Any, Tuple[int, ...]]:
    """ResNet-18 (torchvision's layout, written out: torchvision is not needed), for one
    224x224 RGB image."""
    import torch

    class BasicBlock(torch.nn.Module):
        def __init__(self, n_in: int, n_out: int, stride: int) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(n_in, n_out, 3, stride, 1, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(n_out)
            self.conv2 = torch.nn.Conv2d(n_out, n_out, 3, 1, 1, bias=False)
            self.bn2 = torch.nn.BatchNorm2d(n_out)
            self.downsample = None if stride == 1 and n_in == n_out else torch.nn.Sequential(
                torch.nn.Conv2d(n_in, n_out, 1, stride, bias=False), torch.nn.BatchNorm2d(n_out))

        def forward(self, x: "torch.Tensor") -> "torch.Tensor":
            identity = x if self.downsample is None else self.downsample(x)
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet18(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(64)
            self.maxpool = torch.nn.MaxPool2d(3, 2, 1)
            stages: List[torch.nn.Module] = []
            n_in = 64
            for n_out, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                stages.append(torch.nn.Sequential(BasicBlock(n_in, n_out, stride), BasicBlock(n_out, n_out, 1)))
                n_in = n_out
            self.layer1, self.layer2, self.layer3, self.layer4 = stages
            self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
            self.fc = torch.nn.Linear(512, 1000)

        def forward(self, x: "torch.Tensor") -> "torch.Tensor":
            x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return _with_trained_statistics(ResNet18()), (1, 3, 224, 224)


def _with_trained_statistics(model: Any) -> Any:
    """``model`` with batch-norm running means and variances drawn at random, as a trained
    model has them (a fresh one has zeros and ones, which batch norm folds away)."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d) and module.running_mean is not None \
                and module.running_var is not None:
            torch.nn.init.uniform_(module.running_mean, -0.1, 0.1)
            torch.nn.init.uniform_(module.running_var, 0.5, 1.5)
    return model


def torch_model(name: str) -> Tuple[Any, Any]:
    """``(module, example_input)``: the PyTorch model ``name`` (one of :data:`TORCH_MODELS`)
    and the input it is exported with, the same on every call (seed 0)."""
    import torch

    torch.manual_seed(0)  # the weights become constants of the module: the same every run
    model, input_shape = _TORCH_MAKERS[name]()
    return model.eval(), torch.randn(*input_shape)


def _exported(name: str) -> Any:
    """The PyTorch model ``name`` through ``torch.export`` and ``from_exported_program``."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    model, example = torch_model(name)
    with torch.no_grad():
        exported = torch.export.export(model, (example,))
    return from_exported_program(exported)


_TORCH_MAKERS: Dict[str, Callable[[], Tuple[Any, Tuple[int, ...]]]] = {"cnn": _torch_cnn, "resnet18": _torch_resnet18}
#: The models exported from PyTorch (they need ``torch``).
TORCH_MODELS = frozenset(_TORCH_MAKERS)


#: The MLC-LLM-shaped decoders, whose makers take the target their KV cache's kernels are made for.
DECODER_MODELS = frozenset({"decoder", "decoder-7b"})

#: Model name -> a function making its Relax ``IRModule``.
RELAX_MODELS: Dict[str, Callable[..., Any]] = {
    "cnn": lambda: _exported("cnn"),
    "decoder": partial(decoder_module, SMALL_DECODER),
    "decoder-7b": partial(decoder_module, LLAMA2_7B_DECODER),
    "llama": _nn_llama,
    "mlp": _nn_mlp,
    "resnet18": lambda: _exported("resnet18"),
}


def relax_workload(name: str, *, target: Optional[Any] = None) -> Any:
    """The Relax ``IRModule`` of the built-in model ``name`` (one of :data:`RELAX_MODELS`).
    ``target``: what the model will be compiled for, for the models whose IR depends on it (the
    decoders' KV cache kernels; default CUDA); the others ignore it."""
    from ..errors import RelayVizDependencyError, RelayVizUsageError

    try:
        make = RELAX_MODELS[name]
    except KeyError:
        raise RelayVizUsageError(f"unknown Relax model {name!r}; choose one of: {', '.join(RELAX_MODELS)}") from None
    if name in TORCH_MODELS and not torch_available():
        raise RelayVizDependencyError(
            f"the {name!r} model is exported from PyTorch: install torch (pip install torch==2.13.0) "
            "and a TVM with tvm.relax.frontend.torch (apache-tvm 0.2x), or use --model mlp or llama")
    return make(target=target) if name in DECODER_MODELS else make()
