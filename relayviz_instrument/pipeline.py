"""Which pass events act on the pipeline's module, and what each pass itself did to operator
counts. Pure functions over records; the reports and provenance build on them.

Passes also run on modules of their own: SimplifyExpr and FoldConstant type-check a
temporary module (``_tmp``), and a function pass runs InferType on the module it is
rewriting before it returns. Their changes never reach the pipeline as such (the enclosing
pass's diff holds what does), so they are told apart here, once.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .diff import GraphDiff
from .store import PassRecord

__all__ = ["pipeline_events", "own_op_deltas", "pipeline_op_deltas", "graph_missing", "KERNEL_CALLS",
           "kernel_counts", "kernel_delta"]


def own_op_deltas(passes: Sequence[Tuple[int, Optional[int], str, Mapping[str, int]]]
                  ) -> List[Tuple[str, Dict[str, int]]]:
    """What each pass itself did to operator counts: its diff's ``op_delta`` less those of the
    passes nested in it (``(index, parent, name, op_delta)`` each). Counts add up along a
    pipeline, so the results sum to the change from first to last snapshot, each counted once."""
    nested: Dict[int, Dict[str, int]] = {}
    for _, parent, _, delta in passes:
        if parent is not None:
            total = nested.setdefault(parent, {})
            for op, count in delta.items():
                total[op] = total.get(op, 0) + count
    out = []
    for index, _, name, delta in passes:
        inner = nested.get(index, {})
        own = {op: delta.get(op, 0) - inner.get(op, 0) for op in sorted(set(delta) | set(inner))}
        out.append((name, {op: count for op, count in own.items() if count}))
    return out


def pipeline_events(records: Sequence[PassRecord]) -> List[int]:
    """Indices of the pass events whose input was the pipeline's module at the time.

    Passes also run on modules of their own: SimplifyExpr and FoldConstant type-check a
    temporary module (``_tmp``), and a function pass runs InferType on the module it is
    rewriting before it returns. Their changes never reach the pipeline as such (the enclosing
    pass's diff holds what does), so summing them would count operators that were never added.
    An event is on the pipeline when its ``before`` snapshot is the one the last such event
    left; a pass nested in it is on the pipeline only if it, too, received that module. An
    event with no such event open around it is on the pipeline whatever its input: passes left
    out of the trace (``passes=``/``exclude=``) may have changed the module in between.
    """
    current: Optional[str] = None
    on: List[int] = []
    ends: List[Tuple[int, PassRecord]] = []  # events on the pipeline still open, by depth

    def close(depth: int) -> None:
        nonlocal current
        while ends and ends[-1][0] >= depth:
            _, done = ends.pop()
            if done.after is not None:
                current = done.after

    for r in records:
        close(r.depth)
        if r.before is None:
            continue
        if not ends or r.before == current:
            current = r.before
            on.append(r.index)
            ends.append((r.depth, r))
    return on


def pipeline_op_deltas(records: Sequence[PassRecord], diffs: Mapping[int, GraphDiff],
                       kernels: Optional[Mapping[int, Mapping[str, int]]] = None) -> List[Tuple[str, Dict[str, int]]]:
    """``(pass name, op delta)`` for :class:`OpDeltaTable`: what each pass on the pipeline did
    itself (:func:`own_op_deltas`), from the ``diffs`` of some of the ``records`` by index,
    with the :func:`kernel_delta` of each in ``kernels`` (Relax: calls of each TIR kernel).

    Passes off the pipeline (:func:`pipeline_events`) are left out; with every changed pass
    on it diffed, the deltas sum to the change from the first snapshot to the last.
    """
    on = set(pipeline_events(records))
    by_index = {r.index: r for r in records}
    rows = []
    for r in records:
        if r.index not in diffs or r.index not in on:
            continue
        parent = r.parent
        while parent is not None and not (parent in diffs and parent in on):
            parent = by_index[parent].parent if parent in by_index else None
        delta = dict(diffs[r.index].op_delta)
        for kernel, count in (kernels or {}).get(r.index, {}).items():
            delta[kernel] = delta.get(kernel, 0) + count
        rows.append((r.index, parent, r.name, delta))
    return own_op_deltas(rows)


#: Relax operators whose first argument names what they call: a PrimFunc (a ``GlobalVar``) or
#: a packed function (an ``ExternFunc``).
KERNEL_CALLS = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad",
                          "relax.call_dps_packed"})


def kernel_counts(doc: Mapping[str, Any]) -> Dict[str, int]:
    """Calls of each kernel in a document: ``{"relax.call_tir @fused_add_relu": 2, ...}``.

    The operator counts of a diff say how many ``relax.call_tir`` calls a pass added; these
    say which kernels they call. Documents of other dialects have none.
    """
    nodes = doc["nodes"]
    counts: Dict[str, int] = {}
    for node in nodes:
        if node.get("node_kind") != "Call" or not node.get("args"):
            continue
        op = nodes[node["op"]]
        if op.get("node_kind") != "Op" or op.get("name") not in KERNEL_CALLS:
            continue
        callee = nodes[node["args"][0]]
        name = callee.get("name") if callee.get("node_kind") == "GlobalVar" else callee.get("global_symbol")
        if isinstance(name, str):
            key = f"{op['name']} @{name}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def kernel_delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> Dict[str, int]:
    """Kernel calls added minus removed from ``before`` to ``after`` (see :func:`kernel_counts`).

    Counts suffice: per kernel, the difference of the counts is what a pass added less what it
    removed, as the diff's operator counts are per operator.
    """
    a, b = kernel_counts(before), kernel_counts(after)
    return {k: b.get(k, 0) - a.get(k, 0) for k in sorted(set(a) | set(b)) if b.get(k, 0) != a.get(k, 0)}


#: How to record the built graph, for every message that says it is missing.
RECORD_GRAPH_FIX = "call trace.record_graph(lib) with what relay.build returned"


def graph_missing(records: Sequence[PassRecord]) -> bool:
    """Whether a Relay model was lowered to TIR (a ``relay.build`` or ``relay.vm.compile`` ran:
    TIR-only modules went through passes after Relay ones) after the last graph recorded, if
    any: the trace then ends at the last Relay module, without what was built. A Relax build
    (``tvm.compile``) has no graph to record: its TIR passes say nothing of the kind."""
    relay = lowered = False
    for r in records:
        if r.ir == "relay":
            relay = True
        elif r.ir == "graph_executor":
            lowered = False
        elif r.ir in ("tir", "empty") and relay:
            lowered = True
    return lowered
