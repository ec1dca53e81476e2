"""How right the diff's pairings are, per kind of edit, on a fixed corpus.

Synthetic graphs and tvm.relay.testing models (ResNet-18, MobileNet, an LSTM made of Lets),
each edited three times with each kind of edit the mutator makes (and with mixed kinds), with
real variable names and with every variable named alike; ``diffgraphs.accuracy`` is the
oracle (a pair is right when true, or one of several equally good readings). The floor is
0.999 for precision and recall, over the documents with real names and over those with
anonymous variables (issue 12). ``benchmarks/diff_accuracy.py`` prints the same table on a
larger corpus.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict

import pytest

from diffgraphs import Graph, accuracy_corpus, accuracy_rows, synthetic


def relay_testing_sources() -> Dict[str, Callable[[random.Random], Graph]]:
    """The tvm.relay.testing models of the corpus, as graphs to edit."""
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import to_relayviz

    docs = {
        "resnet18": to_relayviz(relay.transform.InferType()(
            tvm.relay.testing.resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))[0])),
        "mobilenet": to_relayviz(relay.transform.InferType()(
            tvm.relay.testing.mobilenet.get_workload(batch_size=1, image_shape=(3, 32, 32))[0])),
        "lstm": to_relayviz(tvm.relay.testing.lstm.get_workload(iterations=4, num_hidden=8)[0]),
    }
    return {name: (lambda rng, doc=doc: Graph.from_document(doc)) for name, doc in docs.items()}


def table(tallies: Dict[Any, Any]) -> str:
    rows = sorted(accuracy_rows(tallies, lambda key: (key[2], key[1])))
    return "\n".join(f"{naming:9s} {kind:26s} precision {p:.4f} recall {r:.4f} longer {n}"
                     for (naming, kind), p, r, n in rows)


@pytest.mark.slow
def test_pairings_are_right_per_edit_kind() -> None:
    sources: Dict[str, Callable[[random.Random], Graph]] = {"synthetic": lambda rng: synthetic(rng, 300)}
    sources.update(relay_testing_sources())
    tallies = accuracy_corpus(sources, seeds=range(2))
    overall = {naming: (p, r) for naming, p, r, _ in accuracy_rows(tallies, lambda key: key[2])}
    assert overall["named"][0] >= 0.999 and overall["named"][1] >= 0.999, table(tallies)
    assert overall["anonymous"][0] >= 0.999 and overall["anonymous"][1] >= 0.999, table(tallies)
