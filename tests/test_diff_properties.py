"""Properties of the diff over generated graphs and real models (hypothesis).

Graphs come from ``diffgraphs``: synthetic Relay-like models, and tvm.relay.testing models
read back as graphs. Their node ids are shuffled, known edits are applied (every kind the
mutator makes, ambiguous ones included: insertions next to a node of the same operator,
rewirings to one, neighbouring edits, repeated and deleted blocks), and variables are named
alike or not, so each test knows which nodes are the same on both sides. How right the
pairings are, per edit kind, is measured on a fixed corpus in ``test_diff_accuracy.py``.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from diffgraphs import Graph, accuracy, mutate, synthetic, true_pairing
from editscript import apply_edits, edit_script
from relayviz_instrument.diff import GraphDiff, diff
from relayviz_instrument.format import validate


@pytest.fixture(scope="module")
def real_documents() -> List[Dict[str, Any]]:
    """MLP, and ResNet-18 (32x32) as built, after SimplifyInference, and after FuseOps."""
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import to_relayviz

    mlp, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    resnet, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    simplified = relay.transform.InferType()(relay.transform.SimplifyInference()(resnet))
    fused = relay.transform.FuseOps(2)(simplified)
    return [to_relayviz(m) for m in (mlp, resnet, simplified, fused)]


seeds = st.integers(min_value=0, max_value=2 ** 32 - 1)
anonymous = st.booleans()
sizes = st.integers(min_value=20, max_value=400)
edit_counts = st.integers(min_value=1, max_value=8)


def source(seed: int, size: int, real: List[Dict[str, Any]], pick: int) -> Graph:
    """A synthetic graph, or (``pick`` > 0) one of the real documents."""
    if pick == 0:
        return synthetic(random.Random(seed), size)
    return Graph.from_document(real[pick - 1])


def translated(result: GraphDiff, ids_a: Dict[int, int], ids_b: Dict[int, int]) -> Dict[str, Any]:
    """The diff with every id replaced by the node's uid, for comparing two renderings."""
    ua = {i: u for u, i in ids_a.items()}
    ub = {i: u for u, i in ids_b.items()}
    return {
        "mapping": {ua[a]: ub[b] for a, b in result.mapping.items()},
        "added": sorted(ub[b] for b in result.added),
        "removed": sorted(ua[a] for a in result.removed),
        "changed": sorted((ua[m.before], ub[m.after], m.fields) for m in result.changed),
        "rewired": sorted((ua[m.before], ub[m.after]) for m in result.rewired),
        "hunks": [(h.kind, h.label, [ua[a] for a in h.removed], [ub[b] for b in h.added],
                   [(ua[a], ub[b]) for a, b in h.matched]) for h in result.hunks],
        "summary": result.summary,
    }


def edited_pair(seed: int, size: int, k: int, real: List[Dict[str, Any]], pick: int
                ) -> Tuple[Graph, Graph, List[str], random.Random]:
    rng = random.Random(seed)
    before = source(seed, size, real, pick)
    after = before.copy()
    done = mutate(after, rng, k)
    return before, after, done, rng


@given(seed=seeds, size=sizes, pick=st.integers(min_value=0, max_value=4), anon=anonymous)
def test_a_graph_against_itself_renumbered_is_empty(real_documents, seed: int, size: int, pick: int,
                                                    anon: bool) -> None:
    graph = source(seed, size, real_documents, pick)
    rng = random.Random(seed)
    doc, _ = graph.render(anonymous=anon)
    shuffled, _ = graph.render(rng, anonymous=anon)
    for other in (doc, shuffled):
        result = diff(doc, other)
        assert result.is_empty, result.summary
        assert len(result.mapping) == len(doc["nodes"])
        assert result.summary["unchanged"] == len(doc["nodes"]) and result.summary["hunks"] == []


@given(seed=seeds, size=sizes, k=edit_counts, pick=st.integers(min_value=0, max_value=4), anon=anonymous)
def test_the_result_does_not_depend_on_node_ids(real_documents, seed: int, size: int, k: int, pick: int,
                                                anon: bool) -> None:
    before, after, _, rng = edited_pair(seed, size, k, real_documents, pick)
    first = [before.render(rng, anon), after.render(rng, anon)]
    second = [before.render(rng, anon), after.render(rng, anon)]
    results = [translated(diff(a, b), ids_a, ids_b) for (a, ids_a), (b, ids_b) in (first, second)]
    assert results[0] == results[1]


@given(seed=seeds, size=sizes, k=edit_counts, pick=st.integers(min_value=0, max_value=4), anon=anonymous)
def test_pairs_are_one_to_one_and_never_join_different_kinds_or_operators(
        real_documents, seed: int, size: int, k: int, pick: int, anon: bool) -> None:
    before, after, _, rng = edited_pair(seed, size, k, real_documents, pick)
    (a, _), (b, _) = before.render(rng, anon), after.render(rng, anon)
    result = diff(a, b)
    assert len(set(result.mapping.values())) == len(result.mapping)
    assert not set(result.mapping) & set(result.removed)
    assert not set(result.mapping.values()) & set(result.added)
    assert len(result.mapping) + len(result.removed) == len(a["nodes"])
    assert len(result.mapping) + len(result.added) == len(b["nodes"])

    def operator(doc: Dict[str, Any], nid: int) -> Any:
        node = doc["nodes"][nid]
        if node["node_kind"] == "Call":
            callee = doc["nodes"][node["op"]]
            return callee["name"] if callee["node_kind"] == "Op" else callee["node_kind"]
        return node.get("name") if node["node_kind"] == "Op" else None

    for x, y in result.mapping.items():
        assert a["nodes"][x]["node_kind"] == b["nodes"][y]["node_kind"]
        assert operator(a, x) == operator(b, y)


@given(seed=seeds, size=sizes, k=edit_counts, pick=st.integers(min_value=0, max_value=4), anon=anonymous)
def test_the_edit_script_rebuilds_the_after_graph(real_documents, seed: int, size: int, k: int, pick: int,
                                                  anon: bool) -> None:
    before, after, _, rng = edited_pair(seed, size, k, real_documents, pick)
    (a, _), (b, _) = before.render(rng, anon), after.render(rng, anon)
    validate(a)
    validate(b)
    result = diff(a, b)
    assert apply_edits(a, edit_script(a, b, result)) == b


@given(seed=seeds, size=st.integers(min_value=100, max_value=600), k=edit_counts, anon=anonymous)
# Found by CI (issue 12): the block deleted by a rewire was the first of two alike blocks, and a
# run held by the pair of their operator's Op line paired the second with the deleted one.
@example(seed=38799, size=100, k=2, anon=False)
# Found by the search for more (make fuzz's profile): blocks repeated after an edit further up
# the chain were aligned from the run's other end (diff/sequence.py, slide).
@example(seed=16111254, size=106, k=6, anon=True)
# Found by hypothesis: one anonymous rewire changed the spine, and the spine of the other side
# started at a weight whose dominator-tree depth beat the input's (diff/blocks.py: the input is
# the leaf farthest from the output).
@example(seed=4816, size=125, k=1, anon=True)
# Found by searches: an edit at the chain's top stopped the common suffix of the block keys, and
# no block left between was unique on both sides, so most of the chain was not aligned (and a
# repeated block anchored on the wrong copy); stretches of blocks that occur once anchor it.
@example(seed=3949319704, size=132, k=8, anon=True)
@example(seed=1003355391, size=139, k=8, anon=True)
def test_known_edits_are_found(seed: int, size: int, k: int, anon: bool) -> None:
    """No edit, however ambiguous, throws the pairing far off: at least 90% of the pairs are
    right on every example, and the edits the diff implies are at most twice the true ones
    (the corpus of test_diff_accuracy.py measures how right, per kind of edit)."""
    check_known_edits(seed, size, k, anon)


@pytest.mark.xfail(strict=True, reason=(
    "Eight edits within the first blocks of a 101-node graph (named variables): propagation down "
    "from the pairs above (diff/matching/downward.py, down and slot) pairs the block that 'repeat "
    "block, new weights' copied (conv2d, tanh, add) with its copy instead of itself, and from "
    "there up (look_through.py look_up, upward.py pair_group) the split block that a rewire left "
    "unused with the next split block: the diff costs as many edits as the truth (25), but 9 of 84 pairs are "
    "neither true nor an equally good reading (precision 0.89, recall 0.88)"))
def test_known_edits_are_found_in_a_graph_edited_all_over_its_first_blocks() -> None:
    """A counterexample to test_known_edits_are_found the engine does not get right yet (found
    by a search over 12,000 seeds; see the reason)."""
    check_known_edits(seed=514792095, size=101, k=8, anon=False)


def check_known_edits(seed: int, size: int, k: int, anon: bool) -> None:
    """The body of test_known_edits_are_found, for one example."""
    before, after, done, rng = edited_pair(seed, size, k, [], 0)
    (a, ids_a), (b, ids_b) = before.render(rng, anon), after.render(rng, anon)
    result = diff(a, b)
    right, found, recovered, truth = accuracy(a, b, ids_a, ids_b, result.mapping)
    assert right / found >= 0.9 and recovered / truth >= 0.9, (done, right, found, recovered, truth)
    assert len(edit_script(a, b, result)) <= 2 * len(edit_script(a, b, true_pairing(ids_a, ids_b))), done
