"""The state the matcher's phases share (diff/matching/state.py): the pairing rules every phase
goes through, and the sides' cached arrays."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from diffgraphs import DocumentBuilder as Builder
from matchstates import paired, rank_a, rank_b, state
from relayviz_instrument.format import validate


def tanh_relu() -> Tuple[Dict[str, Any], Dict[str, int]]:
    """main(x) = relu(tanh(x))."""
    b = Builder()
    ids = {"x": b.var("x")}
    ids["tanh"] = b.call("tanh", ids["x"])
    ids["relu"] = b.call("nn.relu", ids["tanh"])
    ids["main"] = b.function(ids["relu"], [ids["x"]])
    return b.document(), ids


def test_pair_is_one_to_one_and_within_a_label() -> None:
    a, ia = tanh_relu()
    b, ib = tanh_relu()
    st = state(a, b)
    relu_a, relu_b, tanh_b = rank_a(st, ia["relu"]), rank_b(st, ib["relu"]), rank_b(st, ib["tanh"])
    assert not st.pair(relu_a, tanh_b)  # another operator
    assert st.pair(relu_a, relu_b)
    assert not st.pair(relu_a, relu_b)  # already paired
    assert paired(st) == {(ia["relu"], ib["relu"])}
    assert st.count == 1 and st.queue == [relu_a] and st.recent == [relu_a]


def test_walk_pairs_a_sub_graph_of_equal_signature_input_by_input() -> None:
    a, ia = tanh_relu()
    b, ib = tanh_relu()
    st = state(a, b)
    st.walk(rank_a(st, ia["relu"]), rank_b(st, ib["relu"]))
    assert paired(st) == {(ia[k], ib[k]) for k in ("relu", "tanh", "x")}


def module(functions: Dict[str, str]) -> Dict[str, Any]:
    """A Relax module of global functions named as given, each a PrimFunc or a Function whose
    body is ``relu`` of its one parameter."""
    nodes: list = []
    table = {}
    for name, kind in functions.items():
        if kind == "PrimFunc":
            nodes.append({"node_kind": "PrimFunc", "name": name, "digest": "sha256:" + "0" * 32,
                          "signature": [{"name": "a", "dtype": "float32", "shape": [4]}]})
        else:
            nodes += [{"node_kind": "Var", "name": "a", "dtype": "float32", "shape": [4]},
                      {"node_kind": "Op", "name": "relax.nn.relu"},
                      {"node_kind": "Call", "op": len(nodes) + 1, "args": [len(nodes)]},
                      {"node_kind": "Function", "body": len(nodes) + 2, "params": [len(nodes)]}]
        table[name] = len(nodes) - 1
    doc = {"format": "relayviz", "version": [1, 1], "ir": "relax", "functions": table, "nodes": nodes}
    validate(doc)
    return doc


def test_a_function_whose_name_the_other_side_gives_to_another_kind_pairs_with_nothing() -> None:
    # FuseTIR made f a PrimFunc: the Function f of before is not the Function g of after.
    st = state(module({"f": "Function"}), module({"f": "PrimFunc", "g": "Function"}))
    f_a, g_b = st.A.graph.functions["f"], st.B.graph.functions["g"]
    assert st.A.l0[f_a] == st.B.l0[g_b]
    assert not st.pair(f_a, g_b)
    assert st.pair(st.A.inputs[f_a][0], st.B.inputs[g_b][0])  # their bodies are not functions


def test_partners_is_made_again_when_the_pair_count_changes() -> None:
    a, ia = tanh_relu()
    b, ib = tanh_relu()
    st = state(a, b)
    assert st.A.partners(st.count).tolist() == [-1] * len(a["nodes"])
    st.pair(rank_a(st, ia["x"]), rank_b(st, ib["x"]))
    assert st.A.partners(st.count)[rank_a(st, ia["x"])] == rank_b(st, ib["x"])
    assert rank_a(st, ia["x"]) not in st.A.unpaired(st.count)
