"""Pairing the nodes of two snapshots: a one-to-one mapping that survives duplicates.

The matcher follows GumTree and XLA's hlo_diff, adapted to Relay's DAGs:

1. **Anchors.** Global functions are paired by name, their parameters by name, then by
   position; the ``root`` expressions are paired.
2. **Identical sub-graphs, tallest first.** Nodes whose tier-3 signature (label, type,
   values and the same of every input, in order) occurs once on each side are paired with
   everything below them. Signatures shared by several nodes on a side (the same constant
   in every batch norm, a block repeated in every stage) are deferred.
3. **Propagation to a fixpoint.** From every pair, inputs are paired by position (by longest
   common subsequence when their number differs, as in ``Tuple`` and ``concatenate``), and
   users by operator and input position. A candidate is taken only if no other candidate
   (reading a partner of one of its inputs, or at the same input of a partner of one of its
   users) agrees with it on as many paired inputs and users; equally good ones wait as a
   group. Candidates that share only a slot, with no paired input in common, wait in a queue
   tried when nothing surer is left, the most alike first. Then propagation looks through up
   to two inserted or deleted nodes (a ``layout_transform``).
4. **Residual signatures.** The nodes still unpaired are hashed again at tiers 3, 2, 1 and 0,
   where an input that is already paired counts as that pair: a unique residual signature
   pairs a node whose attributes, type or value changed between nodes that did not.
5. **Bottom-up.** A node still unpaired is paired with the unpaired node of its label, above
   the partners of the paired nodes below it, whose own paired nodes below agree best (Dice
   similarity at least 0.5, strictly better than the next): this reaches a ``nn.relu`` that
   sits between two replaced regions, with no paired input or user.
6. **Ties.** Groups that no neighbour separates are paired in canonical order; then a
   removed node whose twin was paired takes the twin's place when more of the pair's users
   agree with it (so EliminateCommonSubexpr keeps the node most users already read).
7. **Op nodes** follow their calls: an Op pairs with the Op that most of its paired calls use.

Nodes of different tier-0 labels (kind and operator) are never paired.
"""

from __future__ import annotations

import heapq
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .signatures import Labels, residual_signatures
from .view import VARIADIC_KINDS, GraphView

__all__ = ["match"]

#: Users of one node considered together; larger groups are left to other evidence.
_MAX_GROUP = 64
#: Inputs aligned by longest common subsequence; longer lists are aligned by position.
_MAX_ALIGN = 256
#: Inserted or deleted nodes the input propagation looks through.
_LOOK_THROUGH = 2
#: Rounds of re-seeding propagation from the pairs that still have unpaired neighbours.
_ROUNDS = 4
#: Bottom-up phase: levels walked down (up) from a node, nodes visited below (above) it, the
#: least Dice similarity of paired nodes below to pair two nodes, and the visits allowed per node.
_DEPTH = 6
_BELOW = 64
_ABOVE = 256
_MIN_DICE = 0.5
_BOTTOM_UP_BUDGET = 20


def match(va: GraphView, vb: GraphView, la: Labels, lb: Labels) -> Tuple[List[int], List[int]]:
    """Pair the nodes of ``va`` and ``vb``; return ``(a2b, b2a)`` rank maps (-1: unpaired)."""
    matcher = _Matcher(va, vb, la, lb)
    matcher.run()
    return matcher.a2b, matcher.b2a


class _Matcher:
    def __init__(self, va: GraphView, vb: GraphView, la: Labels, lb: Labels) -> None:
        self.va, self.vb, self.la, self.lb = va, vb, la, lb
        self.l0a, self.l0b = la.tiers[0], lb.tiers[0]
        self.a2b = [-1] * va.size
        self.b2a = [-1] * vb.size
        self.open_a = set(range(va.size))  # the unpaired nodes
        self.open_b = set(range(vb.size))
        self.new: List[int] = []
        self.reach = False  # whether propagation looks through inserted and deleted nodes
        self.weak: List[Tuple[int, int, int, int]] = []  # slot pairs without evidence, a heap
        self.settled = {False: -1, True: -1}  # pair counts at which propagation reached a fixpoint
        self.residual_done: Dict[int, int] = {}  # pair counts at which each residual tier ran
        self.sequence = 0
        self.deferred: List[Tuple[List[int], List[int]]] = []

    # -- the phases ---------------------------------------------------------------------------

    def run(self) -> None:
        self.anchor()
        self.exact()
        self.settle()
        for tier in (3, 2, 1, 0):
            self.residual(tier)
            self.settle()
        self.bottom_up()
        self.settle()
        for strict in (True, False):
            self.resolve_deferred(strict)
            self.settle()
            for tier in (1, 0):
                self.residual(tier)
                self.settle()
        self.swap_twins()
        self.pair_ops()

    def pair(self, a: int, b: int) -> bool:
        if self.a2b[a] >= 0 or self.b2a[b] >= 0 or self.l0a[a] != self.l0b[b]:
            return False
        self.a2b[a] = b
        self.b2a[b] = a
        self.open_a.discard(a)
        self.open_b.discard(b)
        self.new.append(a)
        return True

    def anchor(self) -> None:
        va, vb = self.va, self.vb
        for name, fa in va.functions.items():
            fb = vb.functions.get(name)
            if fb is not None and self.pair(fa, fb):
                self.pair_params(fa, fb)
        if va.root is not None and vb.root is not None and self.pair(va.root, vb.root):
            self.pair_params(va.root, vb.root)

    def pair_params(self, fa: int, fb: int) -> None:
        va, vb = self.va, self.vb
        if va.kind[fa] != "Function" or vb.kind[fb] != "Function":
            return
        pa, pb = va.refs[fa][1:], vb.refs[fb][1:]
        by_name_a = _unique_by(pa, lambda r: va.nodes[r].get("name"))
        by_name_b = _unique_by(pb, lambda r: vb.nodes[r].get("name"))
        for name, a in by_name_a.items():
            b = by_name_b.get(name)
            if b is not None:
                self.pair(a, b)
        for a, b in zip(pa, pb):
            self.pair(a, b)

    def exact(self) -> None:
        """Identical sub-graphs whose signature is unique on both sides, tallest first."""
        sig_a, sig_b = self.la.signature, self.lb.signature
        groups_a: Dict[int, List[int]] = {}
        for a in range(self.va.size):
            if self.a2b[a] < 0:
                groups_a.setdefault(sig_a[a], []).append(a)
        groups_b: Dict[int, List[int]] = {}
        for b in range(self.vb.size):
            if self.b2a[b] < 0:
                groups_b.setdefault(sig_b[b], []).append(b)
        height = self.va.height
        common = [(-height[members[0]], members[0], sig) for sig, members in groups_a.items() if sig in groups_b]
        common.sort()
        for _, _, sig in common:
            members_a = [a for a in groups_a[sig] if self.a2b[a] < 0]
            members_b = [b for b in groups_b[sig] if self.b2a[b] < 0]
            if len(members_a) == 1 and len(members_b) == 1:
                self.pair_subgraph(members_a[0], members_b[0])
            elif members_a and members_b:
                self.deferred.append((members_a, members_b))

    def pair_subgraph(self, a: int, b: int) -> None:
        """Pair two nodes of equal signature and, below them, their inputs position by position."""
        va, vb = self.va, self.vb
        stack = [(a, b)]
        while stack:
            x, y = stack.pop()
            if not self.pair(x, y):
                continue
            stack.extend(zip(va.inputs[x], vb.inputs[y]))
            if va.kind[x] == "Function" and x in va.inlined and y in vb.inlined:
                stack.extend(zip(va.refs[x][1:], vb.refs[y][1:]))

    def settle(self) -> None:
        """Propagate from the new pairs to a fixpoint, re-seeding from every pair next to an
        unpaired node; then again, looking through inserted and deleted nodes. Looking through
        waits for plain propagation: a node deleted below and one inserted above look alike
        until the nodes around them are paired."""
        for reach in (False, True):
            self.reach = reach
            self.propagate()
            for _ in range(_ROUNDS):
                count = self.paired_count()
                if self.settled[reach] == count:
                    break  # the frontier was propagated from this very state already
                self.new = self.frontier()
                self.propagate()
                if self.paired_count() == count:
                    self.settled[reach] = count
                    break
        self.reach = False

    def frontier(self) -> List[int]:
        """Paired nodes (before side) next to an unpaired node on either side."""
        va, vb, a2b, b2a = self.va, self.vb, self.a2b, self.b2a
        seeds = set()
        for a in self.open_a:
            seeds.update(x for x in va.inputs[a] if a2b[x] >= 0)
            seeds.update(u for u, _ in va.users[a] if a2b[u] >= 0)
        for b in self.open_b:
            seeds.update(b2a[y] for y in vb.inputs[b] if b2a[y] >= 0)
            seeds.update(b2a[u] for u, _ in vb.users[b] if b2a[u] >= 0)
        return sorted(seeds)

    def paired_count(self) -> int:
        return self.va.size - len(self.open_a)

    def propagate(self) -> None:
        """Pair neighbours of the new pairs; when none are left, try the queued slot pairs, best
        first, each followed by what it implies."""
        while True:
            while self.new:
                batch, self.new = self.new, []
                for a in batch:
                    b = self.a2b[a]
                    self.match_inputs(a, b)
                    self.match_users(a, b)
            while self.weak and not self.new:
                _, _, x, y = heapq.heappop(self.weak)
                if self.a2b[x] < 0 and self.b2a[y] < 0 and not self.better_elsewhere(x, y):
                    self.pair(x, y)
            if not self.new:
                return

    # -- propagation along inputs --------------------------------------------------------------

    def match_inputs(self, a: int, b: int) -> None:
        va, vb, a2b, b2a = self.va, self.vb, self.a2b, self.b2a
        xs, ys = va.inputs[a], vb.inputs[b]
        if len(xs) == 1 and len(ys) == 1 and (a2b[xs[0]] >= 0 or b2a[ys[0]] >= 0):
            return  # the common case: a unary node whose input is paired already
        pairs: Sequence[Tuple[int, int]]
        if len(xs) == len(ys):
            pairs = zip(xs, ys)  # type: ignore[assignment]  # the frozen old engine, kept as it was
        else:
            pairs = self.align(xs, ys)
        if va.kind[a] == "Function":
            pairs = list(pairs) + list(zip(va.refs[a][1:], vb.refs[b][1:]))
        l0a, l0b = self.l0a, self.l0b
        for x, y in pairs:
            if a2b[x] >= 0 or b2a[y] >= 0:
                continue
            if l0a[x] != l0b[y]:
                if self.reach:
                    self.look_through(x, y)
            elif self.evidence(x, y):
                if not self.better_elsewhere(x, y):
                    self.pair(x, y)
            else:
                self.propose(x, y)

    def propose(self, x: int, y: int) -> None:
        """Queue a pair that only shares a slot: the more alike they look (the operators of
        their inputs, their height, their type), the sooner it is tried."""
        va, vb, l0a, l0b = self.va, self.vb, self.l0a, self.l0b
        level = (2 * ([l0a[i] for i in va.inputs[x]] == [l0b[j] for j in vb.inputs[y]])
                 + (va.height[x] == vb.height[y]) + (self.la.tiers[2][x] == self.lb.tiers[2][y]))
        self.sequence += 1
        heapq.heappush(self.weak, (-level, self.sequence, x, y))

    def better_elsewhere(self, a: int, b: int) -> bool:
        """Whether ``a`` or ``b`` has an unpaired candidate (same label, reading a partner of one
        of its inputs, or at the same input of a partner of one of its users) that agrees with
        it on as many paired inputs and users as they agree with each other, or more. Equally
        good candidates make a group for later, when more of their neighbours are paired (or,
        at the end, for the tie-break)."""
        va, vb, a2b, b2a, l0a, l0b = self.va, self.vb, self.a2b, self.b2a, self.l0a, self.l0b
        ins_a = va.inputs[a]
        agree = self.agreement(a, b)
        label = l0a[a]
        rivals_a: List[int] = []
        rivals_b: List[int] = []
        for x in ins_a:
            y = a2b[x]
            if y < 0 or len(vb.users[y]) > _MAX_GROUP:
                continue
            for v, _ in vb.users[y]:
                if v != b and b2a[v] < 0 and l0b[v] == label and v not in rivals_b:
                    score = self.agreement(a, v)
                    if score > agree:
                        return True
                    if score == agree:
                        rivals_b.append(v)
        for y in vb.inputs[b]:
            x = b2a[y]
            if x < 0 or len(va.users[x]) > _MAX_GROUP:
                continue
            for u, _ in va.users[x]:
                if u != a and a2b[u] < 0 and l0a[u] == label and u not in rivals_a:
                    score = self.agreement(u, b)
                    if score > agree:
                        return True
                    if score == agree:
                        rivals_a.append(u)
        # ... and the nodes at the same input of the partners of their users
        for u, p in va.users[a]:
            v = a2b[u]
            if v >= 0 and p < len(vb.inputs[v]):
                w = vb.inputs[v][p]
                if w != b and b2a[w] < 0 and l0b[w] == label and w not in rivals_b:
                    score = self.agreement(a, w)
                    if score > agree:
                        return True
                    if score == agree:
                        rivals_b.append(w)
        for v, q in vb.users[b]:
            u = b2a[v]
            if u >= 0 and q < len(va.inputs[u]):
                w = va.inputs[u][q]
                if w != a and a2b[w] < 0 and l0a[w] == label and w not in rivals_a:
                    score = self.agreement(w, b)
                    if score > agree:
                        return True
                    if score == agree:
                        rivals_a.append(w)
        if rivals_a or rivals_b:
            self.deferred.append(([a] + rivals_a, [b] + rivals_b))
            return True
        return False

    def agreement(self, a: int, b: int) -> int:
        """Paired inputs and users that ``a`` and ``b`` have in common."""
        return self.agreeing_inputs(a, b) + self.agreeing_users(a, b)

    def align(self, xs: Sequence[int], ys: Sequence[int]) -> List[Tuple[int, int]]:
        """Pairs of an order-preserving alignment of two input lists (longest common subsequence)."""
        if len(xs) > _MAX_ALIGN or len(ys) > _MAX_ALIGN:
            return list(zip(xs, ys))
        a2b, b2a, l0a, l0b = self.a2b, self.b2a, self.l0a, self.l0b

        def same(x: int, y: int) -> bool:
            if a2b[x] >= 0:
                return a2b[x] == y
            return b2a[y] < 0 and l0a[x] == l0b[y]

        n, m = len(xs), len(ys)
        table = [[0] * (m + 1) for _ in range(n + 1)]
        for i in range(n - 1, -1, -1):
            row, below = table[i], table[i + 1]
            for j in range(m - 1, -1, -1):
                row[j] = below[j + 1] + 1 if same(xs[i], ys[j]) else max(below[j], row[j + 1])
        out = []
        i = j = 0
        while i < n and j < m:
            if same(xs[i], ys[j]):
                out.append((xs[i], ys[j]))
                i += 1
                j += 1
            elif table[i + 1][j] >= table[i][j + 1]:
                i += 1
            else:
                j += 1
        return out

    def look_through(self, x: int, y: int) -> None:
        """``x`` and ``y`` take the same input slot but differ in kind or operator: one side may
        have a node inserted (a ``layout_transform``) or deleted there. Pair ``x`` with a node
        below ``y`` (or ``y`` with one below ``x``). Right below one inserted node, a node that
        has inputs needs no more evidence; deeper, or a leaf, needs equal signatures or an
        input already paired with the corresponding input. When both readings are possible,
        the one with evidence wins, and neither if both have it."""
        under_y = self.below(self.vb, y, self.l0b, self.b2a, self.l0a[x], lambda c, d: self.plausible(x, c, d))
        under_x = self.below(self.va, x, self.l0a, self.a2b, self.l0b[y], lambda c, d: self.plausible(c, y, d))
        if under_y is not None and under_x is not None:
            strong_y, strong_x = self.evidence(x, under_y), self.evidence(under_x, y)
            if strong_y == strong_x:
                return
            under_x, under_y = (None, under_y) if strong_y else (under_x, None)
        if under_y is not None:
            self.pair(x, under_y)
        elif under_x is not None:
            self.pair(under_x, y)

    @staticmethod
    def below(view: GraphView, start: int, labels: Sequence[int], partner: Sequence[int], label: int,
              accept: Callable[[int, int], bool]) -> Optional[int]:
        level = [start]
        for depth in range(1, _LOOK_THROUGH + 1):
            nxt = []
            for r in level:
                for i in view.inputs[r]:
                    if partner[i] >= 0:
                        continue
                    if labels[i] == label and accept(i, depth):
                        return i
                    nxt.append(i)
            level = nxt
        return None

    def plausible(self, a: int, b: int, depth: int) -> bool:
        if self.better_elsewhere(a, b):  # (twins reading the same input are no evidence)
            return False
        return self.evidence(a, b) or (depth == 1 and bool(self.va.inputs[a]))

    def evidence(self, a: int, b: int) -> bool:
        return self.la.signature[a] == self.lb.signature[b] or self.agreeing_inputs(a, b) > 0

    def related(self, a: int, b: int) -> bool:
        """Evidence beyond labels: equal signatures, or a paired input or user in common."""
        return (self.la.signature[a] == self.lb.signature[b] or self.agreeing_inputs(a, b) > 0
                or self.agreeing_users(a, b) > 0)

    def agreeing_inputs(self, a: int, b: int) -> int:
        a2b = self.a2b
        xs, ys = self.va.inputs[a], self.vb.inputs[b]
        count = 0
        if len(xs) == len(ys):
            for x, y in zip(xs, ys):
                if a2b[x] == y:
                    count += 1
            return count
        yset = set(ys)
        for x in xs:
            if a2b[x] in yset:
                count += 1
        return count

    # -- propagation along users ---------------------------------------------------------------

    def match_users(self, a: int, b: int) -> None:
        va, vb, a2b, b2a = self.va, self.vb, self.a2b, self.b2a
        users = va.users[a]
        l0a, l0b = self.l0a, self.l0b
        if len(users) == 1:  # the common case, kept cheap
            u, p = users[0]
            if a2b[u] >= 0:
                return
            theirs = vb.users[b]
            if len(theirs) == 1:
                v, q = theirs[0]
                if b2a[v] >= 0:
                    return
                if l0a[u] == l0b[v] and (p == q or va.kind[u] in VARIADIC_KINDS):
                    self.pair_user(u, v)
                elif self.reach:
                    self.look_above(users, theirs)
                return
            ua = users
        else:
            ua = [(u, p) for u, p in users if a2b[u] < 0]
            if not ua:
                return
        ub = [(u, p) for u, p in vb.users[b] if b2a[u] < 0]
        if not ub:
            return
        if len(ua) == 1 and len(ub) == 1:  # without the grouping
            (u, p), (v, q) = ua[0], ub[0]
            if l0a[u] == l0b[v] and (p == q or va.kind[u] in VARIADIC_KINDS):
                self.pair_user(u, v)
            elif self.reach:
                self.look_above(ua, ub)
            return
        groups: Dict[Tuple[int, int], Tuple[List[int], List[int]]] = {}
        for u, p in ua:
            key = (l0a[u], -1 if va.kind[u] in VARIADIC_KINDS else p)
            members = groups.setdefault(key, ([], []))[0]
            if u not in members:
                members.append(u)
        for v, q in ub:
            key = (l0b[v], -1 if vb.kind[v] in VARIADIC_KINDS else q)
            group = groups.get(key)
            if group is not None and v not in group[1]:
                group[1].append(v)
        for us, vs in groups.values():
            if not vs:
                continue
            if len(us) == 1 and len(vs) == 1:
                self.pair_user(us[0], vs[0])
            elif len(us) * len(vs) <= _MAX_GROUP * _MAX_GROUP // 16:
                self.pair_best(us, vs, strict=True)
        if self.reach:
            self.look_above(ua, ub)

    def pair_user(self, u: int, v: int) -> None:
        """Two users, the only candidates for each other, of one pair at the same input. If one
        of their other inputs contradicts them (paired elsewhere, or of another operator), the
        pair waits in the queue: a rewired input elsewhere can make another user look alike
        here until more around them is paired."""
        a2b, b2a, l0a, l0b = self.a2b, self.b2a, self.l0a, self.l0b
        xs, ys = self.va.inputs[u], self.vb.inputs[v]
        if len(xs) == len(ys) and all(a2b[x] == y or (a2b[x] < 0 and b2a[y] < 0 and l0a[x] == l0b[y])
                                      for x, y in zip(xs, ys)):
            self.pair(u, v)
        else:
            self.propose(u, v)

    def look_above(self, ua: List[Tuple[int, int]], ub: List[Tuple[int, int]]) -> None:
        """Users still unpaired may sit one inserted (deleted) single-input node higher up.

        Not when the node taken as inserted has a counterpart among the other side's users of
        the user: then that user was deleted, which one edit explains, and looking through
        from above finds it."""
        va, vb, a2b, b2a, l0a, l0b = self.va, self.vb, self.a2b, self.b2a, self.l0a, self.l0b
        for u, p in ua:
            if a2b[u] >= 0:
                continue
            for v, _ in ub:
                if b2a[v] >= 0 or l0b[v] == l0a[u] or len(vb.inputs[v]) != 1:
                    continue
                if any(a2b[t] < 0 and l0a[t] == l0b[v] for t, _ in va.users[u]):
                    continue
                for w, q in vb.users[v]:
                    if b2a[w] < 0 and l0b[w] == l0a[u] and q == p and not self.better_elsewhere(u, w):
                        self.pair(u, w)
                        break
                if a2b[u] >= 0:
                    break
        for v, q in ub:
            if b2a[v] >= 0:
                continue
            for u, _ in ua:
                if a2b[u] >= 0 or l0a[u] == l0b[v] or len(va.inputs[u]) != 1:
                    continue
                if any(b2a[t] < 0 and l0b[t] == l0a[u] for t, _ in vb.users[v]):
                    continue
                for w, p in va.users[u]:
                    if a2b[w] < 0 and l0a[w] == l0b[v] and p == q and not self.better_elsewhere(w, v):
                        self.pair(w, v)
                        break
                if b2a[v] >= 0:
                    break

    def score(self, a: int, b: int) -> Tuple[int, int, int, int, int]:
        la, lb = self.la, self.lb
        return (int(la.signature[a] == lb.signature[b]), self.agreement(a, b),
                int(self.va.height[a] == self.vb.height[b]),
                int(la.tiers[2][a] == lb.tiers[2][b]), int(la.tiers[1][a] == lb.tiers[1][b]))

    def agreeing_users(self, a: int, b: int) -> int:
        a2b = self.a2b
        users_b = set(self.vb.users[b])
        return sum(1 for u, p in self.va.users[a] if a2b[u] >= 0 and (a2b[u], p) in users_b)

    def pair_best(self, us: List[int], vs: List[int], strict: bool) -> None:
        """Pair the candidates of one group by score (equal signatures, then paired neighbours
        that agree, then equal heights, types and attributes). A pair must be strictly the best for both
        of its nodes (``strict``), or else the first best in canonical order; nodes that share
        nothing but their label stay unpaired."""
        us = [u for u in us if self.a2b[u] < 0]
        vs = [v for v in vs if self.b2a[v] < 0]
        if not us or not vs:
            return
        scores = {(u, v): self.score(u, v) for u in us for v in vs if self.l0a[u] == self.l0b[v]}
        if not scores:
            return
        ranked = sorted(scores, key=lambda uv: (tuple(-s for s in scores[uv]), uv))
        left = False
        for u, v in ranked:
            if self.a2b[u] >= 0 or self.b2a[v] >= 0:
                continue
            if not (scores[(u, v)][0] or scores[(u, v)][1]):
                continue  # nothing but the label in common: leave both unpaired
            if strict:
                s = scores[(u, v)]
                rivals = [scores[(u, w)] for w in vs if w != v and self.b2a[w] < 0 and (u, w) in scores]
                rivals += [scores[(w, v)] for w in us if w != u and self.a2b[w] < 0 and (w, v) in scores]
                if any(r >= s for r in rivals):
                    left = True
                    continue
            self.pair(u, v)
        if left:
            self.deferred.append((us, vs))

    # -- residual signatures, deferred groups, twins, ops --------------------------------------

    def residual(self, tier: int) -> None:
        count = self.paired_count()
        if self.residual_done.get(tier) == count:
            return  # nothing was paired since this tier's groups were last looked at
        self.residual_done[tier] = count
        table: Dict[object, int] = {}
        ra = residual_signatures(self.va, self.la.tiers[tier], self.a2b, True, table, self.open_a)
        rb = residual_signatures(self.vb, self.lb.tiers[tier], self.b2a, False, table, self.open_b)
        kind_a, kind_b = self.va.kind, self.vb.kind
        groups_a: Dict[int, List[int]] = {}
        for a, sig in ra.items():
            if kind_a[a] != "Op":
                groups_a.setdefault(sig, []).append(a)
        groups_b: Dict[int, List[int]] = {}
        for b, sig in rb.items():
            if kind_b[b] != "Op":
                groups_b.setdefault(sig, []).append(b)
        height = self.va.height
        common = sorted((-height[m[0]], m[0], sig) for sig, m in groups_a.items() if sig in groups_b)
        for _, _, sig in common:
            members_a = [a for a in groups_a[sig] if self.a2b[a] < 0]
            members_b = [b for b in groups_b[sig] if self.b2a[b] < 0]
            if len(members_a) == 1 and len(members_b) == 1 and (tier == 3 or self.related(members_a[0], members_b[0])):
                self.pair_residual(members_a[0], members_b[0], ra, rb)
            elif members_a and members_b:
                self.deferred.append((members_a, members_b))

    def pair_residual(self, a: int, b: int, ra: Dict[int, int], rb: Dict[int, int]) -> None:
        stack = [(a, b)]
        while stack:
            x, y = stack.pop()
            if not self.pair(x, y):
                continue
            for i, j in zip(self.va.inputs[x], self.vb.inputs[y]):
                if self.a2b[i] < 0 and self.b2a[j] < 0 and ra.get(i) == rb.get(j):
                    stack.append((i, j))

    def bottom_up(self) -> None:
        """Pair a node whose neighbours all changed by what it computes from: the paired nodes
        below it (GumTree's bottom-up phase, in hlo_diff's limited form). A ``nn.relu`` between
        two batch norms that SimplifyInference expanded has no paired input or user, but the
        convolution and the four statistics below it are paired on both sides."""
        va, vb, a2b, b2a, l0a = self.va, self.vb, self.a2b, self.b2a, self.l0a
        budget = _BOTTOM_UP_BUDGET * (va.size + vb.size)
        for a in sorted(self.open_a, key=va.position.__getitem__):  # inputs before users
            if a2b[a] >= 0 or not va.inputs[a] or budget <= 0:
                continue
            below = {a2b[x] for x in _paired_below(va, a, a2b)}
            budget -= _BELOW
            if len(below) < 2:
                continue
            candidates = _unpaired_above(vb, below, b2a, self.l0b, l0a[a])
            budget -= _ABOVE
            scored = []
            for c in candidates:
                theirs = _paired_below(vb, c, b2a)
                scored.append((2 * len(below & theirs) / (len(below) + len(theirs)), c))
            budget -= _BELOW * len(candidates)
            scored.sort(key=lambda sc: (-sc[0], vb.position[sc[1]]))
            if scored and scored[0][0] >= _MIN_DICE and (len(scored) == 1 or scored[1][0] < scored[0][0]):
                self.pair(a, scored[0][1])

    def resolve_deferred(self, strict: bool) -> None:
        deferred, self.deferred = self.deferred, []
        seen = set()
        for us, vs in deferred:
            key = (tuple(us), tuple(vs))
            if key in seen:
                continue
            seen.add(key)
            if strict:
                self.pair_best(us, vs, strict=True)
            else:
                self.pair_in_order(us, vs)
        if not strict:
            self.deferred = []

    def pair_in_order(self, us: List[int], vs: List[int]) -> None:
        """Break the ties of a group in canonical order (a group too large to score: by position)."""
        us = [u for u in us if self.a2b[u] < 0]
        vs = [v for v in vs if self.b2a[v] < 0]
        if len(us) * len(vs) <= _MAX_GROUP * _MAX_GROUP:
            self.pair_best(us, vs, strict=False)
        else:
            for u, v in zip(us, vs):
                if self.related(u, v):
                    self.pair(u, v)

    def swap_twins(self) -> None:
        """Give a pair to the unpaired twin (same signature) that more of its users agree with."""
        for side_a in (True, False):
            sig = self.la.signature if side_a else self.lb.signature
            mine = self.a2b if side_a else self.b2a
            view = self.va if side_a else self.vb
            paired_by_sig: Dict[int, List[int]] = {}
            unpaired = [r for r in range(view.size) if mine[r] < 0 and view.kind[r] != "Op"]
            if not unpaired:
                continue
            wanted = {sig[r] for r in unpaired}
            for r in range(view.size):
                if mine[r] >= 0 and sig[r] in wanted:
                    paired_by_sig.setdefault(sig[r], []).append(r)
            for r in unpaired:
                if mine[r] >= 0:
                    continue
                for twin in paired_by_sig.get(sig[r], ()):
                    if mine[twin] < 0:
                        continue
                    partner = mine[twin]
                    if side_a:
                        gain = self.agreeing_users(r, partner) - self.agreeing_users(twin, partner)
                    else:
                        gain = self.agreeing_users(partner, r) - self.agreeing_users(partner, twin)
                    if gain > 0:
                        self.move(twin, r, side_a)
                        break

    def move(self, old: int, new: int, side_a: bool) -> None:
        """Move the pairs of ``old``'s sub-graph to the corresponding nodes of ``new``'s."""
        view = self.va if side_a else self.vb
        mine, theirs = (self.a2b, self.b2a) if side_a else (self.b2a, self.a2b)
        stack = [(old, new)]
        while stack:
            x, y = stack.pop()
            if x == y or mine[x] < 0 or mine[y] >= 0:
                continue
            partner = mine[x]
            mine[x] = -1
            mine[y] = partner
            theirs[partner] = y
            opened = self.open_a if side_a else self.open_b
            opened.add(x)
            opened.discard(y)
            stack.extend(zip(view.inputs[x], view.inputs[y]))

    def pair_ops(self) -> None:
        """Pair Op nodes by the calls that use them, then identical ones left over in order."""
        va, vb, a2b = self.va, self.vb, self.a2b
        votes: Dict[Tuple[int, int], int] = {}
        for a in range(va.size):
            op = va.op_of[a]
            if op >= 0 and a2b[a] >= 0:
                other = vb.op_of[a2b[a]]
                if other >= 0:
                    votes[(op, other)] = votes.get((op, other), 0) + 1
        for (oa, ob) in sorted(votes, key=lambda k: (-votes[k], k)):
            self.pair(oa, ob)
        left_a: Dict[int, List[int]] = {}
        for a in range(va.size):
            if va.kind[a] == "Op" and a2b[a] < 0:
                left_a.setdefault(self.la.tiers[3][a], []).append(a)
        for b in range(vb.size):
            if vb.kind[b] == "Op" and self.b2a[b] < 0:
                members = left_a.get(self.lb.tiers[3][b])
                if members:
                    self.pair(members.pop(0), b)


def _paired_below(view: GraphView, start: int, partner: Sequence[int]) -> set:
    """The paired nodes first met going down from ``start`` through unpaired ones (bounded)."""
    found = set()
    seen = {start}
    level = [start]
    for _ in range(_DEPTH):
        nxt = []
        for r in level:
            for i in view.inputs[r]:
                if i in seen:
                    continue
                seen.add(i)
                if partner[i] >= 0:
                    found.add(i)
                elif len(seen) < _BELOW:
                    nxt.append(i)
        level = nxt
    return found


def _unpaired_above(view: GraphView, starts: set, partner: Sequence[int], labels: Sequence[int],
                    label: int) -> List[int]:
    """Unpaired nodes of ``label`` reached going up from ``starts`` through unpaired nodes (bounded)."""
    found = []
    seen = set(starts)
    level = sorted(starts)
    for _ in range(_DEPTH):
        nxt = []
        for r in level:
            for u, _ in view.users[r]:
                if u in seen or partner[u] >= 0:
                    continue
                seen.add(u)
                if labels[u] == label:
                    found.append(u)
                if len(seen) < _ABOVE:
                    nxt.append(u)
        level = nxt
    return found


def _unique_by(ranks: Sequence[int], key) -> Dict[object, int]:
    seen: Dict[object, List[int]] = {}
    for r in ranks:
        seen.setdefault(key(r), []).append(r)
    return {k: v[0] for k, v in seen.items() if len(v) == 1 and k is not None}
