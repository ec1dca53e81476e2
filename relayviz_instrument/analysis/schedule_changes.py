"""What a pass did to each kernel's loop nest, in a schedule's words. Pure.

Two readings of a kernel (:mod:`~relayviz_instrument.analysis.loop_nest`), before and after a
pass, are compared as a compiler engineer would describe a schedule:

- the axes of each block, followed through the values it is bound to: ``i1 split 32 (was 16)
  → blockIdx.x(1) × threadIdx.x(8) × 4`` (a padded axis split over four loops, two of them bound
  to threads), ``ax0*ax1*ax2 fused split 1024 → blockIdx.x(1) × threadIdx.x(1024)``. A block is
  followed by its name, or by the name a schedule derives from it (``matmul`` →
  ``matmul_update``, ``matmul_rf``);
- blocks added and removed (``−block T_add (merged into C_local)`` when a new block writes
  what it wrote), allocations added, removed or reshaped with their scope (``+shared
  A_shared float32[8, 4096]``);
- loops vectorized, unrolled, added or dropped, threads bound or unbound, barriers inserted,
  reductions across threads added or lowered;
- ``tirx.SplitHostDevice``: the host function that now launches a new device kernel, and the
  kernel's launch (``grid (128, 1)``, ``block (1024)``, static shared memory).

Every fact is computed from the two readings; nothing is stored in the trace for it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from ..format import Document
from .loop_nest import (ALLREDUCE, Alloc, Block, Branch, Dim, Intrinsic, Loop, LoopNest, NestItem, Store, Sync,
                        children, launched_kernels, loop_nests)

__all__ = ["KernelChange", "DeviceKernel", "kernel_changes", "document_kernel_changes", "describe_kernel",
           "device_kernel", "SCHEDULED", "CHANGED", "SPLIT"]

#: The verbs of a kernel change: threads bound or axes split and fused; another change of
#: its loop nest; its body moved into a device kernel it now launches.
SCHEDULED, CHANGED, SPLIT = "scheduled", "changed", "split"

#: Names listed in one fact before "… N more".
NAMES_SHOWN = 4

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_AXES = ("x", "y", "z")


@dataclass(frozen=True)
class DeviceKernel:
    """A device kernel and how it is launched: the extents of ``blockIdx.x/y/z`` (``grid``) and
    ``threadIdx.x/y/z`` (``block``), a missing axis inside a bound one counting 1, and the bytes
    of the shared memory it allocates (``None`` when a size is not a constant); ``dynamic``
    when it allocates ``shared.dyn`` memory, whose size the launch gives."""

    name: str
    grid: Tuple[Dim, ...]
    block: Tuple[Dim, ...]
    shared_bytes: Optional[int] = 0
    dynamic: bool = False

    def text(self) -> str:
        """``device kernel @K launched with grid (1, 1) and block (8, 16), 6,912 bytes of shared memory``."""
        text = (f"device kernel @{self.name} launched with grid ({', '.join(map(str, self.grid))}) "
                f"and block ({', '.join(map(str, self.block))})")
        if self.shared_bytes:
            text += f", {self.shared_bytes:,} bytes of shared memory"
        elif self.shared_bytes is None:
            text += ", shared memory of a size known at run time"
        if self.dynamic:
            text += " and dynamic shared memory"
        return text

    def to_json(self) -> Dict[str, Any]:
        return {"name": self.name, "grid": list(self.grid), "block": list(self.block),
                "shared_bytes": self.shared_bytes, "dynamic_shared": self.dynamic}


@dataclass(frozen=True)
class KernelChange:
    """What one pass did to the loop nest of the kernel ``kernel``: a verb (:data:`SCHEDULED`,
    :data:`CHANGED`, :data:`SPLIT`), the facts (short phrases, in order), and for a split the
    device kernels its host now launches. ``before`` and ``after`` are the two readings."""

    kernel: str
    verb: str
    facts: Tuple[str, ...]
    before: LoopNest
    after: LoopNest
    devices: Tuple[DeviceKernel, ...] = ()

    def text(self) -> str:
        """One line: ``scheduled @K: fact; fact`` or ``split @K into host @K and device kernel
        @K_kernel launched with grid (...) and block (...)``."""
        if self.verb == SPLIT:
            return f"split @{self.kernel} into host @{self.kernel} and " + " and ".join(d.text() for d in self.devices)
        return f"{self.verb} @{self.kernel}: " + "; ".join(self.facts)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"kernel": self.kernel, "verb": self.verb, "facts": list(self.facts),
                               "text": self.text()}
        if self.devices:
            out["device_kernels"] = [d.to_json() for d in self.devices]
        return out


def document_kernel_changes(before: Document, after: Document) -> List[KernelChange]:
    """:func:`kernel_changes` of the loop nests of two snapshots."""
    return kernel_changes(loop_nests(before), loop_nests(after))


def kernel_changes(before: Mapping[str, LoopNest], after: Mapping[str, LoopNest]) -> List[KernelChange]:
    """What changed in each kernel in both ``before`` and ``after`` (loop nests by name), sorted
    by name; a kernel whose nest is the same is left out. A kernel that now launches device
    kernels ``after`` holds and ``before`` did not is a :data:`SPLIT`."""
    out = []
    for name in sorted(set(before) & set(after)):
        b, a = before[name], after[name]
        if b == a:
            continue
        old = set(launched_kernels(b))
        new = [k for k in dict.fromkeys(launched_kernels(a)) if k not in old and k in after and k not in before]
        if new:
            out.append(KernelChange(name, SPLIT, (), b, a, tuple(device_kernel(after[k]) for k in new)))
        else:
            out.append(describe_kernel(b, a))
    return out


def device_kernel(nest: LoopNest) -> DeviceKernel:
    """How the kernel ``nest`` is launched (see :class:`DeviceKernel`)."""
    launch = nest.launch()
    shared = [a for a in nest.allocations() if a.scope.startswith("shared")]
    sizes = [a.bits() for a in shared if a.scope == "shared"]
    total = None if any(s is None for s in sizes) else sum(int(s or 0) for s in sizes) // 8
    return DeviceKernel(nest.name, _extents(launch, "blockIdx"), _extents(launch, "threadIdx"), total,
                        any(a.scope == "shared.dyn" for a in shared))


def _extents(launch: Mapping[str, Dim], prefix: str) -> Tuple[Dim, ...]:
    found = [launch.get(f"{prefix}.{axis}") for axis in _AXES]
    last = max((i for i, e in enumerate(found) if e is not None), default=0)
    return tuple(1 if e is None else e for e in found[: last + 1])


def describe_kernel(before: LoopNest, after: LoopNest) -> KernelChange:
    """The :class:`KernelChange` of one kernel whose loop nest changed (not a split)."""
    facts: List[str] = []
    bblocks, ablocks = _blocks(before.items), _blocks(after.items)
    pairs, gone, came = _match_blocks(bblocks, ablocks)
    for (b, bloops), (a, aloops) in pairs:
        facts.extend(_axis_facts(b, bloops, a, aloops))
    scheduled = bool(facts)
    facts.extend(_block_facts(gone, came))
    opaque = [a.name for (b, _), (a, _) in pairs if b.iter_vars and not a.iter_vars]
    if opaque:
        facts.append(("opaque block " if len(opaque) == 1 else "opaque blocks ") + _names(opaque))
    facts.extend(_alloc_facts(before.allocations(), after.allocations()))
    facts.extend(_alloc_moves(before, after))
    bthreads, athreads = before.launch(), after.launch()
    if not scheduled:
        facts.extend(_loop_facts(before, after, unrolling=not (gone or came)))
        facts.extend(_thread_facts(bthreads, athreads))
    if athreads and not bthreads:
        scheduled = True
    facts.extend(_count_facts(before, after))
    if not facts:
        facts.append(_fallback(before, after))
    return KernelChange(before.name, SCHEDULED if scheduled else CHANGED, tuple(dict.fromkeys(facts)), before, after)


# -- blocks and the loops around them ------------------------------------------------------------

_Placed = Tuple[Block, Tuple[Loop, ...]]


def _placed(items: Sequence[NestItem]) -> Iterator[Tuple[NestItem, Tuple[Loop, ...]]]:
    """Every item with the loops around it, outermost first, in order."""
    pending: List[Tuple[NestItem, Tuple[Loop, ...]]] = [(item, ()) for item in reversed(items)]
    while pending:
        item, loops = pending.pop()
        yield item, loops
        inner = loops + (item,) if isinstance(item, Loop) else loops
        pending.extend((child, inner) for child in reversed(children(item)))


def _blocks(items: Sequence[NestItem]) -> List[_Placed]:
    """Every block with the loops around it, outermost first, in order."""
    return [(item, loops) for item, loops in _placed(items) if isinstance(item, Block)]


def _match_blocks(before: List[_Placed], after: List[_Placed]
                  ) -> Tuple[List[Tuple[_Placed, _Placed]], List[_Placed], List[_Placed]]:
    """Pair each block of ``before`` with the block of ``after`` of its name, else with one a
    schedule named after it (``matmul_update``: the same axes, the reduction among them);
    return the pairs, the blocks of ``before`` left, and those of ``after`` left."""
    taken: Set[int] = set()
    pairs = []
    gone = []
    names = {b.name for b, _ in after}
    for placed in before:
        block = placed[0]
        found = next((i for i, (a, _) in enumerate(after) if i not in taken and a.name == block.name), None)
        if found is None and block.name not in names:
            kinds = sorted(iv.kind for iv in block.iter_vars)
            derived = [i for i, (a, _) in enumerate(after)
                       if i not in taken and a.name.startswith(block.name + "_")
                       and sorted(set(iv.kind for iv in a.iter_vars)) == sorted(set(kinds))]
            found = derived[0] if derived else None
        if found is None:
            gone.append(placed)
        else:
            taken.add(found)
            pairs.append((placed, after[found]))
    return pairs, gone, [p for i, p in enumerate(after) if i not in taken]


def _axis_loops(block: Block, loops: Tuple[Loop, ...]) -> List[List[int]]:
    """For each axis of ``block``, the positions in ``loops`` of the loops its value uses."""
    position = {loop.var: i for i, loop in enumerate(loops) if loop.var}
    out = []
    for iv in block.iter_vars:
        used = {position[name] for name in _IDENTIFIER.findall(str(iv.binding)) if name in position}
        out.append(sorted(used))
    return out


def _loop_key(loop: Loop) -> Tuple[Any, ...]:
    return (loop.var, loop.extent, loop.kind, loop.thread)


def _factor(loop: Loop) -> str:
    if loop.thread:
        return f"{loop.thread}({loop.extent})"
    if loop.kind in ("serial", "thread_binding"):
        return str(loop.extent)
    return f"{loop.extent} {loop.kind}"


def _product(values: Iterable[Dim]) -> Optional[int]:
    out = 1
    for v in values:
        if not isinstance(v, int):
            return None
        out *= v
    return out


def _axis_facts(b: Block, bloops: Tuple[Loop, ...], a: Block, aloops: Tuple[Loop, ...]) -> List[str]:
    """How the loops over each group of ``a``'s axes (axes that share loops were fused) differ
    from the loops over the same axes of ``b``: one fact per group that changed."""
    after = _axis_loops(a, aloops)
    same_axes = len(b.iter_vars) == len(a.iter_vars)
    before = _axis_loops(b, bloops) if same_axes else []
    names = []
    for j, iv in enumerate(a.iter_vars):
        name = iv.name
        if same_axes:
            name = b.iter_vars[j].name
            if len(before[j]) == 1 and str(b.iter_vars[j].binding) == bloops[before[j][0]].var:
                name = bloops[before[j][0]].var
        names.append(name)
    groups = _groups(after)
    facts = []
    for axes in groups:
        loops = sorted({p for j in axes for p in after[j]})
        if not loops:
            continue
        now = [aloops[p] for p in loops]
        if same_axes:
            was = [bloops[p] for p in sorted({p for j in axes for p in before[j]})]
            if [_loop_key(x) for x in was] == [_loop_key(x) for x in now]:
                continue
        text = "*".join(names[j] for j in axes) + (" fused" if len(axes) > 1 else "")
        total = _product(x.extent for x in now)
        if len(now) > 1:
            text += f" split {total if total is not None else '?'}"
        old = _product(b.iter_vars[j].extent for j in axes) if same_axes else None
        if old is not None and total is not None and old != total:
            text += f" (was {old})"
        facts.append(f"{text} → {' × '.join(_factor(x) for x in now)}")
    return facts


def _groups(axis_loops: List[List[int]]) -> List[List[int]]:
    """Axes that share a loop, as groups in axis order (union-find over loop positions)."""
    parent = list(range(len(axis_loops)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: Dict[int, int] = {}
    for j, loops in enumerate(axis_loops):
        for p in loops:
            if p in owner:
                parent[find(j)] = find(owner[p])
            else:
                owner[p] = j
    groups: Dict[int, List[int]] = {}
    for j in range(len(axis_loops)):
        groups.setdefault(find(j), []).append(j)
    return sorted(groups.values())


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f", … {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _written(block: Block) -> Set[str]:
    return {w.split("[", 1)[0] for w in block.writes}


def _block_facts(gone: List[_Placed], came: List[_Placed]) -> List[str]:
    facts = []
    if came:
        facts.append(("+block " if len(came) == 1 else "+blocks ") + _names([b.name for b, _ in came]))
    for block, _ in gone:
        into = next((b.name for b, _ in came if _written(block) & _written(b)), None)
        facts.append(f"−block {block.name}" + (f" (merged into {into})" if into else ""))
    if len(gone) > NAMES_SHOWN and not came:  # a lowering that removed every block: one fact
        return [f"−{len(gone)} blocks (" + _names([b.name for b, _ in gone]) + ")"]
    return facts


def _alloc_text(alloc: Alloc) -> str:
    return f"{alloc.dtype}[{', '.join(map(str, alloc.shape))}]"


def _alloc_facts(before: List[Alloc], after: List[Alloc]) -> List[str]:
    b: Dict[str, Alloc] = {}
    a: Dict[str, Alloc] = {}
    for found, allocs in ((b, before), (a, after)):
        for alloc in allocs:
            found.setdefault(alloc.buffer, alloc)  # the first of a buffer allocated twice
    facts = []
    for name, alloc in a.items():
        old = b.get(name)
        if old is None:
            facts.append(f"+{alloc.scope} {name} {_alloc_text(alloc)}")
        elif (old.dtype, old.shape, old.scope) != (alloc.dtype, alloc.shape, alloc.scope):
            scope = alloc.scope if old.scope == alloc.scope else f"{old.scope} → {alloc.scope}"
            facts.append(f"{scope} {name} {_alloc_text(old)} → {_alloc_text(alloc)}")
    gone: Dict[str, List[str]] = {}
    for name, alloc in b.items():
        if name not in a:
            gone.setdefault(alloc.scope, []).append(name)
    return facts + [f"−{scope} {_names(names)}" for scope, names in gone.items()]


def _alloc_moves(before: LoopNest, after: LoopNest) -> List[str]:
    """Allocations of the same buffer, shape and scope now under other loops (planned nearer
    their use, or hoisted)."""
    def where(nest: LoopNest) -> Dict[Tuple[str, str, Tuple[Dim, ...], str], str]:
        """The loop each allocation sits in: a bound loop by its thread (lowering renames it)."""
        out: Dict[Tuple[str, str, Tuple[Dim, ...], str], str] = {}
        for item, loops in _placed(nest.items):
            if isinstance(item, Alloc):
                out.setdefault((item.buffer, item.dtype, item.shape, item.scope),
                               (loops[-1].thread or loops[-1].var) if loops else "")
        return out

    b, a = where(before), where(after)
    moved: Dict[str, List[str]] = {}
    for key, place in a.items():
        if key in b and b[key] != place:
            moved.setdefault(place, []).append(key[0])
    return [f"moved {_names(names)} " + (f"into loop {place}" if place else "out of every loop")
            for place, names in moved.items()]


def _loops(nest: LoopNest) -> List[Loop]:
    return [item for item in nest.walk() if isinstance(item, Loop) and item.var]


def _loop_facts(before: LoopNest, after: LoopNest, *, unrolling: bool) -> List[str]:
    """Loops vectorized, unrolled (``unrolling``: no block came or went, and the code grew),
    dropped, added or changed (by variable); a bound loop is its thread and extent."""
    facts = []
    bound_b = Counter((x.thread, x.extent) for x in before.walk() if isinstance(x, Loop) and x.thread)
    bound_a = Counter((x.thread, x.extent) for x in after.walk() if isinstance(x, Loop) and x.thread)
    lifted = [f"{t}({e})" + (f" ×{n - bound_a[(t, e)]}" if n - bound_a[(t, e)] > 1 else "")
              for (t, e), n in bound_b.items() if bound_a[(t, e)] and n > bound_a[(t, e)]]
    if lifted:
        facts.append("rebinding loops merged into the enclosing ones: " + _names(lifted))
    # A bound loop is its thread and extent, whatever its variable (lowering and lifting rename it).
    b = Counter(_loop_key(x) for x in _loops(before) if not x.thread)
    a = Counter(_loop_key(x) for x in _loops(after) if not x.thread)
    removed = [k for k in b if k not in a]
    added = [k for k in a if k not in b]
    by_var = {k[0]: k for k in added}
    vectorized = [k for k in removed if k[2] == "vectorized" and k[0] not in by_var]
    if vectorized:
        facts.append("vectorized " + _names([f"{k[0]}({k[1]})" for k in vectorized]))
    grown = unrolling and _leaves(after) > _leaves(before)
    dropped = [k for k in removed if k[2] != "vectorized" and k[0] not in by_var]
    unrolled = [k for k in dropped if grown and isinstance(k[1], int) and k[1] > 1]
    if unrolled:
        facts.append("unrolled " + _names([f"{k[0]}({k[1]})" for k in unrolled]))
    rest = [k for k in dropped if k not in unrolled]
    if rest:
        facts.append("−loops " + _names([f"{k[0]}({k[1]})" for k in rest]))
    changed = [(next(k for k in removed if k[0] == v), new) for v, new in by_var.items()
               if any(k[0] == v for k in removed)]
    for old, new in changed:
        facts.append(f"{old[0]} {_loop_words(old)} → {_loop_words(new)}")
    fresh = [k for k in added if k not in {new for _, new in changed}]
    if fresh:
        facts.append("+loops " + _names([f"{k[0]}({_loop_words(k)})" for k in fresh]))
    return facts


def _loop_words(key: Tuple[Any, ...]) -> str:
    _, extent, kind, thread = key
    return str(extent) + (f" {thread}" if thread else "" if kind == "serial" else f" {kind}")


def _leaves(nest: LoopNest) -> int:
    """How many stores and blocks the nest's code holds, repeats counted."""
    return sum(x.repeat for x in nest.walk() if isinstance(x, (Store, Block)))


def _thread_facts(before: Mapping[str, Dim], after: Mapping[str, Dim]) -> List[str]:
    facts = []
    added = [f"{t}({e})" for t, e in after.items() if t not in before]
    if added:
        facts.append("+threads " + ", ".join(added))
    for t, e in after.items():
        if t in before and before[t] != e:
            facts.append(f"{t} {before[t]} → {e}")
    removed = [f"{t}({e})" for t, e in before.items() if t not in after]
    if removed:
        facts.append("−threads " + ", ".join(removed))
    return facts


def _count_facts(before: LoopNest, after: LoopNest) -> List[str]:
    """Barriers by scope, and reductions across threads, added or removed."""
    facts = []
    syncs_b = _counts(x.scope for x in before.walk() for _ in range(x.repeat) if isinstance(x, Sync))
    syncs_a = _counts(x.scope for x in after.walk() for _ in range(x.repeat) if isinstance(x, Sync))
    for scope in sorted(set(syncs_b) | set(syncs_a)):
        delta = syncs_a.get(scope, 0) - syncs_b.get(scope, 0)
        if delta:
            facts.append(f"{delta:+d} sync {scope}".replace("-", "−"))
    reduce_b = sum(x.repeat for x in before.walk() if isinstance(x, Intrinsic) and x.op == ALLREDUCE)
    reduce_a = sum(x.repeat for x in after.walk() if isinstance(x, Intrinsic) and x.op == ALLREDUCE)
    if reduce_a > reduce_b:
        facts.append(f"+{reduce_a - reduce_b} allreduce across threads")
    elif reduce_b > reduce_a:
        facts.append(f"allreduce across threads lowered ({reduce_b - reduce_a})")
    return facts


def _counts(values: Iterable[str]) -> Dict[str, int]:
    return dict(Counter(values))


def _fallback(before: LoopNest, after: LoopNest) -> str:
    """The fact of a change none of the others names: regions, predicates and bindings of
    blocks, conditions, else the order of items."""
    bblocks = {b.name: b for b, _ in _blocks(before.items)}
    regions = [b.name for b, _ in _blocks(after.items)
               if b.name in bblocks and (bblocks[b.name].reads, bblocks[b.name].writes) != (b.reads, b.writes)]
    if regions:
        return "regions of " + ("block " if len(regions) == 1 else "blocks ") + _names(regions)
    bound = [b.name for b, _ in _blocks(after.items) if b.name in bblocks
             and (bblocks[b.name].iter_vars, bblocks[b.name].predicate) != (b.iter_vars, b.predicate)]
    if bound:
        return "bindings of " + ("block " if len(bound) == 1 else "blocks ") + _names(bound)
    conditions_b = [x.condition for x in before.walk() if isinstance(x, Branch)]
    conditions_a = [x.condition for x in after.walk() if isinstance(x, Branch)]
    if conditions_b != conditions_a:
        if len(conditions_b) == len(conditions_a):
            changed = [f"{x} → {y}" for x, y in zip(conditions_b, conditions_a) if x != y]
            return "conditions " + _names(changed)
        return f"conditions: {len(conditions_b)} → {len(conditions_a)}"
    return "statements rearranged"
