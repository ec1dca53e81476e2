"""The one thread a trace records, and what it counts of the others.

TVM runs a pass's callbacks in the thread that runs the pass, and one trace records one
thread's nesting of events: the first thread that calls the instrument back. The pass events
of other threads (and the builds they record) are counted by thread name, and so are the passes
other threads run outside any pass context, where no instrument sees them (a process trace
counts those: TVM's default context is one per thread). The trace names both as missed.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import List, Optional

__all__ = ["RecordedThread"]


class RecordedThread:
    """The thread a trace records (unknown until the first callback), and the others' events."""

    def __init__(self) -> None:
        self.ident: Optional[int] = None
        self.name = ""
        #: Pass events (and builds) other threads ran, not recorded, by thread name.
        self.elsewhere: Counter[str] = Counter()
        #: Passes other threads ran where no instrument sees them, by thread name.
        self.unseen: Counter[str] = Counter()

    def other(self, *, event: bool = False) -> bool:
        """Whether this callback runs in a thread other than the one the trace records: the
        first that called it back. An ``event`` (this callback begins one) of another thread
        is counted."""
        ident = threading.get_ident()
        if ident == self.ident:
            return False
        if self.ident is None:
            self.ident, self.name = ident, threading.current_thread().name
            return False
        if event:
            self.elsewhere[threading.current_thread().name] += 1
        return True

    def count_unseen(self) -> None:
        """A pass this thread runs outside any context the trace is in: nothing will tell it."""
        self.unseen[threading.current_thread().name] += 1

    def missed(self) -> List[str]:
        """What the trace misses of other threads, as problems."""
        missed = []
        for counted, what in (
                (self.elsewhere, "pass events (and builds) run in other threads were not recorded (a trace records "
                                 "one thread, the first to enter a pass context: {owner})"),
                (self.unseen, "passes run outside any pass context in other threads than {owner} cannot "
                              "be seen (TVM's default context is one per thread), counted as Python "
                              "called them, each with the passes inside it")):
            if counted:
                counts = ", ".join(f"{name}: {n}" for name, n in sorted(counted.items()))
                missed.append(f"{what.format(owner=self.name)}: {counts}")
        return missed
