"""A Llama decoder shaped as MLC-LLM compiles one, written with ``tvm.relax.frontend.nn``.

MLC-LLM exports a model's entry points as separate Relax functions over weights that are
function inputs (``param_mode="packed"``: one tuple of every weight, loaded at run time), with
the attention of every layer running in a paged KV cache (``tvm.relax.frontend.nn.llm``):

- ``embed(input_ids)``: token ids to embeddings;
- ``prefill(input_embed, paged_kv_cache)``: a prompt of ``seq_len`` tokens through every
  layer, filling the cache; the logits of its last token;
- ``decode(input_embed, paged_kv_cache)``: one token through every layer against the cache;
  its logits;
- ``create_paged_kv_cache(...)``: the cache, sized at run time, with its TIR attention kernels
  (prefill, decode, tree attention, page copies, rotary embedding) made for the target.

A layer is RMSNorm, a fused QKV projection, attention in the cache (rotary embedding applied
there), the output projection and a residual, then RMSNorm, a fused gate/up projection, SiLU
gating, the down projection and a residual. Weights are float32: MLC-LLM's ``q0f32``. (Its
usual ``q0f16`` crashes TVM 0.27 here: dlight's tensor-core matmul schedule for float16 on
sm_70 and later ends in a segmentation fault inside ``s_tir::Tensorize`` for a matmul with
``seq_len`` rows.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["DecoderSize", "SMALL_DECODER", "LLAMA2_7B_DECODER", "DECODER_DTYPE", "decoder_module"]

#: The weights' and activations' data type (see the module docstring).
DECODER_DTYPE = "float32"
#: RMSNorm's epsilon and the rotary embedding's base, as Llama-2 has them.
_NORM_EPS, _ROPE_THETA = 1e-5, 10000


@dataclass(frozen=True)
class DecoderSize:
    """The widths of a decoder: layers, hidden size, attention heads (as many key/value heads:
    multi-head attention), the MLP's intermediate size and the vocabulary."""

    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


#: Small enough that the CUDA pipeline and tvm.compile take seconds (tests, the demo).
SMALL_DECODER = DecoderSize(layers=4, hidden=128, heads=4, ffn=344, vocab=512)
#: Llama-2-7B's widths (the benchmark).
LLAMA2_7B_DECODER = DecoderSize(layers=32, hidden=4096, heads=32, ffn=11008, vocab=32000)


def decoder_module(size: DecoderSize, target: Optional[Any] = None) -> Any:
    """The Relax ``IRModule`` of a decoder of ``size``, its weights unbound (the functions take
    them as one packed tuple). The KV cache's attention kernels are made for ``target`` (its
    CPU kernels for an ``llvm`` target, GPU ones otherwise; default: :func:`cuda_target`)."""
    from tvm import relax, te
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    from ..errors import RelayVizDependencyError
    from .cuda import cuda_target

    try:
        from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache
    except ImportError as exc:
        raise RelayVizDependencyError(
            f"the decoder needs the paged KV cache of tvm.relax.frontend.nn.llm, which this TVM lacks ({exc}): "
            "install apache-tvm 0.2x (the .venv-relax leg), or use --model mlp or llama") from None

    if target is None:
        target = cuda_target()
    elif isinstance(target, str):
        import tvm

        target = tvm.target.Target(target)
    d, heads, hidden = size.head_dim, size.heads, size.hidden

    def linear(n_in: int, n_out: int) -> Any:
        return nn.Linear(n_in, n_out, bias=False)

    class Attention(nn.Module):
        def __init__(self) -> None:
            self.qkv_proj, self.o_proj = linear(hidden, 3 * hidden), linear(hidden, hidden)

        def forward(self, x: nn.Tensor, cache: PagedKVCache, layer: int) -> nn.Tensor:
            batch, tokens, _ = x.shape
            qkv = op.reshape(self.qkv_proj(x), (batch, tokens, 3 * heads, d))
            out = cache.attention_with_fused_qkv(layer, qkv, heads, sm_scale=d ** -0.5)
            return self.o_proj(op.reshape(out, (batch, tokens, hidden)))

    class GatedMLP(nn.Module):
        def __init__(self) -> None:
            self.gate_up_proj, self.down_proj = linear(hidden, 2 * size.ffn), linear(size.ffn, hidden)

        def forward(self, x: nn.Tensor) -> nn.Tensor:
            gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
            return self.down_proj(op.silu(gate) * up)

    class Layer(nn.Module):
        def __init__(self) -> None:
            self.input_layernorm = nn.RMSNorm(hidden, -1, _NORM_EPS, bias=False)
            self.self_attn = Attention()
            self.post_attention_layernorm = nn.RMSNorm(hidden, -1, _NORM_EPS, bias=False)
            self.mlp = GatedMLP()

        def forward(self, x: nn.Tensor, cache: PagedKVCache, layer: int) -> nn.Tensor:
            x = x + self.self_attn(self.input_layernorm(x), cache, layer)
            return x + self.mlp(self.post_attention_layernorm(x))

    def last_token(hidden_states: Any) -> Any:  # (1, seq_len, hidden) -> (1, 1, hidden)
        batch, tokens, width = hidden_states.shape
        return te.compute((batch, 1, width), lambda b, _, i: hidden_states[b, tokens - 1, i], name="last_token")

    class Decoder(nn.Module):
        def __init__(self) -> None:
            self.embed_tokens = nn.Embedding(size.vocab, hidden)
            self.layers = nn.ModuleList([Layer() for _ in range(size.layers)])
            self.norm = nn.RMSNorm(hidden, -1, _NORM_EPS, bias=False)
            self.lm_head = linear(hidden, size.vocab)

        def _layers(self, x: nn.Tensor, cache: PagedKVCache) -> nn.Tensor:
            for number, layer in enumerate(self.layers):
                x = layer(x, cache, number)
            return self.norm(x)

        def embed(self, input_ids: nn.Tensor) -> nn.Tensor:
            return self.embed_tokens(input_ids)

        def prefill(self, input_embed: nn.Tensor, cache: PagedKVCache) -> Any:
            last = op.tensor_expr_op(last_token, name_hint="last_token", args=[self._layers(input_embed, cache)])
            return self.lm_head(last), cache

        def decode(self, input_embed: nn.Tensor, cache: PagedKVCache) -> Any:
            return self.lm_head(self._layers(input_embed, cache)), cache

        def create_paged_kv_cache(self, max_batch_size: Any, max_total_seq_len: Any, prefill_chunk_size: Any,
                                  page_size: Any, support_sliding_window: Any) -> PagedKVCache:
            return TIRPagedKVCache(
                attn_kind="mha", max_batch_size=max_batch_size, max_total_seq_len=max_total_seq_len,
                prefill_chunk_size=prefill_chunk_size, page_size=page_size,
                support_sliding_window=support_sliding_window, layer_partition=relax.ShapeExpr([0, size.layers]),
                num_hidden_layers=size.layers, num_attention_heads=heads, num_key_value_heads=heads,
                qk_head_dim=d, v_head_dim=d, mla_original_qk_head_dim=0, mla_original_v_head_dim=0,
                rope_mode=RopeMode.NORMAL, rope_scale=1, rope_theta=_ROPE_THETA, rope_scaling={},
                rope_ext_factors=relax.prim_value(0), rotary_dim=d, enable_disaggregation=False,
                dtype=DECODER_DTYPE, target=target)

    packed = {"param_mode": "packed", "effect_mode": "none"}
    cache_spec = nn.spec.Object(object_type=PagedKVCache)
    spec = {
        "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"), "$": packed},
        "prefill": {"input_embed": nn.spec.Tensor([1, "seq_len", hidden], DECODER_DTYPE),
                    "cache": cache_spec, "$": packed},
        "decode": {"input_embed": nn.spec.Tensor([1, 1, hidden], DECODER_DTYPE), "cache": cache_spec, "$": packed},
        "create_paged_kv_cache": {
            "max_batch_size": int, "max_total_seq_len": int, "prefill_chunk_size": int, "page_size": int,
            "support_sliding_window": int, "$": {"param_mode": "none", "effect_mode": "none"}},
    }
    model = Decoder()
    model.to(DECODER_DTYPE)
    mod, _ = model.export_tvm(spec=spec)
    return mod
