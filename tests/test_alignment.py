"""``align``: two compilations of the MLP of tvm.relay.testing (relay.optimize at opt_level 2
and 3, and 3 with FoldConstant disabled), and a Relax pipeline with a pass disabled."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from relayviz_instrument import load_trace
from relayviz_instrument.analysis.alignment import DIFFERENT, ONLY_A, ONLY_B, SAME, align
from relayviz_instrument.analysis.pipeline import SCRATCH, event_roles


@pytest.fixture(scope="module")
def traces(mlp_optimized: Dict[str, Any]) -> Dict[str, Any]:
    return {name: load_trace(path) for name, path in mlp_optimized.items()}


def test_a_trace_aligned_with_itself_pairs_every_event_with_itself(traces) -> None:
    trace = traces["o3"]
    alignment = align(trace, trace)
    assert alignment.same and alignment.first_divergence is None and not alignment.divergences
    assert all(p.status == SAME and p.a is p.b and not p.diverges for p in alignment.pairs)
    paired = {p.a.index for p in alignment.pairs}
    left_out = [r for r in trace.records if r.index not in paired]
    # What is left out is the type checking SimplifyExpr and FoldConstant do on a _tmp module.
    assert left_out and all(r.name == "InferType" and r.depth > 1 for r in left_out)
    assert {r.index for r in left_out} == {i for i, role in event_roles(trace.records).items() if role == SCRATCH}


def test_a_disabled_pass_is_only_a_and_nothing_diverges_before_it(traces) -> None:
    full, without = traces["o3"], traces["nofold"]
    alignment = align(full, without)
    by_index = {r.index: r for r in full.records}

    def in_fold_constant(record) -> bool:
        while record is not None:
            if record.name == "FoldConstant":
                return True
            record = by_index.get(record.parent)
        return False

    only_a = [p for p in alignment.pairs if p.status == ONLY_A]
    assert only_a and all(in_fold_constant(p.a) for p in only_a)
    assert {p.name for p in only_a} == {"FoldConstant", "InferType"}
    assert not [p for p in alignment.pairs if p.status == ONLY_B]
    # Every event of the pipeline without FoldConstant is paired: an insertion, not a shift.
    assert sum(1 for p in alignment.pairs if p.b is not None) == len(align(without, without).pairs)

    first = alignment.first_divergence
    assert first is not None and first.name == "FoldConstant" and first.status == ONLY_A and first.a.changed
    before = alignment.pairs[:alignment.first_divergence_index]
    assert not any(p.diverges for p in before)
    # The same passes with the same outputs, FoldConstant's first run that changed nothing,
    # and the Sequential holding them all, whose output differs because of what comes later.
    assert all(p.status == SAME or (p.status == ONLY_A and not p.a.changed) or enclosing(p, first) for p in before)
    assert before[0].name == "sequential" and before[0].a.index == before[0].b.index == 0
    # Nothing diverged before it, so the run without it held exactly FoldConstant's input:
    # the cross diff is FoldConstant's own diff, undone.
    assert first.output_a == first.a.after and first.output_b == first.a.before
    own = {op: -count for op, count in full_diff(full, first.a).op_delta.items()}
    assert first.diff is not None and dict(first.diff.op_delta) == own


def enclosing(pair: Any, divergence: Any) -> bool:
    """A pass whose output differs because a pass nested in it diverged (a Sequential)."""
    return pair.status == DIFFERENT and pair.depth < divergence.depth and pair.a.changed and pair.b.changed


def full_diff(trace: Any, record: Any) -> Any:
    from relayviz_instrument import PassDiffs

    return PassDiffs(trace).diff(record)


def test_opt_level_2_against_3_names_the_first_divergent_pass(traces) -> None:
    alignment = align(traces["o2"], traces["o3"])
    first = alignment.first_divergence
    assert first is not None
    # CanonicalizeOps is an opt_level-3 pass (TVM's own PassInfo, as recorded), and on the MLP
    # it turns each nn.bias_add into an add.
    assert (first.name, first.status, first.b.opt_level, first.b.changed) == ("CanonicalizeOps", ONLY_B, 3, True)
    assert first.diff.op_delta["nn.bias_add"] < 0 < first.diff.op_delta["add"]
    for pair in alignment.pairs[:alignment.first_divergence_index]:
        assert not pair.diverges
        assert (pair.status == SAME or enclosing(pair, first)
                # an opt_level-3 pass, or the InferType one requires, that changed nothing
                or (pair.status == ONLY_B and not pair.b.changed
                    and (pair.b.opt_level == 3 or pair.name == "InferType"))
                ), pair.name
    # Later passes run on modules that already differ: they are compared, and diverge only
    # where they did something different.
    later = alignment.pairs[alignment.first_divergence_index + 1:]
    assert any(p.status == DIFFERENT for p in later)
    assert all(p.status != DIFFERENT or p.diff is not None for p in later)
    assert not alignment.same


def test_a_trace_in_memory_aligns_with_the_same_compilation_read_from_disk(traces) -> None:
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    live = RelayVizTrace(out_dir=False)
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    with tvm.transform.PassContext(opt_level=3, instruments=[live]):
        relay.optimize(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
    alignment = align(live, traces["o3"])
    assert alignment.same
    assert [p.output_a for p in alignment.pairs] == [p.output_b for p in alignment.pairs]


def test_relax_passes_align_by_name_too() -> None:
    tvm = pytest.importorskip("tvm")
    relax = pytest.importorskip("tvm.relax")
    nn = pytest.importorskip("tvm.relax.frontend.nn")

    from relayviz_instrument import RelayVizTrace

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x: Any) -> Any:
            return self.fc2(nn.relu(self.fc1(x)))

    mod, _ = MLP().export_tvm({"forward": {"x": nn.spec.Tensor((1, 8), "float32")}})

    def run(disabled: list) -> RelayVizTrace:
        trace = RelayVizTrace(out_dir=False)
        passes = tvm.transform.Sequential([relax.transform.LegalizeOps(), relax.transform.FoldConstant(),
                                           relax.transform.FuseOps(), relax.transform.FuseTIR()])
        with tvm.transform.PassContext(opt_level=3, instruments=[trace], disabled_pass=disabled):
            passes(mod)
        return trace

    full, without = run([]), run(["FuseOps"])
    assert {r.ir for r in full.records} == {"relax"}
    alignment = align(full, without)
    one_sided = [(p.name, p.status) for p in alignment.pairs if p.status in (ONLY_A, ONLY_B)]
    assert one_sided == [("FuseOps", ONLY_A)]
    fuse = next(i for i, p in enumerate(alignment.pairs) if p.name == "FuseOps")
    # Before it, the same passes with the same outputs (where a serializer recorded them; the
    # enclosing Sequential's output may differ because of what comes after).
    assert not any(p.diverges for p in alignment.pairs[:fuse])
    assert all(p.status == SAME for p in alignment.pairs[1:fuse]) and alignment.pairs[0].name == "sequential"
    assert [p.name for p in alignment.pairs[fuse + 1:]][:1] == ["FuseTIR"]
