"""Grouping node-level changes into hunks that people recognise.

* **wrapped** / **unwrapped**: a function that is new (gone), called from one place, whose body
  holds paired nodes: FuseOps, MergeComposite (or their inverse). The hunk holds the
  function, its call, its parameters, and the paired nodes it moved.
* The remaining removed nodes form *regions* (connected in the before graph), the added ones
  regions in the after graph. A removed and an added region that feed the same input of the
  same paired node are one hunk, and so is a changed node with the regions next to it. Then:
  **replaced** (both removed and added nodes: batch_norm expanded by SimplifyInference, a
  sub-graph folded to a Const), **merged** (only removed nodes, each region's output equal
  to a paired node: EliminateCommonSubexpr), **removed**, **inserted** (only added nodes,
  sitting on an edge of the before graph: layout_transform), **added**, **changed** (one
  node's fields, nothing around it).
* A rewired node borders the hunk its new input belongs to, or is a **rewired** hunk alone.

Op nodes carry the attributes of calls; their changes show on the calls, not in hunks.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .changes import describe
from relayviz_instrument.diff.model import Hunk, NodeMatch
from .signatures import Labels
from .view import VARIADIC_KINDS, GraphView

__all__ = ["build_hunks"]

#: Distinct names a hunk label lists before it ends with "…".
_LABEL_NAMES = 6


class _Draft:
    __slots__ = ("kind", "removed", "added", "changed", "moved", "border", "function")

    def __init__(self, kind: str = "") -> None:
        self.kind = kind
        self.removed: List[int] = []  # before ranks
        self.added: List[int] = []  # after ranks
        self.changed: List[int] = []  # before ranks of changed pairs
        self.moved: List[int] = []  # before ranks of pairs a function wrapped
        self.border: List[int] = []  # before ranks of rewired pairs next to the hunk
        self.function: Optional[int] = None  # the new (gone) function of a wrapped (unwrapped) hunk


def build_hunks(va: GraphView, vb: GraphView, la: Labels, a2b: Sequence[int], b2a: Sequence[int],
                matches: Mapping[int, NodeMatch]) -> List[Hunk]:
    """The hunks of a diff, in the order of the after document.

    ``matches`` maps the before rank of every changed or rewired pair to its :class:`NodeMatch`.
    """
    drafts: List[_Draft] = []
    taken_a: Set[int] = set()
    taken_b: Set[int] = set()
    drafts += _wrapped(vb, va, b2a, taken_b, taken_a, "wrapped", before_side=False)
    drafts += _wrapped(va, vb, a2b, taken_a, taken_b, "unwrapped", before_side=True)

    removed = [a for a in range(va.size) if a2b[a] < 0 and va.kind[a] != "Op" and a not in taken_a]
    added = [b for b in range(vb.size) if b2a[b] < 0 and vb.kind[b] != "Op" and b not in taken_b]
    changed = [a for a, m in matches.items() if m.status == "changed" and va.kind[a] != "Op" and a not in taken_a]
    rewired = [a for a, m in matches.items() if m.status == "rewired" and va.kind[a] != "Op" and a not in taken_a]
    removed_set, added_set = set(removed), set(added)

    # Union-find over removed ranks (a), added ranks (size_a + b) and changed pairs (a).
    offset = va.size
    parent: Dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(x: int, y: int) -> None:
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)

    for r in removed:
        find(r)
        for x in _neighbours_down(va, r):
            if x in removed_set:
                union(r, x)
    for s in added:
        find(offset + s)
        for y in _neighbours_down(vb, s):
            if y in added_set:
                union(offset + s, offset + y)
    slots: Dict[Tuple[int, int], int] = {}
    for r in removed:
        for u, p in va.users[r]:
            if a2b[u] >= 0:
                key = (u, -1 if va.kind[u] in VARIADIC_KINDS else p)
                if key in slots:
                    union(slots[key], r)
                else:
                    slots[key] = r
    for s in added:
        for v, q in vb.users[s]:
            if b2a[v] >= 0:
                key = (b2a[v], -1 if vb.kind[v] in VARIADIC_KINDS else q)
                if key in slots:
                    union(slots[key], offset + s)
    for a in changed:
        find(a)
        b = a2b[a]
        for x in _adjacent(va, a):
            if x in removed_set:
                union(a, x)
        for y in _adjacent(vb, b):
            if y in added_set:
                union(a, offset + y)

    components: Dict[int, _Draft] = {}
    for r in removed:
        components.setdefault(find(r), _Draft()).removed.append(r)
    for s in added:
        components.setdefault(find(offset + s), _Draft()).added.append(s)
    for a in changed:
        components.setdefault(find(a), _Draft()).changed.append(a)
    # A removed region that fed what a new function now computes was replaced inside it
    # (SimplifyInference then FuseOps, diffed in one go): it joins the wrapped hunk.
    homes: Dict[int, _Draft] = dict(components)
    wrapped_slots: Dict[Tuple[int, int], _Draft] = {}
    for draft in drafts:
        if draft.kind == "wrapped":
            for s in draft.added:
                for v, q in vb.users[s]:
                    if b2a[v] >= 0:
                        wrapped_slots.setdefault((b2a[v], -1 if vb.kind[v] in VARIADIC_KINDS else q), draft)
    for root, draft in list(components.items()):
        if draft.added or draft.changed:
            continue
        target = next((wrapped_slots[key] for r in draft.removed for u, p in va.users[r] if a2b[u] >= 0
                       for key in [(u, -1 if va.kind[u] in VARIADIC_KINDS else p)] if key in wrapped_slots), None)
        if target is not None:
            target.removed.extend(draft.removed)
            homes[root] = target
            del components[root]
    region_of_a = {r: find(r) for r in removed}
    region_of_b = {s: find(offset + s) for s in added}
    for a in rewired:
        home = next((region_of_a[x] for x in va.inputs[a] if x in region_of_a), None)
        if home is None:
            home = next((region_of_b[y] for y in vb.inputs[a2b[a]] if y in region_of_b), None)
        if home is None:
            draft = _Draft("rewired")
            draft.border.append(a)
            drafts.append(draft)
        else:
            homes[home].border.append(a)

    matched_sigs = {la.signature[a] for a in range(va.size) if a2b[a] >= 0}
    for draft in components.values():
        draft.kind = _classify(draft, va, vb, la, a2b, b2a, matched_sigs)
        drafts.append(draft)

    hunks = [(_position(d, va, vb, a2b), _finish(d, va, vb, a2b, matches)) for d in drafts]
    hunks.sort(key=lambda item: item[0])
    return [h for _, h in hunks]


def _neighbours_down(view: GraphView, r: int) -> Iterable[int]:
    """Inputs and literal references: a region is connected in the document as written."""
    yield from view.inputs[r]
    yield from view.refs[r]


def _adjacent(view: GraphView, r: int) -> Iterable[int]:
    yield from view.inputs[r]
    for u, _ in view.users[r]:
        yield u


def _wrapped(view: GraphView, other: GraphView, partner: Sequence[int], taken: Set[int], taken_other: Set[int],
             kind: str, before_side: bool) -> List[_Draft]:
    """Hunks for the functions of ``view`` called once, absent from ``other``, holding paired nodes."""
    out = []
    getters: Dict[int, List[int]] = {}
    for t in range(view.size):
        if view.kind[t] == "TupleGetItem" and view.refs[t] and view.canon[t] != t:
            getters.setdefault(view.refs[t][0], []).append(t)
    for f in sorted(view.inlined, reverse=True):  # outer functions come later in the order
        if partner[f] >= 0 or f in taken:
            continue
        call = view.inlined[f]
        scope = view.scope(f)
        inner = [r for r in scope if partner[r] >= 0 and view.kind[r] != "Op" and r not in taken]
        if not inner:
            continue
        shell = [f, call] + view.refs[f][1:] + getters.get(call, [])
        shell += [r for r in scope if partner[r] < 0 and view.kind[r] != "Op"]
        shell = sorted({r for r in shell if partner[r] < 0 and r not in taken})
        draft = _Draft(kind)
        draft.function = f
        draft.moved = inner if before_side else [partner[r] for r in inner]
        if before_side:
            draft.removed = shell
        else:
            draft.added = shell
        taken.update(shell)
        taken.update(inner)
        taken_other.update(partner[r] for r in inner)
        out.append(draft)
    return out


def _classify(draft: _Draft, va: GraphView, vb: GraphView, la: Labels, a2b: Sequence[int],
              b2a: Sequence[int], matched_sigs: Set[int]) -> str:
    if draft.removed and draft.added:
        return "replaced"
    if draft.removed:
        region = set(draft.removed)
        outputs = [r for r in draft.removed if not any(u in region for u, _ in va.users[r])]
        if all(la.signature[r] in matched_sigs for r in outputs):
            return "merged"
        return "removed"
    if draft.added:
        region = set(draft.added)
        users = {b2a[v] for s in draft.added for v, _ in vb.users[s] if v not in region and b2a[v] >= 0}
        inputs = {b2a[y] for s in draft.added for y in vb.inputs[s] if y not in region and b2a[y] >= 0}
        if any(x in inputs for u in users for x in va.inputs[u]):
            return "inserted"
        return "added"
    return "changed"


def _position(draft: _Draft, va: GraphView, vb: GraphView, a2b: Sequence[int]) -> Tuple[int, int, int]:
    """Where a hunk sits in the after graph's data-flow order (removed-only hunks: at their users)."""
    pos_a, pos_b = va.position, vb.position
    if draft.moved:  # a function's parameters and call come early in the order: place it by its body
        return (min(pos_b[a2b[a]] for a in draft.moved), 0, 0)
    after = [pos_b[b] for b in draft.added] + [pos_b[a2b[a]] for a in draft.changed + draft.border]
    if after:
        return (min(after), 0, 0)
    first = min(pos_a[r] for r in draft.removed)
    near = [pos_b[a2b[u]] for r in draft.removed for u, _ in va.users[r] if a2b[u] >= 0]
    if near:
        return (min(near), 1, first)
    return (vb.size, 2, first)


def _names(view: GraphView, ranks: Iterable[int], calls_only: bool = False) -> str:
    counts: Dict[str, int] = {}
    # Calls first, in order; then the other kinds (constants, variables, tuples...).
    for r in sorted(ranks, key=lambda r: (view.kind[r] != "Call", view.position[r])):
        if calls_only and view.kind[r] != "Call":
            continue
        name = view.op_name(r) or view.kind[r]  # as describe() names it, without its types
        counts[name] = counts.get(name, 0) + 1
    parts = [name if n == 1 else f"{name}×{n}" for name, n in counts.items()]
    if len(parts) > _LABEL_NAMES:
        parts = parts[:_LABEL_NAMES] + ["…"]
    return "+".join(parts)


def _function_phrase(view: GraphView, f: int) -> str:
    attrs = view.nodes[f].get("attrs") or {}
    if attrs.get("Composite"):
        return f"a Composite Function '{attrs['Composite']}'"
    if attrs.get("Primitive"):
        return "a primitive Function"
    return "a Function"


def _finish(draft: _Draft, va: GraphView, vb: GraphView, a2b: Sequence[int],
            matches: Mapping[int, NodeMatch]) -> Hunk:
    kind = draft.kind
    if kind == "wrapped":
        assert draft.function is not None
        inner = [a2b[a] for a in draft.moved]
        label = f"{_names(vb, inner, calls_only=True) or _names(vb, inner)} wrapped into " \
                f"{_function_phrase(vb, draft.function)}"
        if draft.removed:
            label += f", replacing {_names(va, draft.removed)}"
    elif kind == "unwrapped":
        assert draft.function is not None
        label = f"{_names(va, draft.moved, calls_only=True) or _names(va, draft.moved)} unwrapped from " \
                f"{_function_phrase(va, draft.function)}"
    elif kind == "replaced":
        label = f"{_names(va, draft.removed)} → {_names(vb, draft.added)}"
    elif kind == "merged":
        label = f"{_names(va, draft.removed)} merged into an equal node"
    elif kind == "removed":
        label = f"{_names(va, draft.removed)} removed"
    elif kind == "inserted":
        region = set(draft.added)
        users = {v for s in draft.added for v, _ in vb.users[s] if v not in region}
        label = f"{_names(vb, draft.added)} inserted" + (f" before {_names(vb, users)}" if users else "")
    elif kind == "added":
        label = f"{_names(vb, draft.added)} added"
    elif kind == "changed":
        a = draft.changed[0]
        fields = ", ".join(c.field for c in matches[a].fields)
        label = f"{describe(va, a).name}: {fields}"
    else:  # rewired
        label = f"{describe(va, draft.border[0]).name} rewired"
    pairs = sorted(set(draft.changed + draft.moved + draft.border), key=va.position.__getitem__)
    return Hunk(kind, label,
                removed=tuple(va.doc_id[r] for r in sorted(draft.removed, key=va.position.__getitem__)),
                added=tuple(vb.doc_id[s] for s in sorted(draft.added, key=vb.position.__getitem__)),
                matched=tuple((va.doc_id[a], vb.doc_id[a2b[a]]) for a in pairs))
