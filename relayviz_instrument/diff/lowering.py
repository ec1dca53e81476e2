"""Lowering: each kernel linked to what it was lowered from, by what TVM records.

Lowering passes rewrite every call of a module at once (LowerTE turns each call of a primitive
function into a ``call_lowered`` of a kernel, the graph executor's code generation each
``call_lowered`` into a node of the built graph, FuseTIR each call of a fused Relax function
into a ``call_tir`` of one PrimFunc), so their removed and added nodes form one connected
region that would read as one hunk holding the whole module. TVM names what it made each
kernel from, and so this module links them call by call:

* a primitive function's ``hash`` attribute, which ``call_lowered`` and ``vm.invoke_tvm_op``
  keep among their attributes and the built graph keeps on its node;
* the kernel's name, which TVM derives from the fused function (``tvmgen_default_fused_...``,
  ``vm_mod_fused_...``, Relax's ``fused_...``) and which names the ``GlobalVar`` a call refers
  to, the PrimFunc a ``call_tir`` runs, and the operator of a built graph's node.

A removed call and an added call *link* when they share such a key and are written in two
different forms (a call of a function, a ``call_lowered``, a kernel node, a ``call_tir``, a
call of a global name): the same form on both sides is no lowering. Where several calls share
a key (one kernel run at several places), a call links with the one whose inputs are the
partners (or links) of its own, read through the unpaired nodes between them; else the first
in data-flow order. Each link is a ``lowered`` hunk: the call, its function, arguments and
kernel name on one side, the new call and its arguments on the other. A kernel added as a
global function of its own (the PrimFuncs LowerTE adds, the one FuseTIR makes of a fused
function of the same name) is a ``lowered`` hunk made from the calls that name it.
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from .drafts import Draft, kernel_of, names
from .graph import CanonicalGraph

__all__ = ["lowered", "call_key"]

#: A call's form (how it is written) and the keys that name its kernel.
Key = Tuple[str, FrozenSet[Tuple[str, str]]]
#: Unpaired nodes looked through between a call and the inputs that tell links apart.
_LOOK_THROUGH = 2


def call_key(graph: CanonicalGraph, r: int, kernel_ops: FrozenSet[str] = frozenset()) -> Optional[Key]:
    """How call ``r`` is written and the keys of the kernel it runs (see the module), or ``None``
    for a call that names none: ``("function", {("hash", h)})`` for a call of a primitive
    function, ``("call_lowered", {("hash", h), ("kernel", name)})``, ``("call_tir", ...)``,
    ``("global", {("kernel", name)})`` for a call of a global name, ``("kernel", ...)`` for a
    node of a built graph (an operator named in ``kernel_ops``, or named by its own
    ``func_name``)."""
    if graph.kind[r] != "Call" or not graph.refs[r]:
        return None
    refs, kind, nodes = graph.refs[r], graph.kind, graph.nodes
    callee = refs[0]
    if kind[callee] == "Function":
        h = (nodes[callee].get("attrs") or {}).get("hash")
        return ("function", frozenset({("hash", str(h))})) if h else None
    if kind[callee] == "GlobalVar":
        name = nodes[callee].get("name")
        return ("global", frozenset({("kernel", str(name))})) if isinstance(name, str) else None
    if kind[callee] != "Op":
        return None
    kernel = kernel_of(graph, r)
    if kernel is not None:
        return ("call_tir", frozenset({("kernel", kernel)}))
    op = nodes[callee]
    name, attrs = str(op.get("name")), op.get("attrs") or {}
    keys: Set[Tuple[str, str]] = set()
    h = attrs.get("hash") or _relay_attrs(attrs).get("hash")
    if h:
        keys.add(("hash", str(h)))
    if attrs.get("func_name") == name or name in kernel_ops:
        keys.add(("kernel", name))
        return ("kernel", frozenset(keys))
    if len(refs) > 1 and kind[refs[1]] == "GlobalVar" and isinstance(nodes[refs[1]].get("name"), str):
        keys.add(("kernel", nodes[refs[1]]["name"]))
    return (name, frozenset(keys)) if keys else None


def _relay_attrs(attrs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The attributes of the function a ``call_lowered`` calls (its ``metadata.relay_attrs``)."""
    meta = attrs.get("metadata")
    inner = meta.get("relay_attrs") if isinstance(meta, dict) else None
    return inner if isinstance(inner, dict) else {}


def _keys(graph: CanonicalGraph, ranks: Sequence[int], kernel_ops: FrozenSet[str]) -> Dict[int, Key]:
    out = {}
    for r in ranks:
        key = call_key(graph, r, kernel_ops)
        if key is not None:
            out[r] = key
    return out


def lowered(va: CanonicalGraph, vb: CanonicalGraph, a2b: Sequence[int], b2a: Sequence[int],
            taken_a: Set[int], taken_b: Set[int]) -> List[Draft]:
    """The ``lowered`` hunks of a diff: one per link between a removed and an added call (see the
    module), and one per kernel added as a global function of its own. Their nodes are added to
    ``taken_a`` and ``taken_b``."""
    free_a = [r for r in range(va.size) if a2b[r] < 0 and va.kind[r] == "Call" and r not in taken_a]
    free_b = [r for r in range(vb.size) if b2a[r] < 0 and vb.kind[r] == "Call" and r not in taken_b]
    if not free_a or not free_b:
        return _definitions(va, vb, a2b, b2a, taken_a, taken_b, [], {})
    keys_a = _keys(va, free_a, frozenset())
    kernels = frozenset(name for _, ks in keys_a.values() for k, name in ks if k == "kernel")
    keys_b = _keys(vb, free_b, kernels)
    ops_a = frozenset(vb.nodes[vb.op_of[r]].get("name") for r in keys_b if vb.op_of[r] >= 0)
    keys_a.update(_keys(va, [r for r in free_a if r not in keys_a and va.op_name(r) in ops_a],
                        frozenset(str(n) for n in ops_a)))
    by_key: Dict[Tuple[str, str], List[int]] = {}
    for y in sorted(keys_b, key=vb.position.__getitem__):
        for k in keys_b[y][1]:
            by_key.setdefault(k, []).append(y)
    links: Dict[int, int] = {}  # before call -> after call
    linked_b: Set[int] = set()
    for x in sorted(keys_a, key=va.position.__getitem__):
        form, ks = keys_a[x]
        found = [y for k in sorted(ks) for y in by_key.get(k, ()) if y not in linked_b and keys_b[y][0] != form]
        if not found:
            continue
        found = list(dict.fromkeys(found))
        if len(found) > 1:
            mine = _inputs_near(va, x, keys_a)
            theirs = {a2b[i] if a2b[i] >= 0 else links.get(i, -1) for i in mine} - {-1}
            found.sort(key=lambda y: (-len(theirs & _inputs_near(vb, y, keys_b)), vb.position[y]))
        links[x] = found[0]
        linked_b.add(found[0])
    drafts = []
    for x, y in links.items():
        draft = Draft("lowered")
        draft.removed = _around(va, x, a2b, taken_a, keys_a)
        draft.added = _around(vb, y, b2a, taken_b, keys_b)
        draft.label = f"{_called(va, x)} → {_called(vb, y)}"
        drafts.append(draft)
    _gone_kernels(va, a2b, taken_a, vb, drafts, links)
    return _definitions(va, vb, a2b, b2a, taken_a, taken_b, drafts, links)


def _inputs_near(graph: CanonicalGraph, r: int, keyed: Mapping[int, Key]) -> Set[int]:
    """The nodes below ``r`` that are paired or keyed calls, through up to two other nodes."""
    found: Set[int] = set()
    level, seen = [r], {r}
    for depth in range(_LOOK_THROUGH + 1):
        nxt = []
        for node in level:
            for t in graph.refs[node]:
                if t in seen or graph.kind[t] == "Op":
                    continue
                seen.add(t)
                if t in keyed or graph.kind[t] in ("Const", "Var") or depth == _LOOK_THROUGH:
                    found.add(t)
                else:
                    nxt.append(t)
        level = nxt
    return found


def _around(graph: CanonicalGraph, r: int, partner: Sequence[int], taken: Set[int],
            keyed: Mapping[int, Key]) -> List[int]:
    """Call ``r`` and the unpaired nodes that belong to it: its function (parameters and body),
    and what it alone reads that is not another keyed call (the tuple of its arguments,
    constants that became parameters of a built graph, its kernel's name)."""
    out = [r]
    taken.add(r)
    stack = list(graph.refs[r])
    while stack:
        t = stack.pop()
        if t in taken or partner[t] >= 0 or graph.kind[t] == "Op" or t in keyed:
            continue
        taken.add(t)
        out.append(t)
        if graph.kind[t] == "Function":
            stack.extend(graph.refs[t])
            stack.extend(graph.scope(t))
        elif graph.kind[t] in ("Tuple", "Call", "TupleGetItem", "ShapeExpr"):
            stack.extend(graph.refs[t])
    # The binding that holds the call's value (Relax), with its variable when that is new too.
    for u, _ in graph.users[r]:
        if graph.kind[u] in ("VarBinding",) and partner[u] < 0 and u not in taken:
            taken.add(u)
            out.append(u)
            var = graph.refs[u][0]
            if partner[var] < 0 and var not in taken:
                taken.add(var)
                out.append(var)
    return out


def _called(graph: CanonicalGraph, r: int) -> str:
    """What a linked call is, for a label: the operators of the function it calls, the form of
    a call of a kernel."""
    callee = graph.refs[r][0]
    if graph.kind[callee] == "Function":
        body = [t for t in graph.scope(callee) if graph.op_of[t] >= 0]
        return f"primitive Function ({names(graph, body, calls_only=True)})" if body else "primitive Function"
    if graph.kind[callee] == "GlobalVar":
        return "call of a global function"
    name = graph.op_name(r) or "Call"
    if kernel_of(graph, r) is not None or (graph.nodes[callee].get("attrs") or {}).get("func_name") == name:
        return name if kernel_of(graph, r) is not None else "kernel call"
    if name.startswith(("vm_mod_", "tvmgen_")):
        return "kernel call"
    return name


def _gone_kernels(va: CanonicalGraph, a2b: Sequence[int], taken_a: Set[int], vb: CanonicalGraph,
                  drafts: List[Draft], links: Mapping[int, int]) -> None:
    """Kernels (global functions) gone with the calls linked to their lowered form (the
    PrimFuncs the graph executor's code generation leaves in the compiled library): a
    ``removed`` hunk each, apart from the links, so that a kernel that several calls run does
    not make one of them stem from all the others. A function whose name the after module
    gives another function is left to :func:`_definitions`."""
    named: Set[str] = set()
    for x in links:
        key = call_key(va, x)
        named.update(name for k, name in (key[1] if key is not None else ()) if k == "kernel")
    for name, f in sorted(va.functions.items()):
        if a2b[f] >= 0 or f in taken_a or name in vb.functions or name not in named:
            continue
        shell = [t for t in [f] + va.scope(f) if a2b[t] < 0 and t not in taken_a and va.kind[t] != "Op"]
        taken_a.update(shell)
        draft = Draft("removed")
        draft.removed = shell
        draft.label = "PrimFunc removed: its calls run the kernel of its name now"
        drafts.append(draft)


def _definitions(va: CanonicalGraph, vb: CanonicalGraph, a2b: Sequence[int], b2a: Sequence[int],
                 taken_a: Set[int], taken_b: Set[int], drafts: List[Draft],
                 links: Mapping[int, int]) -> List[Draft]:
    """A new global function that is a kernel the module's calls name (the PrimFuncs LowerTE
    adds for the ``call_lowered`` calls of its nested pass, the PrimFunc FuseTIR makes in place
    of a fused Relax function of one name): a ``lowered`` hunk made from the function of its
    name it replaces, else from the before module's calls of it."""
    named: Dict[str, List[int]] = {}
    for r in range(va.size):
        key = call_key(va, r) if va.kind[r] == "Call" else None
        for k, name in key[1] if key is not None else ():
            if k == "kernel":
                named.setdefault(name, []).append(r)
    for x, y in links.items():  # calls whose lowered form names the kernel
        key = call_key(vb, y, frozenset(vb.functions))
        for k, name in key[1] if key is not None else ():
            if k == "kernel" and x not in named.get(name, ()):
                named.setdefault(name, []).append(x)
    for name, f in vb.functions.items():
        if b2a[f] >= 0 or f in taken_b or vb.kind[f] != "PrimFunc":
            continue
        if f in vb.inlined and any(b2a[t] >= 0 and vb.kind[t] != "Op" for t in vb.scope(f)):
            continue  # its body is read through: a wrapped hunk (.wrapping) says what it took in
        old = va.functions.get(name)
        calls = named.get(name, [])
        if old is None and not calls:
            continue
        draft = Draft("lowered")
        draft.added = [t for t in [f] + vb.scope(f) if b2a[t] < 0 and t not in taken_b and vb.kind[t] != "Op"]
        taken_b.update(draft.added)
        if old is not None and a2b[old] < 0 and old not in taken_a:
            scope = [old] + va.refs[old][1:] + va.scope(old)
            draft.removed = sorted({t for t in scope if a2b[t] < 0 and t not in taken_a and va.kind[t] != "Op"})
            taken_a.update(draft.removed)
            draft.sources = [t for t in va.scope(old) if a2b[t] >= 0 and va.kind[t] != "Op"]
            body = sorted(va.scope(old), key=va.position.__getitem__)
            kernels = [k for k in (kernel_of(va, t) for t in body) if k is not None]
            what = f"PrimFuncs {', '.join(dict.fromkeys(kernels))}" if kernels else \
                names(va, [t for t in body if va.op_of[t] >= 0], calls_only=True)
            draft.label = f"Function ({what}) → PrimFunc"
        else:
            draft.sources = sorted(calls, key=va.position.__getitem__)
            draft.label = "PrimFunc added for its calls"
        drafts.append(draft)
    return drafts
