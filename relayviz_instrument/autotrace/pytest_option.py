"""``pytest --relayviz-trace DIR``: every pass context of each test traced into a folder of its
own, ``DIR/<test folder>/``, and the folder's index (``store/suite.py``) written again after
each test, with its outcome, so that a session that dies still leaves the tests it finished.

The pytest plugin (``regression/plugin.py``) registers the option and its hooks and calls in here
only when the option is given; the session's state is one :class:`TracedSuite`, kept in the
session's ``config.stash``.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from ..store.suite import SuiteEntry, test_folder_name, write_suite

__all__ = ["TracedSuite", "TRACED", "trace_session", "traced_test", "note_outcome"]


class TracedSuite:
    """The tests of one session traced so far into ``folder``, and each test's outcome."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        #: The index's entries, in the order the tests ran.
        self.entries: List[SuiteEntry] = []
        #: Each test's outcome so far, by node id (a test without one passed).
        self.outcomes: Dict[str, str] = {}

    @contextmanager
    def test(self, nodeid: str) -> Iterator[None]:
        """Trace every pass context of the test ``nodeid`` while it runs, then add it to the index."""
        from . import start, stop

        name = test_folder_name(nodeid, [e.folder for e in self.entries if e.folder is not None])
        start(Path(self.folder) / name)
        try:
            yield
        finally:
            trace = stop()
            outcome = self.outcomes.get(nodeid, "passed")
            self.entries.append(SuiteEntry(nodeid, name if trace is not None and trace.path is not None else None,
                                           outcome))
            write_suite(self.folder, self.entries)

    def note(self, nodeid: str, report: pytest.TestReport) -> None:
        """The report of one phase of a test: it failed if any phase failed."""
        if report.failed:
            self.outcomes[nodeid] = "failed"
        elif report.skipped and self.outcomes.get(nodeid) != "failed":
            self.outcomes[nodeid] = "skipped"


#: The session's traced suite, under ``--relayviz-trace``.
TRACED = pytest.StashKey[TracedSuite]()


def trace_session(config: pytest.Config, folder: str) -> None:
    """The session traces its tests into ``folder``."""
    config.stash[TRACED] = TracedSuite(folder)


@contextmanager
def traced_test(item: pytest.Item) -> Iterator[None]:
    """Trace the test ``item`` while it runs (see :meth:`TracedSuite.test`)."""
    with item.config.stash[TRACED].test(item.nodeid):
        yield


def note_outcome(item: pytest.Item, report: pytest.TestReport) -> None:
    """One phase of the test ``item`` reported (see :meth:`TracedSuite.note`)."""
    item.config.stash[TRACED].note(item.nodeid, report)
