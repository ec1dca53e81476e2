"""How right the diff's pairings are, per kind of edit: precision and recall on a corpus.

Synthetic graphs (``tests/diffgraphs.py``) and tvm.relay.testing models (ResNet-18,
MobileNet, an LSTM of Lets), each edited ``--edits`` times with each kind of edit the mutator
makes (and with mixed kinds), for ``--seeds`` seeds, with real variable names and with every
variable named alike. A found pair is right when it is true or one of several equally good
readings (``diffgraphs.accuracy``); "longer" counts the diffs that imply more edits than the
true pairing. Nothing is asserted (``tests/test_diff_accuracy.py`` asserts the floors on a
smaller corpus).

    python benchmarks/diff_accuracy.py [--seeds 8] [--edits 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from diffgraphs import accuracy_corpus, accuracy_rows, synthetic
from test_diff_accuracy import relay_testing_sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--edits", type=int, default=3, help="edits per document")
    args = parser.parse_args()
    sources = {"synthetic": lambda rng: synthetic(rng, 300)}
    sources.update(relay_testing_sources())
    tallies = accuracy_corpus(sources, range(args.seeds), args.edits)
    print(f"pairs right per edit kind: {args.seeds} seeds x {args.edits} edits per document, "
          f"sources {', '.join(sources)}")
    print(f"{'variables':10s} {'edit':26s} {'precision':>9s} {'recall':>9s} {'longer':>6s}")
    for grouping in (lambda key: (key[2], key[1]), lambda key: (key[2], "all kinds"),
                     lambda key: ("all", f"{key[0]}"), lambda key: ("all", "all")):
        for (naming, kind), precision, recall, longer in sorted(accuracy_rows(tallies, grouping)):
            print(f"{naming:10s} {kind:26s} {precision:9.4f} {recall:9.4f} {longer:6d}")
        print()


if __name__ == "__main__":
    main()
