"""Inputs deeper than Python's recursion limit go through every stage: serialize, encode,
load and validate, diff. (The largest ones, 100,000 lets and 1,000,000 nodes, are measured
by ``make scale``: benchmarks/bench_scale.py.)"""

from __future__ import annotations

import sys

import tvm
from tvm import relay

from relayviz_instrument import diff, loads, to_relayviz
from relayviz_instrument.format import encode, new_document


def _anf(lets: int) -> tvm.IRModule:
    x = relay.var("x", shape=(2,), dtype="float32")
    names = [relay.var(f"v{i}", shape=(2,), dtype="float32") for i in range(lets)]
    body = names[-1]
    for i in reversed(range(lets)):
        body = relay.Let(names[i], relay.multiply(names[i - 1] if i else x, relay.const(2.0)), body)
    return tvm.IRModule.from_expr(relay.Function([x], body))


def test_a_let_chain_five_times_deeper_than_the_recursion_limit_goes_through_every_stage():
    lets = 5 * sys.getrecursionlimit()
    doc = to_relayviz(_anf(lets))
    kinds = [n["node_kind"] for n in doc["nodes"]]
    assert kinds.count("Let") == lets and kinds.count("Call") == lets
    assert loads(encode(doc)) == doc
    nodes = list(doc["nodes"])
    middle = [i for i, n in enumerate(nodes) if n["node_kind"] == "Call"][lets // 2]
    x = next(i for i, n in enumerate(nodes) if n["node_kind"] == "Var" and n["name"] == "x")
    nodes[middle] = {**nodes[middle], "args": [x, nodes[middle]["args"][1]]}
    changed = diff(doc, {**doc, "nodes": nodes})
    assert changed.summary["rewired"] == 1 and changed.summary["added"] == changed.summary["removed"] == 0


def test_a_call_chain_of_100000_nodes_validates_and_a_deep_one_diffs():
    def chain(count: int):
        nodes = [{"node_kind": "Var", "name": "x", "dtype": "float32", "shape": [2]},
                 {"node_kind": "Op", "name": "exp"}]
        nodes += [{"node_kind": "Call", "op": 1, "args": [i - 1 if i > 2 else 0]} for i in range(2, count - 1)]
        nodes.append({"node_kind": "Function", "params": [0], "body": count - 2})
        return new_document(nodes, ir="relay", functions={"main": count - 1})

    big = chain(100_000)
    assert len(loads(encode(big))["nodes"]) == 100_000
    deep = chain(3 * sys.getrecursionlimit())
    other = {**deep, "nodes": deep["nodes"][:-2] + [{"node_kind": "Call", "op": 1, "args": [0]}, deep["nodes"][-1]]}
    result = diff(deep, other)
    assert not result.is_empty and result.nodes_before == result.nodes_after == len(deep["nodes"])
