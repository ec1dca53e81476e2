"""A RelayViz document as the matcher sees it: nodes in a canonical order, with inputs and users.

Node ids mean nothing across two snapshots, so the graph renumbers every node by a walk that
depends only on the graph: post-order from the roots (global functions by name, then the
``root`` expression), references in field order but for a function's parameters, visited
before its body, and a call's Op, visited after its arguments (the order in which the Relay
serializer writes nodes, so that its documents need no renumbering). Every later step
iterates in this order, so the diff does not depend on how either document numbered its
nodes. ``doc_id`` maps back.

*Inputs* are what a node computes from: the references of its node, except that a call's
``Op`` is a label (the call carries its name and attributes) rather than an input. Two
bindings are read through:

* a function called from exactly one place is *inlined*: its parameters stand for the call's
  arguments and the call stands for the function's body (a ``TupleGetItem`` of a tuple body
  stands for the tuple's field). So the ``nn.relu`` that FuseOps moved into a primitive
  function still takes the ``add`` before it as input, and a consumer of the fused call still
  reads the ``nn.relu``; what FuseOps added is the function, its call and its parameters.
  The call may refer to the function node or to a module function by name (a ``GlobalVar``
  callee: Relax's FuseOps, Relay's ``@main`` calling ``@f``) if the name has no other use
  and the call is not inside the function (recursion). A PrimFunc that one Relax
  ``call_tir`` names is inlined too, but the call keeps its arguments as inputs and stands
  for itself: the PrimFunc's statements are its code, not the value's inputs;
* a variable bound by a ``Let`` has the bound value as its one input (``binding``): what the
  variable stands for is what it is bound to, so two variables of one type and name are told
  apart by their binding, and a use that swapped them is a rewired use, not two rewired Lets.

The literal references are kept (``refs``) for the edit script and for the hunks.
"""

from __future__ import annotations

from functools import cached_property
from itertools import chain
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray
import orjson

from ..format import Document, reference_field_names, references
from ..format.irs import PRIMFUNC_CALLS
from ..format.kinds import BINDING_KINDS

__all__ = ["CanonicalGraph", "UserIndex", "VARIADIC_KINDS"]

#: Kinds whose inputs are a list whose length varies: aligned by content, not position.
VARIADIC_KINDS = frozenset({"Tuple", "Function", "PatternTuple", "PatternConstructor", "Match"})


class CanonicalGraph:
    """One document, renumbered canonically, with inputs, users, inlined functions and Let
    bindings.

    Every per-node list is indexed by the canonical number (the *rank*); ``doc_id[rank]`` is
    the node's id in the document and ``rank_of[id]`` the reverse.
    """

    def __init__(self, doc: Document) -> None:
        raw_nodes: Sequence[Dict[str, Any]] = doc["nodes"]
        kinds = [node["node_kind"] for node in raw_nodes]
        raw_refs = [[node["op"], *node["args"]] if k == "Call" else references(node)
                    for node, k in zip(raw_nodes, kinds)]
        functions = doc.get("functions") or {}
        starts = [functions[name] for name in sorted(functions)]
        if doc.get("root") is not None:
            starts.append(doc["root"])
        order = _canonical_order(raw_nodes, raw_refs, kinds, starts)
        self.size = len(order)
        self.doc_id: List[int] = order
        if order == list(range(self.size)):
            # Documents written by this package are numbered this way already.
            rank_of = order
            self.nodes: List[Dict[str, Any]] = list(raw_nodes)
            self.refs: List[List[int]] = raw_refs
            self.kind: List[str] = kinds
        else:
            rank_of = [0] * len(order)
            for rank, nid in enumerate(order):
                rank_of[nid] = rank
            self.nodes = [raw_nodes[i] for i in order]
            self.refs = [[rank_of[t] for t in raw_refs[i]] for i in order]
            self.kind = [kinds[i] for i in order]
        self.rank_of: List[int] = rank_of
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
        #: Let-bound variables: the variable's rank -> the bound value's rank.
        self.binding: Dict[int, int] = self._bindings()
        topo = self._inputs()
        if topo is None and self.binding:  # a recursive let (a function that calls itself)
            self.binding = {}
            topo = self._inputs()
        if topo is None:  # inlining made a cycle (a malformed program): match literally
            self.inlined = {}
            self.canon = list(range(self.size))
            topo = self._inputs()
            assert topo is not None, "a validated document has no reference cycle"
        self.topo: List[int] = topo
        #: Each node's place in ``topo``: inputs come before users, through bindings too.
        if self.inlined or self.binding:
            self.position = [0] * self.size
            for i, r in enumerate(self.topo):
                self.position[r] = i
        else:
            self.position = self.topo  # the identity: the canonical order is topological

    # -- inlining and bindings ----------------------------------------------------------------

    def _inline(self) -> None:
        kind, refs, nodes = self.kind, self.refs, self.nodes
        if "GlobalVar" not in kind and kind.count("Function") <= len(self.roots):
            return  # no function but the global ones, and none called through a name
        uses = [0] * self.size
        for r in range(self.size):
            for t in refs[r]:
                uses[t] += 1
        named: Dict[Any, int] = {}  # uses of each global name, however many nodes spell it
        for r, k in enumerate(kind):
            if k == "GlobalVar":
                name = nodes[r].get("name")
                named[name] = named.get(name, 0) + uses[r]
        alias: Dict[int, int] = {}
        for c in range(self.size):
            if kind[c] != "Call" or not refs[c]:
                continue
            f = self._callee(c, uses, named)
            if f < 0 or f in self.inlined:
                continue
            if kind[f] == "PrimFunc":
                # A kernel: the call stays what computes the value (its inputs are the call's
                # arguments); the statements of the PrimFunc, when written, are its code.
                if refs[f]:
                    self.inlined[f] = c
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
        bodies = {refs[f][0] for f in self.inlined if kind[f] == "Function"}
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

    def _callee(self, c: int, uses: List[int], named: Mapping[Any, int]) -> int:
        """The function call ``c`` alone calls, to be read through; -1 if there is none.

        A call refers to a function directly (Relay's primitive functions), or by its name: a
        ``GlobalVar`` as the callee (a module function) or as the first argument of a Relax
        ``call_tir`` (a PrimFunc). Through a name, the name must have no other use (a second
        call, or a reference that passes the function as a value) and the call must not sit
        in the function itself (recursion)."""
        kind, refs = self.kind, self.refs
        callee = refs[c][0]
        if kind[callee] == "Function":
            return callee if uses[callee] == 1 and callee not in self.roots else -1
        if kind[callee] == "GlobalVar":
            want = "Function"
        elif self.op_name(c) in PRIMFUNC_CALLS and len(refs[c]) > 1 and kind[refs[c][1]] == "GlobalVar":
            callee, want = refs[c][1], "PrimFunc"
        else:
            return -1
        name = self.nodes[callee].get("name")
        f = self.functions.get(name, -1) if isinstance(name, str) else -1
        if f < 0 or kind[f] != want or named[name] != 1 or uses[f] != 0:
            return -1
        if want == "Function" and c in self.scope(f):
            return -1
        return f

    def _resolve(self, alias: Dict[int, int]) -> Optional[List[int]]:
        canon = list(range(self.size))
        done = bytearray(self.size)
        for start in alias:
            if done[start]:
                continue
            path: List[int] = []
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

    def _bindings(self) -> Dict[int, int]:
        if "Let" not in self.kind:
            return {}
        kind, refs = self.kind, self.refs
        out: Dict[int, int] = {}
        for r, k in enumerate(kind):
            if k == "Let" and len(refs[r]) >= 2:
                var = refs[r][0]
                if kind[var] == "Var" and var not in out:
                    out[var] = refs[r][1]
        return out

    # -- inputs, users, topological order -----------------------------------------------------

    def _inputs(self) -> Optional[List[int]]:
        """Set ``inputs``; return a topological order (``None`` on a cycle)."""
        canon, refs, op_of = self.canon, self.refs, self.op_of
        if self.inlined:
            inputs = [[canon[t] for t in (refs[r][1:] if op_of[r] >= 0 else refs[r])] for r in range(self.size)]
        else:  # inputs are the references themselves (shared, never modified), less a call's Op
            inputs = [refs[r][1:] if op_of[r] >= 0 else refs[r] for r in range(self.size)]
        for var, value in self.binding.items():
            inputs[var] = [canon[value]]
        self.inputs: List[List[int]] = inputs
        if not self.inlined and not self.binding:
            return list(range(self.size))  # the canonical order is topological
        return _topological(inputs)

    @cached_property
    def bound_values(self) -> Dict[int, int]:
        """Each Relax variable bound in the graph (``VarBinding``, ``MatchCast``) and the value its
        binding gives it (read once per graph: each shared function of a diff reads them)."""
        kind, refs = self.kind, self.refs
        return {refs[t][0]: refs[t][1] for t in range(self.size) if kind[t] in BINDING_KINDS and len(refs[t]) > 1}

    @cached_property
    def input_arrays(self) -> Tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """``(lengths, starts, flat)``: every node's inputs as one array, node after node."""
        inputs = self.inputs
        lengths = np.fromiter(map(len, inputs), dtype=np.int64, count=self.size)
        flat = np.fromiter(chain.from_iterable(inputs), dtype=np.int64, count=int(lengths.sum()))
        return lengths, np.cumsum(lengths) - lengths, flat

    @cached_property
    def input_owner(self) -> NDArray[np.int64]:
        """For each entry of ``input_arrays[2]``, the node whose input it is."""
        return np.repeat(np.arange(self.size, dtype=np.int64), self.input_arrays[0])

    @cached_property
    def ref_arrays(self) -> Tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """``(lengths, starts, flat)`` of the literal references, as :attr:`input_arrays`."""
        refs = self.refs
        lengths = np.fromiter(map(len, refs), dtype=np.int64, count=self.size)
        flat = np.fromiter(chain.from_iterable(refs), dtype=np.int64, count=int(lengths.sum()))
        return lengths, np.cumsum(lengths) - lengths, flat

    @cached_property
    def users(self) -> "UserIndex":
        """``(user, input position)`` of every node's users, users in canonical order."""
        return UserIndex(*self.input_arrays, self.input_owner)

    def literal_inputs(self, r: int) -> List[int]:
        """The inputs a diff reports for ``r``: a Let-bound variable reads nothing (its Let does)."""
        return [] if r in self.binding else self.inputs[r]

    # -- descriptions -------------------------------------------------------------------------

    def op_name(self, r: int) -> Optional[str]:
        """The operator name of a call of an Op, else ``None``."""
        op = self.op_of[r]
        return self.nodes[op].get("name") if op >= 0 else None

    def scope(self, f: int) -> List[int]:
        """The nodes of function ``f``'s body: reachable from it without leaving through a parameter
        (a PrimFunc's: its statements)."""
        params = set(self.refs[f][1:]) if self.kind[f] == "Function" else set()
        seen = {f}
        stack = list(self.refs[f][:1])
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


class UserIndex:
    """The users of each node, ``users[r]``: a list of ``(user, input position)``, made the first
    time it is asked for (a diff of two alike graphs looks at the users of a few nodes only)."""

    __slots__ = ("_users", "_slots", "_bounds", "_made")

    def __init__(self, lengths: NDArray[np.int64], starts: NDArray[np.int64], flat: NDArray[np.int64],
                 owner: NDArray[np.int64]) -> None:
        n = len(lengths)
        slot = np.arange(len(flat), dtype=np.int64) - starts[owner]
        order = np.argsort(flat, kind="stable")  # by input, then by user and position
        self._users: List[int] = owner[order].tolist()
        self._slots: List[int] = slot[order].tolist()
        counts = np.bincount(flat, minlength=n)
        self._bounds: List[int] = np.concatenate(([0], np.cumsum(counts))).tolist()
        self._made: List[Optional[List[Tuple[int, int]]]] = [None] * n

    def __getitem__(self, r: int) -> List[Tuple[int, int]]:
        made = self._made[r]
        if made is None:
            lo, hi = self._bounds[r], self._bounds[r + 1]
            made = self._made[r] = list(zip(self._users[lo:hi], self._slots[lo:hi]))
        return made

    def __len__(self) -> int:
        return len(self._made)

    def count(self, r: int) -> int:
        """How many users ``r`` has (an input position counts once per use)."""
        return self._bounds[r + 1] - self._bounds[r]


def _canonical_order(nodes: Sequence[Mapping[str, Any]], refs: List[List[int]], kinds: List[str],
                     starts: List[int]) -> List[int]:
    """Post-order from ``starts``, references in field order but for a function's parameters
    and a call's Op (see the module's docstring); then from every node nobody uses."""
    n = len(nodes)
    seen = bytearray(n)
    order: List[int] = []
    append = order.append

    def visits(r: int) -> List[int]:
        below = refs[r]
        k = kinds[r]
        if k == "Function" or (k == "Call" and kinds[below[0]] == "Op"):
            return below[1:] + below[:1]
        return below

    def walk(start: int) -> None:
        if seen[start]:
            return
        seen[start] = 1
        stack = [(start, iter(visits(start)))]
        push, pop = stack.append, stack.pop
        while stack:
            node, it = stack[-1]
            for child in it:
                if not seen[child]:
                    seen[child] = 1
                    below = refs[child]
                    if not below:  # a leaf (Var, Op, Const) is done at once
                        append(child)
                        continue
                    k = kinds[child]
                    if k == "Function" or (k == "Call" and kinds[below[0]] == "Op"):
                        below = below[1:] + below[:1]
                    push((child, iter(below)))
                    break
            else:
                pop()
                append(node)

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
    names = reference_field_names(node.get("node_kind"))
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
