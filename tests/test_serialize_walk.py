"""serialize.walk: the walk and the module/expression loops every serializer shares.

The IR is TVM's (TIR arithmetic, whose operands are the children; modules of PrimFuncs and each
dialect's own); the expansions below write one node per object, so what is checked is the
walk's order, sharing and bookkeeping, and that every serializer's caches follow the snapshots.
"""

from __future__ import annotations

import gc
import sys
from typing import Any, Dict, List

import pytest
import tvm

from relayviz_instrument.serialize import serializer_for
from relayviz_instrument.serialize.cache import GenerationalCache
from relayviz_instrument.serialize.walk import DocumentWriter, Expansion, Walk

TIR = tvm.tirx if hasattr(tvm, "tirx") else tvm.tir


def operands(obj: Any, key: int) -> Expansion:
    """TIR arithmetic as nodes: a binary operator's operands are its children, the rest leaves."""
    name = type(obj).__name__
    if hasattr(obj, "a") and hasattr(obj, "b"):
        return Expansion([obj.a, obj.b], lambda walk, ids: {"node_kind": name, "args": ids})
    return Expansion((), lambda walk, ids: {"node_kind": name, "text": str(obj)})


def test_children_come_first_and_a_shared_object_is_one_node() -> None:
    n, m = TIR.Var("n", "int64"), TIR.Var("m", "int64")
    shared = n + m
    expr = shared * shared - n
    walk = Walk(operands)
    root = walk.visit(expr)
    nodes = walk.nodes
    assert root == len(nodes) - 1
    assert [node["node_kind"] for node in nodes] == ["Var", "Var", "Add", "Mul", "Sub"]
    assert nodes[3]["args"] == [2, 2]  # the shared sum, written once, referred to twice
    assert nodes[4]["args"] == [3, 0]  # n was written as the sum's operand already
    for i, node in enumerate(nodes):  # ids are a topological order
        assert all(child < i for child in node.get("args", []))
    assert walk.visit(shared) == 2  # visiting again writes nothing new
    assert len(walk.nodes) == 5


def test_a_deep_expression_needs_no_recursion() -> None:
    i = TIR.Var("i", "int32")
    depth = 3 * sys.getrecursionlimit()
    expr = i
    for _ in range(depth):
        expr = expr + i
    walk = Walk(operands)
    assert walk.visit(expr) == depth
    assert len(walk.nodes) == depth + 1


def test_shared_nodes_are_written_once_per_document() -> None:
    walk = Walk(operands)
    made: List[str] = []

    def make() -> Dict[str, Any]:
        made.append("op")
        return {"node_kind": "Op", "name": "tir.add"}

    first = walk.shared(("Op", "tir.add"), make)
    assert walk.shared(("Op", "tir.add"), make) == first and made == ["op"]
    assert walk.shared(("Op", "tir.sub"), lambda: {"node_kind": "Op", "name": "tir.sub"}) == first + 1


def _primfunc(symbol: str) -> Any:
    return TIR.PrimFunc([], TIR.Evaluate(0)).with_attr("global_symbol", symbol)


def test_a_module_is_its_functions_by_name_each_knowing_its_global_name() -> None:
    writer = DocumentWriter("tir")

    def named(obj: Any, key: int) -> Expansion:
        return Expansion((), lambda walk, ids: {"node_kind": "PrimFunc", "name": walk.names.get(key, "?")})

    mod = tvm.IRModule({"zeta": _primfunc("z_symbol"), "alpha": _primfunc("a_symbol"), "mid": _primfunc("m")})
    doc = writer.module(mod, named, attrs={"k": 1}, type_definitions=None)
    assert doc["ir"] == "tir" and doc["attrs"] == {"k": 1} and "type_definitions" not in doc
    assert list(doc["functions"]) == ["alpha", "mid", "zeta"]
    assert [doc["nodes"][i]["name"] for i in doc["functions"].values()] == ["alpha", "mid", "zeta"]
    one = writer.expr(mod["mid"], named)
    assert one["root"] == 0 and one["nodes"] == [{"node_kind": "PrimFunc", "name": "?"}] and "functions" not in one


def test_the_writer_rotates_every_cache_it_made_and_what_it_embeds() -> None:
    writer, inner = DocumentWriter("tir"), DocumentWriter("tir")
    writer.embed(inner)
    seen: GenerationalCache[str] = writer.cache()
    inner_seen: GenerationalCache[str] = inner.cache()

    def cached(obj: Any, key: int) -> Expansion:
        seen.get(obj, str, key)
        inner_seen.get(obj, str, key)
        return operands(obj, key)

    n, m = TIR.Var("n", "int64"), TIR.Var("m", "int64")
    big, small = (n + m) * (n - m), n + 1
    writer.expr(big, cached)
    assert len(seen) == len(inner_seen) == 5
    writer.expr(small, cached)
    writer.expr(small, cached)
    # Two snapshots of the small expression: nothing of the big one is held any more.
    assert len(seen) == len(inner_seen) == 3


def _caches(serializer: Any) -> List[int]:
    """The sizes of every cache a serializer (and a serializer it embeds) keeps between snapshots."""
    sizes = []
    for value in vars(serializer).values():
        if isinstance(value, GenerationalCache):
            sizes.append(len(value))
        elif hasattr(value, "expansion") and hasattr(value, "rotate"):
            sizes.extend(_caches(value))
    return sizes


def _relay_modules() -> List[Any]:
    relay = pytest.importorskip("tvm.relay", reason="needs a TVM with Relay")
    import tvm.relay.testing

    big, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
    small, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    return [relay.transform.InferType()(big), relay.transform.InferType()(small)]


def _relax_modules() -> List[Any]:
    relax = pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")
    from relayviz_instrument.demo.relax_models import relax_workload

    return [relax.get_pipeline("zero")(relax_workload("mlp")), relax_workload("mlp")]


def _tir_modules() -> List[Any]:
    mods = _relax_modules()
    prims = {str(g.name_hint): f for g, f in mods[0].functions.items() if type(f).__name__ == "PrimFunc"}
    first = sorted(prims)[0]
    return [tvm.IRModule(prims), tvm.IRModule({first: prims[first]})]


@pytest.mark.parametrize("ir,modules", [("relay", _relay_modules), ("relax", _relax_modules),
                                        ("tir", _tir_modules)])
def test_a_serializer_holds_only_what_the_last_two_snapshots_used(ir: str, modules: Any) -> None:
    big, small = modules()
    warm, fresh = serializer_for(ir), serializer_for(ir)
    warm.module(big)
    for serializer in (warm, fresh):
        serializer.module(small)
        serializer.module(small)
    assert _caches(warm) == _caches(fresh)
    assert any(_caches(fresh))


def _walks() -> int:
    gc.collect()
    return sum(isinstance(obj, Walk) for obj in gc.get_objects())


@pytest.mark.parametrize("ir,modules", [("relax", _relax_modules), ("tir", _tir_modules)])
def test_a_serializer_keeps_one_walk_to_replay_not_every_walk_it_made(ir: str, modules: Any) -> None:
    # Each walk replays the one before it, then lets it go: holding it, every snapshot of a trace
    # (its nodes, the IR it read) would live as long as the trace.
    big, small = modules()
    serializer = serializer_for(ir)
    before = _walks()
    for mod in (big, small, big, small, big):
        serializer.module(mod)
    assert _walks() - before == 1
