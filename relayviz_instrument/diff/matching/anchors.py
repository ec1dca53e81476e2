"""The sure pairs, made before anything is inferred: identical documents, anchors and blocks.

1. **Identical documents** (equal labels and references in canonical order) are paired in one
   comparison, and nothing else runs.
2. **Anchors**: global functions by name, the ``root`` expressions, and parameters by name
   when the name is unique in both lists. Names are a node's identity where the IR gives one,
   so they go first: every later phase starts from pairs.
3. **Blocks**, where parameters have no names to tell them apart: the two main chains are
   aligned block by block (:mod:`..blocks`), and the blocks that align paired node by node,
   before single nodes are looked at (a block deleted from a run of alike blocks reads as
   deleted, not as its neighbours shifted).

The parameters that no name told apart are paired by their place in the lists near the end
(:func:`leftover_params`), once the nodes that read them have said where a list gained or
lost one.
"""

from __future__ import annotations

from ..blocks import aligned_blocks, relative_pairs, spine_blocks
from ..sequence import align_sequences
from .state import MatchState, unique

__all__ = ["identical", "anchor", "pair_params", "leftover_params", "align_blocks"]


def identical(st: MatchState) -> bool:
    """Pair everything at once when the two documents are the same graph, numbered alike."""
    ga, gb = st.A.graph, st.B.graph
    if ga.size != gb.size or st.A.tiers[3] != st.B.tiers[3] or ga.refs != gb.refs:
        return False
    st.A.partner = list(range(ga.size))
    st.B.partner = list(range(gb.size))
    return True


def anchor(st: MatchState) -> None:
    """Pair global functions by name and the roots, each with its parameters by name."""
    ga, gb = st.A.graph, st.B.graph
    for name, fa in ga.functions.items():
        fb = gb.functions.get(name)
        if fb is not None and st.pair(fa, fb):
            pair_params(st, fa, fb)
    if ga.root is not None and gb.root is not None and st.pair(ga.root, gb.root):
        pair_params(st, ga.root, gb.root)


def pair_params(st: MatchState, fa: int, fb: int, rest: bool = False) -> None:
    """Parameters by name, when the name is unique in both lists; with ``rest``, the rest
    of the two lists aligned by their labels. Alike parameters (anonymous frontends) are
    left to the nodes that read them until then: where a list gained a parameter among
    alike ones is told by the graph, not by the list."""
    A, B = st.A, st.B
    if A.kind[fa] != "Function" or B.kind[fb] != "Function":
        return
    pa, pb = A.graph.refs[fa][1:], B.graph.refs[fb][1:]
    if not rest:
        t1a, t1b = A.tiers[1], B.tiers[1]
        names_a, names_b = unique([t1a[p] for p in pa]), unique([t1b[p] for p in pb])
        for name, i in names_a.items():
            j = names_b.get(name, -1)
            if j >= 0:
                st.pair(pa[i], pb[j])
        return
    rest_a = [p for p in pa if A.partner[p] < 0]
    rest_b = [p for p in pb if B.partner[p] < 0]
    if rest_a and rest_b:
        t3a, t3b = A.tiers[3], B.tiers[3]
        for i, j in align_sequences([t3a[p] for p in rest_a], [t3b[p] for p in rest_b]):
            st.pair(rest_a[i], rest_b[j])


def leftover_params(st: MatchState) -> None:
    """The parameters still unpaired of paired functions, by their place in the lists."""
    A = st.A
    for f in [r for r, k in enumerate(A.kind) if k == "Function"]:
        if A.partner[f] >= 0 and f not in A.graph.inlined:
            pair_params(st, f, A.partner[f], rest=True)


def align_blocks(st: MatchState) -> None:
    """Where parameters have no names to tell them apart, align the two main chains block
    by block (:mod:`..blocks`) and pair the blocks that align, node by node: a block
    deleted from a run of alike blocks reads as deleted, not as its neighbours shifted."""
    if not (st.ia.labels.positional or st.ib.labels.positional):
        return
    ba, bb = spine_blocks(st.ia), spine_blocks(st.ib)
    if ba is None or bb is None:
        return
    # Where it is sure (runs and unique blocks); a block repeated is the later copy, as a
    # pass that repeats a block leaves the first one reading what it read. First with the
    # places of the parameters the blocks read: a block deleted from a run of alike ones
    # with its weights left in the list is told by where they are.
    for i, j in aligned_blocks(ba, bb):
        a, b = ba.exits[i], bb.exits[j]
        entry_a, entry_b = (ba.exits[i - 1] if i else -1), (bb.exits[j - 1] if j else -1)
        for x, y in relative_pairs(st.ia, st.ib, a, b, entry_a, entry_b, ba.owner, bb.owner):
            st.pair(x, y)
