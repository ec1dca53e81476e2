"""``bisect_command``: find the pass whose inclusion makes a command fail, by running it with
fewer and fewer passes — the use case behind ``relayviz bisect -- COMMAND...``.

The command (a script, or a pytest test, that exits non-zero when the compiled model is
wrong) must put a :class:`~relayviz_instrument.capture.RelayVizBisect` in its PassContext's
instruments. Each run gets a limit N and a fresh trace directory through the environment
(``_bisect_env.py``); its RelayVizBisect lets the skippable passes numbered below N run and
skips the others, and records the run's trace. The first run has no limit: it must fail,
and it numbers the skippable passes (T of them). A run with limit 0 must pass. Between the
two, a binary search finds the smallest N that fails: pass number N-1 is the one whose
inclusion flips the result, and its node-level diff is read from the trace of that failing
run. When the command passes with every pass, or fails with every pass skipped, there is
nothing to find, and the result says which.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from ..names import printable

from .._bisect_env import bisect_environment
from .diff import FileComparison
from ..diff import diff
from ..errors import RelayVizError, RelayVizUsageError
from ..store import PassRecord, Trace, load_trace

__all__ = ["BisectRun", "BisectResult", "bisect_command", "FOUND", "FAILS_ALWAYS", "PASSES_ALWAYS"]

#: Verdicts of a bisection.
FOUND, FAILS_ALWAYS, PASSES_ALWAYS = "found", "fails with every limit", "passes with every limit"
#: Last lines of a run's output kept for the report.
_OUTPUT_LINES = 12
#: How many times the first run is repeated to learn the user's Sequentials (at most).
_LEARNING_RUNS = 3


@dataclass
class BisectRun:
    """One run of the command: its limit (None: every pass), exit status, time, the trace it
    wrote, how many skippable passes it numbered and skipped, and the end of its output."""

    limit: Optional[int]
    status: int
    seconds: float
    trace: Optional[Trace]
    numbered: int = 0
    skipped: int = 0
    output: str = ""
    timed_out: bool = False

    @property
    def failed(self) -> bool:
        return self.status != 0 or self.timed_out

    def to_json(self) -> Dict[str, Any]:
        return {"limit": self.limit, "status": self.status, "timed_out": self.timed_out,
                "seconds": round(self.seconds, 3), "numbered": self.numbered, "skipped": self.skipped}


@dataclass
class BisectResult:
    """What a bisection found: the verdict, the runs, and for ``FOUND`` the pass event whose
    inclusion makes the command fail (from the first failing run's trace) and its diff."""

    command: List[str]
    verdict: str
    runs: List[BisectRun]
    skippable: int
    culprit: Optional[PassRecord] = None
    failing_limit: Optional[int] = None
    comparison: Optional[FileComparison] = None
    traces: Optional[str] = None
    notes: List[str] = field(default_factory=list)

    @property
    def status(self) -> int:
        """``relayviz bisect``'s exit status: 0 when a pass was found, 1 otherwise."""
        return 0 if self.verdict == FOUND else 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(f"bisect {' '.join(self.command)}: {self.skippable} passes could be skipped; "
                   f"{len(self.runs)} runs", style="bold")
        table = Table(box=None, pad_edge=False, padding=(0, 1))
        for name in ("limit", "exit", "skipped", "s"):
            table.add_column(name, justify="right")
        for run in self.runs:
            exit_text = "timeout" if run.timed_out else str(run.status)
            table.add_row("none" if run.limit is None else str(run.limit),
                          Text(exit_text, style="red" if run.failed else "green"), str(run.skipped),
                          f"{run.seconds:.1f}")
        yield table
        if self.verdict == FOUND and self.culprit is not None:
            r = self.culprit
            line = Text("found: ", style="bold red")
            line.append(f"pass event #{r.index} {printable(r.name)} (skippable pass {r.bisect}; "
                        f"opt_level {r.opt_level})", style="bold")
            line.append(" makes the command fail")
            if self.failing_limit is not None:
                line.append(f": it passes with limit {self.failing_limit - 1}, fails with limit {self.failing_limit}")
            yield line
            if self.comparison is not None:
                yield self.comparison
        elif self.verdict == PASSES_ALWAYS:
            yield Text("the command passes with every pass running: there is no failure to bisect",
                       style="bold yellow")
        elif self.verdict == FAILS_ALWAYS:
            yield Text("the command fails with every limit, even with all skippable passes skipped: the failure "
                       "does not come from a pass bisection can skip (or the check fails on its own)",
                       style="bold yellow")
        for note in self.notes:
            yield Text("note: " + note, style="yellow")
        last = self.runs[-1] if self.runs else None
        if self.verdict != FOUND and last is not None and last.output:
            yield Text("the end of the last run's output:", style="dim")
            yield Text(last.output, style="dim")
        if self.traces:
            yield Text(f"traces of the runs: {self.traces}", style="dim")

    def to_json(self) -> Dict[str, Any]:
        """``{"command", "verdict", "skippable", "runs", "failing_limit", "culprit", "diff", "notes",
        "traces"}``."""
        return {"command": self.command, "verdict": self.verdict, "skippable": self.skippable,
                "runs": [run.to_json() for run in self.runs], "failing_limit": self.failing_limit,
                "culprit": None if self.culprit is None else self.culprit.to_json(),
                "diff": None if self.comparison is None else self.comparison.to_json(),
                "notes": list(self.notes), "traces": self.traces}


def bisect_command(command: Sequence[str], *, timeout: Optional[float] = None,
                   keep_traces: Optional[str] = None, cwd: Optional[str] = None,
                   progress: Optional[Callable[[BisectRun], None]] = None) -> BisectResult:
    """Bisect the skippable passes of ``command`` (see the module docstring).

    ``timeout``: seconds per run (a run that takes longer counts as failing). ``keep_traces``:
    a directory to keep each run's trace in (by default they go to a temporary directory,
    removed at the end). ``progress`` is called with each run as it ends. Raises
    :class:`RelayVizUsageError` when the command records no trace (no RelayVizBisect in its
    PassContext) or ignores the limit.
    """
    command = list(command)
    if not command:
        raise RelayVizUsageError("give the command to bisect after --: relayviz bisect -- python check.py")
    root = Path(keep_traces) if keep_traces else Path(tempfile.mkdtemp(prefix="relayviz-bisect-"))
    if keep_traces:
        root.mkdir(parents=True, exist_ok=True)
    try:
        return _Bisection(command, root, timeout, cwd, progress).run(kept=str(root) if keep_traces else None)
    finally:
        if not keep_traces:
            shutil.rmtree(root, ignore_errors=True)


class _Bisection:
    def __init__(self, command: List[str], root: Path, timeout: Optional[float], cwd: Optional[str],
                 progress: Optional[Callable[[BisectRun], None]]) -> None:
        self.command = command
        self.progress = progress
        self.root = root
        self.timeout = timeout
        self.cwd = cwd
        self.runs: List[BisectRun] = []
        self.keep: Set[str] = set()

    def run(self, kept: Optional[str]) -> BisectResult:
        first = self.first_run()
        total = first.numbered
        if not first.failed:
            return self.result(PASSES_ALWAYS, total, kept)
        if total == 0:
            raise RelayVizUsageError("the command's RelayVizBisect numbered no pass it could skip: its compilation "
                                     "runs no optimization pass on a Relay or Relax module (or every one is kept)")
        if self.execute(0).failed:
            return self.result(FAILS_ALWAYS, total, kept)
        passes, fails = 0, first
        while (fails.limit if fails.limit is not None else total) - passes > 1:
            middle = (passes + (fails.limit if fails.limit is not None else total)) // 2
            run = self.execute(middle)
            if run.failed:
                fails = run
            else:
                passes = middle
        limit = fails.limit if fails.limit is not None else total
        assert fails.trace is not None
        culprit = next((r for r in fails.trace.records if r.bisect == limit - 1 and not r.skipped), None)
        result = self.result(FOUND, total, kept)
        result.failing_limit = limit
        result.culprit = culprit
        if culprit is None:
            result.notes.append(f"the failing run's trace holds no event numbered {limit - 1}")
        elif culprit.before and culprit.after:
            result.comparison = FileComparison(f"{culprit.name} #{culprit.index} before", "after",
                                               diff(fails.trace.snapshot(culprit.before),
                                                    fails.trace.snapshot(culprit.after)))
        else:
            result.notes.append(f"{culprit.name} #{culprit.index} has no snapshots in the trace "
                                f"({culprit.note or 'its module was not snapshotted'})")
        return result

    def first_run(self) -> BisectRun:
        """The run without a limit; repeated (at most twice) when it shows Sequentials of the
        user's that the instrument numbered, now kept from being skipped."""
        for _ in range(_LEARNING_RUNS):
            run = self.execute(None)
            assert run.trace is not None
            containers = _numbered_containers(run.trace.records) - self.keep
            if not containers:
                return run
            self.keep |= containers
        raise RelayVizUsageError("the passes holding other passes change from run to run: "
                                 + ", ".join(sorted(containers)))

    def execute(self, limit: Optional[int]) -> BisectRun:
        trace_dir = self.root / f"run-{len(self.runs) + 1}-limit-{'none' if limit is None else limit}"
        env = {**os.environ, **bisect_environment(limit, trace_dir, sorted(self.keep))}
        started = time.perf_counter()
        timed_out = False
        try:
            done = subprocess.run(self.command, env=env, cwd=self.cwd, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=self.timeout)
            status, output = done.returncode, done.stdout
        except subprocess.TimeoutExpired as exc:
            status, output, timed_out = -1, exc.stdout or b"", True
        except OSError as exc:
            raise RelayVizUsageError(f"cannot run {self.command[0]!r}: {exc.strerror or exc}") from None
        seconds = time.perf_counter() - started
        tail = "\n".join(output.decode("utf-8", "replace").splitlines()[-_OUTPUT_LINES:])
        trace = _read_run_trace(trace_dir, tail)
        numbered = sum(1 for r in trace.records if r.bisect is not None)
        skipped = sum(1 for r in trace.records if r.skipped)
        run = BisectRun(limit, status, seconds, trace, numbered, skipped, tail, timed_out)
        self.runs.append(run)
        if self.progress is not None:
            self.progress(run)
        if limit is not None and numbered - skipped != min(limit, numbered):
            raise RelayVizUsageError(f"the command ran {numbered - skipped} skippable passes with limit {limit}: its "
                                     "RelayVizBisect ignores RELAYVIZ_BISECT_LIMIT (make it with RelayVizBisect(), "
                                     "no limit argument)")
        return run

    def result(self, verdict: str, total: int, kept: Optional[str]) -> BisectResult:
        notes = []
        if self.keep:
            notes.append("never skipped, as they hold other passes: " + ", ".join(sorted(self.keep)))
        return BisectResult(self.command, verdict, self.runs, total, traces=kept, notes=notes)


def _read_run_trace(trace_dir: Path, output: str) -> Trace:
    """The trace one run wrote, or a message saying the command has no RelayVizBisect."""
    if not (trace_dir / "manifest.jsonl").is_file():
        raise RelayVizUsageError("the command wrote no trace: put RelayVizBisect() in the instruments of the "
                                 "PassContext it compiles under (relayviz_instrument.RelayVizBisect); its output "
                                 f"ended with: {output[-400:]}")
    try:
        return load_trace(trace_dir)
    except RelayVizError as exc:
        raise RelayVizUsageError(f"the trace of a run cannot be read: {exc}") from None


def _numbered_containers(records: Sequence[PassRecord]) -> Set[str]:
    """Names of numbered events that hold other passes than InferType: Sequentials the
    instrument could not tell apart from a pass when it was asked."""
    numbered = {r.index: r for r in records if r.bisect is not None}
    return {numbered[r.parent].name for r in records
            if r.parent in numbered and r.name != "InferType"}
