"""The reading of a trace (analysis/reading.py): what a trace means, computed once and handed to
every view. On a real trace of two compilations in one pass context (the nn MLP, then the
Llama-shaped decoder, each through the zero pipeline and tvm.compile with their TIR passes
snapshotted), on both TVMs."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, List

import pytest
import tvm

from relayviz_instrument import RelayVizTrace, load_trace, report_trace, show_trace
from relayviz_instrument.analysis import pipeline
from relayviz_instrument.analysis.pass_diffs import PassDiffs
from relayviz_instrument.analysis.reading import TraceReading
from relayviz_instrument.analysis.steps import BUILD_STEP
from relayviz_instrument.capture import compile_relax
from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload
from relayviz_instrument.html_report import report_data


@pytest.fixture(scope="module")
def two_compilations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reading") / "trace"
    trace = RelayVizTrace(path, tir=True)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        first = compile_relax(relax_workload("mlp"), target=relax_host_target())
        second = compile_relax(relax_workload("llama"), target=relax_host_target())
    trace.record_graph(first)
    trace.record_graph(second)
    return path


def test_a_reading_holds_each_compilation_with_its_roles_credits_and_the_builds_own_steps(two_compilations):
    trace = load_trace(two_compilations)
    reading = TraceReading(trace)
    assert [b.build.number for b in reading.builds] == [1, 2]
    first, second = reading.builds
    assert first.build.last < second.build.first and second.build.last <= trace.records[-1].index
    # Each compilation's members are its own events, then what it built (the VM executable).
    for build in reading.builds:
        (built,) = [r for r in build.members if r.ir == "vm_executable"]
        assert built.name == "VMCodeGen" and build.members[-1] is built
        assert {r.index for r in build.members} >= set(range(build.build.first, build.build.last + 1)) - {
            r.index for r in trace.records if r.ir == "vm_executable"}
    # FuseOps changed the pipeline's module itself, in each compilation.
    for build in reading.builds:
        (fuse,) = [r for r in build.members if r.name == "FuseOps"]
        assert build.role(fuse.index) == "pipeline" and fuse.changed
        credit = build.credits[fuse.index]
        assert credit.parts == ((fuse.before, fuse.after, False),)
    # relax.build handing the PrimFuncs on to the TIR build is a step of the build, in each.
    for build in reading.builds:
        (gap,) = build.gaps
        assert trace.records[gap.next].ir == "tir" and trace.records[gap.previous].ir == "relax"
        (entry,) = [e for e in reading.table()[reading.builds.index(build)] if e.gap is gap]
        assert entry.origin is not None and entry.origin.kind == BUILD_STEP and entry.origin.function == "relax.build"
        assert entry.step is not None and entry.step.dropped and not entry.step.added
    assert reading.roles == {**first.roles, **second.roles}


def test_the_pass_table_and_the_report_read_the_same_counts(two_compilations):
    trace = load_trace(two_compilations)
    reading = TraceReading(trace)
    overview = show_trace(trace, reading=reading)
    report = report_trace(trace, reading=reading)
    shown = {row.record.index: row.summary for s in overview.sections for row in s.rows
             if row.record is not None and row.summary is not None}
    reported = {c.record.index for c in report.passes}
    assert reported and reported <= set(shown)
    for change in report.passes:
        if not change.note and not change.without_types:  # the whole of the pass's own work
            counted = shown[change.record.index]
            assert (counted["added"], counted["removed"]) == (len(change.diff.added), len(change.diff.removed))


class _Walks:
    """Counts the walks of the pipeline (``analysis.pipeline._walk``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        walk = pipeline._walk

        def counted(records: Any) -> Any:
            self.count += 1
            return walk(records)

        monkeypatch.setattr(pipeline, "_walk", counted)


def test_show_report_and_the_html_report_walk_the_pipeline_once_per_compilation(two_compilations, monkeypatch):
    trace = load_trace(two_compilations)
    walks = _Walks(monkeypatch)
    for read in (lambda: show_trace(trace), lambda: show_trace(trace, everything=True), lambda: report_trace(trace),
                 lambda: report_trace(trace, everything=True), lambda: report_data(trace)):
        walks.count = 0
        read()
        assert walks.count == 2, inspect.getsource(read)  # one walk per compilation, made by the reading


def test_the_reading_writes_the_cache_and_no_view_does(two_compilations, monkeypatch, tmp_path):
    import shutil

    copy = tmp_path / "trace"
    shutil.copytree(two_compilations, copy, ignore=shutil.ignore_patterns("cache"))
    trace = load_trace(copy)
    savers: List[str] = []
    save = PassDiffs.save

    def noted(self: PassDiffs) -> None:
        savers.append(inspect.stack()[1].frame.f_globals["__name__"])
        save(self)

    monkeypatch.setattr(PassDiffs, "save", noted)
    reading = TraceReading(trace)
    assert not (copy / "cache").exists()  # the structure reads no snapshot and writes nothing
    show_trace(trace, reading=reading)
    report_trace(trace, reading=reading)
    report_data(trace)
    assert savers and set(savers) == {"relayviz_instrument.analysis.reading"}
    assert any((copy / "cache").iterdir())
