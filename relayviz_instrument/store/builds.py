"""The compilations a trace holds: where each starts and ends, and what it built.

One pass context can run several compilations (two ``relay.build``s, a ``relay.quantize``
then a ``relay.build``, a build and a ``relay.vm.compile``). A new one starts at a top-level
Relay or Relax event after the previous one lowered its model to TIR: a TIR module (or one
left empty) after a Relay or Relax module in the same compilation, in an event that no Relay or
Relax event holds. TIR passes run on their own lower nothing, nor do those a Relay or Relax pass
runs inside itself (Relax's FoldConstant builds the PrimFuncs it evaluates: one ``tvm.compile``
after ``relax.get_pipeline("zero")`` is one build). What a compilation
built (the graph executor JSON of ``relay.build``, the bytecode of ``relay.vm.compile``, the
Relax VM executable of ``tvm.compile``) is no pass's output; ``RelayVizTrace.record_graph``
adds it as an event whose ``before`` is the last module of the compilation that built it, and
that is how it is attached here.

It lives with the records it reads, below both stages that need it: capture attaches a built
artifact to its compilation while recording (``capture/artifacts.py``), and analysis reads a
trace by its compilations (``analysis/reading.py``); the split is computed here only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Set

from ..format.irs import ARTIFACT_IRS, EMPTY, MODULE_IRS, RELAX, TIR
from .records import PassRecord

__all__ = ["Build", "split_builds", "records_by_index", "best_build_for", "RECORD_GRAPH_FIX"]

#: How to record what was built, for every message that says it is missing.
RECORD_GRAPH_FIX = "call trace.record_graph(lib) with what relay.build (or relay.vm.compile) returned"


@dataclass
class Build:
    """One compilation: its pass events (indices ``first`` to ``last``), whether it lowered the
    model to TIR, and the events recording what it built."""

    number: int
    first: int
    last: int
    lowered: bool = False
    events: List[int] = field(default_factory=list)
    artifacts: List[PassRecord] = field(default_factory=list)
    #: Whether its model is a Relax module (``tvm.compile``), not a Relay one (``relay.build``).
    relax: bool = False

    @property
    def missing_artifact(self) -> bool:
        """A Relay build that lowered, but nothing it built was recorded: the trace ends at its
        last module. A Relax build is never said to miss it: ``trace_compile``, ``relayviz run``
        and ``RELAYVIZ_TRACE`` record the VM ``Executable`` of ``tvm.compile`` themselves, and
        without it the last Relax module still holds every function the executable runs."""
        return self.lowered and not self.artifacts and not self.relax

    def label(self) -> str:
        """``build 2: events #388 to #775``."""
        return f"build {self.number}: events #{self.first} to #{self.last}"

    def members(self, by_index: Mapping[int, PassRecord]) -> List[PassRecord]:
        """The records of this compilation: its pass events, then what it built."""
        return [by_index[i] for i in self.events + [a.index for a in self.artifacts]]


def split_builds(records: Sequence[PassRecord]) -> List[Build]:
    """The compilations of a trace, in order (one, for most traces)."""
    builds: List[Build] = []
    modelled: Set[int] = set()  # the builds that had a Relay or Relax module so far
    inside_model: Set[int] = set()  # the events a Relay or Relax event holds, or that are one
    for r in records:
        if r.ir in ARTIFACT_IRS:
            continue
        held = r.parent is not None and r.parent in inside_model
        if r.ir in MODULE_IRS or held:
            inside_model.add(r.index)
        if not builds or (r.depth == 1 and r.ir in MODULE_IRS and builds[-1].lowered):
            builds.append(Build(len(builds) + 1, r.index, r.index))
        build = builds[-1]
        build.last = r.index
        build.events.append(r.index)
        if r.ir in MODULE_IRS:
            modelled.add(build.number)
            build.relax = build.relax or r.ir == RELAX
        elif r.ir in (TIR, EMPTY) and build.number in modelled and not held:
            build.lowered = True
    by_index = records_by_index(records)
    afters: List[Set[str]] = [{by_index[i].after or "" for i in b.events} for b in builds]
    for r in records:
        if r.ir not in ARTIFACT_IRS:
            continue
        owner = next((b for b, refs in zip(reversed(builds), reversed(afters)) if r.before in refs), None)
        if owner is None and builds:
            owner = builds[-1]
        if owner is None:
            owner = Build(1, r.index, r.index)
            builds.append(owner)
        owner.artifacts.append(r)
    return builds


def records_by_index(records: Sequence[PassRecord]) -> Dict[int, PassRecord]:
    """The records by their index (indices are positions, but a filtered list keeps them)."""
    return {r.index: r for r in records}


def best_build_for(kernels: Set[str], candidates: Mapping[int, Set[str]], taken: Set[int]) -> Optional[int]:
    """The build (by number) whose last module calls the most of ``kernels`` (the functions a
    built artifact runs); ties go to the earliest build that has nothing recorded yet."""
    if not candidates:
        return None
    best = max(len(kernels & names) for names in candidates.values())
    tied = [n for n, names in sorted(candidates.items()) if len(kernels & names) == best]
    free = [n for n in tied if n not in taken]
    return (free or tied)[0]
