"""Functions wrapped around paired nodes, and unwrapped: FuseOps, MergeComposite, FuseTIR, DefuseOps.

A new function called from one place is read through (see :mod:`.graph`): the nodes it holds
stay paired with those it took in, and the hunk holds the function, its call and parameters
(:func:`wrapped`; a gone one, ``unwrapped``, through the same function); a gone function whose
nodes all moved into new ones joins their hunk (:func:`emptied`).
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Set

from ..format.kinds import BINDING_KINDS
from .drafts import Draft
from .graph import CanonicalGraph

__all__ = ["wrapped", "emptied"]


def wrapped(view: CanonicalGraph, other: CanonicalGraph, partner: Sequence[int], taken: Set[int],
             taken_other: Set[int], kind: str, before_side: bool) -> List[Draft]:
    """Hunks for the functions of ``view`` called once, absent from ``other``, holding paired nodes."""
    out: List[Draft] = []
    if not view.inlined:
        return out
    # What stands at a call's site besides the call: the tuple items read through it, and in
    # Relax the name it calls (a GlobalVar) and the binding that holds its value.
    site: Dict[int, List[int]] = {call: [r for r in view.refs[call][:2] if view.kind[r] == "GlobalVar"]
                                  for call in view.inlined.values()}
    for t in range(view.size):
        if view.kind[t] == "TupleGetItem" and view.refs[t] and view.canon[t] != t:
            site.setdefault(view.refs[t][0], []).append(t)
        elif view.kind[t] in BINDING_KINDS and len(view.refs[t]) > 1 and view.refs[t][1] in site:
            site[view.refs[t][1]] += [view.refs[t][0], t]
    for f in sorted(view.inlined, reverse=True):  # outer functions come later in the order
        if partner[f] >= 0 or f in taken:
            continue
        call = view.inlined[f]
        scope = view.scope(f)
        inner = [r for r in scope if partner[r] >= 0 and view.kind[r] != "Op" and r not in taken]
        if not inner:
            continue
        shell = [f, call] + view.refs[f][1:] + site.get(call, [])
        shell += [r for r in scope if partner[r] < 0 and view.kind[r] != "Op"]
        shell = sorted({r for r in shell if partner[r] < 0 and r not in taken})
        draft = Draft(kind)
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
