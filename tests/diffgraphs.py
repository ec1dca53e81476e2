"""Relay-like RelayViz graphs with known node identities, and known edits on them.

Used by the diff's property tests and by ``benchmarks/bench_diff.py``. A :class:`Graph` holds
nodes keyed by a *uid* that survives edits; :meth:`Graph.render` numbers them into a
document (optionally in a random order), and returns which id each uid got, so a test knows
the true pairing of two renderings. Graphs are built like ``to_relayviz`` output: calls of Op
nodes shared by (name, attrs), named parameters, constants with digests, tuples, batch norms,
repeated blocks and scalar constants that repeat everywhere.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import orjson

from relayviz_instrument.format import VERSION, labelled_references, validate

TENSOR = {"dtype": "float32", "shape": [1, 16, 8, 8]}
VECTOR = {"dtype": "float32", "shape": [16]}
WEIGHT = {"dtype": "float32", "shape": [16, 16, 3, 3]}
#: Unary operators used by the generator; ``copy`` is what the insert edit inserts.
UNARY = ("nn.relu", "sigmoid", "tanh", "copy")
#: The edits :func:`mutate` makes.
EDIT_KINDS = ("attr", "insert", "delete", "value", "rewire", "swap", "repeat block", "repeat block, new weights",
              "delete block")
T8 = {"dtype": "float32", "shape": [1, 8]}
T4 = {"dtype": "float32", "shape": [1, 4]}


class Graph:
    """Nodes keyed by uid (references are uids), the ``functions`` index, and a uid counter."""

    def __init__(self) -> None:
        self.nodes: Dict[int, Dict[str, Any]] = {}
        self.functions: Dict[str, int] = {}
        self.root: Optional[int] = None
        self.next_uid = 0
        self._ops: Dict[Tuple[str, str], int] = {}

    # -- building -------------------------------------------------------------------------------

    def add(self, node: Dict[str, Any]) -> int:
        uid = self.next_uid
        self.next_uid += 1
        self.nodes[uid] = node
        return uid

    def op(self, name: str, attrs: Optional[Dict[str, Any]] = None) -> int:
        key = (name, repr(sorted((attrs or {}).items())))
        uid = self._ops.get(key)
        if uid is None or uid not in self.nodes:
            node: Dict[str, Any] = {"node_kind": "Op", "name": name}
            if attrs is not None:
                node["attrs"] = attrs
            uid = self._ops[key] = self.add(node)
        return uid

    def call(self, name: str, args: List[int], attrs: Optional[Dict[str, Any]] = None,
             ty: Optional[Dict[str, Any]] = None) -> int:
        return self.add({"node_kind": "Call", "op": self.op(name, attrs), "args": list(args),
                         "type": copy.deepcopy(ty or TENSOR)})

    @classmethod
    def from_document(cls, doc: Dict[str, Any]) -> "Graph":
        """A graph whose uids are the document's node ids."""
        graph = cls()
        graph.nodes = {i: copy.deepcopy(node) for i, node in enumerate(doc["nodes"])}
        graph.functions = dict(doc.get("functions") or {})
        graph.root = doc.get("root")
        graph.next_uid = len(doc["nodes"])
        for uid, node in graph.nodes.items():
            if node["node_kind"] == "Op":
                graph._ops[(node["name"], repr(sorted((node.get("attrs") or {}).items())))] = uid
        return graph

    # -- reading --------------------------------------------------------------------------------

    def refs(self, uid: int) -> List[Tuple[str, Any, int]]:
        return labelled_references(self.nodes[uid])

    def users(self) -> Dict[int, List[Tuple[int, str, Any]]]:
        out: Dict[int, List[Tuple[int, str, Any]]] = {uid: [] for uid in self.nodes}
        for uid in self.nodes:
            for field, pos, target in self.refs(uid):
                out[target].append((uid, field, pos))
        return out

    def op_name(self, uid: int) -> Optional[str]:
        node = self.nodes[uid]
        if node["node_kind"] != "Call":
            return None
        callee = self.nodes[node["op"]]
        return callee["name"] if callee["node_kind"] == "Op" else None

    def set_ref(self, uid: int, field: str, pos: Any, target: int) -> None:
        if pos is None:
            self.nodes[uid][field] = target
        else:
            self.nodes[uid][field][pos] = target

    def collect(self) -> None:
        """Drop nodes that no root reaches (as the serializer would never write them)."""
        seen = set()
        stack = list(self.functions.values()) + ([self.root] if self.root is not None else [])
        while stack:
            uid = stack.pop()
            if uid in seen:
                continue
            seen.add(uid)
            stack.extend(t for _, _, t in self.refs(uid))
        self.nodes = {uid: node for uid, node in self.nodes.items() if uid in seen}

    def render(self, rng: Optional[random.Random] = None, anonymous: bool = False
               ) -> Tuple[Dict[str, Any], Dict[int, int]]:
        """The graph as a document; node ids in uid order, or shuffled by ``rng``; with every
        variable named alike when ``anonymous`` (as A-normal form and some frontends name them)."""
        uids = sorted(self.nodes)
        if rng is not None:
            rng.shuffle(uids)
        ids = {uid: i for i, uid in enumerate(uids)}
        nodes = []
        for uid in uids:
            node = copy.deepcopy(self.nodes[uid])
            if anonymous and node["node_kind"] == "Var":
                node["name"] = "x"
            for name, pos, target in labelled_references(node):
                if pos is None:
                    node[name] = ids[target]
                else:
                    node[name][pos] = ids[target]
            nodes.append(node)
        doc: Dict[str, Any] = {"format": "relayviz", "version": list(VERSION), "ir": "relay"}
        if self.functions:
            doc["functions"] = {name: ids[uid] for name, uid in sorted(self.functions.items())}
        if self.root is not None:
            doc["root"] = ids[self.root]
        doc["nodes"] = nodes
        return doc, ids

    def copy(self) -> "Graph":
        return copy.deepcopy(self)


class DocumentBuilder:
    """Small documents written by hand: nodes in the order given, Op nodes shared by (name,
    attrs) as the serializer shares them."""

    def __init__(self) -> None:
        self.nodes: List[Dict[str, Any]] = []
        self._ops: Dict[str, int] = {}

    def add(self, node: Dict[str, Any]) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def var(self, name: str, ty: Dict[str, Any] = T8) -> int:
        return self.add({"node_kind": "Var", "name": name, **ty})

    def const(self, value: Any, dtype: str = "float32") -> int:
        return self.add({"node_kind": "Const", "value": value, "dtype": dtype})

    def op(self, name: str, attrs: Optional[Dict[str, Any]] = None) -> int:
        key = name + orjson.dumps(attrs).decode()
        if key not in self._ops:
            node: Dict[str, Any] = {"node_kind": "Op", "name": name}
            if attrs is not None:
                node["attrs"] = attrs
            self._ops[key] = self.add(node)
        return self._ops[key]

    def call(self, name: str, *args: int, attrs: Optional[Dict[str, Any]] = None,
             ty: Optional[Dict[str, Any]] = T8) -> int:
        node: Dict[str, Any] = {"node_kind": "Call", "op": self.op(name, attrs), "args": list(args)}
        if ty is not None:
            node["type"] = ty
        return self.add(node)

    def function(self, body: int, params: List[int], attrs: Optional[Dict[str, Any]] = None) -> int:
        node: Dict[str, Any] = {"node_kind": "Function", "body": body, "params": params}
        if attrs:
            node["attrs"] = attrs
        self.main = self.add(node)
        return self.main

    def document(self) -> Dict[str, Any]:
        """The document whose ``main`` is the function added last."""
        doc = {"format": "relayviz", "version": list(VERSION), "ir": "relay", "functions": {"main": self.main},
               "nodes": self.nodes}
        validate(doc)
        return doc


# -- generation ----------------------------------------------------------------------------------


def synthetic(rng: random.Random, size: int) -> Graph:
    """A model of about ``size`` nodes: a chain of blocks drawn from a few repeated templates."""
    g = Graph()
    data = g.add({"node_kind": "Var", "name": "data", **TENSOR})
    params = [data]
    digests = iter(range(10 ** 9))

    def weight(i: int) -> int:
        if rng.random() < 0.5:
            uid = g.add({"node_kind": "Var", "name": f"w{i}", **WEIGHT})
            params.append(uid)
            return uid
        return g.add({"node_kind": "Const", "dtype": "float32",
                      "value": {"array_shape": WEIGHT["shape"], "digest": f"sha256:{next(digests):032x}"}})

    def scalar(value: float) -> int:
        return g.add({"node_kind": "Const", "dtype": "float32", "value": value})

    x = g.call("copy", [data])
    block = 0
    while g.next_uid < size:
        block += 1
        kind = rng.choice(("conv", "conv", "residual", "branches", "split", "norm", "scale", "unary"))
        if kind == "conv":
            strides = rng.choice(([1, 1], [2, 2]))
            x = g.call("nn.conv2d", [x, weight(block)], {"strides": strides, "padding": [1, 1, 1, 1],
                                                          "channels": 16, "data_layout": "NCHW"})
            x = g.call("nn.relu", [x])
        elif kind == "residual":
            y = g.call("nn.conv2d", [x, weight(block)], {"strides": [1, 1], "padding": [1, 1, 1, 1],
                                                          "channels": 16, "data_layout": "NCHW"})
            y = g.call(rng.choice(UNARY[:3]), [y])
            x = g.call("add", [x, y])
        elif kind == "branches":
            width = rng.choice((2, 3))
            fields = [g.call(rng.choice(UNARY[:3]), [x]) for _ in range(width)]
            tup = g.add({"node_kind": "Tuple", "fields": fields,
                         "type": {"kind": "tuple", "fields": [TENSOR] * width}})
            x = g.call("concatenate", [tup], {"axis": 1})
        elif kind == "split":
            parts = g.call("split", [x], {"indices_or_sections": 2, "axis": 1},
                           {"kind": "tuple", "fields": [TENSOR, TENSOR]})
            first = g.add({"node_kind": "TupleGetItem", "tuple_value": parts, "index": 0, "type": TENSOR})
            second = g.add({"node_kind": "TupleGetItem", "tuple_value": parts, "index": 1, "type": TENSOR})
            x = g.call("multiply", [first, second])
        elif kind == "norm":
            stats = []
            for what in ("gamma", "beta", "mean", "var"):
                uid = g.add({"node_kind": "Var", "name": f"bn{block}_{what}", **VECTOR})
                params.append(uid)
                stats.append(uid)
            bn = g.call("nn.batch_norm", [x] + stats, {"axis": 1, "epsilon": 1e-5},
                        {"kind": "tuple", "fields": [TENSOR, VECTOR, VECTOR]})
            x = g.add({"node_kind": "TupleGetItem", "tuple_value": bn, "index": 0, "type": TENSOR})
        elif kind == "scale":
            x = g.call("multiply", [x, scalar(0.5)])
            x = g.call("add", [x, scalar(1.0)])
        else:
            x = g.call(rng.choice(UNARY), [x])
    g.functions["main"] = g.add({"node_kind": "Function", "body": x, "params": params, "ret_type": TENSOR})
    return g


# -- edits ---------------------------------------------------------------------------------------


def mutate(graph: Graph, rng: random.Random, k: int, kinds: Sequence[str] = EDIT_KINDS) -> List[str]:
    """Apply ``k`` edits of the given kinds in place; return their kinds. Edited nodes keep
    their uid when they stay the same node, so a test knows the true pairing.

    Nothing is avoided: edits may touch the same neighbourhood (a node inserted next to one
    deleted, two rewirings of one node), insert a node next to one of its operator, rewire an
    input to a node of the operator it had, duplicate a block next to identical ones. Such
    edits have several equally good readings; :func:`accuracy` accepts each of them."""
    done: List[str] = []
    attempts = 0
    while len(done) < k and attempts < 50 * k:
        attempts += 1
        kind = rng.choice(list(kinds))
        if _EDITS[kind](graph, rng):
            done.append(kind)
    graph.collect()
    return done


def _tensor_calls(graph: Graph) -> List[int]:
    return sorted(uid for uid, node in graph.nodes.items()
                  if node["node_kind"] == "Call" and graph.op_name(uid) is not None
                  and "kind" not in node.get("type", {}))


def _edit_attr(graph: Graph, rng: random.Random) -> bool:
    """A convolution's layout (ConvertLayout), or an attribute added to another call."""
    calls = _tensor_calls(graph)
    if not calls:
        return False
    uid = rng.choice(calls)
    name = graph.op_name(uid)
    old = graph.nodes[graph.nodes[uid]["op"]]
    attrs = dict(old.get("attrs") or {})
    if name == "nn.conv2d":
        attrs["data_layout"] = "NHWC" if attrs.get("data_layout") == "NCHW" else "NCHW"
    else:
        attrs["edited"] = rng.randrange(1000)
    graph.nodes[uid]["op"] = graph.op(name, attrs)
    return True


def _edit_insert(graph: Graph, rng: random.Random) -> bool:
    """A ``copy`` on an edge between two tensor calls (next to another copy, too)."""
    edges = [(u, field, pos, t) for u in _tensor_calls(graph) for field, pos, t in graph.refs(u)
             if field == "args" and graph.nodes[t]["node_kind"] == "Call" and graph.op_name(t) is not None
             and "kind" not in graph.nodes[t].get("type", {})]
    if not edges:
        return False
    u, field, pos, t = rng.choice(edges)
    graph.set_ref(u, field, pos, graph.call("copy", [t], ty=graph.nodes[t]["type"]))
    return True


def _edit_delete(graph: Graph, rng: random.Random) -> bool:
    """A unary call between two others, its users reading its input instead."""
    users = graph.users()
    calls = _tensor_calls(graph)
    counts: Dict[Optional[str], int] = {}
    for uid in calls:
        counts[graph.op_name(uid)] = counts.get(graph.op_name(uid), 0) + 1
    candidates = []
    for uid in calls:
        name = graph.op_name(uid)
        if name not in UNARY or not users[uid] or counts[name] < 2:
            continue  # (a single call: deleting it would remove its Op node too)
        source = graph.nodes[uid]["args"][0]
        if graph.nodes[source]["node_kind"] != "Call" or any(f != "args" for _, f, _ in users[uid]):
            continue
        candidates.append(uid)
    if not candidates:
        return False
    uid = rng.choice(candidates)
    source = graph.nodes[uid]["args"][0]
    for user, field, pos in users[uid]:
        graph.set_ref(user, field, pos, source)
    del graph.nodes[uid]
    return True


def _edit_value(graph: Graph, rng: random.Random) -> bool:
    consts = sorted(uid for uid, node in graph.nodes.items()
                    if node["node_kind"] == "Const" and isinstance(node["value"], dict) and "digest" in node["value"])
    if not consts:
        return False
    uid = rng.choice(consts)
    graph.nodes[uid]["value"] = {"array_shape": graph.nodes[uid]["value"]["array_shape"],
                                 "digest": f"sha256:{rng.getrandbits(128):032x}"}
    return True


def _edit_rewire(graph: Graph, rng: random.Random) -> bool:
    """One input of a two-input call rewired to another tensor call not far below it (one of
    the operator it read, too), as passes rewire."""
    slots = [(uid, pos) for uid in _tensor_calls(graph) if len(graph.nodes[uid]["args"]) == 2
             for pos in range(2)]
    rng.shuffle(slots)
    for uid, pos in slots[:20]:
        args = graph.nodes[uid]["args"]
        ty = graph.nodes[args[pos]].get("type")
        choices = sorted(t for t in _descendants(graph, uid) if t not in args and graph.nodes[t]["node_kind"] == "Call"
                         and graph.op_name(t) is not None and graph.nodes[t].get("type") == ty)
        if choices:
            args[pos] = rng.choice(choices[-20:])
            return True
    return False


def _edit_swap(graph: Graph, rng: random.Random) -> bool:
    """The two arguments of a call swapped (of one type, and distinct)."""
    calls = [uid for uid in _tensor_calls(graph) if len(graph.nodes[uid]["args"]) == 2
             and len(set(graph.nodes[uid]["args"])) == 2
             and (graph.nodes[graph.nodes[uid]["args"][0]].get("type")
                  == graph.nodes[graph.nodes[uid]["args"][1]].get("type"))]
    if not calls:
        return False
    graph.nodes[rng.choice(calls)]["args"].reverse()
    return True


def _edit_duplicate(graph: Graph, rng: random.Random, new_weights: bool) -> bool:
    """A block of the main chain (between two nodes every path from the input passes) repeated
    right after itself: with the same weights, or with new ones next to its own."""
    blocks = _blocks(graph)
    if not blocks:
        return False
    entry, exit_, own, leaves = rng.choice(blocks)
    outside = [(u, f, p) for u, f, p in graph.users()[exit_] if u not in own]
    copies: Dict[int, int] = {}
    for uid in sorted(own) + (sorted(leaves) if new_weights else []):
        copies[uid] = graph.next_uid
        graph.next_uid += 1
    for uid, new in copies.items():
        node = copy.deepcopy(graph.nodes[uid])
        for field, pos, target in labelled_references(node):
            target = exit_ if target == entry else copies.get(target, target)
            if pos is None:
                node[field] = target
            else:
                node[field][pos] = target
        if uid in leaves:
            if node["node_kind"] == "Var":
                node["name"] = f"{node['name']}.copy"
            elif isinstance(node["value"], dict):
                node["value"] = {"array_shape": node["value"]["array_shape"],
                                 "digest": f"sha256:{rng.getrandbits(128):032x}"}
            else:
                node["value"] = rng.random()
        graph.nodes[new] = node
    for user, field, pos in outside:
        graph.set_ref(user, field, pos, copies[exit_])
    if new_weights:
        params = graph.nodes[graph.functions["main"]]["params"]
        mine = [i for i, p in enumerate(params) if p in leaves]
        if mine:
            at = max(mine) + 1
            params[at:at] = [copies[p] for p in params if p in leaves]
    return True


def _edit_delete_block(graph: Graph, rng: random.Random) -> bool:
    """A block of the main chain removed, with the weights only it used."""
    blocks = _blocks(graph)
    if not blocks:
        return False
    entry, exit_, own, leaves = rng.choice(blocks)
    for user, field, pos in graph.users()[exit_]:
        if user not in own:
            graph.set_ref(user, field, pos, entry)
    main = graph.nodes[graph.functions["main"]]
    main["params"] = [p for p in main["params"] if p not in leaves]
    for uid in own | leaves:
        del graph.nodes[uid]
    return True


def _descendants(graph: Graph, uid: int) -> set:
    seen = set()
    stack = [t for _, _, t in graph.refs(uid)]
    while stack:
        t = stack.pop()
        if t not in seen:
            seen.add(t)
            stack.extend(r for _, _, r in graph.refs(t))
    return seen


def _blocks(graph: Graph) -> List[Tuple[int, int, set, set]]:
    """``(entry, exit, own nodes, own leaves)`` of the blocks of main's chain: between two
    consecutive nodes that dominate main's first parameter (every path from the body to it
    passes them), of equal types; own nodes are read by the block alone."""
    main = graph.nodes.get(graph.functions.get("main", -1))
    if main is None or not main.get("params"):
        return []
    body, data = main["body"], main["params"][0]
    refs = {uid: [t for f, _, t in graph.refs(uid) if f != "op"] for uid in graph.nodes}
    order: List[int] = []
    seen = {body}
    stack = [(body, iter(refs[body]))]
    while stack:  # post-order from the body
        node, it = stack[-1]
        for child in it:
            if child not in seen:
                seen.add(child)
                stack.append((child, iter(refs[child])))
                break
        else:
            stack.pop()
            order.append(node)
    if data not in seen:
        return []
    users: Dict[int, List[int]] = {uid: [] for uid in graph.nodes}
    for uid in graph.nodes:
        for _, _, t in graph.refs(uid):
            users[t].append(uid)
    parent, depth = {body: body}, {body: 0}
    for uid in reversed(order[:-1]):  # users first
        mine = [u for u in users[uid] if u in seen]
        up = mine[0]
        for other in mine[1:]:
            while up != other:  # the closest common dominator
                if depth[up] < depth[other]:
                    other = parent[other]
                else:
                    up = parent[up]
        parent[uid], depth[uid] = up, depth[up] + 1
    spine = [data]
    while spine[-1] != body:
        spine.append(parent[spine[-1]])
    out = []
    for entry, exit_ in zip(spine, spine[1:]):
        if graph.nodes[entry].get("type", graph.nodes[entry].get("shape")) != graph.nodes[exit_].get("type"):
            continue
        below = set()
        walk = [exit_]
        while walk:
            uid = walk.pop()
            if uid in below or uid == entry:
                continue
            below.add(uid)
            walk.extend(refs[uid])
        own = {exit_}
        for uid in reversed(order):  # users first: a node is the block's own when all its users are
            if uid in below and uid != exit_ and users[uid] and all(u in own for u in users[uid]):
                own.add(uid)
        leaves = {uid for uid in own if graph.nodes[uid]["node_kind"] in ("Var", "Const") and uid != data}
        own -= leaves
        if 2 <= len(own) <= 40 and all(graph.nodes[uid]["node_kind"] != "Function" for uid in own):
            out.append((entry, exit_, own, leaves))
    return out



_EDITS: Dict[str, Callable[[Graph, random.Random], bool]] = {
    "attr": _edit_attr, "insert": _edit_insert, "delete": _edit_delete, "value": _edit_value,
    "rewire": _edit_rewire, "swap": _edit_swap,
    "repeat block": lambda graph, rng: _edit_duplicate(graph, rng, new_weights=False),
    "repeat block, new weights": lambda graph, rng: _edit_duplicate(graph, rng, new_weights=True),
    "delete block": _edit_delete_block,
}


# -- whole-graph workloads (benchmarks/bench_diff.py) --------------------------------------------

CONV_ATTRS = {"strides": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1, "channels": 8,
              "kernel_size": [3, 3], "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "",
              "out_dtype": ""}
_MAP = {"dtype": "float32", "shape": [1, 8, 8, 8]}
_CHANNELS = {"dtype": "float32", "shape": [8]}


class _Serial:
    """Nodes in the order the Relay serializer writes them: an Op node right before its first
    call, after the call's arguments."""

    def __init__(self) -> None:
        self.nodes: List[Dict[str, Any]] = []
        self.ops: Dict[str, int] = {}

    def add(self, node: Dict[str, Any]) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def call(self, name: str, *args: int, ty: Dict[str, Any], attrs: Optional[Dict[str, Any]] = None) -> int:
        if name not in self.ops:
            op: Dict[str, Any] = {"node_kind": "Op", "name": name}
            if attrs is not None:
                op["attrs"] = attrs
            self.ops[name] = self.add(op)
        return self.add({"node_kind": "Call", "op": self.ops[name], "args": list(args), "type": ty})

    def document(self, body: int, params: List[int]) -> Dict[str, Any]:
        main = self.add({"node_kind": "Function", "body": body, "params": params, "ret_type": _MAP})
        return {"format": "relayviz", "version": list(VERSION), "ir": "relay", "functions": {"main": main},
                "nodes": self.nodes}


def conv_bn_relu_chain(blocks: int, simplified: bool = False) -> Dict[str, Any]:
    """``blocks`` times conv2d, batch_norm, relu, as ``to_relayviz`` writes it; ``simplified``:
    after SimplifyInference (each batch_norm expanded into the arithmetic it stands for)."""
    s = _Serial()
    params = [s.add({"node_kind": "Var", "name": "data", **_MAP})]
    stats = []
    for i in range(blocks):
        params.append(s.add({"node_kind": "Var", "name": f"w{i}", "dtype": "float32", "shape": [8, 8, 3, 3]}))
        stats.append([s.add({"node_kind": "Var", "name": f"bn{i}_{what}", **_CHANNELS})
                      for what in ("gamma", "beta", "mean", "var")])
        params += stats[-1]
    x = params[0]
    for i in range(blocks):
        gamma, beta, mean, var = stats[i]
        x = s.call("nn.conv2d", x, params[1 + 5 * i], ty=_MAP, attrs=CONV_ATTRS)
        if simplified:
            one = s.add({"node_kind": "Const", "value": 1.0, "dtype": "float32"})
            eps = s.add({"node_kind": "Const", "value": 9.999999747378752e-06, "dtype": "float32"})
            root = s.call("sqrt", s.call("add", var, eps, ty=_CHANNELS), ty=_CHANNELS)
            scale = s.call("multiply", s.call("divide", one, root, ty=_CHANNELS), gamma, ty=_CHANNELS)
            expand = {"axis": 1, "num_newaxis": 2}
            x = s.call("multiply", x, s.call("expand_dims", scale, ty={"dtype": "float32", "shape": [8, 1, 1]},
                                             attrs=expand), ty=_MAP)
            shift = s.call("add", s.call("multiply", s.call("negative", mean, ty=_CHANNELS), scale,
                                         ty=_CHANNELS), beta, ty=_CHANNELS)
            x = s.call("add", x, s.call("expand_dims", shift, ty={"dtype": "float32", "shape": [8, 1, 1]},
                                        attrs=expand), ty=_MAP)
        else:
            norm = s.call("nn.batch_norm", x, gamma, beta, mean, var, attrs={
                "axis": 1, "epsilon": 1e-05, "center": 1, "scale": 1},
                ty={"kind": "tuple", "fields": [_MAP, _CHANNELS, _CHANNELS]})
            x = s.add({"node_kind": "TupleGetItem", "tuple_value": norm, "index": 0, "type": _MAP})
        x = s.call("nn.relu", x, ty=_MAP)
    return s.document(x, params)


def fold_constant_chain(blocks: int, folded: bool = False, seed: int = 0) -> Dict[str, Any]:
    """``blocks`` times ``add(y, multiply(Const, Const))``, each constant distinct; ``folded``:
    as FoldConstant leaves it, ``add(y, Const)``."""
    s = _Serial()
    vector = {"dtype": "float32", "shape": [16]}
    data = s.add({"node_kind": "Var", "name": "data", **vector})

    def const(*key: int) -> int:
        digest = f"sha256:{hash(('fold', seed) + key) & (2 ** 128 - 1):032x}"
        return s.add({"node_kind": "Const", "dtype": "float32", "value": {"array_shape": [16], "digest": digest}})

    y = data
    for i in range(blocks):
        operand = const(i, 2) if folded else s.call("multiply", const(i, 0), const(i, 1), ty=vector)
        y = s.call("add", y, operand, ty=vector)
    return s.document(y, [data])


def replace_half(graph: Graph, rng: random.Random, run: int = 25) -> None:
    """Give the calls of about half the graph other operators, in runs of ``run`` calls."""
    calls = _tensor_calls(graph)
    for start in range(0, len(calls), run):
        if rng.random() < 0.5:
            for uid in calls[start:start + run]:
                node = graph.nodes[uid]
                op = graph.nodes[node["op"]]
                node["op"] = graph.op(op["name"] + ".v2", op.get("attrs"))
    graph.collect()


# -- how right a diff is -------------------------------------------------------------------------


def accuracy(before: Dict[str, Any], after: Dict[str, Any], ids_a: Dict[int, int], ids_b: Dict[int, int],
             mapping: Mapping[int, int]) -> Tuple[int, int, int, int]:
    """``(right found, found, truth found, truth)`` for the pairs (Op nodes left out) of a diff
    of two renderings of edited graphs (``ids_*``: uid -> document id).

    The truth pairs each uid present on both sides with itself. A pair the diff found is right
    when it is true, or when it is *consistent*: the two nodes have the same content and every
    reference and every use of one is, through the diff's pairing, the same reference or use
    of the other. Such a pair is one of several equally good readings (a node inserted next to
    one of its operator, a block repeated next to identical ones: which one is new?), and
    the diff shows it unchanged. A true pair is found when the diff pairs its before node
    with its after node, or with a node consistent with it. Computed from the documents and
    the pairing alone, independently of the engine."""
    uid_a = {i: u for u, i in ids_a.items()}
    uid_b = {i: u for u, i in ids_b.items()}
    users_a, users_b = _document_users(before), _document_users(after)
    nodes_a, nodes_b = before["nodes"], after["nodes"]

    def consistent(x: int, y: int) -> bool:
        if _content(before, x) != _content(after, y):
            return False
        refs_x, refs_y = labelled_references(nodes_a[x]), labelled_references(nodes_b[y])
        if len(refs_x) != len(refs_y):
            return False
        for (fx, px, tx), (fy, py, ty) in zip(refs_x, refs_y):
            if (fx, px) != (fy, py):
                return False
            if fx == "op" and nodes_a[tx]["node_kind"] == "Op":
                continue  # the operator is in the content
            if mapping.get(tx) != ty:
                return False
        return sorted((mapping.get(u, -1), f, str(p)) for u, f, p in users_a[x]) == \
            sorted((u, f, str(p)) for u, f, p in users_b[y])

    found = [(x, y) for x, y in mapping.items() if nodes_a[x]["node_kind"] != "Op"]
    right = sum(1 for x, y in found if uid_a[x] == uid_b[y] or consistent(x, y))
    truth = [u for u, i in ids_a.items() if u in ids_b and nodes_a[i]["node_kind"] != "Op"]
    recovered = 0
    for u in truth:
        y = mapping.get(ids_a[u])
        if y is not None and (y == ids_b[u] or consistent(ids_a[u], y)):
            recovered += 1
    return right, len(found), recovered, len(truth)


def true_pairing(ids_a: Dict[int, int], ids_b: Dict[int, int]) -> Any:
    """The pairing the edits made, as the part of a diff that ``editscript.edit_script`` reads."""
    from types import SimpleNamespace

    mapping = {i: ids_b[u] for u, i in ids_a.items() if u in ids_b}
    return SimpleNamespace(mapping=mapping, removed=tuple(sorted(i for u, i in ids_a.items() if u not in ids_b)),
                           added=tuple(sorted(i for u, i in ids_b.items() if u not in ids_a)))


def _content(doc: Dict[str, Any], nid: int) -> Any:
    node = doc["nodes"][nid]
    refs = {f for f, _, _ in labelled_references(node)}
    out = {k: v for k, v in node.items() if k not in refs}
    if node["node_kind"] == "Call" and doc["nodes"][node["op"]]["node_kind"] == "Op":
        out["op"] = doc["nodes"][node["op"]]
    return out


def _document_users(doc: Dict[str, Any]) -> List[List[Tuple[int, str, Any]]]:
    users: List[List[Tuple[int, str, Any]]] = [[] for _ in doc["nodes"]]
    for i, node in enumerate(doc["nodes"]):
        for field, pos, target in labelled_references(node):
            users[target].append((i, field, pos))
    return users


#: Right pairs, pairs found, true pairs found, true pairs, and diffs that imply more edits
#: than the truth, summed over a corpus.
Tally = List[int]


def accuracy_corpus(sources: Mapping[str, Callable[[random.Random], Graph]], seeds: Sequence[int],
                    edits: int = 3) -> Dict[Tuple[str, str, str], Tally]:
    """Diff every source with ``edits`` edits of each kind (and of mixed kinds), with named and
    with anonymous variables, for each seed; tally :func:`accuracy` by (source, kind, naming)."""
    from editscript import edit_script  # (a test oracle, next to this module)
    from relayviz_instrument.diff import diff

    tallies: Dict[Tuple[str, str, str], Tally] = {}
    for name, make in sources.items():
        for kind in EDIT_KINDS + ("mixed",):
            for anonymous in (False, True):
                for seed in seeds:
                    rng = random.Random(seed)
                    before = make(rng)
                    after = before.copy()
                    mutate(after, rng, edits, EDIT_KINDS if kind == "mixed" else [kind])
                    (a, ids_a), (b, ids_b) = before.render(rng, anonymous), after.render(rng, anonymous)
                    result = diff(a, b)
                    counts = accuracy(a, b, ids_a, ids_b, result.mapping)
                    longer = len(edit_script(a, b, result)) > len(edit_script(a, b, true_pairing(ids_a, ids_b)))
                    tally = tallies.setdefault((name, kind, "anonymous" if anonymous else "named"), [0] * 5)
                    for i, count in enumerate(counts + (int(longer),)):
                        tally[i] += count
    return tallies


def accuracy_rows(tallies: Mapping[Tuple[str, str, str], Tally], by: Callable[[Tuple[str, str, str]], Any]
                  ) -> List[Tuple[Any, float, float, int]]:
    """``(group, precision, recall, diffs longer than the truth)`` of the tallies grouped by ``by``."""
    groups: Dict[Any, Tally] = {}
    for key, tally in tallies.items():
        total = groups.setdefault(by(key), [0] * 5)
        for i, count in enumerate(tally):
            total[i] += count
    return [(group, t[0] / t[1], t[2] / t[3], t[4]) for group, t in groups.items()]
