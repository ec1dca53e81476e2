"""``relayviz kernel`` on a Relax build for the CPU (the ``nn`` MLP of the demo, the zero
pipeline then ``tvm.compile``, ``tir=True``): no device kernel, no thread; the fused kernel's
story runs from FuseTIR through the TIR lowering, and it stems from the three operators
FuseOps fused."""

from __future__ import annotations

from pathlib import Path

import pytest

from relayviz_instrument.analysis.kernel_story import kernel_story
from relayviz_instrument.store import load_trace

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from relayviz_instrument.capture import trace_compile
    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

    path = tmp_path_factory.mktemp("relax-cpu") / "trace"
    trace_compile(relax_workload("mlp"), target=relax_host_target(), out_dir=path, tir=True)
    return path


def test_a_cpu_kernel_stems_from_the_operators_fuse_ops_fused(traced: Path) -> None:
    story = kernel_story(load_trace(traced), "fused_matmul_add_relu")
    assert dict(story.operators) == {"relax.matmul": 1, "relax.add": 1, "relax.nn.relu": 1}
    assert story.host is None and story.devices == ()
    first = story.steps[0]
    assert first.created and first.record is not None and first.record.name == "FuseTIRInner"
    assert all(not nest.launch() for nest in (s.nest for s in story.steps))
    # Every step after the first changed the nest, and says what it changed.
    assert all(s.change is not None and s.change.facts for s in story.steps[1:])
    # (tir.* on TVM 0.16, s_tir.* on 0.2x)
    assert [s.record.name.split(".")[-1] for s in story.steps if s.record][1:3] == ["ConvertBlocksToOpaque",
                                                                                   "LowerOpaqueBlock"]
