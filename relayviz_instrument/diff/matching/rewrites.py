"""Operator rewrites: a call that a pass turned into a call of another operator of the same role.

AlterOpLayout turns a ``nn.conv2d`` into a ``nn.contrib_conv2d_NCHWc`` with layout transforms
around it, and a ``nn.dense`` into a ``nn.contrib_dense_pack``; QNN's canonicalization turns a
``qnn.conv2d`` into a ``nn.conv2d`` with the zero-point terms beside it. Every other phase
pairs nodes of one operator only, so such calls are left unpaired, and a run of alike blocks
rewritten this way would read as one region removed and another added. This phase runs after
every other (before the Op nodes) and pairs a removed call with an added one when

* their operators have the same role (:func:`same_role`): the same name once the dialect
  (``nn.``, ``qnn.``) and ``contrib_`` are set aside, or one name that of the other with a
  variant after it (``conv2d`` and ``conv2d_NCHWc``, ``dense`` and ``dense_pack``);
* they compute as many values of one dtype (a layout or an implementation changes neither);
* they sit in one place: read through the unpaired nodes around them (the layout transforms
  inserted on their inputs and output, at most three deep, never another candidate call),
  their inputs and their users are partners of each other's;
* and neither has another candidate that shares as many of those.

The pair is a ``changed`` one whose fields name the operator (``op``) beside the attributes.

Relax's LegalizeOps rewrites every high-level call (``R.matmul``, ``R.permute_dims``) into a
``call_tir`` of a PrimFunc it adds, named after the operator's TOPI kernel (``matmul1``,
``transpose``), and keeps the binding that holds the value: :func:`pair_legalized` pairs the
two values of each binding paired already, when one calls an operator and the other runs a
kernel of as many values of one dtype. Without it, a run of alike calls would read as one
region removed and another added, and each kernel call would stem from all of them.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from ...format.kinds import BINDING_KINDS
from ...format.irs import PRIMFUNC_CALLS
from ..graph import CanonicalGraph
from .scoring import mutual_best
from .state import MatchState, Side

__all__ = ["pair_rewrites", "pair_legalized", "same_role", "role"]

#: Unpaired nodes looked through between a candidate and its paired neighbours.
_LOOK_THROUGH = 3
#: Words an operator's name may carry before its role (``contrib_depthwise_conv2d_NCHWc``).
_QUALIFIERS = ("contrib", "depthwise")


def role(name: str) -> str:
    """The role of an operator: its name without the dialect and the qualifiers before it
    (``nn.contrib_conv2d_NCHWc`` -> ``conv2d_NCHWc``, ``qnn.conv2d`` -> ``conv2d``)."""
    words = name.rsplit(".", 1)[-1].split("_")
    while len(words) > 1 and words[0] in _QUALIFIERS:
        words = words[1:]
    return "_".join(words)


def same_role(a: str, b: str) -> bool:
    """Whether operators ``a`` and ``b`` (different names) do one job: equal roles, or one role
    that of the other with a variant after it (``conv2d`` and ``conv2d_NCHWc``)."""
    if a == b:
        return False
    ra, rb = role(a), role(b)
    return ra == rb or ra.startswith(rb + "_") or rb.startswith(ra + "_")


def pair_rewrites(st: MatchState) -> None:
    """Pair the removed and added calls of operators of one role that sit in one place, and
    the calls LegalizeOps turned into kernel calls (:func:`pair_legalized`)."""
    pair_legalized(st)
    A, B = st.A, st.B
    cand_a, cand_b = _calls(st, A), _calls(st, B)
    if not cand_a or not cand_b:
        return
    names_b = {B.graph.op_name(y) for y in cand_b}
    roles = {n: [m for m in names_b if m is not None and same_role(n, m)]
             for n in {A.graph.op_name(x) for x in cand_a} if n is not None}
    cand_a = [x for x in cand_a if roles.get(A.graph.op_name(x) or "")]
    wanted = {m for ms in roles.values() for m in ms}
    cand_b = [y for y in cand_b if B.graph.op_name(y) in wanted]
    if not cand_a or not cand_b:
        return
    near_a = {x: _near(A, x, set(cand_a)) for x in cand_a}
    near_b = {y: _near(B, y, set(cand_b)) for y in cand_b}
    # Where each added candidate's paired neighbours are, to find a removed one's rivals.
    at: Dict[Tuple[str, int], List[int]] = {}
    for y, (ups, downs) in near_b.items():
        for b in ups:
            at.setdefault(("up", b), []).append(y)
        for b in downs:
            at.setdefault(("down", b), []).append(y)
    scores: Dict[Tuple[int, int], int] = {}
    for x, (ups, downs) in near_a.items():
        name = A.graph.op_name(x)
        found: Set[int] = set()
        for direction, mine in (("up", ups), ("down", downs)):
            for a in mine:
                found.update(at.get((direction, A.partner[a]), ()))
        for y in found:
            if B.graph.op_name(y) not in roles[name or ""] or not _same_size(A.graph, x, B.graph, y):
                continue
            ups_b, downs_b = near_b[y]
            up = sum(1 for a in ups if A.partner[a] in ups_b)
            down = sum(1 for a in downs if A.partner[a] in downs_b)
            if up and down or up + down >= 2 or not (ups and downs):
                scores[(x, y)] = up + down
    chosen = mutual_best(scores)
    for x in sorted(chosen, key=A.position.__getitem__):
        st.pair_rewritten(x, chosen[x])


def pair_legalized(st: MatchState) -> None:
    """Pair the values of paired Relax bindings that a pass turned from a call of an operator
    into a call of a kernel (``call_tir``) of the same size, on either side."""
    for s in (st.A, st.B):
        g, og = s.graph, s.other.graph
        for u in range(g.size):
            if s.kind[u] not in BINDING_KINDS or s.partner[u] < 0 or len(g.refs[u]) < 2:
                continue
            v = s.partner[u]
            if len(og.refs[v]) < 2:
                continue
            x, y = g.refs[u][1], og.refs[v][1]
            if s.partner[x] >= 0 or s.other.partner[y] >= 0 or not (_operator_call(g, x) and _kernel_call(og, y)):
                continue
            if _same_size(g, x, og, y):
                st.pair_rewritten(*((x, y) if s.is_a else (y, x)))


def _operator_call(g: CanonicalGraph, r: int) -> bool:
    """Whether ``r`` calls an operator that is no kernel call."""
    name = g.op_name(r)
    return g.kind[r] == "Call" and name is not None and name not in PRIMFUNC_CALLS


def _kernel_call(g: CanonicalGraph, r: int) -> bool:
    """Whether ``r`` runs a kernel: ``call_tir`` (and its variants) of a global PrimFunc."""
    return g.kind[r] == "Call" and g.op_name(r) in PRIMFUNC_CALLS and len(g.refs[r]) > 1 \
        and g.kind[g.refs[r][1]] == "GlobalVar"


def _calls(st: MatchState, s: Side) -> List[int]:
    """The unpaired calls of an operator on ``s``."""
    op_of = s.graph.op_of
    return [r for r in s.unpaired(st.count) if op_of[r] >= 0]


def _near(s: Side, x: int, candidates: Set[int]) -> Tuple[Set[int], Set[int]]:
    """The paired users and paired inputs of ``x``, looking through up to three unpaired nodes
    that are not candidates themselves."""
    out: Tuple[Set[int], Set[int]] = (set(), set())
    for found, step in ((out[0], _users), (out[1], _inputs)):
        level, seen = [x], {x}
        for _ in range(_LOOK_THROUGH + 1):
            nxt = []
            for r in level:
                for t in step(s, r):
                    if t in seen:
                        continue
                    seen.add(t)
                    if s.partner[t] >= 0:
                        found.add(t)
                    elif t not in candidates and s.kind[t] != "Op":
                        nxt.append(t)
            level = nxt
    return out


def _users(s: Side, r: int) -> List[int]:
    return [u for u, _ in s.users[r]]


def _inputs(s: Side, r: int) -> List[int]:
    return s.inputs[r]


def _same_size(ga: CanonicalGraph, x: int, gb: CanonicalGraph, y: int) -> bool:
    """Whether ``x`` and ``y`` compute as many values of one dtype (when both types say)."""
    ta, tb = _tensor(ga, x), _tensor(gb, y)
    if ta is None or tb is None:
        return True
    return ta == tb


def _tensor(g: CanonicalGraph, r: int) -> Optional[Tuple[str, int]]:
    ty = g.nodes[r].get("type")
    if not isinstance(ty, dict) or "dtype" not in ty or not isinstance(ty.get("shape"), list):
        return None
    size = 1
    for d in ty["shape"]:
        if not isinstance(d, int):
            return None
        size *= d
    return str(ty["dtype"]), size
