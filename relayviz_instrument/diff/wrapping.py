"""Functions wrapped around paired nodes, and unwrapped: FuseOps, MergeComposite, FuseTIR, DefuseOps.

A new function called from one place is read through (see :mod:`.graph`): the nodes it holds
stay paired with those it took in, and the hunk holds the function, its call and parameters
(:func:`wrapped`; a gone one, :func:`unwrapped` through the same function). A new function
called from several places (Relax's FuseOps makes one per kind of fused group and calls it in
every layer) cannot be read through at each call, so :func:`shared_functions` reads its calls
one by one: each call stands for what it replaced at its place, the nodes between the
partners of its arguments and of what reads its value. Its hunk holds the function and every
call, and says, per call, what that call replaced: the group of kernel calls that match the
body's (by PrimFunc, and by how they feed each other, read through the variables that hold
their values), with their argument tuples, bindings and variables. Larger bodies find their
groups first, so that a body holding another's calls and more keeps its own.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..format.kinds import BINDING_KINDS
from .drafts import Draft, function_phrase, kernel_of, names
from .graph import CanonicalGraph

__all__ = ["wrapped", "emptied", "shared_functions", "kernel_label"]


def wrapped(graph: CanonicalGraph, other: CanonicalGraph, partner: Sequence[int], taken: Set[int],
             taken_other: Set[int], kind: str, before_side: bool) -> List[Draft]:
    """Hunks for the functions of ``view`` called once, absent from ``other``, holding paired nodes."""
    out: List[Draft] = []
    if not graph.inlined:
        return out
    # What stands at a call's site besides the call: the tuple items read through it, and in
    # Relax the name it calls (a GlobalVar) and the binding that holds its value.
    site: Dict[int, List[int]] = {call: [r for r in graph.refs[call][:2] if graph.kind[r] == "GlobalVar"]
                                  for call in graph.inlined.values()}
    for t in range(graph.size):
        if graph.kind[t] == "TupleGetItem" and graph.refs[t] and graph.canon[t] != t:
            site.setdefault(graph.refs[t][0], []).append(t)
        elif graph.kind[t] in BINDING_KINDS and len(graph.refs[t]) > 1 and graph.refs[t][1] in site:
            site[graph.refs[t][1]] += [graph.refs[t][0], t]
    for f in sorted(graph.inlined, reverse=True):  # outer functions come later in the order
        if partner[f] >= 0 or f in taken:
            continue
        call = graph.inlined[f]
        scope = graph.scope(f)
        inner = [r for r in scope if partner[r] >= 0 and graph.kind[r] != "Op" and r not in taken]
        if not inner:
            continue
        shell = [f, call] + graph.refs[f][1:] + site.get(call, [])
        shell += [r for r in scope if partner[r] < 0 and graph.kind[r] != "Op"]
        shell = sorted({r for r in shell if partner[r] < 0 and r not in taken})
        draft = Draft(kind)
        draft.function = f
        draft.label = kernel_label(graph, f, 1)
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


def emptied(va: CanonicalGraph, a2b: Sequence[int], drafts: List[Draft], taken_a: Set[int]) -> None:
    """Gone functions whose paired nodes all moved into new functions join the hunk of the one
    most of them went to: the kernels FuseTIR merges into one PrimFunc are replaced by it, not
    removed beside it."""
    into = {a: d for d in drafts if d.kind == "wrapped" for a in d.moved}
    if not into:
        return
    for g in sorted(va.inlined):
        if a2b[g] >= 0 or g in taken_a:
            continue
        scope = va.scope(g)
        found = [into.get(r) for r in scope if a2b[r] >= 0 and va.kind[r] != "Op"]
        homes = [d for d in found if d is not None]
        if not found or len(homes) < len(found):
            continue
        # The hunk most of them went to (the first on a tie): a constant two kernels shared
        # went to one of them.
        counts: Dict[int, int] = {}
        for d in homes:
            counts[id(d)] = counts.get(id(d), 0) + 1
        draft = max(homes, key=lambda d: counts[id(d)])
        shell = [r for r in [g] + va.refs[g][1:] + scope
                 if a2b[r] < 0 and va.kind[r] != "Op" and r not in taken_a]
        draft.removed.extend(shell)
        taken_a.update(shell)




def kernel_label(graph: CanonicalGraph, f: int, calls: int) -> Optional[str]:
    """The label of a Relax function wrapped around kernel calls, naming what they compute and
    the PrimFuncs they run: ``conv2d+add+relu wrapped into a primitive Function (PrimFuncs
    conv2d3, add5, relu2)``; ``None`` for a function that runs no PrimFunc."""
    scope = graph.scope(f)
    runs = {r for r in scope if kernel_of(graph, r) is not None}
    # A Relax variable stands for the value its binding gives it.
    bound = {graph.refs[t][0]: graph.refs[t][1] for t in scope
             if graph.kind[t] in BINDING_KINDS and len(graph.refs[t]) > 1}
    depth: Dict[int, int] = {}

    def feeding(r: int) -> List[int]:
        out, stack, seen = [], list(graph.refs[r][2:]), set()
        while stack:
            t = stack.pop()
            if t in seen:
                continue
            seen.add(t)
            if t in runs:
                out.append(t)
            elif t in bound:
                stack.append(bound[t])
            elif graph.kind[t] in ("Tuple", "TupleGetItem"):
                stack.extend(graph.refs[t])
        return out

    def level(r: int) -> int:  # how many kernel calls of the body feed r, one after another
        if r not in depth:
            depth[r] = 0
            depth[r] = 1 + max((level(s) for s in feeding(r)), default=-1)
        return depth[r]

    body = sorted(runs, key=lambda r: (level(r), graph.position[r]))  # in data-flow order
    kernels = list(dict.fromkeys(k for k in (kernel_of(graph, r) for r in body) if k is not None))
    if not kernels:
        return None
    roles = "+".join(dict.fromkeys(re.sub(r"\d+$", "", k) or k for k in kernels))
    label = f"{roles} wrapped into {function_phrase(graph, f)} (PrimFuncs {', '.join(kernels)})"
    return label + (f", called {calls} times" if calls > 1 else "")


def shared_functions(va: CanonicalGraph, vb: CanonicalGraph, a2b: Sequence[int], b2a: Sequence[int],
                     taken_a: Set[int], taken_b: Set[int]) -> List[Draft]:
    """Wrapped hunks for the new global functions called from several places (see the module):
    the function, its calls, and at each call the nodes it replaced."""
    out: List[Draft] = []
    claimed: Set[int] = set()  # before kernel calls a function's call site took
    sites: Dict[str, List[int]] = {}
    for c in range(vb.size):
        if vb.kind[c] == "Call" and vb.refs[c] and vb.kind[vb.refs[c][0]] == "GlobalVar":
            name = vb.nodes[vb.refs[c][0]].get("name")
            if isinstance(name, str):
                sites.setdefault(name, []).append(c)
    # Larger bodies first: a body that holds another's calls and more (rotary embedding with a
    # transpose after it) claims its groups before the smaller one could take part of them.
    for name, f in sorted(vb.functions.items(), key=lambda item: -_kernel_calls(vb, item[1])):
        calls = sites.get(name, [])
        if (b2a[f] >= 0 or f in taken_b or f in vb.inlined or vb.kind[f] != "Function" or name in va.functions
                or len(calls) < 2):
            continue
        scope = vb.scope(f)
        inside = set(scope)
        calls = sorted((c for c in calls if c not in inside and c not in taken_b), key=vb.position.__getitem__)
        if not calls:
            continue
        draft = Draft("wrapped")
        draft.function = f
        shell = [f] + vb.refs[f][1:] + [r for r in scope if b2a[r] < 0 and vb.kind[r] != "Op"]
        shell += [r for r in range(vb.size) if vb.kind[r] == "GlobalVar" and vb.nodes[r].get("name") == name]
        draft.added = sorted({r for r in shell if b2a[r] < 0 and r not in taken_b})
        taken_b.update(draft.added)
        draft.moved = [b2a[r] for r in scope if b2a[r] >= 0 and vb.kind[r] != "Op" and b2a[r] not in taken_a]
        taken_b.update(r for r in scope if b2a[r] >= 0)
        taken_a.update(draft.moved)
        groups = _groups(va, vb, f, a2b, taken_a, inside, inside, claimed)
        for c, group in zip(calls, groups if len(groups) == len(calls) else []):
            added = _site(vb, c, b2a, taken_b)
            replaced = _replaced(va, group, a2b, taken_a, inside)
            draft.added += added
            draft.removed += [r for r in replaced if a2b[r] < 0]
            draft.sites.append((replaced, added))
        draft.label = kernel_label(vb, f, len(calls)) or \
            f"{names(vb, scope, calls_only=True) or names(vb, scope)} wrapped into {function_phrase(vb, f)}, " \
            f"called {len(calls)} times"
        out.append(draft)
    return out


def _kernel_calls(graph: CanonicalGraph, f: int) -> int:
    """How many kernel calls the body of global function ``f`` holds (0 for one read through)."""
    return 0 if f in graph.inlined else sum(1 for t in graph.scope(f) if kernel_of(graph, t) is not None)


def _site(vb: CanonicalGraph, c: int, b2a: Sequence[int], taken_b: Set[int]) -> List[int]:
    """A call of a shared function with what stands at its place only: its binding and the
    variable it binds, when they are new, and the new nodes it alone reads."""
    out = [c]
    taken_b.add(c)
    for u, _ in vb.users[c]:
        if vb.kind[u] not in BINDING_KINDS:
            continue
        if b2a[u] < 0 and u not in taken_b:
            out.append(u)
            taken_b.add(u)
        var = vb.refs[u][0]  # new even where the binding took the place of one of the group's
        if b2a[var] < 0 and var not in taken_b:
            out.append(var)
            taken_b.add(var)
    for t in vb.refs[c][1:]:
        if b2a[t] < 0 and t not in taken_b and vb.kind[t] in ("Tuple", "TupleGetItem"):
            out.append(t)
            taken_b.add(t)
    return out


def _groups(va: CanonicalGraph, vb: CanonicalGraph, f: int, a2b: Sequence[int], taken_a: Set[int],
            inside: Set[int], fused: Set[int], claimed: Set[int]) -> List[List[int]]:
    """The groups of before kernel calls that the body of shared function ``f`` was made of,
    one per place, in data-flow order: every match, in the before graph, of the body's calls
    by the PrimFuncs they run and the way they feed each other (read through variables and
    argument tuples), among calls unpaired or paired into the body."""
    calls = [t for t in vb.scope(f) if kernel_of(vb, t) is not None]
    if not calls:
        return []
    bounds = (vb.bound_values, va.bound_values)
    fed = {s for t in calls for s in _sources(vb, t, bounds[0]) if s in inside}
    roots = sorted((t for t in calls if t not in fed), key=vb.position.__getitem__)
    free = [x for x in range(va.size) if kernel_of(va, x) is not None
            and (a2b[x] < 0 and x not in taken_a or a2b[x] in fused) and x not in claimed]
    by_kernel: Dict[str, List[int]] = {}
    for x in sorted(free, key=va.position.__getitem__):
        by_kernel.setdefault(str(kernel_of(va, x)), []).append(x)
    groups: List[List[int]] = []
    for x in by_kernel.get(str(kernel_of(vb, roots[-1])), []):
        found = _template(vb, roots[-1], va, x, inside, claimed, {}, bounds)
        if found is None:
            continue
        for root in roots[:-1]:  # a body with several results: each of its other outputs
            for y in by_kernel.get(str(kernel_of(vb, root)), []):
                more = _template(vb, root, va, y, inside, claimed, found, bounds)
                if more is not None:
                    found.update(more)
                    break
        claimed.update(found.values())
        groups.append(sorted(found.values(), key=va.position.__getitem__))
    return groups


def _sources(graph: CanonicalGraph, t: int, bound: Dict[int, int]) -> List[int]:
    """The values a kernel call reads: its argument tuple's fields, read through variables
    (to the values their bindings give them) and tuple items."""
    out = []
    for i in graph.inputs[t]:
        for x in (graph.inputs[i] if graph.kind[i] == "Tuple" else [i]):
            seen = {x}
            while True:
                if graph.kind[x] == "Var" and x in bound:
                    x = bound[x]
                elif graph.kind[x] in ("Var", "TupleGetItem") and graph.inputs[x]:
                    x = graph.inputs[x][0]
                else:
                    break
                if x in seen:
                    break
                seen.add(x)
            out.append(x)
    return out


def _template(vb: CanonicalGraph, t: int, va: CanonicalGraph, x: int, inside: Set[int],
              claimed: Set[int], fixed: Dict[int, int],
              bounds: Tuple[Dict[int, int], Dict[int, int]]) -> Optional[Dict[int, int]]:
    """Body call ``t`` matched with before call ``x`` and, below them, the body calls feeding
    ``t`` with the calls feeding ``x`` (``None`` if they differ); ``fixed`` holds body calls
    matched already (by another result of the body)."""
    if t in fixed:
        return {t: x} if fixed[t] == x else None
    if x in claimed or x in fixed.values() or kernel_of(vb, t) != kernel_of(va, x):
        return None
    found = {t: x}
    mine, theirs = _sources(vb, t, bounds[0]), _sources(va, x, bounds[1])
    if len(mine) != len(theirs):
        return None
    for s, y in zip(mine, theirs):
        if s in inside and kernel_of(vb, s) is not None:
            below = _template(vb, s, va, y, inside, claimed | set(found.values()), {**fixed, **found}, bounds)
            if below is None:
                return None
            found.update(below)
    return found


def _replaced(va: CanonicalGraph, group: List[int], a2b: Sequence[int], taken_a: Set[int],
              inside: Set[int]) -> List[int]:
    """The before nodes of one group of kernel calls: the calls, their argument tuples, the
    variables and bindings of their values (unpaired, or paired into the body)."""
    out: List[int] = []

    def take(t: int) -> None:
        if va.kind[t] == "Op" or (a2b[t] < 0 and t in taken_a) or (a2b[t] >= 0 and a2b[t] not in inside):
            return
        if t in out:
            return
        if a2b[t] < 0:
            taken_a.add(t)
        out.append(t)

    def bound(u: int) -> None:  # a binding of a group's value, its variable, the items read of it
        take(u)
        if len(va.refs[u]) < 2:
            return
        var = va.refs[u][0]
        take(var)
        for t, _ in va.users[var]:
            if va.kind[t] == "TupleGetItem":
                take(t)
                for w, _ in va.users[t]:
                    if va.kind[w] in BINDING_KINDS:
                        take(w)
                        take(va.refs[w][0])

    for x in group:
        take(x)
        for i in va.inputs[x]:
            if va.kind[i] == "Tuple":
                take(i)
        for u, _ in va.users[x]:
            if va.kind[u] in BINDING_KINDS:
                bound(u)
            elif va.kind[u] in ("Var", "TupleGetItem"):
                take(u)
                for w, _ in va.users[u]:
                    if va.kind[w] in BINDING_KINDS or va.kind[w] == "Var":
                        take(w)
    return out
