"""The loop nests of ``relay.build``'s kernels (CPU schedules: parallel and vectorized loops),
read from a trace recorded with ``tir=True``: the MLP of ``tvm.relay.testing`` built for
x86-64 (``tests/kerneltraces.py``). Relay lowers each kernel in a module of its own inside
LowerTE; ``relayviz kernel`` follows it there."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from kerneltraces import relay_mlp
from relayviz_instrument.analysis.kernel_story import kernel_story
from relayviz_instrument.analysis.loop_nest import read_loop_nest
from relayviz_instrument.cli import main
from relayviz_instrument.store import load_trace
from relayviz_instrument.views.kernel import kernel_history

KERNEL = "tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu"


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return relay_mlp(tmp_path_factory)


def test_a_dense_kernel_reads_as_its_parallel_and_vectorized_loops_pass_by_pass(mlp: Path) -> None:
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    console.print(kernel_history(load_trace(mlp), KERNEL))
    assert console.export_text() == """\
kernel @tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu
stems from nn.bias_add, nn.dense, nn.relu of the input module

LowerTensorExpr #103  made @tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu
  for ax1.outer.ax0.outer.fused in 0..4 parallel
    alloc compute float32[1, 32] global
    for y.inner.outer.x.inner.outer.fused in 0..4
      alloc compute.global float32[1, 8] global
      for x.c.init in 0..8 vectorized
        store compute.global
      for k.outer in 0..784
        for x.c in 0..8 vectorized
          store compute.global
      for x.inner.inner in 0..8 vectorized
        store compute
    for ax1.inner.outer in 0..4
      for ax1.inner.inner in 0..8 vectorized
        store T_relu

tir.StorageFlatten #156  changed @tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu: global
compute float32[1, 32] → float32[32]; global compute.global float32[1, 8] → float32[8]
  for ax1.outer.ax0.outer.fused in 0..4 parallel
    alloc compute float32[32] global
    for y.inner.outer.x.inner.outer.fused in 0..4
      alloc compute.global float32[8] global
      for x.c.init in 0..8 vectorized
        store compute.global
      for k.outer in 0..784
        for x.c in 0..8 vectorized
          store compute.global
      for x.inner.inner in 0..8 vectorized
        store compute
    for ax1.inner.outer in 0..4
      for ax1.inner.inner in 0..8 vectorized
        store T_relu

tir.VectorizeLoop #187  changed @tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu: vectorized
x.c.init(8), x.c(8), x.inner.inner(8), ax1.inner.inner(8)
  for ax1.outer.ax0.outer.fused in 0..4 parallel
    alloc compute float32[32] global
    for y.inner.outer.x.inner.outer.fused in 0..4
      alloc compute.global float32[8] global
      store compute.global
      for k.outer in 0..784
        store compute.global
      store compute
    for ax1.inner.outer in 0..4
      store T_relu

tir.StorageRewrite #190  changed @tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu: global
compute float32[32] → float32x8[4]; global compute.global float32[8] → float32x8[1]
  for ax1.outer.ax0.outer.fused in 0..4 parallel
    alloc compute float32x8[4] global
    alloc compute.global float32x8[1] global
    for y.inner.outer.x.inner.outer.fused in 0..4
      store compute.global
      for k.outer in 0..784
        store compute.global
      store compute
    for ax1.inner.outer in 0..4
      store T_relu
"""


def test_the_built_module_holds_the_kernel_as_its_last_lowering_left_it(mlp: Path) -> None:
    # The TIR module relay.build goes on with holds each kernel as LowerTE's lowering of it
    # left it: no pass after the last step above changed its loop nest.
    trace = load_trace(mlp)
    story = kernel_story(trace, KERNEL, operators=False)
    [packed] = [r for r in trace.records if r.name == "tir.MakePackedAPI" and r.before]
    assert read_loop_nest(trace.snapshot(packed.before), KERNEL) == story.steps[-1].nest


def test_relayviz_kernel_on_a_relay_build(mlp: Path, capsys: Any) -> None:
    assert main(["kernel", str(mlp), KERNEL, "--brief"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"kernel @{KERNEL}", "stems from nn.bias_add, nn.dense, nn.relu of the input module"]
    assert [line.split("  ")[0] for line in lines if "#" in line] == [
        "LowerTensorExpr #103", "tir.StorageFlatten #156", "tir.VectorizeLoop #187", "tir.StorageRewrite #190"]
