"""``relayviz kernel`` and a device kernel's name in ``relayviz history``: one kernel of the
decoder's CUDA build (``tests/kerneltraces.py``) from FuseTIR to its device kernel, and the
Relax operators it stems from, checked against the fused function FuseOps built in the same
compilation. Skipped, with the reason, where nvcc is missing."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from typing import Any, Dict

import pytest
from rich.console import Console

from kerneltraces import FUSED_MATMUL, CudaTrace, cuda_llama
from relayviz_instrument.analysis.kernel_story import kernel_story
from relayviz_instrument.analysis.pass_diffs import PassDiffs
from relayviz_instrument.analysis.reading import TraceReading
from relayviz_instrument.cli import main
from relayviz_instrument.store import load_trace
from relayviz_instrument.views.kernel import kernel_history

pytestmark = pytest.mark.slow

DEVICE = FUSED_MATMUL + "_kernel"


@pytest.fixture(scope="module")
def cuda(tmp_path_factory: pytest.TempPathFactory) -> CudaTrace:
    return cuda_llama(tmp_path_factory)


@pytest.fixture(scope="module")
def reading(cuda: CudaTrace) -> TraceReading:
    """The trace read back, its snapshots kept once read: every story of this module reads them all."""
    trace = load_trace(cuda.path)
    return TraceReading(trace, diffs=PassDiffs(trace, keep_documents=None))


def fused_operators(cuda: CudaTrace) -> Dict[str, int]:
    """The Relax operators of the input module that FuseOps put into ``fused_matmul_add2``,
    read from the module it returned: the PrimFuncs its function calls (LegalizeOps names each
    after its operator: ``matmul``, ``add2``), once per call site of the function."""
    from tvm import relax

    mod = cuda.fused
    gv = mod.get_global_var(FUSED_MATMUL)
    kernels: Counter = Counter()
    relax.analysis.post_order_visit(mod[gv].body, lambda e: kernels.update(
        [e.args[0].name_hint] if isinstance(e, relax.Call) and getattr(e.op, "name", "") == "relax.call_tir" else []))
    sites = []
    relax.analysis.post_order_visit(mod["forward"].body, lambda e: sites.append(e) if isinstance(
        e, relax.Call) and isinstance(e.op, relax.GlobalVar) and e.op.same_as(gv) else None)
    assert kernels and sites
    return {"relax." + re.sub(r"\d+$", "", name): n * len(sites) for name, n in kernels.items()}


def test_the_device_kernel_stems_from_the_operators_fuse_ops_fused(cuda: CudaTrace, reading: TraceReading) -> None:
    story = kernel_story(reading.trace, DEVICE, reading=reading)
    assert dict(story.operators) == fused_operators(cuda) == {"relax.matmul": 4, "relax.add": 4}
    assert story.host == FUSED_MATMUL
    # Its story starts where FuseTIR made the fused PrimFunc and ends at the device kernel.
    assert [s.record.name for s in story.steps[:1] if s.record] == ["FuseTIRInner"]
    assert story.steps[-1].kernel == DEVICE and story.steps[-1].record is not None
    assert story.steps[-1].record.name == "tirx.SplitHostDevice"


def test_relayviz_kernel_tells_the_device_kernels_story_pass_by_pass(reading: TraceReading) -> None:
    console = Console(width=1000, color_system=None, record=True)
    console.print(kernel_history(reading.trace, DEVICE, brief=True, reading=reading))
    assert console.export_text() == """\
kernel @fused_matmul_add2_kernel  device kernel of @fused_matmul_add2
stems from relax.add×4, relax.matmul×4 of the input module
device kernel @fused_matmul_add2_kernel launched with grid (1, 1) and block (8, 16), 6,912 bytes of shared memory

FuseTIRInner #1729  made @fused_matmul_add2

ApplyDefaultSchedule #1731  scheduled @fused_matmul_add2: i1 split 32 (was 16) → blockIdx.x(1) × vthread.x(1) × \
threadIdx.x(8) × 4; i2 split 64 → vthread.y(1) × threadIdx.y(16) × 2 × 2 vectorized; k split 64 → 4 × 16; +blocks \
matmul_init, reshape5_reindex_pad_shared, param_0_reindex_shared, matmul_intermediate_reindex_pad_local; −block T_add \
(merged into matmul_intermediate_reindex_pad_local); +local matmul_intermediate_reindex_pad_local float32[1, 32, 64]; \
+shared reshape5_reindex_pad_shared float32[1, 32, 64]; +shared param_0_reindex_shared float32[1, 64, 64]; −global \
matmul_intermediate

s_tir.PlanAndUpdateBufferAllocationLocation #1751  changed @fused_matmul_add2: moved \
matmul_intermediate_reindex_pad_local into loop threadIdx.x; moved reshape5_reindex_pad_shared, param_0_reindex_shared \
into loop ax3_0

s_tir.ConvertBlocksToOpaque #1752  changed @fused_matmul_add2: opaque blocks matmul_init, reshape5_reindex_pad_shared, \
param_0_reindex_shared, matmul_update, … 1 more

s_tir.LiftThreadBinding #1753  changed @fused_matmul_add2: rebinding loops merged into the enclosing ones: \
threadIdx.y(16) ×2, threadIdx.x(8) ×2

s_tir.CompactBufferAllocation #1755  changed @fused_matmul_add2: local matmul_intermediate_reindex_pad_local \
float32[1, 32, 64] → float32[1, 4, 4]; shared reshape5_reindex_pad_shared float32[1, 32, 64] → float32[1, 32, 16]; \
shared param_0_reindex_shared float32[1, 64, 64] → float32[1, 64, 16]

s_tir.UnifyThreadBinding #1757  changed @fused_matmul_add2: moved matmul_intermediate_reindex_pad_local into loop var; \
+loops var(1)

s_tir.StmtSimplify #1759  changed @fused_matmul_add2: regions of blocks matmul_init, reshape5_reindex_pad_shared, \
param_0_reindex_shared, matmul_update, … 1 more

s_tir.LowerOpaqueBlock #1764  changed @fused_matmul_add2: −5 blocks (matmul_init, reshape5_reindex_pad_shared, \
param_0_reindex_shared, matmul_update, … 1 more); −loops ax0(1)

tirx.FlattenBuffer #1765  changed @fused_matmul_add2: local matmul_intermediate_reindex_pad_local float32[1, 4, 4] → \
float32[16]; shared reshape5_reindex_pad_shared float32[1, 32, 16] → float32[576]; shared param_0_reindex_shared \
float32[1, 64, 16] → float32[1152]

tirx.VectorizeLoop #1769  changed @fused_matmul_add2: vectorized ax2_3_1_init(2), ax0_ax1_ax2_fused_3(2), ax2_3_1(2), \
ax2_1(2)

s_tir.InjectVirtualThread #1770  changed @fused_matmul_add2: −threads vthread.y(1), vthread.x(1)

tirx.StorageRewrite #1772  changed @fused_matmul_add2: local matmul_intermediate_reindex_pad_local float32[16] → \
float32x2[8]; moved reshape5_reindex_pad_shared, param_0_reindex_shared into loop blockIdx.y

tirx.UnrollLoop #1777  changed @fused_matmul_add2: unrolled ax1_3_init(4), ax2_3_0_init(2), ax0_ax1_ax2_fused_2(2), \
ax0_ax1_ax2_fused_2(4), … 5 more

s_tir.RenormalizeSplitPattern #1778  changed @fused_matmul_add2: conditions threadIdx.x < 4 → threadIdx.x // 4 < 1

tirx.StmtSimplify #1779  changed @fused_matmul_add2: conditions threadIdx.x // 4 < 1 → threadIdx.x < 4

s_tir.ThreadSync #1788  changed @fused_matmul_add2: +2 sync shared

tirx.SplitHostDevice #1794  split @fused_matmul_add2 into host @fused_matmul_add2 and device kernel \
@fused_matmul_add2_kernel launched with grid (1, 1) and block (8, 16), 6,912 bytes of shared memory
"""


def test_the_host_name_tells_the_same_story(reading: TraceReading) -> None:
    by_device = kernel_story(reading.trace, DEVICE, operators=False, reading=reading)
    by_host = kernel_story(reading.trace, FUSED_MATMUL, operators=False, reading=reading)
    assert [(s.record, s.nest) for s in by_host.steps] == [(s.record, s.nest) for s in by_device.steps]
    assert by_host.devices == (DEVICE,) and by_host.host is None


def test_relayviz_kernel_prints_each_nest_and_json(cuda: CudaTrace, reading: TraceReading, capsys: Any) -> None:
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    console.print(kernel_history(reading.trace, DEVICE, reading=reading))
    text = console.export_text()
    # The nest after the split: the launch of lowered code, shared tiles, barriers, unrolled stores.
    tail = text[text.index("tirx.SplitHostDevice #1794"):]
    assert "  launch threadIdx.x in 0..8\n" in tail and "sync shared\n" in tail
    assert "alloc reshape5_reindex_pad_shared float32[576] shared" in tail
    assert main(["kernel", str(cuda.path), DEVICE, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernel"] == DEVICE and out["host"] == FUSED_MATMUL
    assert out["operators"] == {"relax.add": 4, "relax.matmul": 4}
    last = out["steps"][-1]
    assert last["pass"] == "tirx.SplitHostDevice" and last["change"]["device_kernels"][0]["block"] == [8, 16]
    assert last["nest"]["kernel"] == DEVICE


def test_relayviz_history_of_a_device_kernel_names_its_relax_operators(cuda: CudaTrace, capsys: Any) -> None:
    assert main(["history", str(cuda.path), DEVICE]) == 0
    text = capsys.readouterr().out
    head = " ".join(" ".join(text.split("\n")[:2]).split())
    assert head.startswith("PrimFunc @fused_matmul_add2_kernel") and "after tirx.SplitHostDevice (#1794)" in head
    stems = re.search(r"stems from \d+ nodes of the input module: ([^├]*)", " ".join(text.split()))
    assert stems is not None
    found = {op: int(n) for op, n in re.findall(r"(relax\.\w+)×(\d+)", stems.group(1))}
    assert found == fused_operators(cuda)
    assert re.search(r"created by tirx\.SplitHostDevice #1794 .*from 1 node:\s+└── PrimFunc @fused_matmul_add2 ",
                     text, re.S)


def test_relayviz_history_op_of_a_device_kernel_follows_its_hosts_calls(cuda: CudaTrace, capsys: Any) -> None:
    assert main(["history", str(cuda.path), "--op", DEVICE, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # The executable calls the host function once a layer; each call launches the device kernel.
    assert len(out["histories"]) == 4 and {h["name"] for h in out["histories"]} == {FUSED_MATMUL}


def test_an_unknown_kernel_is_one_line_naming_some_that_exist(cuda: CudaTrace, capsys: Any) -> None:
    assert main(["kernel", str(cuda.path), "no_such_kernel"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no kernel named 'no_such_kernel'" in err
    assert re.search(r"the trace's kernels include: (\w+, ){8}… \(\d+ more\)$", err.strip())


def test_every_key_of_the_kernel_outputs_is_documented(cuda: CudaTrace, capsys: Any) -> None:
    from test_json_docs import DOCUMENTED, keys

    found = set()
    for argv in (["kernel", str(cuda.path), DEVICE, "--json"],
                 ["report", str(cuda.path), "--pass", "SplitHostDevice|ThreadSync", "--json"]):
        assert main(argv) == 0
        found |= set(keys(json.loads(capsys.readouterr().out)))
    assert {"kernels", "device_kernels", "facts", "verb", "steps", "nest", "items", "iter_vars"} <= found
    assert found - DOCUMENTED == set()
