"""A Relax or TIR document read as a picture's dataflow: what each drawn node reads, which
nodes are drawn in another's place, which functions are boxes and what each call runs.

A Relax module is written the way its IR is (``docs/format.md``): a function's body is a
``SeqExpr`` of binding blocks, each ``VarBinding`` joins a variable to its value, and a
``call_tir`` names its PrimFunc through a ``GlobalVar`` and passes its arguments in a
``Tuple``. Drawn literally, every variable would be a source at the top of the picture and
every binding would feed one block node, a flat band of boxes. So a drawing reads it as a
compiler engineer reads the TVMScript:

- a variable bound by a ``VarBinding`` or ``MatchCast`` is its value: a use of ``lv3`` is an
  edge from the call that computed it; bindings, binding blocks and ``SeqExpr`` are not
  drawn (a ``SeqExpr`` stands for its result);
- a call of ``call_tir`` (``call_tir_inplace``, ``call_tir_with_grad``, ``call_dps_packed``)
  is one node naming its kernel (``callee``) and reading the fields of its argument tuple;
  the ``GlobalVar`` or ``ExternFunc`` it names is drawn only where something uses it as a
  value;
- a call of a module function (``cls.fused_conv2d_add_relu(x, w, b)``) names it; a
  function called from one place only is drawn there (``inlined``): its parameters stand for
  the call's arguments and the call for the function's result, so the fused group is a box
  in the caller's flow;
- every Relax function and every PrimFunc with statements is a box (``boxes``) holding its
  parameters and bindings, or its statements;
- a TIR statement reads the statement around it, so that a kernel reads from its outer loop
  down to its stores (``for i`` above ``for j`` above ``T_add[i, j] =``); the value a store
  computes flows into it from above. TIR constants are shared by every PrimFunc that uses the
  value, so they are not drawn: the call that reads one says it (``constants``). A tensor
  constant read by one node (a weight) is not drawn either: a convolution's weight and bias
  would take a row of boxes above every call; nor is a literal (``R.shape([1, 64])``,
  ``R.dtype("float32")``) read by one call, which says it (``constants``).

Documents without Relax or TIR nodes (Relay, graph executor JSON) read literally: the
reading is empty and the drawings stay as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Set, Tuple

from ..diff.statements import TIR_KINDS
from ..format import NODE_KINDS, references
from ..format.irs import KERNEL_CALLS

__all__ = ["Dataflow", "read_dataflow", "NESTED_FIELDS"]

#: The reference fields of each TIR statement kind that hold nested statements (from the kind
#: tables: the fields whose targets are statements or blocks).
NESTED_FIELDS: Mapping[str, Tuple[str, ...]] = {
    name: tuple(f.name for f in spec.reference_fields if f.targets in ("stmt", "tir_block"))
    for name, spec in NODE_KINDS.items()
    if any(f.targets in ("stmt", "tir_block") for f in spec.reference_fields)
}
_RELAX_KINDS = frozenset({"SeqExpr", "VarBinding", "MatchCast", "DataflowBlock", "BindingBlock"})
_BINDINGS = frozenset({"VarBinding", "MatchCast"})
_BLOCKS = frozenset({"DataflowBlock", "BindingBlock"})
#: Relax values written in place (``R.shape``, ``R.prim_value``, ``R.str``, ``R.dtype``).
_LITERALS = frozenset({"ShapeExpr", "PrimValue", "StringImm", "DataTypeImm"})


@dataclass
class Dataflow:
    """How a document is drawn (see the module docstring); ids are node ids of the document.

    ``stand_in`` maps each node that is not drawn to the node drawn in its place (``-1``: none);
    :meth:`resolve` follows it. ``reads[i]`` lists, for the nodes whose inputs are not simply
    their references, the nodes they read (before ``stand_in``). ``boxes`` are the functions
    drawn as boxes; ``inlined`` maps a function drawn at its only call to that call.
    ``owner`` maps each node inside a box to the innermost box holding it. ``callee`` maps a
    call to the function or PrimFunc node it runs, ``callee_name`` to its name (also for a
    packed function outside the module); ``constants`` lists the values of the TIR constants
    a call or store reads, in argument order.
    """

    active: bool = False
    stand_in: Dict[int, int] = field(default_factory=dict)
    reads: Dict[int, List[int]] = field(default_factory=dict)
    boxes: Tuple[int, ...] = ()
    inlined: Dict[int, int] = field(default_factory=dict)
    owner: Dict[int, int] = field(default_factory=dict)
    callee: Dict[int, int] = field(default_factory=dict)
    callee_name: Dict[int, str] = field(default_factory=dict)
    constants: Dict[int, List[str]] = field(default_factory=dict)

    def resolve(self, i: int) -> int:
        """The node drawn for node ``i``: itself, what stands in for it, or -1 for none."""
        seen = 0
        while i >= 0 and i in self.stand_in:
            i = self.stand_in[i]
            seen += 1
            if seen > len(self.stand_in):
                return -1  # a cycle of stand-ins: a malformed document
        return i

    def inputs(self, i: int, node: Mapping[str, Any]) -> List[int]:
        """What drawn node ``i`` reads, each resolved to a drawn node (in order, once each)."""
        raw = self.reads.get(i)
        if raw is None:
            raw = references(node)
        out: List[int] = []
        for t in raw:
            d = self.resolve(t)
            if d >= 0 and d != i and d not in out:
                out.append(d)
        return out


def read_dataflow(doc: Mapping[str, Any]) -> Dataflow:
    """How the picture of ``doc`` reads its Relax bindings, calls and TIR statements; an
    inactive :class:`Dataflow` for a document with neither."""
    nodes: Sequence[Mapping[str, Any]] = doc["nodes"]
    kinds = [str(n.get("node_kind")) for n in nodes]
    present = set(kinds)
    if not (present & _RELAX_KINDS or present & TIR_KINDS
            or any(k == "PrimFunc" and "body" in n for k, n in zip(kinds, nodes))):
        return Dataflow()  # Relay (its lowered PrimFuncs have no bodies) or graph executor JSON
    functions: Mapping[str, int] = doc.get("functions") or {}
    flow = Dataflow(active=True)
    uses = [0] * len(nodes)
    call_uses = [0] * len(nodes)  # uses as a call's argument
    for node, kind in zip(nodes, kinds):
        for t in references(node):
            uses[t] += 1
            call_uses[t] += kind == "Call"
    for i, kind in enumerate(kinds):
        if kind in _LITERALS and uses[i] == call_uses[i]:
            flow.stand_in[i] = -1  # R.shape([1, 64]), R.dtype("float32")...: said by the calls reading it
    callee_uses = [0] * len(nodes)  # uses of an Op, GlobalVar or ExternFunc as what a call runs
    parents: List[Tuple[int, int]] = []
    for i, node in enumerate(nodes):
        kind = kinds[i]
        if kind in _BINDINGS:
            flow.stand_in[i] = node["value"]
            flow.stand_in[node["var"]] = node["value"]
        elif kind in _BLOCKS:
            flow.stand_in[i] = -1
        elif kind == "SeqExpr":
            flow.stand_in[i] = node["body"]
        elif kind == "Call":
            _read_call(flow, i, node, nodes, kinds, functions, uses, callee_uses)
        elif kind == "BufferStore":
            value = node.get("value")
            if isinstance(value, int) and kinds[value] == "Const":
                flow.constants[i] = [_constant(nodes[value])]
        if kind in NESTED_FIELDS:
            nested = _nested(node, kind)
            if kind == "PrimFunc":
                flow.reads[i] = []  # a box: its statements are inside it
            else:
                flow.reads[i] = [t for t in references(node) if t not in nested]
                parents.extend((t, i) for t in nested)
    for t, parent in parents:  # a statement reads the statement around it
        flow.reads.setdefault(t, references(nodes[t])).append(parent)
    for i, kind in enumerate(kinds):
        if kind in ("Op", "GlobalVar", "ExternFunc") and callee_uses[i] == uses[i]:
            flow.stand_in[i] = -1  # a name the calls say; nothing reads it as a value
        elif kind == "Const" and not isinstance(nodes[i].get("value"), dict):
            flow.stand_in[i] = -1  # a TIR scalar, said by the calls that read it
        elif kind == "Const" and uses[i] == 1:
            flow.stand_in[i] = -1  # a weight: part of the one call that reads it (its fields say it)
    _inline(flow, nodes, kinds, uses)
    flow.boxes = tuple(i for i, k in enumerate(kinds)
                       if (k == "Function" and kinds[nodes[i]["body"]] == "SeqExpr")
                       or (k == "PrimFunc" and "body" in nodes[i]))
    _own(flow, nodes)
    return flow


def _own(flow: Dataflow, nodes: Sequence[Mapping[str, Any]]) -> None:
    """Each node inside a box belongs to the first box that reaches it without entering
    another; a function drawn at its call belongs where the call is."""
    boxes = set(flow.boxes)
    for f in flow.boxes:
        stack = list(reversed(references(nodes[f])))
        while stack:
            r = stack.pop()
            if r in flow.owner or r in boxes:
                continue
            flow.owner[r] = f
            stack.extend(reversed(references(nodes[r])))
    for f, c in flow.inlined.items():
        if c in flow.owner and f in boxes:
            flow.owner[f] = flow.owner[c]


def _nested(node: Mapping[str, Any], kind: str) -> List[int]:
    """The statements ``node`` holds (loop bodies, a sequence's statements, branches)."""
    out: List[int] = []
    for name in NESTED_FIELDS[kind]:
        value = node.get(name)
        if isinstance(value, int):
            out.append(value)
        elif isinstance(value, list):
            out.extend(value)
    return out


def _name(node: Mapping[str, Any]) -> str:
    return str(node.get("name", node.get("global_symbol", "?")))


def _read_call(flow: Dataflow, i: int, node: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
               kinds: Sequence[Any], functions: Mapping[str, int], uses: List[int], callee_uses: List[int]) -> None:
    op, args = node["op"], list(node["args"])
    if kinds[op] == "GlobalVar":  # a call of a module function, by its name
        callee_uses[op] += 1
        flow.callee_name[i] = _name(nodes[op])
        target = functions.get(flow.callee_name[i])
        if target is not None:
            flow.callee[i] = target
        flow.reads[i] = args
        return
    if kinds[op] != "Op":
        return
    callee_uses[op] += 1
    flow.reads[i] = args  # the operator is the call's label
    name = nodes[op].get("name")
    values = [_constant(nodes[a]) for a in args
              if (kinds[a] == "Const" and not isinstance(nodes[a].get("value"), dict))
              or (kinds[a] in _LITERALS and flow.stand_in.get(a) == -1)]
    if values:
        flow.constants[i] = values
    if name not in KERNEL_CALLS or not args or kinds[args[0]] not in ("GlobalVar", "ExternFunc"):
        return
    kernel = args[0]
    callee_uses[kernel] += 1
    flow.callee_name[i] = _name(nodes[kernel])
    target = functions.get(flow.callee_name[i])
    if target is not None:
        flow.callee[i] = target
    reads = args[1:]
    if reads and kinds[reads[0]] == "Tuple" and uses[reads[0]] == 1:
        flow.stand_in[reads[0]] = i  # the argument tuple is the call's
        reads = list(nodes[reads[0]]["fields"]) + reads[1:]
    flow.reads[i] = reads


def _constant(node: Mapping[str, Any]) -> str:
    if node.get("node_kind") == "ShapeExpr":
        return "(" + ", ".join(str(v) for v in node.get("values") or ()) + ")"
    value = node.get("value")
    return repr(value) if isinstance(value, float) else str(value)


def _inline(flow: Dataflow, nodes: Sequence[Mapping[str, Any]], kinds: Sequence[Any], uses: List[int]) -> None:
    """Draw each Relax function that one call, in another function, runs by its name, at
    that call."""
    named: Dict[str, int] = {}
    for i, kind in enumerate(kinds):
        if kind == "GlobalVar":
            named[_name(nodes[i])] = named.get(_name(nodes[i]), 0) + uses[i]
    calls: Dict[int, List[int]] = {}
    for c, f in flow.callee.items():
        if kinds[f] == "Function" and kinds[nodes[c]["op"]] == "GlobalVar":
            calls.setdefault(f, []).append(c)
    for f, found in sorted(calls.items()):
        c = found[0]
        if len(found) != 1 or named.get(_name(nodes[nodes[c]["op"]]), 0) != 1:
            continue
        params, args = nodes[f].get("params") or [], nodes[c]["args"]
        if len(params) != len(args) or c in _scope(f, nodes):
            continue
        flow.inlined[f] = c
        flow.stand_in[c] = nodes[f]["body"]
        for p, a in zip(params, args):
            flow.stand_in[p] = a


def _scope(f: int, nodes: Sequence[Mapping[str, Any]]) -> Set[int]:
    seen = {f}
    stack = [nodes[f]["body"]]
    while stack:
        r = stack.pop()
        if r in seen:
            continue
        seen.add(r)
        stack.extend(references(nodes[r]))
    return seen
