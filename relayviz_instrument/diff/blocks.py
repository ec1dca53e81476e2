"""The blocks of a graph's main chain, for aligning two documents block by block.

A network is mostly a chain of blocks: a ResNet unit, a transformer layer, a conv + batch_norm
+ relu. The *spine* is the chain of nodes that every path from the output down to the input
passes (the dominators of the input, with the edges read from users to inputs); a *block* is
what lies between two consecutive spine nodes, named by its upper one. Its *key* is its
structure relative to the block below (the spine node under it reads as a placeholder), so
repeated blocks have equal keys. :func:`~.matching.match` aligns the key sequences of the two
documents like a text diff aligns lines, and pairs the blocks that align, before looking at
single nodes: a block deleted from a run of alike blocks is one deleted block, however alike
its neighbours look locally.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .sequence import align_sequences
from .index import IndexedDocument

__all__ = ["Blocks", "aligned_blocks", "spine_blocks"]

#: Spines shorter than this have no blocks worth aligning.
_MIN_BLOCKS = 3
#: Longest stretch of blocks whose keys together may anchor the alignment.
_STRETCH = 32


class Blocks:
    """``exits``: the spine from the input up (each block's upper node); ``keys``: each block's
    structure key; ``placed``: the key with the places in their list of the parameters known by
    position that the block reads; ``params``: the labels of the function's parameters, in
    order; ``owner[r]``: the exit of the block node ``r`` belongs to (-1: none)."""

    def __init__(self, exits: List[int], keys: List[int], placed: List[int], params: List[int],
                 owner: List[int]) -> None:
        self.exits = exits
        self.keys = keys
        self.placed = placed
        self.params = params
        self.owner = owner


def spine_blocks(index: IndexedDocument) -> Optional[Blocks]:
    """The blocks of the main chain of ``index`` (the function ``main``, or the root), or
    ``None`` when the graph has no chain of blocks."""
    graph = index.graph
    top = graph.functions.get("main", graph.root)
    if top is None or graph.kind[top] != "Function":
        return None
    root = graph.inputs[top][0]  # the body
    inputs, users = graph.inputs, graph.users
    # Dominators over the nodes the body reaches, users before inputs.
    reached = {root}
    stack = [root]
    while stack:
        r = stack.pop()
        for i in inputs[r]:
            if i not in reached:
                reached.add(i)
                stack.append(i)
    position = graph.position
    order = sorted(reached, key=position.__getitem__, reverse=True)
    idom = [-1] * graph.size
    idom[root] = root
    depth = [0] * graph.size
    # The input is the leaf farthest from the output (the longest path down to it): the depth
    # in the dominator tree is not, as a branch's nodes hang below the node that joins it.
    far = [0] * graph.size
    for r in order:
        if r == root:
            continue
        up = -1
        longest = 0
        for u, _ in users[r]:
            if idom[u] < 0:
                continue  # a user the body does not reach
            if far[u] >= longest:
                longest = far[u] + 1
            if up < 0:
                up = u
                continue
            while up != u:  # the closest common dominator
                if depth[up] >= depth[u]:
                    up = idom[up]
                else:
                    u = idom[u]
        if up < 0:
            up = root
        idom[r] = up
        depth[r] = depth[up] + 1
        far[r] = longest
    leaves = [r for r in reached if not inputs[r]]
    if not leaves:
        return None
    deepest = max(leaves, key=lambda r: (far[r], -position[r]))
    exits = [deepest]
    while exits[-1] != root:
        exits.append(idom[exits[-1]])
    if len(exits) <= _MIN_BLOCKS:
        return None
    on_spine = {r: k for k, r in enumerate(exits)}
    owner = [-1] * graph.size
    for r in sorted(reached, key=depth.__getitem__):  # dominators first
        if r in on_spine:
            owner[r] = r
        else:
            owner[r] = owner[idom[r]]
    keys, placed = _block_keys(index, exits, owner)
    l3 = index.labels.tiers[3]
    return Blocks(exits, keys, placed, [l3[p] for p in graph.refs[top][1:]], owner)


def _block_keys(index: IndexedDocument, exits: List[int], owner: List[int]) -> Tuple[List[int], List[int]]:
    """Each block's structure, the spine node below it read as a placeholder; and the same
    with the places of the parameters known by position that it reads."""
    graph, l3 = index.graph, index.labels.tiers[3]
    inputs = graph.inputs
    positional = index.labels.positional
    below = {exit_: exits[k - 1] if k else -1 for k, exit_ in enumerate(exits)}
    members: Dict[int, List[int]] = {}
    for r in graph.topo:
        if owner[r] >= 0:
            members.setdefault(owner[r], []).append(r)
    keys = []
    placed = []
    for exit_ in exits:
        entry = below[exit_]
        rel: Dict[int, int] = {}
        places: List[int] = []
        for r in members.get(exit_, ()):
            ins: List[object] = []
            for i in inputs[r]:
                if i == entry:
                    ins.append("entry")
                elif not inputs[i]:
                    # A leaf (weight, constant, Op) belongs to the block of the dominator of all
                    # its users: a block repeated with its weights moves them to the copy above,
                    # so where a leaf is owned says nothing of the block that reads it.
                    ins.append(("leaf", l3[i]))
                    if i in positional:
                        places.append(positional[i])
                elif i in rel:
                    ins.append(rel[i])
                else:
                    ins.append(("outside", l3[i]))
            rel[r] = hash((l3[r], *ins))
        keys.append(rel.get(exit_, l3[exit_]))
        placed.append(hash((keys[-1], *places)))
    return keys, placed


def relative_pairs(ia: IndexedDocument, ib: IndexedDocument, a: int, b: int, entry_a: int, entry_b: int,
                   owner_a: List[int], owner_b: List[int]) -> List[Tuple[int, int]]:
    """The node pairs of two blocks of equal keys (exits ``a`` and ``b``), input by input."""
    out = []
    seen = set()
    stack = [(a, b)]
    ins_a, ins_b = ia.graph.inputs, ib.graph.inputs
    while stack:
        x, y = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        out.append((x, y))
        for i, j in zip(ins_a[x], ins_b[y]):
            if i != entry_a and j != entry_b and owner_a[i] == a and owner_b[j] == b:
                stack.append((i, j))
    return out


def aligned_blocks(ba: Blocks, bb: Blocks) -> List[Tuple[int, int]]:
    """Index pairs of the blocks of two chains that align (see :func:`~.sequence.align_sequences`): by their
    keys with the places of their parameters, then what lies between by their keys alone; by
    their keys alone unless the two parameter lists are alike place by place (where one gained
    or lost parameters, a place is no evidence: a block after it would take the place of the
    one it follows). Where it is sure (runs and unique blocks or stretches of blocks); a block
    repeated is the later copy."""
    if ba.params != bb.params:
        return align_sequences(ba.keys, bb.keys, cells=0, slide=True, stretch=_STRETCH)
    out: List[Tuple[int, int]] = []
    pi = pj = -1
    aligned = align_sequences(ba.placed, bb.placed, cells=0, slide=True, stretch=_STRETCH)
    for i, j in aligned + [(len(ba.keys), len(bb.keys))]:
        if i > pi + 1 and j > pj + 1:
            out += [(pi + 1 + x, pj + 1 + y) for x, y in align_sequences(ba.keys[pi + 1:i], bb.keys[pj + 1:j], cells=0,
                                                            slide=True, stretch=_STRETCH)]
        out.append((i, j))
        pi, pj = i, j
    out.pop()
    return out
