"""The pytest plugin: the ``relayviz_snapshot`` fixture, and ``pytest --relayviz-trace DIR``
(every pass context of each test traced into ``DIR/<test id>/``: registered here, done by
``relayviz_instrument.autotrace.pytest_option``), registered through the ``pytest11`` entry
point ``relayviz_instrument.regression.plugin``.

It imports neither TVM nor syrupy: pytest loads it in every session of every project that
has relayviz_instrument installed. The fixture needs syrupy (``pip install
'relayviz_instrument[pytest]'``) and says so when it is missing.
"""

from __future__ import annotations

import sys
from typing import Any, Generator, List, Optional

import pytest

from ..errors import RelayVizDependencyError

__all__ = ["relayviz_snapshot", "NOTES"]

#: Notes collected during the session (a snapshot that matches but was written by another TVM).
NOTES = pytest.StashKey[List[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("relayviz_snapshot_dir",
                  "folder for every relayviz snapshot, relative to the ini file (one sub-folder per test "
                  "module); default: snapshots/ next to each test module", default="")
    parser.getgroup("relayviz").addoption(
        "--relayviz-trace", metavar="DIR", default=None, dest="relayviz_trace",
        help="trace every TVM pass context of each test into DIR/<test id>/ (relayviz show DIR lists the tests)")


@pytest.fixture
def relayviz_snapshot(request: pytest.FixtureRequest) -> Any:
    """A syrupy snapshot of a compilation: ``assert relayviz_snapshot == trace`` pins each pass
    event's name, nesting, order, whether it changed the module and its output module;
    ``assert relayviz_snapshot == mod`` pins one module, function or built graph. Call it for
    options: ``relayviz_snapshot(constants="shapes", names=False, passes=..., exclude=...)``."""
    try:
        from .extension import assertion_for
    except ImportError as exc:
        raise RelayVizDependencyError(f"the relayviz_snapshot fixture needs syrupy ({exc}): "
                                      "pip install 'relayviz_instrument[pytest]'") from None
    if not request.config.pluginmanager.hasplugin("syrupy"):
        raise RelayVizDependencyError("the relayviz_snapshot fixture needs syrupy's pytest plugin, which this "
                                      "session does not load (-p no:syrupy?)")
    return assertion_for(request)


def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("relayviz_trace", None)
    if folder:
        from ..autotrace.pytest_option import trace_session

        trace_session(config, folder)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Generator[None, Any, None]:
    """Under ``--relayviz-trace DIR``: the test's every pass context traced into its own folder,
    and the folder's index written again once the test is over (its outcome known)."""
    if not item.config.getoption("relayviz_trace", None):
        yield
        return
    from ..autotrace.pytest_option import traced_test

    with traced_test(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    """The outcome of each test under ``--relayviz-trace``: failed if any phase failed."""
    made = yield
    if item.config.getoption("relayviz_trace", None):
        from ..autotrace.pytest_option import note_outcome

        note_outcome(item, made.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> Generator[None, Any, None]:
    """``assert mod == relayviz_snapshot`` with a TVM object on the left never reaches the
    snapshot: TVM objects answer ``==`` themselves. Say so instead of what syrupy would say
    about a comparison that did not happen."""
    outcome = yield
    extension = sys.modules.get(f"{__package__}.extension")
    if extension is None or op != "==" or not isinstance(right, extension.RelayVizSnapshotAssertion):
        return
    if isinstance(left, extension.SnapshotAssertion) or getattr(right, "_compared", None) is left:
        return
    outcome.force_result([[  # one explanation, as each implementation of the hook returns
        f"{type(left).__name__} == relayviz_snapshot: the {type(left).__name__} answered == itself and "
        "the snapshot was never compared",
        "write the snapshot first: assert relayviz_snapshot == value"]])


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    notes: Optional[List[str]] = config.stash.get(NOTES, None)
    if notes:
        terminalreporter.write_sep("-", "relayviz snapshot notes")
        for note in notes:
            terminalreporter.write_line(note)
        terminalreporter.write_line("(only the versions in their headers differ; pytest --snapshot-update "
                                    "records the versions of this run)")
