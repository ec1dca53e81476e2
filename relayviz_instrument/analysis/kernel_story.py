"""One kernel through a trace: its loop nest after every pass that changed it, from the pass
that made it (LegalizeOps, FuseTIR, Relay's LowerTE) to the device kernel, and the operators
of the input module it stems from. Pure: read from the stored snapshots.

A kernel is followed by name, with what changes its name: ``tirx.SplitHostDevice`` leaves a
host function ``@X`` that launches a device kernel ``@X_kernel`` holding the loop nest, so the
story of either name is ``@X``'s up to the split and ``@X_kernel``'s after it. Every pass
event counts, the pipeline's and those on modules of their own (Relay lowers each kernel in a
module of its own, inside LowerTE), each for the part of its run that is its own (after the
passes nested in it that worked on its module); a kernel's first snapshot is credited to the
innermost event that was running when it appeared. A pass that drops a kernel from a module
(``tirx.Filter`` keeping the host functions, a build that ends in an executable) ends
nothing: the kernel goes on in the module that keeps it.

A trace of several compilations tells the story of the first that has the kernel. The
operators come from :mod:`~relayviz_instrument.analysis.provenance`: the input module's
calls the kernel's first node on the pipeline stems from (a device kernel, those of its host).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..errors import RelayVizError
from ..store import PassRecord, TraceLike
from .loop_nest import KernelNests, LoopNest, launched_kernels
from .pass_diffs import PassDiffs
from .provenance import Provenance
from .reading import TraceReading
from .schedule_changes import SPLIT, KernelChange, kernel_changes

__all__ = ["KernelStep", "KernelStory", "kernel_story", "host_of", "events_by_end"]


@dataclass(frozen=True)
class KernelStep:
    """One pass's work on the kernel: ``record`` (``None``: no recorded pass made it), the
    kernel's name and loop nest after it, and the :class:`KernelChange` (``None`` for the step
    that made the kernel)."""

    record: Optional[PassRecord]
    kernel: str
    nest: LoopNest
    change: Optional[KernelChange] = None

    @property
    def created(self) -> bool:
        return self.change is None

    def to_json(self) -> Dict[str, Any]:
        r = self.record
        return {"index": None if r is None else r.index, "pass": None if r is None else r.name,
                "kernel": self.kernel, "created": self.created,
                "change": None if self.change is None else self.change.to_json(), "nest": self.nest.to_json()}


@dataclass(frozen=True)
class KernelStory:
    """The kernel ``name`` through the trace: its ``steps`` in the order they ran, the host
    function it was split from (``host``, for a device kernel) or the device kernels it was
    split into (``devices``), and the input module's operator calls it stems from, by
    operator (``operators``; empty when not asked for or not found)."""

    name: str
    steps: Tuple[KernelStep, ...]
    host: Optional[str] = None
    devices: Tuple[str, ...] = ()
    operators: Tuple[Tuple[str, int], ...] = ()

    def to_json(self) -> Dict[str, Any]:
        return {"kernel": self.name, "host": self.host, "device_kernels": list(self.devices),
                "operators": {op: n for op, n in self.operators}, "steps": [s.to_json() for s in self.steps]}


def events_by_end(records: Sequence[PassRecord]) -> List[PassRecord]:
    """The records in the order the events ended: a pass after every pass nested in it."""
    out: List[PassRecord] = []
    open_events: List[PassRecord] = []
    for r in records:
        while open_events and open_events[-1].depth >= r.depth:
            out.append(open_events.pop())
        open_events.append(r)
    out.extend(reversed(open_events))
    return out


def _own_start(record: PassRecord, nested: Sequence[PassRecord]) -> Optional[str]:
    """Where the part of ``record``'s run that is its own starts: after the passes nested in
    it that worked on its module, one after the other (others worked on modules of their own)."""
    current = record.before
    for child in nested:
        if child.before is not None and child.before == current and child.after is not None:
            current = child.after
    return current


def host_of(trace: TraceLike, name: str, nests: Optional[KernelNests] = None) -> Optional[str]:
    """The host function that launches the device kernel ``name`` in some snapshot of the
    trace, or None when no function does."""
    nests = nests if nests is not None else KernelNests(PassDiffs(trace))
    for ref in dict.fromkeys(r.after for r in events_by_end(trace.records) if r.after):
        found = nests(ref)
        if name in found:
            host = next((h for h, nest in found.items() if h != name and name in launched_kernels(nest)), None)
            if host is not None:
                return host
    return None


def kernel_story(trace: TraceLike, name: str, *, reading: Optional[TraceReading] = None,
                 operators: bool = True) -> KernelStory:
    """The story of the kernel ``name`` (a PrimFunc, a host function, or a device kernel) in
    ``trace``: see the module docstring. ``operators``: also find the input module's operator
    calls it stems from (diffs the passes up to the kernel's making). ``reading``: the trace's
    reading, if made already.

    Raises :class:`RelayVizError` when no snapshot holds a PrimFunc of that name with its
    statements (a trace recorded without ``tir=True`` has none), naming some that do.
    """
    if reading is None:
        reading = TraceReading(trace, diffs=PassDiffs(trace, keep_documents=None))
    nests = reading.nests
    host = host_of(trace, name, nests)
    root = host if host is not None else name
    for build in reading.builds:  # the first compilation that has the kernel
        steps, devices = _steps(build.members, name, host, root, nests)
        if steps:
            found = _operators(trace, reading, root) if operators else ()
            return KernelStory(name, tuple(steps), host, devices if host is None else (), found)
    raise RelayVizError(_not_found(trace, name, nests))


def _steps(records: Sequence[PassRecord], name: str, host: Optional[str], root: str,
           nests: KernelNests) -> Tuple[List[KernelStep], Tuple[str, ...]]:
    """The steps of the kernel's story among ``records`` (one compilation), and the device
    kernels it was split into."""
    nested: Dict[int, List[PassRecord]] = {}
    for r in records:
        if r.parent is not None:
            nested.setdefault(r.parent, []).append(r)
    by_index = {r.index: r for r in records}
    tracked = [root]
    seen: Set[str] = set()  # the kernels whose making is a step already
    steps: List[KernelStep] = []
    devices: Tuple[str, ...] = ()
    for record in events_by_end(records):
        start = _own_start(record, nested.get(record.index, ()))
        if start is None or record.after is None:
            continue
        before, after = nests(start), nests(record.after)
        for kernel in list(tracked):
            nest = before.get(kernel)
            if nest is not None and kernel not in seen:  # made before this event ran
                steps.append(KernelStep(_maker(record, kernel, by_index, nests), kernel, nest))
                seen.add(kernel)
            if start == record.after or kernel not in after:
                continue
            if nest is None:
                if kernel not in seen:
                    steps.append(KernelStep(record, kernel, after[kernel]))
                    seen.add(kernel)
                continue
            change = next(iter(kernel_changes({kernel: nest}, after)), None)
            if change is None:
                continue
            if change.verb == SPLIT:
                split = tuple(d.name for d in change.devices)
                devices = devices + split
                tracked = [d for d in split if host is None or d == name]
                seen.update(tracked)
                steps.append(KernelStep(record, tracked[0] if len(tracked) == 1 else kernel,
                                        after[tracked[0]] if len(tracked) == 1 else after[kernel], change))
                break
            steps.append(KernelStep(record, kernel, after[kernel], change))
    return steps, devices


def _maker(record: PassRecord, kernel: str, by_index: Dict[int, PassRecord],
           nests: KernelNests) -> Optional[PassRecord]:
    """The innermost event around ``record`` whose input did not hold ``kernel`` yet."""
    parent = by_index.get(record.parent) if record.parent is not None else None
    while parent is not None:
        if parent.before is None or kernel not in nests(parent.before):
            return parent
        parent = by_index.get(parent.parent) if parent.parent is not None else None
    return None


def _not_found(trace: TraceLike, name: str, nests: KernelNests) -> str:
    names: Dict[str, None] = {}
    for r in trace.records:
        if r.after is not None and len(names) < 200:
            names.update(dict.fromkeys(nests(r.after)))
    if not names:
        return (f"{trace.path}: no snapshot holds the statements of a PrimFunc; record the trace with "
                "RelayVizTrace(tir=True) (relayviz run --tir) to read kernels' loop nests")
    listed = sorted(names)
    shown = ", ".join(listed[:8]) + (f", … ({len(listed) - 8} more)" if len(listed) > 8 else "")
    return f"{trace.path}: no kernel named {name!r}; the trace's kernels include: {shown}"


def _operators(trace: TraceLike, reading: TraceReading, kernel: str) -> Tuple[Tuple[str, int], ...]:
    """The input module's operator calls the kernel's first node on the pipeline stems from:
    its first PrimFunc node, else (when the diff paired that one with nothing that leads back,
    as FuseTIR's of a small module can) the first node of its name, a fused Relax function;
    most frequent first."""
    prov = Provenance(trace, reading)
    if not prov.refs:
        return ()
    first: Dict[bool, Tuple[int, int]] = {}  # is it a PrimFunc -> its first (position, id)
    for position in range(len(prov.refs)):
        doc = prov.document(position)
        index = (doc.get("functions") or {}).get(kernel)
        if isinstance(index, int) and 0 <= index < len(doc["nodes"]):
            first.setdefault(doc["nodes"][index].get("node_kind") == "PrimFunc", (position, index))
            if True in first:
                break
    graph = prov.graph(0)
    for key in (first.get(True), first.get(False)):
        if key is None:
            continue
        counts: Dict[str, int] = {}
        for root in prov.roots(key):
            op = graph.op_name(graph.rank_of[root])
            if op is not None:
                counts[op] = counts.get(op, 0) + 1
        if counts:
            return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return ()
