"""The anchors phase of the matcher (diff/matching/anchors.py): identical documents, global
functions and parameters by name, blocks of a chain whose parameters have no names, and the
parameters left, by their place in the lists."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from diffgraphs import T4, T8, DocumentBuilder as Builder
from matchstates import paired, state
from relayviz_instrument.diff.matching.anchors import align_blocks, anchor, identical, leftover_params

Doc = Dict[str, Any]


def add_relu(params_order: List[str]) -> Tuple[Doc, Dict[str, int]]:
    """main(x, w) = relu(add(x, w)), its parameters listed in ``params_order``."""
    b = Builder()
    ids = {"x": b.var("x"), "w": b.var("w")}
    ids["add"] = b.call("add", ids["x"], ids["w"])
    ids["relu"] = b.call("nn.relu", ids["add"])
    ids["main"] = b.function(ids["relu"], [ids[name] for name in params_order])
    return b.document(), ids


def test_identical_documents_are_paired_node_for_node_at_once() -> None:
    doc, _ = add_relu(["x", "w"])
    st = state(doc, doc)
    assert identical(st)
    assert paired(st) == {(i, i) for i in range(len(doc["nodes"]))}


def test_documents_that_differ_are_not_identical_and_stay_unpaired() -> None:
    a, _ = add_relu(["x", "w"])
    b, _ = add_relu(["w", "x"])
    st = state(a, b)
    assert not identical(st)
    assert paired(st) == set()


def test_anchor_pairs_functions_and_parameters_by_name_wherever_the_list_puts_them() -> None:
    a, ia = add_relu(["x", "w"])
    b, ib = add_relu(["w", "x"])  # the same parameters, listed the other way round
    st = state(a, b)
    anchor(st)
    assert paired(st) == {(ia["main"], ib["main"]), (ia["x"], ib["x"]), (ia["w"], ib["w"])}


def anonymous_params(types: List[Dict[str, Any]]) -> Tuple[Doc, List[int]]:
    """main(p, p, ...) = (relu(p), relu(p), ...): every parameter named alike."""
    b = Builder()
    params = [b.var("p", ty) for ty in types]
    outs = [b.call("nn.relu", p, ty=ty) for p, ty in zip(params, types)]
    b.function(b.add({"node_kind": "Tuple", "fields": outs}), params)
    return b.document(), params


def test_alike_parameters_wait_for_leftover_params_which_pairs_them_by_place() -> None:
    # The parameter of type T4 was removed from the middle of the list.
    a, pa = anonymous_params([T8, T4, T8])
    b, pb = anonymous_params([T8, T8])
    st = state(a, b)
    anchor(st)
    assert not {x for x, _ in paired(st)} & set(pa), "a name that is not unique is no anchor"
    made = paired(st)
    leftover_params(st)
    assert paired(st) - made == {(pa[0], pb[0]), (pa[2], pb[1])}


def dense_chain(blocks: List[int], weights: int = 6) -> Tuple[Doc, Dict[int, Tuple[int, int, int]]]:
    """x -> dense(., w_k) -> relu for each k of ``blocks``; every parameter is named ``p`` and
    all ``weights`` weights stay in the list (a deleted block leaves its weight unused)."""
    b = Builder()
    x = b.var("p")
    ws = [b.var("p") for _ in range(weights)]
    h = x
    ids = {}
    for k in blocks:
        dense = b.call("nn.dense", h, ws[k])
        h = b.call("nn.relu", dense)
        ids[k] = (ws[k], dense, h)
    b.function(h, [x] + ws)
    return b.document(), ids


def test_align_blocks_reads_a_block_deleted_from_alike_ones_as_deleted() -> None:
    a, ia = dense_chain([0, 1, 2, 3, 4, 5])
    b, ib = dense_chain([0, 1, 3, 4, 5])  # block 2 deleted, its weight left in the list
    st = state(a, b)
    anchor(st)
    made = paired(st)
    align_blocks(st)
    truth = {(x, y) for k in ib for x, y in zip(ia[k], ib[k])}
    new = paired(st) - made
    assert truth <= new, sorted(truth - new)
    # The blocks above the deleted one are paired with themselves, not shifted onto it.
    assert not {x for x, _ in new} & set(ia[2][1:])


def test_align_blocks_leaves_named_parameters_to_the_other_phases() -> None:
    a, _ = add_relu(["x", "w"])
    b, _ = add_relu(["w", "x"])
    st = state(a, b)
    align_blocks(st)
    assert paired(st) == set()
