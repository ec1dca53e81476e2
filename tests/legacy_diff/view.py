"""A RelayViz document as the matcher sees it: nodes in a canonical order, with inputs and users.

Node ids mean nothing across two snapshots, so the view renumbers every node by a walk that
depends only on the graph: post-order from the roots (global functions by name, then the
``root`` expression), references in field order. Every later step iterates in this order, so
the diff does not depend on how either document numbered its nodes. ``doc_id`` maps back.

*Inputs* are what a node computes from: the references of its node, except that a call's
``Op`` is a label (the call carries its name and attributes) rather than an input. A
function called from exactly one place is *inlined* for matching: its parameters stand for
the call's arguments and the call stands for the function's body (a ``TupleGetItem`` of a
tuple body stands for the tuple's field). So the ``nn.relu`` that FuseOps moved into a
primitive function still takes the ``add`` before it as input, and a consumer of the fused
call still reads the ``nn.relu``; what FuseOps added is the function, its call and its
parameters, and nothing is rewired. The literal references are kept (``refs``) for the
edit script and for the hunks.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import orjson

from relayviz_instrument.format import reference_field_names, references

__all__ = ["GraphView", "VARIADIC_KINDS"]

#: Kinds whose inputs are a list whose length varies: aligned by content, not position.
VARIADIC_KINDS = frozenset({"Tuple", "Function", "PatternTuple", "PatternConstructor", "Match"})


class GraphView:
    """One document, renumbered canonically, with inputs, users and inlined functions.

    Every per-node list is indexed by the canonical number (the *rank*); ``doc_id[rank]`` is
    the node's id in the document and ``rank_of[id]`` the reverse.
    """

    def __init__(self, doc: Mapping[str, Any]) -> None:
        raw_nodes: Sequence[Dict[str, Any]] = doc["nodes"]
        raw_refs = [references(node) for node in raw_nodes]
        functions = doc.get("functions") or {}
        starts = [functions[name] for name in sorted(functions)]
        if doc.get("root") is not None:
            starts.append(doc["root"])
        order = _canonical_order(raw_nodes, raw_refs, starts)
        self.size = len(order)
        self.doc_id: List[int] = order
        if order == list(range(self.size)):
            # Documents written by this package are numbered this way already.
            rank_of = order
            self.nodes: List[Dict[str, Any]] = list(raw_nodes)
            self.refs: List[List[int]] = raw_refs
        else:
            rank_of = [0] * len(order)
            for rank, nid in enumerate(order):
                rank_of[nid] = rank
            self.nodes = [raw_nodes[i] for i in order]
            self.refs = [[rank_of[t] for t in raw_refs[i]] for i in order]
        self.rank_of: List[int] = rank_of
        self.kind: List[str] = [node.get("node_kind") for node in self.nodes]  # type: ignore[misc]  # the frozen old engine, kept as it was
        self.functions: Dict[str, int] = {name: rank_of[functions[name]] for name in sorted(functions)}
        self.root: Optional[int] = rank_of[doc["root"]] if doc.get("root") is not None else None
        roots = set(self.functions.values())
        if self.root is not None:
            roots.add(self.root)
        self.roots = frozenset(roots)

        #: For a call of an Op, the Op node's rank; -1 for every other node.
        self.op_of: List[int] = [-1] * self.size
        kind, refs, op_of = self.kind, self.refs, self.op_of
        for r, k in enumerate(kind):
            if k == "Call":
                callee = refs[r][0]
                if kind[callee] == "Op":
                    op_of[r] = callee

        #: Inlined functions: function rank -> its only call's rank.
        self.inlined: Dict[int, int] = {}
        self.canon: List[int] = list(range(self.size))
        self._inline()
        self.inputs, self.users, self.topo = self._inputs()
        if self.topo is None:  # inlining made a cycle (a malformed program): match literally
            self.inlined = {}
            self.canon = list(range(self.size))
            self.inputs, self.users, self.topo = self._inputs()
            assert self.topo is not None, "a validated document has no reference cycle"
        #: Each node's place in ``topo``: inputs come before users, through inlined functions too.
        if self.inlined:
            self.position = [0] * self.size
            for i, r in enumerate(self.topo):
                self.position[r] = i
        else:
            self.position = self.topo  # the identity: the canonical order is topological
        self.height = [0] * self.size
        height, inputs = self.height, self.inputs
        for r in self.topo:
            ins = inputs[r]
            if len(ins) == 1:
                height[r] = 1 + height[ins[0]]
            elif ins:
                height[r] = 1 + max([height[i] for i in ins])

    # -- inlining -----------------------------------------------------------------------------

    def _inline(self) -> None:
        kind, refs, nodes = self.kind, self.refs, self.nodes
        if sum(1 for k in kind if k == "Function") <= len(self.roots):
            return  # no function but the global ones
        uses = [0] * self.size
        for r in range(self.size):
            for t in refs[r]:
                uses[t] += 1
        alias: Dict[int, int] = {}
        for c in range(self.size):
            if kind[c] != "Call" or not refs[c]:
                continue
            f = refs[c][0]
            if kind[f] != "Function" or uses[f] != 1 or f in self.roots:
                continue
            body, params, args = refs[f][0], refs[f][1:], refs[c][1:]
            if len(params) != len(args) or any(p in alias or p == body for p in params):
                continue
            self.inlined[f] = c
            alias[c] = body
            alias.update(zip(params, args))
        if not alias:
            return
        canon = self._resolve(alias)
        if canon is None:
            self.inlined = {}
            return
        bodies = {refs[f][0] for f in self.inlined}
        extra = {}
        for t in range(self.size):
            if kind[t] == "TupleGetItem" and refs[t]:
                tup = canon[refs[t][0]]
                index = nodes[t].get("index")
                if (tup in bodies and kind[tup] == "Tuple" and isinstance(index, int)
                        and 0 <= index < len(refs[tup])):
                    extra[t] = refs[tup][index]
        if extra:
            alias.update(extra)
            canon = self._resolve(alias)
            if canon is None:
                self.inlined = {}
                return
        self.canon = canon

    def _resolve(self, alias: Dict[int, int]) -> Optional[List[int]]:
        canon = list(range(self.size))
        done = bytearray(self.size)
        for start in alias:
            if done[start]:
                continue
            path = []
            cur = start
            while cur in alias and not done[cur]:
                if len(path) > self.size:
                    return None  # an alias cycle
                path.append(cur)
                cur = alias[cur]
            target = canon[cur]
            for p in path:
                canon[p] = target
                done[p] = 1
        return canon

    # -- inputs, users, topological order -----------------------------------------------------

    def _inputs(self) -> Tuple[List[List[int]], List[List[Tuple[int, int]]], Optional[List[int]]]:
        canon, refs, op_of = self.canon, self.refs, self.op_of
        if self.inlined:
            inputs = [[canon[t] for t in (refs[r][1:] if op_of[r] >= 0 else refs[r])] for r in range(self.size)]
        else:  # inputs are the references themselves (shared, never modified), less a call's Op
            inputs = [refs[r][1:] if op_of[r] >= 0 else refs[r] for r in range(self.size)]
        users: List[List[Tuple[int, int]]] = [[] for _ in range(self.size)]
        for r, ins in enumerate(inputs):
            if len(ins) == 1:
                users[ins[0]].append((r, 0))
            else:
                for pos, t in enumerate(ins):
                    users[t].append((r, pos))
        if not self.inlined:
            return inputs, users, list(range(self.size))  # the canonical order is topological
        return inputs, users, _topological(inputs)

    # -- descriptions -------------------------------------------------------------------------

    def op_name(self, r: int) -> Optional[str]:
        """The operator name of a call of an Op, else ``None``."""
        op = self.op_of[r]
        return self.nodes[op].get("name") if op >= 0 else None

    def scope(self, f: int) -> List[int]:
        """The nodes of function ``f``'s body: reachable from it without leaving through a parameter."""
        params = set(self.refs[f][1:])
        seen = {f}
        stack = [self.refs[f][0]]
        out = []
        while stack:
            r = stack.pop()
            if r in seen or r in params:
                continue
            seen.add(r)
            out.append(r)
            stack.extend(self.refs[r])
        out.sort()
        return out


def _canonical_order(nodes: Sequence[Mapping[str, Any]], refs: List[List[int]], starts: List[int]) -> List[int]:
    """Post-order from ``starts``, references in field order; then from every node nobody uses."""
    n = len(nodes)
    seen = bytearray(n)
    order: List[int] = []

    def walk(start: int) -> None:
        if seen[start]:
            return
        seen[start] = 1
        stack = [(start, iter(refs[start]))]
        while stack:
            node, it = stack[-1]
            for child in it:
                if not seen[child]:
                    seen[child] = 1
                    below = refs[child]
                    if not below:  # a leaf (Var, Op, Const) is done at once
                        order.append(child)
                        continue
                    stack.append((child, iter(below)))
                    break
            else:
                stack.pop()
                order.append(node)

    for s in starts:
        walk(s)
    if len(order) < n:
        # Nodes no root reaches. Start from those nobody refers to, in an order given by
        # their content, so that renumbering a document does not reorder them.
        used = bytearray(n)
        for r in refs:
            for t in r:
                used[t] = 1
        tops = [i for i in range(n) if not seen[i] and not used[i]]
        tops.sort(key=lambda i: (orjson.dumps(_without_refs(nodes[i]), option=orjson.OPT_SORT_KEYS), i))
        for s in tops:
            walk(s)
    return order


def _without_refs(node: Mapping[str, Any]) -> Dict[str, Any]:
    names = reference_field_names(node.get("node_kind"))  # type: ignore[arg-type]  # the frozen old engine, kept as it was
    return {k: v for k, v in node.items() if k not in names}


def _topological(inputs: List[List[int]]) -> Optional[List[int]]:
    """Inputs before users (Kahn's algorithm, smallest rank first); ``None`` on a cycle."""
    import heapq

    n = len(inputs)
    pending = [len(ins) for ins in inputs]
    users: List[List[int]] = [[] for _ in range(n)]
    for r, ins in enumerate(inputs):
        for t in ins:
            users[t].append(r)
    ready = [r for r in range(n) if pending[r] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        r = heapq.heappop(ready)
        order.append(r)
        for u in users[r]:
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, u)
    return order if len(order) == n else None
