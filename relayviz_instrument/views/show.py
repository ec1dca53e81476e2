"""A trace as a whole: its summary, its pass table, and ``show_trace``, the use case behind
``relayviz show``.

What the table shows by default is the pipeline: the passes that changed the module a
compilation carries, one section per compilation, and rows for changes no recorded pass made.
Work on scratch modules (the ``_tmp`` module SimplifyExpr type-checks) and the InferType a
function pass runs on its own result are folded into the pass they belong to (``--all``
shows them, labelled). Each row's ``+ - ~`` credits the pass that did the work: a pass whose
nested InferType filled in the types is shown without those types.

The renderables take any object with ``records``, ``complete`` and ``problems``: a
:class:`~relayviz_instrument.store.Trace` read from disk, or a live
:class:`~relayviz_instrument.capture.RelayVizTrace`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from ..store.builds import RECORD_GRAPH_FIX, Build
from ..analysis.pipeline import FINISHING, SCRATCH, Gap
from ..analysis.reading import TraceReading
from ..analysis.steps import BUILD_STEP, TVM_CODE, USER_CODE, Origin, origin_of
from ..names import printable, shorten
from ..format.irs import ARTIFACT_IRS
from ..store import PassRecord, TraceLike, snapshot_path
from ..store.records import NO_GRAPH, STOPPED_DURING
from .contexts import ContextTable, context_rows

__all__ = ["TraceSummary", "PassTable", "PassRow", "TraceOverview", "show_trace",
           "trace_notes", "changed_text"]


#: Characters between two columns of the pass table: padding 1 each side, collapsed to one,
#: and the blank rule of ``box.SIMPLE_HEAD``.
_SEPARATOR = 2
#: The narrowest a shortened pass name gets on a narrow terminal.
_MIN_NAME = 12


@dataclass(frozen=True)
class PassRow:
    """One row of the pass table: a pass event (``record``) or a change between events (``gap``).

    ``summary`` is the diff summary the row credits; ``note`` labels rows that are not
    pipeline passes (``scratch``, ``types of FuseOps``; for a gap that is a step of TVM's build,
    what the step did); ``nodes`` overrides the node counts.
    """

    record: Optional[PassRecord] = None
    summary: Optional[Mapping[str, Any]] = None
    note: str = ""
    gap: Optional[Gap] = None
    nodes: Optional[str] = None


class TraceSummary:
    """A few lines about a trace: events, what changed, time spent, and what went wrong."""

    def __init__(self, trace: TraceLike, *, path: Optional[str] = None, notes: Optional[List[str]] = None) -> None:
        self.trace = trace
        self.path = path
        self.notes = notes

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        records: Sequence[PassRecord] = self.trace.records
        by_ir: Dict[str, int] = {}
        for r in records:
            by_ir[r.ir] = by_ir.get(r.ir, 0) + 1
        top = sum(r.duration_ms for r in records if r.depth == 1 and r.ir not in ARTIFACT_IRS)
        # A pass the process stopped in has no time: the sum is of the passes that ended.
        running = [r for r in records if r.error == STOPPED_DURING]
        changed = sum(1 for r in records if r.changed)
        compared = sum(1 for r in records if r.changed is not None)
        snapshots = {ref for r in records for ref in (r.before, r.after) if ref}
        line = Text()
        if self.path:
            line.append("trace ", style="bold")
            line.append(printable(self.path, None), style="cyan")
            line.append("\n")
        kinds = ", ".join(f"{count} {ir}" for ir, count in sorted(by_ir.items()))
        line.append(f"{len(records)} pass events ({kinds}); {changed} of {compared} compared changed "
                    f"the module; {len(snapshots)} snapshots; passes {'that ended ' if running else ''}took "
                    f"{top / 1000:,.2f} s")
        yield line
        if not self.trace.complete:
            yield Text("incomplete: " + "; ".join(printable(_first_line(p), None) for p in self.trace.problems),
                       style="bold yellow")
        for r in records:
            if r.error is not None and not any(c.error is not None and c.parent == r.index for c in records):
                what = "was running when the process stopped" if r.error == STOPPED_DURING else (
                    f"failed: {printable(_first_line(r.error), None)}")
                yield Text(f"pass {printable(r.name)} (#{r.index}) {what}", style="bold red")
        failure = getattr(self.trace, "build_failure", None)
        if failure is not None:
            when = "after its last pass" if records else "before any pass ran"
            yield Text(f"the compilation failed {when}: {printable(_first_line(failure), None)}", style="bold red")
        skipped = [r for r in records if r.skipped]
        if skipped:
            ran = sum(1 for r in records if r.bisect is not None and not r.skipped)
            yield Text(f"{len(skipped)} pass events skipped by RelayVizBisect (limit {ran}), from #{skipped[0].index} "
                       f"{printable(skipped[0].name)} on; `relayviz show --all` marks them", style="bold yellow")
        notes = self.notes if self.notes is not None else [*getattr(self.trace, "notes", ()), *trace_notes(
            TraceReading(self.trace), recorded=getattr(self.trace, "notes", ()))]
        for note in notes:
            yield Text("note: " + printable(note, None), style="yellow")


def trace_notes(reading: TraceReading, gaps: Optional[Sequence[Gap]] = None,
                recorded: Sequence[str] = ()) -> List[str]:
    """What a reader of the trace should know that no row shows: what was built but not
    recorded, changes made outside any recorded pass (``gaps``: those shown, when known; a step
    of TVM's build is no such change), modules that could not be snapshotted. ``recorded``: the
    notes the trace holds itself (one saying a build returned no graph explains its absence)."""
    notes = []
    records = reading.records
    builds = [b.build for b in reading.builds]
    no_graph = any(NO_GRAPH in note for note in recorded)
    missing = [b for b in builds if b.missing_artifact and not no_graph]
    if missing and len(builds) == 1:
        notes.append("the model was lowered (relay.build ran) but its built graph was not recorded, so the "
                     f"trace ends at the last Relay module: {RECORD_GRAPH_FIX}")
    elif missing:
        notes.append(", ".join(b.label() for b in missing) + ": lowered, but its built graph was not recorded: "
                     + RECORD_GRAPH_FIX)
    if gaps is None:
        gaps = reading.gaps
    origins = [origin_of(g.between) for g in gaps]
    outside = [o for o in origins if o.kind != BUILD_STEP]
    where = sorted({f"{o.function} ({_short_where(o)})" if o.kind == USER_CODE else o.function
                    for o in outside if o.kind in (USER_CODE, TVM_CODE)})
    known = f", in {', '.join(where)}" if where else ""
    if outside and any(r.context is not None for r in records):
        notes.append(f"the module changed {len(outside)} time(s) outside any recorded pass (rows '(outside any "
                     f"pass)'): code between passes{known} (this trace holds every pass context the process "
                     "entered)")
    elif outside:
        # relay.quantize is the usual example on Relay; a Relax trace is told of nothing of Relay's.
        example = "" if builds and all(b.relax for b in builds) else (
            ", as relay.quantize runs its annotate, calibrate and realize passes")
        notes.append(f"the module changed {len(outside)} time(s) outside any recorded pass (rows '(outside any "
                     f"pass)'){known}: code between passes, or passes run under a PassContext of their own"
                     f"{example}; an instrument sees only the passes of the contexts it is given to")
    why: Dict[str, int] = {}
    for r in records:
        if r.note:
            why[r.note] = why.get(r.note, 0) + 1
    notes.extend(f"{text} ({count} pass events)" for text, count in why.items())
    return notes


def changed_text(record: PassRecord) -> Text:
    """A pass table's ``changed`` cell: ``yes``, ``no``, ``-`` (not compared), ``skipped``, ``failed``
    or ``running`` (when the process stopped)."""
    if record.error == STOPPED_DURING:
        return Text("running", style="bold red")
    if record.error is not None:
        return Text("failed", style="bold red")
    if record.skipped:
        return Text("skipped", style="italic yellow")
    if record.changed is None:
        return Text("-", style="dim")
    return Text("yes", style="bold") if record.changed else Text("no", style="dim")


class PassTable:
    """The pass-by-pass table: name (indented by depth), time, change, node counts, + - ~.

    Give it :class:`PassRow`s, or records with ``summaries`` (diff summaries by record index).
    On a terminal too narrow for it, pass names are shortened in the middle; anywhere else
    (a file, a pipe) they are never cut.
    """

    def __init__(self, rows: Iterable[Union[PassRow, PassRecord]],
                 summaries: Optional[Mapping[int, Mapping[str, Any]]] = None, *, title: Optional[str] = None) -> None:
        summaries = summaries or {}
        self.rows = [row if isinstance(row, PassRow) else PassRow(row, summaries.get(row.index)) for row in rows]
        self.title = title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cells = [self._cells(row) for row in self.rows]
        if not cells:
            yield Text("no pass changed the module", style="dim")
            return
        table = Table(title=self.title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                      pad_edge=False, expand=False, padding=(0, 1), collapse_padding=True)
        table.add_column("#", justify="right", style="dim", no_wrap=True)
        table.add_column("pass", no_wrap=True)
        table.add_column("depth", justify="right", no_wrap=True)
        table.add_column("ms", justify="right", no_wrap=True)
        table.add_column("changed", justify="center", no_wrap=True)
        table.add_column("nodes", justify="right", no_wrap=True)
        table.add_column("+", justify="right", style="green", no_wrap=True)
        table.add_column("-", justify="right", style="red", no_wrap=True)
        table.add_column("~", justify="right", style="yellow", no_wrap=True)
        widths = [max([len(str(c.header))] + [len(str(row[i])) for row in cells])
                  for i, c in enumerate(table.columns)]
        room = options.max_width - (sum(widths) - widths[1]) - _SEPARATOR * (len(widths) - 1)
        if console.is_terminal and room < widths[1]:  # a narrow terminal: shorten names, keep numbers
            room = max(_MIN_NAME, room)
            for row in cells:
                name: Text = row[1]
                if name.cell_len <= room:
                    continue
                depth_indent = len(name.plain) - len(name.plain.lstrip(" "))
                indent = depth_indent // 2 if name.cell_len - depth_indent // 2 <= room else depth_indent
                short = shorten(name.plain[depth_indent:], max(4, room - indent))  # deep nesting: one space a level
                row[1] = Text(" " * indent + short, style=name.style)
        else:
            options = options.update(max_width=max(options.max_width, sum(widths) + _SEPARATOR * len(widths)))
        for row in cells:
            table.add_row(*row)
        yield from console.render(Group(table), options)

    @staticmethod
    def _cells(row: PassRow) -> List[Any]:
        if row.gap is not None:
            name = (Text(f"({printable(row.note)})", style="italic cyan") if row.note
                    else Text("(outside any pass)", style="italic yellow"))
            summary = row.summary or {}
            return ["", name, "", "", Text("yes", style="bold"), row.nodes or "",
                    str(summary.get("added", "")), str(summary.get("removed", "")),
                    str(summary.get("changed", 0) + summary.get("rewired", 0)) if summary else ""]
        r = row.record
        assert r is not None
        name = Text("  " * (r.depth - 1) + printable(r.name), style="bold red" if r.error else "")
        if row.note:
            name.append(f" ({printable(row.note)})", style="dim italic")
        changed = changed_text(r)
        if row.nodes is not None:
            nodes = row.nodes
        elif r.nodes_before is None:
            nodes = "" if r.nodes_after is None else str(r.nodes_after)
        elif r.nodes_after is None or r.nodes_after == r.nodes_before:
            nodes = str(r.nodes_before)
        else:
            nodes = f"{r.nodes_before} -> {r.nodes_after}"
        summary = row.summary or {}
        plus = str(summary.get("added", "")) if r.changed else ""
        minus = str(summary.get("removed", "")) if r.changed else ""
        tilde = (str(summary.get("changed", 0) + summary.get("rewired", 0))
                 if r.changed and summary else "")
        ms = "—" if r.ir in ARTIFACT_IRS or r.error == STOPPED_DURING else f"{r.duration_ms:,.1f}"
        return [str(r.index), name, str(r.depth), ms, changed, nodes, plus, minus, tilde]


@dataclass
class BuildSection:
    """The rows of one compilation."""

    build: Build
    rows: List[PassRow]


@dataclass
class TraceOverview:
    """What ``relayviz show`` prints: the trace's summary, then one pass table per compilation;
    as JSON, every record as recorded and what is derived from them."""

    trace: TraceLike
    sections: List[BuildSection]
    roles: Dict[int, str]
    summaries: Dict[int, Dict[str, Any]] = field(default_factory=dict)
    paths: bool = False
    notes: List[str] = field(default_factory=list)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        path = getattr(self.trace, "path", None)
        yield TraceSummary(self.trace, path=None if path is None else str(path), notes=self.notes)
        contexts = getattr(self.trace, "contexts", None)
        if contexts:
            yield ContextTable(context_rows(contexts, self.trace.records))
        many = len(self.sections) > 1
        for section in self.sections:
            title = None
            if many:
                built = (", ".join(f"{printable(a.name)} #{a.index}" for a in section.build.artifacts)
                         or "nothing recorded")
                title = f"{printable(section.build.label())} (built: {built})"
            yield PassTable(section.rows, title=title)
        if self.paths:
            yield from self._paths()

    def _paths(self) -> RenderResult:
        """The snapshot files of the rows shown, one line each, whole (to paste into
        ``relayviz diff A B`` or ``relayviz export``)."""
        if getattr(self.trace, "path", None) is None:
            return
        yield Text("snapshots (before, after) of the rows above:", style="bold")
        for section in self.sections:
            for row in section.rows:
                r = row.record
                if r is None or not (r.before or r.after):
                    continue
                line = (f"{r.index} {printable(r.name)}  {_path(self.trace, r.before) or '-'}  "
                        f"{_path(self.trace, r.after) or '-'}")
                yield Text(line, no_wrap=True, overflow="ignore")

    def to_json(self) -> Dict[str, Any]:
        """``{"trace", "complete", "problems", "build_failure", "notes", "header", "records", "roles",
        "builds", "gaps", "contexts", "summaries"}``: every record as recorded, the role of each event with a
        snapshot, the compilations, the changes outside passes, and the diff summary each
        shown row credits, by record index."""
        trace = self.trace
        gaps = [{"previous": row.gap.previous, "next": row.gap.next, "before": row.gap.old, "after": row.gap.new,
                 "summary": row.summary, "origin": origin_of(row.gap.between).to_json(),
                 "step": row.note or None}
                for section in self.sections for row in section.rows if row.gap is not None]
        return {"trace": str(trace.path) if trace.path is not None else None, "complete": trace.complete,
                "problems": list(trace.problems), "build_failure": getattr(trace, "build_failure", None),
                "notes": list(self.notes),
                "header": getattr(trace, "header", {}), "records": [r.to_json() for r in trace.records],
                "roles": {str(i): role for i, role in sorted(self.roles.items())},
                "builds": [{"number": s.build.number, "first": s.build.first, "last": s.build.last,
                            "lowered": s.build.lowered, "built": [a.index for a in s.build.artifacts]}
                           for s in self.sections],
                "gaps": gaps,
                "contexts": [row.to_json() for row in context_rows(getattr(trace, "contexts", None) or [],
                                                                    trace.records)],
                "summaries": {str(index): summary for index, summary in sorted(self.summaries.items())}}


def _short_where(origin: Origin) -> str:
    """``script.py:42`` of an origin's ``/path/to/script.py:42``."""
    return origin.where.rsplit("/", 1)[-1]


def _first_line(text: str) -> str:
    """The first line of a text from a trace (an error, a problem), found without splitting all of it."""
    end = text.find("\n")
    return text if end < 0 else text[:end]


def _path(trace: TraceLike, ref: Optional[str]) -> str:
    # The store's function, not Trace.snapshot_path: a live trace with a directory has none.
    return "" if not ref or trace.path is None else str(snapshot_path(trace.path, ref))


def show_trace(trace: TraceLike, *, everything: bool = False, paths: bool = False,
               reading: Optional[TraceReading] = None) -> TraceOverview:
    """The overview of ``trace`` (read with :func:`~relayviz_instrument.load_trace`, or live).

    By default each compilation's pipeline passes that changed the module or failed, what it
    built, and rows for changes made outside any recorded pass; ``everything`` lists every
    event, scratch work and nested type inference included, labelled. ``paths`` adds the
    snapshot file of each row. ``reading`` shares what another view of the same trace read.
    """
    reading = reading if reading is not None else TraceReading(trace)
    by_index = reading.by_index
    summaries: Dict[int, Dict[str, Any]] = {}
    sections = []
    for build, entries in zip(reading.builds, reading.table(everything)):
        rows: List[PassRow] = []
        for entry in entries:
            if entry.gap is not None:
                assert entry.origin is not None and entry.step is not None
                step = (f"step of {entry.origin.function}: {entry.step.describe()}"
                        if entry.origin.kind == BUILD_STEP else "")
                rows.append(PassRow(summary=entry.summary, note=step, gap=entry.gap,
                                    nodes=f"{entry.nodes[0]} -> {entry.nodes[1]}"))
                continue
            r = entry.record
            assert r is not None
            if entry.summary is not None:
                summaries[r.index] = entry.summary
            note = ""
            if entry.role == SCRATCH:
                note = "scratch"
            elif entry.role == FINISHING and r.parent is not None:
                parent = by_index[r.parent].name
                note = f"types of {parent}" if r.name == "InferType" else f"ends {parent}"
            elif entry.by_nested_passes:
                note = "by nested passes"
            rows.append(PassRow(r, entry.summary, note))
        sections.append(BuildSection(build.build, rows))
    gaps_shown = [row.gap for section in sections for row in section.rows if row.gap is not None]
    recorded = list(getattr(trace, "notes", ()))
    return TraceOverview(trace, sections, dict(reading.roles), summaries, paths,
                         [*recorded, *trace_notes(reading, gaps_shown, recorded)])
