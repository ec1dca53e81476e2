"""Grouping node-level changes into hunks that people recognise.

* **wrapped** / **unwrapped**: a function that is new (gone), called from one place, whose body
  holds paired nodes: FuseOps, MergeComposite, FuseTIR (or their inverse). The hunk holds the
  function, its call (with, in Relax, the GlobalVar it calls and the binding of its value),
  its parameters, and the paired nodes it moved; a wrapped hunk also holds the gone functions
  whose paired nodes it took (the kernels FuseTIR merged into one PrimFunc).
* The remaining removed nodes form *regions* (connected in the before graph), the added ones
  regions in the after graph. A removed and an added region that feed the same input of the
  same paired node are one hunk; a changed node joins one region next to it (its inputs'
  first), and so do the regions of added nodes only on its other inputs, while regions with
  removed nodes stay apart (two convolutions replaced on either side of a changed add are
  two hunks). Then:
  **replaced** (both removed and added nodes: batch_norm expanded by SimplifyInference, a
  sub-graph folded to a Const), **merged** (only removed nodes, each region's output equal
  to a paired node: EliminateCommonSubexpr; or Relax alias bindings ``y = x`` and their
  variables: CanonicalizeBindings), **removed**, **inserted** (only added nodes,
  sitting on an edge of the before graph: layout_transform), **added**, **changed** (one
  node's fields, nothing around it).
* A rewired node borders the hunk of an input it read or reads now (a region, else a changed
  node), or is a **rewired** hunk alone.

Op nodes carry the attributes of calls; their changes show on the calls, not in hunks.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np
from numpy.typing import NDArray

from .changes import describe
from .components import components
from .drafts import Draft, function_phrase, names
from .lowering import lowered
from .model import Hunk, NodeMatch
from .signatures import Labels
from .graph import VARIADIC_KINDS, CanonicalGraph
from .wrapping import emptied, shared_functions, wrapped

__all__ = ["build_hunks"]

def build_hunks(va: CanonicalGraph, vb: CanonicalGraph, la: Labels, a2b: Sequence[int], b2a: Sequence[int],
                matches: Mapping[int, NodeMatch]) -> List[Hunk]:
    """The hunks of a diff, in the order of the after document.

    ``matches`` maps the before rank of every changed or rewired pair to its :class:`NodeMatch`.
    """
    drafts: List[Draft] = []
    taken_a: Set[int] = set()
    taken_b: Set[int] = set()
    drafts += lowered(va, vb, a2b, b2a, taken_a, taken_b)
    drafts += wrapped(vb, va, b2a, taken_b, taken_a, "wrapped", before_side=False)
    drafts += wrapped(va, vb, a2b, taken_a, taken_b, "unwrapped", before_side=True)
    drafts += shared_functions(va, vb, a2b, b2a, taken_a, taken_b)
    emptied(va, a2b, drafts, taken_a)

    part_a = np.asarray(a2b, dtype=np.int64)
    part_b = np.asarray(b2a, dtype=np.int64)
    free_a = (part_a < 0) & ~_ops(va)
    free_b = (part_b < 0) & ~_ops(vb)
    if taken_a:
        free_a[list(taken_a)] = False
    if taken_b:
        free_b[list(taken_b)] = False
    changed = [a for a, m in matches.items() if m.status == "changed" and va.kind[a] != "Op" and a not in taken_a]
    rewired = [a for a, m in matches.items() if m.status == "rewired" and va.kind[a] != "Op" and a not in taken_a]

    # Regions: removed nodes (before ranks) and added nodes (after ranks, offset by the size
    # of the before graph) connected through references, or feeding one slot of one pair.
    offset = va.size
    ends: List[Tuple[NDArray[np.int64], NDArray[np.int64]]] = [
        _linked(va, free_a, 0), _linked(vb, free_b, offset),
        _same_slot(va, vb, part_a, part_b, free_a, free_b, offset)]
    root = components(va.size + vb.size, np.concatenate([u for u, _ in ends]),
                      np.concatenate([v for _, v in ends]))
    removed = np.flatnonzero(free_a).tolist()
    added = np.flatnonzero(free_b).tolist()
    region_of_a = dict(zip(removed, root[removed].tolist()))
    region_of_b = dict(zip(added, root[np.asarray(added, dtype=np.int64) + offset].tolist()))
    components_: Dict[int, Draft] = {}
    for ranks, region_of, field in ((removed, region_of_a, "removed"), (added, region_of_b, "added")):
        for r in ranks:
            draft = components_.get(region_of[r])
            if draft is None:
                draft = components_[region_of[r]] = Draft()
            getattr(draft, field).append(r)
    # A changed node joins the region next to it (its inputs' first, then its users'), one
    # region only: two convolutions replaced on either side of a changed add stay two hunks.
    home_of_changed: Dict[int, int] = {}
    moved_to: Dict[int, int] = {}  # regions absorbed into another one
    for a in changed:
        home = _next_region(va, a, region_of_a)
        if home is None:
            home = _next_region(vb, a2b[a], region_of_b)
        if home is None:
            home = -1 - a
            components_[home] = Draft()
        home = moved_to.get(home, home)
        components_[home].changed.append(a)
        home_of_changed[a] = home
        # Nodes inserted on its other inputs join it (the expand_dims and layout_transform
        # that AlterOpLayout puts before an add's bias, with the add's convolution).
        for y in vb.inputs[a2b[a]]:
            other = moved_to.get(region_of_b.get(y, home), region_of_b.get(y, home))
            if other != home and other in components_ and not components_[other].removed:
                absorbed = components_.pop(other)
                components_[home].added += absorbed.added
                components_[home].changed += absorbed.changed
                for key, target in list(moved_to.items()) + [(other, other)]:
                    if target == other:
                        moved_to[key] = home
    if moved_to:
        region_of_b = {b: moved_to.get(k, k) for b, k in region_of_b.items()}
        home_of_changed = {a: moved_to.get(k, k) for a, k in home_of_changed.items()}
    # A removed region that fed what a new function now computes was replaced inside it
    # (SimplifyInference then FuseOps, diffed in one go): it joins the wrapped hunk.
    homes: Dict[int, Draft] = dict(components_)
    wrapped_slots: Dict[Tuple[int, int], Draft] = {}
    for draft in drafts:
        if draft.kind == "wrapped":
            for s in draft.added:
                for v, q in vb.users[s]:
                    if b2a[v] >= 0:
                        wrapped_slots.setdefault((b2a[v], -1 if vb.kind[v] in VARIADIC_KINDS else q), draft)
    if wrapped_slots:
        for key_, draft in list(components_.items()):
            if draft.added or draft.changed:
                continue
            wrapping = next((wrapped_slots[key] for r in draft.removed for u, p in va.users[r] if a2b[u] >= 0
                             for key in [(u, -1 if va.kind[u] in VARIADIC_KINDS else p)] if key in wrapped_slots),
                            None)
            if wrapping is not None:
                wrapping.removed.extend(draft.removed)
                homes[key_] = wrapping
                del components_[key_]
    for a in rewired:
        # The hunk of what it read or reads now: a region, else a changed node.
        ins_a, ins_b = va.inputs[a], vb.inputs[a2b[a]]
        home = next((region_of_a[x] for x in ins_a if x in region_of_a), None)
        if home is None:
            home = next((region_of_b[y] for y in ins_b if y in region_of_b), None)
        if home is None:
            home = next((home_of_changed[x] for x in ins_a if x in home_of_changed), None)
        if home is None:
            home = next((home_of_changed[b2a[y]] for y in ins_b if b2a[y] in home_of_changed), None)
        if home is None:
            draft = Draft("rewired")
            draft.border.append(a)
            drafts.append(draft)
        else:
            homes[home].border.append(a)

    merged_into = _MatchedSignatures(la, a2b)
    for draft in components_.values():
        draft.kind = _classify(draft, va, vb, la, a2b, b2a, merged_into)
        drafts.append(draft)

    hunks = [(_position(d, va, vb, a2b), _finish(d, va, vb, a2b, matches)) for d in drafts]
    hunks.sort(key=lambda item: item[0])
    return [h for _, h in hunks]


def _ops(graph: CanonicalGraph) -> NDArray[np.bool_]:
    return np.fromiter((k == "Op" for k in graph.kind), dtype=bool, count=graph.size)


def _linked(graph: CanonicalGraph, free: NDArray[np.bool_], offset: int) -> Tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Edges between two free nodes: an input, or a literal reference (a region is connected
    in the document as written)."""
    us, vs = [], []
    for lengths, _, flat in (graph.input_arrays, graph.ref_arrays):
        owner = np.repeat(np.arange(graph.size, dtype=np.int64), lengths)
        keep = free[owner] & free[flat]
        us.append(owner[keep] + offset)
        vs.append(flat[keep] + offset)
    return np.concatenate(us), np.concatenate(vs)


def _slots(graph: CanonicalGraph, partner: NDArray[np.int64], free: NDArray[np.bool_],
           width: int) -> Tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(free node, slot key)`` for every input edge from a free node into a paired user: the
    user's before rank and the input position (-1 for a variadic user) as one integer."""
    lengths, starts, flat = graph.input_arrays
    owner = np.repeat(np.arange(graph.size, dtype=np.int64), lengths)
    position = np.arange(len(flat), dtype=np.int64) - starts[owner]
    keep = free[flat] & (partner[owner] >= 0)
    owner, position, node = owner[keep], position[keep], flat[keep]
    variadic = np.fromiter((graph.kind[u] in VARIADIC_KINDS for u in owner.tolist()), dtype=bool, count=len(owner))
    position[variadic] = -1
    return node, owner * width + position + 1


def _same_slot(va: CanonicalGraph, vb: CanonicalGraph, part_a: NDArray[np.int64], part_b: NDArray[np.int64],
               free_a: NDArray[np.bool_], free_b: NDArray[np.bool_],
               offset: int) -> Tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Edges between the free nodes (removed, and added + ``offset``) that feed one slot of one pair."""
    width = max(int(va.input_arrays[0].max(initial=0)), int(vb.input_arrays[0].max(initial=0))) + 2
    node_a, key_a = _slots(va, part_a, free_a, width)
    node_b, key_b = _slots(vb, part_b, free_b, width)
    key_b = part_b[key_b // width] * width + key_b % width  # the user as its before rank
    nodes = np.concatenate([node_a, node_b + offset])
    keys = np.concatenate([key_a, key_b])
    order = np.argsort(keys, kind="stable")
    nodes, keys = nodes[order], keys[order]
    same = keys[1:] == keys[:-1]
    return nodes[:-1][same], nodes[1:][same]


def _next_region(graph: CanonicalGraph, r: int, region_of: Dict[int, int]) -> Optional[int]:
    for x in graph.inputs[r]:
        if x in region_of:
            return region_of[x]
    for u, _ in graph.users[r]:
        if u in region_of:
            return region_of[u]
    return None


class _MatchedSignatures:
    """The signatures of the paired nodes of the before side, made when first asked."""

    def __init__(self, la: Labels, a2b: Sequence[int]) -> None:
        self._la, self._a2b = la, a2b
        self._made: Optional[Set[int]] = None

    def __contains__(self, sig: object) -> bool:
        if self._made is None:
            sigs = self._la.signature
            self._made = {sigs[a] for a, b in enumerate(self._a2b) if b >= 0}
        return sig in self._made


def _classify(draft: Draft, va: CanonicalGraph, vb: CanonicalGraph, la: Labels, a2b: Sequence[int],
              b2a: Sequence[int], matched_sigs: "_MatchedSignatures") -> str:
    if draft.removed and draft.added:
        return "replaced"
    if draft.removed:
        region = set(draft.removed)
        if _aliases(va, region):
            return "merged"
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


def _aliases(graph: CanonicalGraph, region: Set[int]) -> bool:
    """Whether ``region`` is Relax alias bindings (``y = x``) and their variables: two names
    for one value, of which CanonicalizeBindings keeps one."""
    kind, refs = graph.kind, graph.refs
    bindings = [r for r in region if kind[r] == "VarBinding" and len(refs[r]) == 2 and kind[refs[r][1]] == "Var"]
    return bool(bindings) and region <= set(bindings).union(refs[r][0] for r in bindings)


def _position(draft: Draft, va: CanonicalGraph, vb: CanonicalGraph, a2b: Sequence[int]) -> Tuple[int, int, int]:
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


def _rewritten(match: Optional[NodeMatch]) -> bool:
    """Whether a pair joins calls of two operators (one rewritten into the other)."""
    return match is not None and bool(match.fields) and match.fields[0].field == "op"


def _finish(draft: Draft, va: CanonicalGraph, vb: CanonicalGraph, a2b: Sequence[int],
            matches: Mapping[int, NodeMatch]) -> Hunk:
    kind = draft.kind
    sources: List[int] = []
    rewritten = [a for a in draft.changed if _rewritten(matches.get(a))]
    if kind in ("wrapped", "lowered"):
        sources = draft.moved + draft.sources
    if draft.label is not None:
        label = draft.label
    elif rewritten and kind in ("inserted", "added", "changed"):
        label = f"{names(va, rewritten)} → {names(vb, [a2b[a] for a in rewritten])}"
        if draft.added:
            label += f", {names(vb, draft.added)} {'inserted' if kind == 'inserted' else 'added'}"
        kind = "changed"
    elif rewritten and kind == "replaced":
        label = f"{names(va, draft.removed + rewritten)} → {names(vb, draft.added + [a2b[a] for a in rewritten])}"
    elif kind == "wrapped":
        assert draft.function is not None
        inner = [a2b[a] for a in draft.moved]
        label = f"{names(vb, inner, calls_only=True) or names(vb, inner)} wrapped into " \
                f"{function_phrase(vb, draft.function)}"
        if draft.removed:
            label += f", replacing {names(va, draft.removed)}"
    elif kind == "unwrapped":
        assert draft.function is not None
        label = f"{names(va, draft.moved, calls_only=True) or names(va, draft.moved)} unwrapped from " \
                f"{function_phrase(va, draft.function)}"
    elif kind == "replaced":
        label = f"{names(va, draft.removed)} → {names(vb, draft.added)}"
    elif kind == "merged":
        label = f"{names(va, draft.removed)} merged into an equal node"
    elif kind == "removed":
        label = f"{names(va, draft.removed)} removed"
    elif kind == "inserted":
        region = set(draft.added)
        users = {v for s in draft.added for v, _ in vb.users[s] if v not in region}
        label = f"{names(vb, draft.added)} inserted" + (f" before {names(vb, users)}" if users else "")
    elif kind == "added":
        label = f"{names(vb, draft.added)} added"
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
                matched=tuple((va.doc_id[a], vb.doc_id[a2b[a]]) for a in pairs),
                sources=tuple(va.doc_id[a] for a in sorted(set(sources), key=va.position.__getitem__)),
                sites=tuple((tuple(va.doc_id[r] for r in sorted(removed, key=va.position.__getitem__)),
                             tuple(vb.doc_id[r] for r in sorted(added, key=vb.position.__getitem__)))
                            for removed, added in draft.sites))
