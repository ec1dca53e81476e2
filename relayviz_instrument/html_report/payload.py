"""The data an HTML report embeds: passes, snapshots, pass graphs and provenance. Pure: no I/O
but reading the trace's snapshots through its reading
(:class:`~relayviz_instrument.analysis.reading.TraceReading`), which counts each pass's changes
as ``relayviz show`` does.

Each pass that changed the module is diffed once; the steps of the pipeline (the provenance
chain) reuse those diffs. The viewer follows a node's history through ``steps``: the pass
graph of each step pairs every node with the one it continues, and ``origins`` lists, for
each hunk of a step, the nodes its created nodes came from. A pass graph also says what the
pass did to each kernel's loop nest (``kernels``: its line, and its nests before and after,
as lines kept once each in ``nests``).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from ..diff import GraphDiff
from ..analysis.loop_nest import LoopNest
from ..analysis.pass_diffs import PassDiffs
from ..analysis.reading import TraceReading
from ..views.kernel_text import nest_lines
from ..analysis.provenance import Provenance
from ..store import PassRecord, TraceLike
from .graphs import STATUSES, pass_graph, snapshot_graph

__all__ = ["report_data", "PAYLOAD_FORMAT", "COLLAPSE_ABOVE"]

#: Version of the embedded data, checked by the viewer.
PAYLOAD_FORMAT = "relayviz-html/1"
#: Pass graphs with more nodes than this open with their unchanged regions collapsed.
COLLAPSE_ABOVE = 150


class _Builder:
    def __init__(self, trace: TraceLike, reading: TraceReading) -> None:
        self.trace = trace
        self.reading = reading
        self.cache = reading.diffs
        self.snapshots: List[Dict[str, Any]] = []
        self._snapshot_positions: Dict[str, int] = {}
        self.graphs: List[Dict[str, Any]] = []
        self.graph_index: Dict[Tuple[str, str], int] = {}
        #: Loop nests as the page shows them (lines), each once: a kernel unchanged by a pass
        #: is the same nest before and after it, and the next pass's before.
        self.nests: List[List[List[Any]]] = []
        self._nest_index: Dict[Tuple[str, ...], int] = {}
        self._loop_nests = reading.nests

    def snapshot_index(self, ref: str) -> int:
        index = self._snapshot_positions.get(ref)
        if index is None:
            doc = self.cache.document(ref)
            index = self._snapshot_positions[ref] = len(self.snapshots)
            self.snapshots.append({"ref": ref, "ir": doc.get("ir", ""), "functions": doc.get("functions") or {},
                                   **snapshot_graph(self.cache.graph(ref)), "raw": doc["nodes"]})
        return index

    def graph(self, before: str, after: str) -> int:
        key = (before, after)
        index = self.graph_index.get(key)
        if index is None:
            diff = self.cache.pair_diff(before, after)
            a, b = self.snapshot_index(before), self.snapshot_index(after)
            drawn = pass_graph(self.snapshots[a]["nodes"], self.snapshots[b]["nodes"], diff)
            index = self.graph_index[key] = len(self.graphs)
            hunks = [{"kind": h.kind, "label": h.label, "removed": list(h.removed), "added": list(h.added),
                      "matched": [list(p) for p in h.matched], "nodes": members}
                     for h, members in zip(diff.hunks, drawn["hunks"])]
            graph = {"before": a, "after": b, "summary": diff.summary, "nodes": drawn["nodes"],
                     "edges": drawn["edges"], "regions": drawn["regions"], "hunks": hunks,
                     "pairs": [x for pair in sorted(diff.mapping.items()) for x in pair], "fields": _fields(diff)}
            kernels = self.kernels(before, after)
            if kernels:
                graph["kernels"] = kernels
            self.graphs.append(graph)
        return index

    def kernels(self, before: str, after: str) -> List[Dict[str, Any]]:
        """What the pass from ``before`` to ``after`` did to each kernel's loop nest: its line,
        and the nests before and after it (indices into ``nests``)."""
        out = []
        for change in self.reading.kernel_changes(before, after):
            entry: Dict[str, Any] = {"name": change.kernel, "verb": change.verb, "text": change.text(),
                                     "before": self.nest(change.before), "after": self.nest(change.after)}
            if change.devices:  # a split: the device kernels hold the nest now
                entry["devices"] = [{"name": d.name, "nest": self.nest(self._loop_nests(after)[d.name])}
                                    for d in change.devices]
            out.append(entry)
        return out

    def nest(self, nest: LoopNest) -> int:
        lines = [line.to_json() for line in nest_lines(nest)]
        key = tuple(json.dumps(line) for line in lines)
        index = self._nest_index.get(key)
        if index is None:
            index = self._nest_index[key] = len(self.nests)
            self.nests.append(lines)
        return index


def _fields(diff: GraphDiff) -> Dict[str, List[List[Any]]]:
    """What changed in each changed pair, keyed by the after id (JSON keys are strings)."""
    return {str(m.after): [[c.field, c.before, c.after] for c in m.fields] for m in diff.changed}


def _pass(record: PassRecord, graph: Optional[int], span: Optional[Tuple[int, int]],
          summary: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"i": record.index, "name": record.name, "depth": record.depth,
                           "ms": round(record.duration_ms, 3), "changed": record.changed, "ir": record.ir}
    if record.parent is not None:
        out["parent"] = record.parent
    if record.nodes_before is not None:
        out["nodes"] = [record.nodes_before, record.nodes_after]
    if record.changed and summary:
        out["counts"] = [summary.get("added", 0), summary.get("removed", 0),
                         summary.get("changed", 0) + summary.get("rewired", 0)]
    if record.error is not None:
        out["error"] = record.error
    if graph is not None:
        out["graph"] = graph
    if span is not None:
        out["span"] = list(span)
    return out


def report_data(trace: TraceLike, *, reading: Optional[TraceReading] = None,
                collapse_above: int = COLLAPSE_ABOVE) -> Dict[str, Any]:
    """Everything the HTML report of ``trace`` shows, as JSON-able data.

    Every pass that changed the module with both snapshots recorded gets a pass graph; the
    pipeline's steps (see :mod:`~relayviz_instrument.analysis.provenance`) get theirs too, so that the
    viewer can follow any node of a step's snapshots back to the input module. The same trace
    gives the same data. ``reading``: the trace's reading, if made already (one that keeps
    every document it reads: the page holds every snapshot).
    """
    if reading is None:
        reading = TraceReading(trace, diffs=PassDiffs(trace, keep_documents=None))
    prov = Provenance(trace, reading)
    build = _Builder(trace, reading)
    credited = {entry.record.index: entry.summary  # as `relayviz show --all` counts them
                for rows in reading.table(everything=True) for entry in rows
                if entry.record is not None and entry.summary is not None}
    passes = []
    for record in trace.records:
        graph = None
        if record.changed and record.before and record.after and record.before != record.after:
            graph = build.graph(record.before, record.after)
        passes.append(_pass(record, graph, prov.span(record.index), credited.get(record.index)))
    steps = []
    for step in prov.steps:
        graph = build.graph(step.before, step.after)
        hunks = prov.diff(step.position).hunks
        steps.append({"pass": step.index, "name": step.name, "graph": graph, "nested": step.after_nested,
                      "origins": [list(prov.origins(step.position, h)) for h in range(len(hunks))]})
    chain = [build.snapshot_index(ref) for ref in prov.refs]
    first_step = next((s["pass"] for s in steps if s["pass"] is not None), None)
    return {
        "format": PAYLOAD_FORMAT,
        "trace": {"path": str(trace.path), "name": trace.path.name if trace.path is not None else "(in memory)",
                  "complete": trace.complete, "problems": list(trace.problems)},
        "statuses": list(STATUSES),
        "collapse_above": collapse_above,
        "passes": passes,
        "snapshots": build.snapshots,
        "graphs": build.graphs,
        "chain": chain,
        "steps": steps,
        "start": first_step,
        "nests": build.nests,
    }
