"""Which pass events act on the pipeline's module, and what each pass itself did to operator
counts. Pure functions over records; the reports and provenance build on them.

Passes also run on modules of their own: SimplifyExpr and FoldConstant type-check a
temporary module (``_tmp``), and a function pass runs InferType on the module it is
rewriting before it returns. Their changes never reach the pipeline as such (the enclosing
pass's diff holds what does), so they are told apart here, once. Every event with a
snapshot has one of these roles (:func:`event_roles`):

- ``pipeline``: it received the pipeline's module (see :func:`pipeline_events`);
- ``finishing``: nested in a pipeline event, it turned that event's work in progress into
  the event's result — the InferType a function pass runs on the module it rewrote, which
  fills in the types of the new expressions;
- ``scratch``: it worked on a module of its own (``_tmp``) that never became the pipeline's,
  or its result was set aside: the next top-level event received the module it received, as
  when ``tvm.compile`` splits a module in two with two ``tirx.Filter`` runs on it (host
  functions, then device ones: none on a CPU) and goes on with the first.

And where the module changed between two recorded events, outside any pass the trace saw
(a step of TVM's build, code between passes, or passes run under another PassContext),
:func:`pipeline_gaps` says so (and ``steps.py`` which of those it was).
A pipeline follows one module: what the passes returned, and what code between passes made of
it. A pass run directly in the context on a module the caller made anew (``new_module``: it
shares no function with the module before it, as when a test runs passes on one module after
another) starts a pipeline of its own, and one run again on a module the trace already holds
(an earlier input of the same pipeline) goes back to it: neither is a change outside the passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..diff import GraphDiff
from ..format import Document
from ..format.irs import KERNEL_CALLS, VM_BUILTIN_PREFIX, VM_EXECUTABLE
from ..store import PassRecord

__all__ = ["pipeline_events", "event_roles", "pipeline_gaps", "walk_pipeline", "Gap", "Credit", "credits",
           "own_op_deltas",
           "pipeline_op_deltas", "PIPELINE", "FINISHING", "SCRATCH", "kernel_counts", "kernel_delta",
           "kernel_name", "kernel_ops"]

PIPELINE, FINISHING, SCRATCH = "pipeline", "finishing", "scratch"


@dataclass(frozen=True)
class Gap:
    """The module changed between two recorded events without a recorded pass changing it:
    ``previous`` left ``old`` (a snapshot reference), ``next`` received ``new``; ``between`` is
    where the code that changed it ran, when the trace knows (``PassRecord.between``; read by
    :func:`~relayviz_instrument.analysis.steps.origin_of`)."""

    previous: int
    next: int
    old: str
    new: str
    between: Optional[Mapping[str, Any]] = None


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


@dataclass(frozen=True)
class Credit:
    """What one pipeline event did itself, as snapshot pairs ``(before, after, without_types)``:
    the parts of its run that no event nested in it accounts for. ``without_types`` marks a part
    that ends where a nested InferType takes over, compared without inferred types (the
    unfinished module has none yet). No part at all: the passes nested in it did everything."""

    parts: Tuple[Tuple[str, str, bool], ...]

    @property
    def by_nested_passes(self) -> bool:
        return not self.parts


def credits(records: Sequence[PassRecord], roles: Optional[Mapping[int, str]] = None) -> Dict[int, Credit]:
    """The :class:`Credit` of every event on the pipeline (or finishing one) that changed the
    module (``roles``: the records' :func:`event_roles`, when computed already)."""
    roles = event_roles(records) if roles is None else roles
    children: Dict[int, List[PassRecord]] = {}
    for r in records:
        if r.parent is not None and roles.get(r.index) in (PIPELINE, FINISHING):
            children.setdefault(r.parent, []).append(r)
    out: Dict[int, Credit] = {}
    for r in records:
        if roles.get(r.index) not in (PIPELINE, FINISHING) or not (r.changed and r.before and r.after):
            continue
        if r.index not in children:
            out[r.index] = Credit(((r.before, r.after, False),))
            continue
        parts: List[Tuple[str, str, bool]] = []
        current = r.before
        for child in children[r.index]:
            assert child.before is not None  # events without a snapshot have no role
            if child.before != current:
                parts.append((current, child.before, roles[child.index] == FINISHING))
            if child.after is not None:
                current = child.after
        if current != r.after:
            parts.append((current, r.after, False))
        out[r.index] = Credit(tuple(parts))
    return out


def pipeline_events(records: Sequence[PassRecord]) -> List[int]:
    """Indices of the pass events whose input was the pipeline's module at the time.

    An event is on the pipeline when its ``before`` snapshot is the one the last such event
    left; a pass nested in it is on the pipeline only if it, too, received that module. An
    event with no such event open around it is on the pipeline whatever its input: passes left
    out of the trace (``passes=``/``exclude=``) may have changed the module in between.
    Summing the operator deltas of these events counts every operator once.
    """
    return [index for index, role in _walk(records)[0].items() if role == PIPELINE]


def event_roles(records: Sequence[PassRecord]) -> Dict[int, str]:
    """The role of every event with a snapshot: :data:`PIPELINE`, :data:`FINISHING` or :data:`SCRATCH`."""
    return _walk(records)[0]


def pipeline_gaps(records: Sequence[PassRecord]) -> List[Gap]:
    """Where a top-level event received a module other than the one the pipeline held."""
    return _walk(records)[1]


def walk_pipeline(records: Sequence[PassRecord]) -> Tuple[Dict[int, str], List[Gap]]:
    """:func:`event_roles` and :func:`pipeline_gaps` of ``records``, from one walk."""
    return _walk(records)


def _walk(records: Sequence[PassRecord]) -> Tuple[Dict[int, str], List[Gap]]:
    current: Optional[str] = None
    last: Optional[int] = None  # the pipeline event that left ``current``
    received: Dict[int, Optional[str]] = {r.index: r.before for r in records}
    parents: Dict[int, Optional[int]] = {r.index: r.parent for r in records}
    roles: Dict[int, str] = {}
    gaps: List[Gap] = []
    ends: List[Tuple[int, PassRecord]] = []  # events on the pipeline still open, by depth
    held: Set[str] = set()  # the modules the pipelines so far received and left

    def close(depth: int) -> None:
        nonlocal current, last
        while ends and ends[-1][0] >= depth:
            _, done = ends.pop()
            if done.after is not None:
                current, last = done.after, done.index
                held.add(done.after)

    for r in records:
        close(r.depth)
        if r.before is None:
            continue
        if not ends:
            if current is not None and last is not None and r.before != current:
                if r.before == received.get(last):  # what ``last`` made was set aside: not a change
                    _set_aside(last, roles, parents)
                elif not r.new_module and r.before not in held:
                    gaps.append(Gap(last, r.index, current, r.before, r.between))
            roles[r.index] = PIPELINE
            held.add(r.before)
        elif r.before == current:
            roles[r.index] = PIPELINE
        elif (r.after is not None and r.after == ends[-1][1].after and r.depth == ends[-1][0] + 1
              and r.after != r.before):
            roles[r.index] = FINISHING
        else:
            roles[r.index] = SCRATCH
            continue
        current = r.before
        ends.append((r.depth, r))
    return roles, gaps


def _set_aside(event: int, roles: Dict[int, str], parents: Mapping[int, Optional[int]]) -> None:
    """Make ``event`` and the events nested in it scratch work: its result never became the
    pipeline's module."""
    for index in roles:
        p: Optional[int] = index
        while p is not None and p != event:
            p = parents.get(p)
        if p == event:
            roles[index] = SCRATCH


def pipeline_op_deltas(records: Sequence[PassRecord], diffs: Mapping[int, GraphDiff],
                       kernels: Optional[Mapping[int, Mapping[str, int]]] = None,
                       kernel_ops: Optional[Mapping[int, Set[str]]] = None,
                       roles: Optional[Mapping[int, str]] = None) -> List[Tuple[str, Dict[str, int]]]:
    """``(pass name, op delta)`` for :class:`OpDeltaTable`: what each pass on the pipeline did
    itself (:func:`own_op_deltas`), from the ``diffs`` of some of the ``records`` by index,
    with the :func:`kernel_delta` of each in ``kernels`` (Relax: calls of each kernel). The
    operators ``kernel_ops`` names for an event (:func:`kernel_ops`: a VM executable's calls
    of kernels) are left out of its diff's counts: its kernel delta counts them.

    Passes off the pipeline (:func:`pipeline_events`) are left out; with every changed pass
    on it diffed, the deltas sum to the change from the first snapshot to the last. ``roles``:
    the records' :func:`event_roles`, when computed already.
    """
    on = ({i for i, role in roles.items() if role == PIPELINE} if roles is not None
          else set(pipeline_events(records)))
    by_index = {r.index: r for r in records}
    rows = []
    for r in records:
        if r.index not in diffs or r.index not in on:
            continue
        parent = r.parent
        while parent is not None and not (parent in diffs and parent in on):
            parent = by_index[parent].parent if parent in by_index else None
        counted = (kernel_ops or {}).get(r.index, set())
        delta = {op: count for op, count in diffs[r.index].op_delta.items() if op not in counted}
        for kernel, count in (kernels or {}).get(r.index, {}).items():
            delta[kernel] = delta.get(kernel, 0) + count
        rows.append((r.index, parent, r.name, delta))
    return own_op_deltas(rows)


def kernel_name(kernel: str) -> str:
    """The operator-table row of the calls of one kernel: ``kernel @fused_matmul_add``."""
    return f"kernel @{kernel}"


def kernel_counts(doc: Document) -> Dict[str, int]:
    """Calls of each kernel in a document, by :func:`kernel_name`: ``{"kernel @fused_add_relu": 2}``.

    A kernel is counted the same whichever way it is called: through ``relax.call_tir`` (and
    the other :data:`KERNEL_CALLS`), directly once the VM lowering (``CallTIRRewrite``) made
    the call of a PrimFunc or packed function explicit, or as an instruction of the VM
    executable ``tvm.compile`` built (a call with ``attrs.kernel``). So a pass that only
    changes how a kernel is called changes no count, and the counts left at the end are the
    kernels the executable runs. The operator counts of a diff say how many
    ``relax.call_tir`` calls a pass added; these say which kernels they call.
    """
    nodes = doc["nodes"]
    executable = doc.get("ir") == VM_EXECUTABLE
    functions = doc.get("functions") or {}
    prim_funcs = {name for name, i in functions.items()
                  if 0 <= i < len(nodes) and nodes[i].get("node_kind") == "PrimFunc"}
    counts: Dict[str, int] = {}

    def count(name: object) -> None:
        if isinstance(name, str):
            counts[kernel_name(name)] = counts.get(kernel_name(name), 0) + 1

    for node in nodes:
        if node.get("node_kind") != "Call":
            continue
        attrs = node.get("attrs")
        if executable:  # an instruction: what it calls is a kernel if it says so
            count(attrs.get("kernel") if isinstance(attrs, dict) else None)
            continue
        op = nodes[node["op"]]
        kind = op.get("node_kind")
        if kind == "GlobalVar" and op.get("name") in prim_funcs:  # after CallTIRRewrite
            count(op["name"])
        elif kind == "ExternFunc" and not str(op.get("global_symbol", "")).startswith(VM_BUILTIN_PREFIX):
            count(op.get("global_symbol"))
        elif kind == "Op" and op.get("name") in KERNEL_CALLS and node.get("args"):
            callee = nodes[node["args"][0]]
            count(callee.get("name") if callee.get("node_kind") == "GlobalVar" else callee.get("global_symbol"))
    return counts


def kernel_ops(doc: Document) -> Set[str]:
    """The operators of a document that are kernels :func:`kernel_counts` counts already: the
    ``Op`` nodes a VM executable's kernel calls name (none in a Relax module)."""
    nodes = doc["nodes"]
    if doc.get("ir") != VM_EXECUTABLE:
        return set()
    return {nodes[n["op"]].get("name", "") for n in nodes
            if n.get("node_kind") == "Call" and isinstance(n.get("attrs"), dict) and "kernel" in n["attrs"]}


def kernel_delta(before: Document, after: Document) -> Dict[str, int]:
    """Kernel calls added minus removed from ``before`` to ``after`` (see :func:`kernel_counts`).

    Counts suffice: per kernel, the difference of the counts is what a pass added less what it
    removed, as the diff's operator counts are per operator.
    """
    a, b = kernel_counts(before), kernel_counts(after)
    return {k: b.get(k, 0) - a.get(k, 0) for k in sorted(set(a) | set(b)) if b.get(k, 0) != a.get(k, 0)}
