"""An instrument independent of relayviz_instrument, that only counts the pass events of a
compilation: the tests compare what a trace recorded with its counts."""

from __future__ import annotations

from collections import Counter
from typing import Any

import tvm


class EventCounter(tvm.instrument.PassInstrument):
    """Counts pass events by name, and the deepest nesting."""

    def __init__(self) -> None:
        super().__init__()
        self.names: Counter = Counter()
        self.depth = 0
        self.max_depth = 0

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self.names[info.name] += 1
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        self.depth -= 1
