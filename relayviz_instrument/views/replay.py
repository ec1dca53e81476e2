"""``replay_event``: run one recorded pass again from the input module its trace kept, under
the recorded PassContext and target, without the script that first ran it — the use case
behind ``relayviz replay``.

What the run is compared with: for the pass that raised, the recorded error (the same
exception type and the same last line of its message, addresses masked, is "the same way");
for a pass that succeeded, its recorded output snapshot (a check that the pass is
deterministic). The exit status says which: 0 the pass succeeds (with the recorded output,
when one was recorded), 1 it fails the same way as recorded, 3 anything else (another error,
an error where none was recorded, another output). What is needed to make the pass again,
and its limits, is described in :mod:`relayviz_instrument.capture.reproducer`. A module kept
as TVMScript (Relax, TIR) is checked against the structural hash recorded with it: when it
reads back different (TVMScript does not carry every detail of every module), the result says
so (``module_exact``), since the outcome may then differ from the traced run for that reason.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

import orjson
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ..names import printable

from .diff import FileComparison
from ..diff import diff
from ..errors import RelayVizTraceError, RelayVizUsageError
from ..format import Document
from ..format.irs import EMPTY, OTHER
from ..analysis.selection import select_event
from ..store import PassRecord, Trace, load_trace

if TYPE_CHECKING:
    from ..capture.reproducer import PreparedPass

__all__ = ["ReplayResult", "replay_event", "REPRODUCED", "SUCCEEDS", "DIFFERS"]

#: Exit statuses of ``relayviz replay``.
SUCCEEDS, REPRODUCED, DIFFERS = 0, 1, 3
#: Lines of an error message printed (its end, where TVM puts the message).
_ERROR_LINES = 30


@dataclass
class ReplayResult:
    """One pass run again: how it was made, what it raised (``error``) or how its output
    compares with the recorded one (``comparison``), and the verdict (``outcome``, ``status``).
    ``module_exact``: whether the kept module read back is structurally the pass's input
    (None when its form does not record that)."""

    trace: str
    record: PassRecord
    made_by: str
    seconds: float
    outcome: str
    status: int
    error: Optional[str] = None
    comparison: Optional[FileComparison] = None
    module_exact: Optional[bool] = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        r = self.record
        context = (r.replay or {}).get("context", {})
        head = Text()
        head.append(f"replayed {printable(r.name)} (#{r.index})", style="bold")
        head.append(f" of {self.trace}: {self.made_by} at opt_level {context.get('opt_level')}")
        if context.get("disabled_pass"):
            head.append(f", disabled {', '.join(context['disabled_pass'])}")
        if context.get("config"):
            head.append(f", config {', '.join(context['config'])}")
        target = (r.replay or {}).get("target")
        head.append(f", target {target}" if target else ", no target current")
        head.append(f"; {self.seconds:.2f} s")
        yield head
        if self.module_exact is False:
            yield Text("note: the kept module reads back different from the pass's input, in details its TVMScript "
                       "does not carry; the outcome may differ from the traced run for that reason", style="yellow")
        style = {SUCCEEDS: "bold green", REPRODUCED: "bold red"}.get(self.status, "bold yellow")
        yield Text(self.outcome, style=style)
        if self.error is not None:
            lines = self.error.splitlines()
            shown = lines[-_ERROR_LINES:]
            if len(lines) > len(shown):
                shown = [f"[... {len(lines) - len(shown)} lines]"] + shown
            yield Text("\n".join(shown), style="red")
        if self.comparison is not None:
            yield self.comparison

    def to_json(self) -> Dict[str, Any]:
        """``{"trace", "index", "name", "made_by", "outcome", "status", "seconds", "error",
        "recorded_error", "module_exact", "diff"}`` (``diff``: the new output against the
        recorded one)."""
        return {"trace": self.trace, "index": self.record.index, "name": self.record.name,
                "made_by": self.made_by, "outcome": self.outcome, "status": self.status,
                "seconds": round(self.seconds, 4), "error": self.error, "recorded_error": self.record.error,
                "module_exact": self.module_exact,
                "diff": None if self.comparison is None else self.comparison.to_json()}


def replay_event(trace: Union[str, "os.PathLike[str]", Trace], selector: Union[str, int, None] = None, *,
                 pass_from: Optional[str] = None) -> ReplayResult:
    """Run a pass of ``trace`` again: by default the pass that raised; ``selector`` (an index or
    a name, as ``--pass`` takes it) picks any event whose input module was kept
    (``RelayVizTrace(keep_modules=...)``). ``pass_from`` (``module:name``) makes a pass the
    trace cannot make from its name. Raises :class:`RelayVizUsageError` when there is nothing
    to replay or the pass cannot be made again."""
    loaded = trace if isinstance(trace, Trace) else load_trace(trace)
    where = str(loaded.path)
    record = _chosen(loaded, selector)
    facts = record.replay
    assert facts is not None
    module_ref = facts.get("module")
    if not isinstance(module_ref, str):
        raise RelayVizTraceError(f"{where}: pass event #{record.index} names no kept module; the trace is corrupt")
    from ..capture.reproducer import prepare_pass  # imports TVM

    prepared = prepare_pass(record.name, record.ir, loaded.module(module_ref), facts,
                            where=f"{where}: pass event #{record.index} ({record.name})", pass_from=pass_from)
    # A module read back from TVMScript is compared with the recorded input snapshot too: the
    # structural hash ignores names, which TVMScript makes unique (two buffers "T_multiply").
    read_back = None
    input_now = _snapshot(loaded, prepared.module) if prepared.exact is not None and record.before else None
    if input_now is not None and record.before:
        read_back = diff(loaded.snapshot(record.before), input_now).to_json()
    result = _run(loaded, record, prepared, read_back)
    result.module_exact = prepared.exact if read_back is None else bool(prepared.exact) and _no_changes(read_back)
    return result


def _snapshot(trace: Trace, module: Any) -> Optional[Document]:
    """``module`` as the trace serialized modules (PrimFunc bodies only if it was made with
    ``tir=True``), or None for a module no serializer writes."""
    from ..serialize import module_ir, serializer_for

    found = trace.header.get("options")
    options: Dict[str, Any] = found if isinstance(found, dict) else {}
    ir = module_ir(module)
    if ir in (EMPTY, OTHER):
        return None
    return serializer_for(ir, full_values=bool(options.get("full_values")),
                          tir_bodies=bool(options.get("tir"))).module(module)


def _no_changes(changes: Dict[str, Any]) -> bool:
    return not (changes["added"] or changes["removed"] or changes["changed"] or changes["summary"].get("rewired"))


def _within(output_changes: Dict[str, Any], input_changes: Dict[str, Any]) -> bool:
    """Whether every difference of the output from the recorded one substitutes a value the
    module read back already had in place of the recorded input's (a name TVMScript made
    unique: ``fc2.bias`` read back as ``fc2_bias`` in the input, then in what the pass made of it)."""
    def substitutions(changes: Dict[str, Any]) -> "set[bytes]":
        found: "set[bytes]" = set()
        for change in changes["changed"]:
            for before, after in change["fields"].values():
                _substituted(before, after, found)
        return found

    return not (output_changes["added"] or output_changes["removed"] or output_changes["summary"].get("rewired")) \
        and substitutions(output_changes) <= substitutions(input_changes)


def _substituted(before: Any, after: Any, into: "set[bytes]") -> None:
    """Add to ``into`` each pair of differing leaves of two JSON values of the same shape."""
    if isinstance(before, dict) and isinstance(after, dict) and before.keys() == after.keys():
        for key in before:
            _substituted(before[key], after[key], into)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for one, other in zip(before, after):
            _substituted(one, other, into)
    elif before != after:
        into.add(orjson.dumps([before, after], option=orjson.OPT_SORT_KEYS))


def _run(trace: Trace, record: PassRecord, prepared: "PreparedPass",
         read_back: Optional[Dict[str, Any]]) -> ReplayResult:
    """Run the prepared pass and judge the outcome against the record (``read_back``: how the
    module read back differs from the recorded input snapshot, as diff JSON, when checked)."""
    where = str(trace.path)
    started = time.perf_counter()
    try:
        output = prepared.run()
    except Exception as exc:
        seconds = time.perf_counter() - started
        error = _error_text(exc)
        if record.error is None:
            return ReplayResult(where, record, prepared.made_by, seconds, "the pass fails now; it succeeded when "
                                "traced", DIFFERS, error)
        if _signature(error) == _signature(record.error):
            return ReplayResult(where, record, prepared.made_by, seconds, "the pass fails the same way as recorded",
                                REPRODUCED, error)
        return ReplayResult(where, record, prepared.made_by, seconds, "the pass fails, with another error than "
                            f"recorded (recorded: {_signature(record.error)[1]})", DIFFERS, error)
    seconds = time.perf_counter() - started
    return _compared(trace, record, prepared.made_by, seconds, output, read_back)


def _chosen(trace: Trace, selector: Union[str, int, None]) -> PassRecord:
    """The event to replay, with a kept input module (or a message saying why there is none)."""
    if selector is None:
        record = trace.failed
        if record is None:
            failure = getattr(trace, "build_failure", None)
            first = (failure or "").splitlines() or [""]
            after = "" if failure is None else (
                f" (the compilation failed after its last pass, in no pass: {printable(first[0], 200)})")
            raise RelayVizUsageError(f"{trace.path}: no pass failed in this trace{after}; name one with --pass "
                                     "(its input module must have been kept: RelayVizTrace(keep_modules=...))")
    else:
        record = select_event(trace, selector)
    if record.replay is None:
        if record.error is not None and record.error.startswith("did not finish"):
            why = "the process stopped during this pass, before the module could be kept"
        elif record.error is not None:
            why = "it raised, but its input module was not kept (the trace problems say why, or it was written " \
                  "by an older relayviz_instrument)"
        else:
            why = "input modules are kept for the pass that raises, and before the passes " \
                  "RelayVizTrace(keep_modules=...) names"
        raise RelayVizUsageError(f"{trace.path}: pass event #{record.index} ({record.name}) cannot be replayed: {why}")
    return record


def _compared(trace: Trace, record: PassRecord, made_by: str, seconds: float, output: Any,
              read_back: Optional[Dict[str, Any]]) -> ReplayResult:
    """The verdict on a successful run: its output against the recorded one (or, for a pass
    that had raised, against its input: what the pass does now)."""
    new = _snapshot(trace, output)
    where = str(trace.path)
    label = f"{record.name} #{record.index}"
    if record.error is not None:
        comparison = None
        if new is not None and record.before:
            comparison = FileComparison(f"{label} input (recorded)", "output now",
                                        diff(trace.snapshot(record.before), new))
        return ReplayResult(where, record, made_by, seconds, "the pass succeeds now (it raised when traced)",
                            SUCCEEDS, comparison=comparison)
    if not record.after or new is None:
        return ReplayResult(where, record, made_by, seconds, "the pass succeeds (no output snapshot was recorded "
                            "to compare with)", SUCCEEDS)
    recorded = trace.snapshot(record.after)
    comparison = FileComparison(f"{label} output (recorded)", "output now", diff(recorded, new))
    if recorded == new or comparison.same:
        return ReplayResult(where, record, made_by, seconds, "the pass succeeds, with the recorded output",
                            SUCCEEDS, comparison=comparison)
    if read_back is not None and not _no_changes(read_back) and _within(comparison.to_json(), read_back):
        return ReplayResult(where, record, made_by, seconds, "the pass succeeds, with the recorded output but for "
                            "what reading the module back changed in its input", SUCCEEDS, comparison=comparison)
    return ReplayResult(where, record, made_by, seconds, "the pass succeeds, with another output than recorded",
                        DIFFERS, comparison=comparison)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _signature(error: str) -> Tuple[str, str]:
    """What two errors must share to be "the same": the exception type and the last line of
    the message, with addresses masked."""
    kind = error.split(":", 1)[0].strip()
    lines = [line.strip() for line in error.splitlines() if line.strip() and line.strip() != "[...]"]
    last = re.sub(r"0x[0-9a-fA-F]+", "0x…", lines[-1]) if lines else ""
    return kind, last
