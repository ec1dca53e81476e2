"""RelayVizTrace: the pass instrument that records a compilation pass by pass.

Use it as any TVM pass instrument::

    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace("my-trace")]):
        lib = relay.build(mod, target="llvm", params=params)

How it stays cheap. Most pass events change nothing (83 of the 99 Relay events of a ResNet
``relay.optimize``), and the lowering passes see only TIR. So the instrument

- reuses the previous snapshot when the module is the same object, or structurally equal
  (``tvm.ir.structural_equal``; it ignores variable names, spans and inferred types, so a pass
  that only renames variables is recorded as unchanged). One exception: when the previous
  snapshot has expressions without an inferred type, an equal module is serialized again, so
  a pass that fills in types (InferType after a rewrite) shows them;
- serializes a module only when it changed, through one serializer that remembers, for two
  snapshots, what it read from the objects passes leave untouched;
- never calls ``structural_hash`` or ``save_json`` (they hash or copy every bound weight);
- counts and times TIR-only modules without serializing them unless ``tir=True``.

How it stays harmless. Every callback catches its own exceptions: a failure inside the
instrument (a serializer bug, a full disk, an unwritable directory) becomes one
:class:`TraceIncompleteWarning` naming the pass, the trace is marked incomplete, the
instrument stops recording, and the compilation goes on exactly as without it. With
``strict=True`` the exception propagates instead. The instrument never implements
``should_run``, so it cannot skip a pass.
"""

from __future__ import annotations

import os
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Pattern, Sequence, Union

import tvm

from . import __version__
from .diff import diff
from .errors import RelayVizTraceError, TraceIncompleteWarning
from .serialize.relay import RelaySerializer
from .store import MemoryStore, PassRecord, TraceWriter, begin_line, end_line, new_trace_dir

__all__ = ["RelayVizTrace", "trace_build"]

_ERROR_CHARS = 4000


@dataclass
class _Snapshot:
    """A module as recorded: the IR object, its snapshot reference and document."""

    mod: Any
    ref: str
    doc: Dict[str, Any]
    #: Some expressions had no inferred type: a structurally equal module may still add types.
    untyped: bool = False

    @property
    def nodes(self) -> int:
        return len(self.doc["nodes"])


@dataclass
class _OpenPass:
    record: PassRecord
    before: Optional[_Snapshot]
    started: float = 0.0
    overhead_at_start: float = 0.0


class RelayVizTrace(tvm.instrument.PassInstrument):
    """A pass instrument that records every pass event of a compilation as a trace.

    ``out_dir``: where the trace goes. ``None`` (the default) makes a new
    ``relayviz-trace/<timestamp>/`` in the working directory when the pass context is
    entered; ``False`` keeps everything in memory. Either way ``trace.records`` holds the
    records and ``trace.snapshot(ref)`` the documents.

    ``passes`` / ``exclude``: regular expressions (``re.search``) on pass names; a pass left
    out is counted and timed, but not compared or snapshotted. ``tir``: also snapshot modules
    that hold only TIR PrimFuncs (as one node per PrimFunc with a digest of its printed
    body). ``strict``: let exceptions inside the instrument propagate. ``full_values``: write
    every constant's values. ``progress``: called with each :class:`PassRecord` when its pass
    ends (the CLI uses it for its progress display).
    """

    def __init__(
        self,
        out_dir: Union[str, "os.PathLike[str]", None, bool] = None,
        *,
        passes: Union[str, Sequence[str], None] = None,
        exclude: Union[str, Sequence[str], None] = None,
        tir: bool = False,
        strict: bool = False,
        full_values: bool = False,
        progress: Optional[Callable[[PassRecord], None]] = None,
    ) -> None:
        if out_dir is True:
            raise TypeError("out_dir must be a path, None (a new relayviz-trace/<timestamp>/) or False")
        self._out_dir = out_dir
        self._passes = _compile(passes, "passes")
        self._exclude = _compile(exclude, "exclude")
        self.tir = tir
        self.strict = strict
        self.full_values = full_values
        self._progress = progress
        #: Every pass event so far, in the order the passes started.
        self.records: List[PassRecord] = []
        #: False once the instrument failed; ``problems`` says why.
        self.complete = True
        self.problems: List[str] = []
        #: The trace directory, once the pass context was entered (None for memory traces).
        self.path: Optional[Path] = None
        self._store: Optional[MemoryStore] = None
        self._serializer: Optional[RelaySerializer] = None
        self._stack: List[_OpenPass] = []
        self._last: Optional[_Snapshot] = None
        self._entered = 0
        self._finished = False
        self._disabled = False
        self._overhead = 0.0
        self._libs_at_enter: "set[int]" = set()
        super().__init__()

    # -- reading the trace ------------------------------------------------------------------

    def snapshot(self, ref: str) -> Dict[str, Any]:
        """The RelayViz document stored under ``ref`` (a record's ``before`` or ``after``)."""
        if self._store is None:
            raise RelayVizTraceError("this trace has recorded nothing yet")
        return self._store.get(ref)

    def record_graph(self, built: Any) -> Optional[PassRecord]:
        """Add the graph that ``relay.build`` produced as the trace's last snapshot.

        ``built`` is what ``relay.build`` returned (anything with ``get_graph_json()``) or the
        graph executor JSON itself. The graph becomes a ``GraphExecutorCodegen`` event whose
        ``before`` is the last Relay snapshot, so a report shows the step from the last Relay
        module to the executor graph. Call it inside or after the pass context. Returns the
        new record, or None if the trace had already stopped recording.
        """
        from .serialize.graph_json import from_graph_json

        graph = built.get_graph_json() if hasattr(built, "get_graph_json") else built
        doc = from_graph_json(graph, source_name="relay.build")
        if self._disabled or self._store is None:
            return None
        last = self.records[-1] if self.records else None
        relay_snapshots = [r for r in self.records if r.after is not None and r.ir == "relay"]
        before = relay_snapshots[-1] if relay_snapshots else None
        record = PassRecord(index=len(self.records), name="GraphExecutorCodegen", depth=1,
                            ir="graph_executor", changed=True,
                            before=before.after if before else None,
                            nodes_before=before.nodes_after if before else None,
                            nodes_after=len(doc["nodes"]))
        self._store.reopen()
        try:
            record.after = self._store.put(doc)
            if last is not None and last.ir == "graph_executor" and last.after == record.after:
                return last  # already recorded when the pass context exited
            if before is not None:
                record.summary = _diff_summary(self._store.get(before.after), doc)
            self.records.append(record)
            self._store.append(begin_line(record))
            self._store.append(end_line(record))
            if self._finished:
                self._store.append(self._close_line())
        finally:
            if self._finished:
                self._store.close()
        return record

    @property
    def instrument_seconds(self) -> float:
        """Wall time spent inside the instrument's callbacks."""
        return self._overhead

    # -- PassInstrument callbacks -------------------------------------------------------------

    def enter_pass_ctx(self) -> None:
        self._entered += 1
        if self._entered > 1 or self._disabled:
            return
        started = time.perf_counter()
        try:
            if self._finished:
                raise RelayVizTraceError("a RelayVizTrace records one pass context; "
                                         "make a new RelayVizTrace for each compilation")
            self._open_store()
            self._serializer = RelaySerializer(full_values=self.full_values, tir_bodies=self.tir)
            self._libs_at_enter = {id(lib) for lib in _built_graphs_in_caller()}
        except Exception as exc:  # never take the compilation down
            self._fail(exc, "(entering the pass context)")
        finally:
            self._overhead += time.perf_counter() - started

    def exit_pass_ctx(self) -> None:
        self._entered -= 1
        if self._entered > 0:
            return
        started = time.perf_counter()
        try:
            if not self._disabled:
                in_flight = sys.exc_info()[1]
                self._close_open_passes(in_flight)
                if in_flight is None:
                    self._record_graph_built_in_context()
        except Exception as exc:
            self._fail(exc, "(leaving the pass context)")
        finally:
            self._finish()
            self._overhead += time.perf_counter() - started

    def run_before_pass(self, mod: tvm.IRModule, info: Any) -> None:
        if self._disabled:
            return
        started = time.perf_counter()
        opened: Optional[_OpenPass] = None
        try:
            parent = self._stack[-1].record.index if self._stack else None
            record = PassRecord(
                index=len(self.records), name=str(info.name), opt_level=int(info.opt_level),
                required=tuple(str(r) for r in info.required), depth=len(self._stack) + 1,
                parent=parent, ir=_module_ir(mod))
            self.records.append(record)  # first: a failure below still leaves the event on record
            before = self._snapshot_before(mod) if self._wanted(record) else None
            if before is not None:
                record.before, record.nodes_before = before.ref, before.nodes
            opened = _OpenPass(record, before)
            self._stack.append(opened)
            assert self._store is not None
            self._store.append(begin_line(record))
        except Exception as exc:
            self._fail(exc, str(info.name))
        finally:
            now = time.perf_counter()
            self._overhead += now - started
            if opened is not None:
                opened.started, opened.overhead_at_start = now, self._overhead

    def run_after_pass(self, mod: tvm.IRModule, info: Any) -> None:
        if self._disabled or not self._stack:
            return
        started = time.perf_counter()
        try:
            opened = self._stack.pop()
            record = opened.record
            record.duration_ms = _ms(started - opened.started - (self._overhead - opened.overhead_at_start))
            if opened.before is not None:
                after, changed = self._snapshot_after(opened.before, mod)
                record.after, record.nodes_after, record.changed = after.ref, after.nodes, changed
                if changed:
                    record.summary = _diff_summary(opened.before.doc, after.doc)
            assert self._store is not None
            self._store.append(end_line(record))
            if self._progress is not None:
                self._progress(record)
        except Exception as exc:
            self._fail(exc, str(info.name))
        finally:
            self._overhead += time.perf_counter() - started

    def _record_graph_built_in_context(self) -> None:
        """Record the graph of the one ``relay.build`` result the ``with`` block assigned.

        ``lib = relay.build(...)`` inside ``with PassContext(instruments=[trace]):`` leaves
        ``lib`` in the frame that owns the ``with`` statement by the time the context exits.
        Only a graph executor factory that was not there when the context was entered counts,
        and only when there is exactly one; otherwise :meth:`record_graph` is the way.
        """
        if any(r.ir == "graph_executor" for r in self.records):
            return
        new = [lib for lib in _built_graphs_in_caller() if id(lib) not in self._libs_at_enter]
        if len(new) == 1:
            self.record_graph(new[0])

    # -- snapshots ----------------------------------------------------------------------------

    def _wanted(self, record: PassRecord) -> bool:
        if record.ir == "empty" or (record.ir == "tir" and not self.tir):
            return False
        if self._passes is not None and not self._passes.search(record.name):
            return False
        return not (self._exclude is not None and self._exclude.search(record.name))

    def _snapshot_before(self, mod: tvm.IRModule) -> _Snapshot:
        last = self._last
        if last is not None:
            if last.mod.same_as(mod):
                return last
            if not last.untyped and _structurally_equal(last.mod, mod):
                self._last = _Snapshot(mod, last.ref, last.doc)
                return self._last
        return self._take(mod)

    def _snapshot_after(self, before: _Snapshot, mod: tvm.IRModule) -> "tuple[_Snapshot, bool]":
        if before.mod.same_as(mod):
            return before, False
        last = self._last
        if last is not None and last is not before and last.mod.same_as(mod):
            # A Sequential's result is its last inner pass's result, already recorded.
            changed = last.ref != before.ref or _structurally_equal(before.mod, mod) is not True
            return last, changed
        equal = _structurally_equal(before.mod, mod)
        if equal and not before.untyped:
            self._last = _Snapshot(mod, before.ref, before.doc)
            return self._last, False
        after = self._take(mod)
        # When TVM cannot compare the modules, or the change may be inferred types only,
        # the snapshots decide.
        return after, True if equal is False else after.ref != before.ref

    def _take(self, mod: tvm.IRModule) -> _Snapshot:
        assert self._serializer is not None and self._store is not None
        doc = self._serializer.module(mod)
        self._last = _Snapshot(mod, self._store.put(doc), doc, _has_untyped(doc))
        return self._last

    # -- opening, closing, failing --------------------------------------------------------------

    def _open_store(self) -> None:
        header = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "relayviz_instrument": __version__,
            "tvm": getattr(tvm, "__version__", "unknown"),
            "python": sys.version.split()[0],
            "options": {"passes": self._passes.pattern if self._passes else None,
                        "exclude": self._exclude.pattern if self._exclude else None,
                        "tir": self.tir, "full_values": self.full_values},
        }
        if self._out_dir is False:
            self._store = MemoryStore()
            return
        path = new_trace_dir() if self._out_dir is None else Path(self._out_dir)
        self._store = TraceWriter(path, header)
        self.path = path

    def _close_open_passes(self, exc: Optional[BaseException]) -> None:
        """Passes still open when the context exits are the ones an exception went through."""
        now = time.perf_counter()
        message = _error_text(exc) if exc is not None else "did not finish (the pass context exited first)"
        while self._stack:
            opened = self._stack.pop()
            record = opened.record
            record.duration_ms = _ms(now - opened.started - (self._overhead - opened.overhead_at_start))
            record.error = message
            assert self._store is not None
            self._store.append(end_line(record))

    def _fail(self, exc: BaseException, pass_name: str) -> None:
        if self.strict:
            raise exc
        first = not self.problems
        self.complete = False
        self.problems.append(f"the instrument failed in pass {pass_name}: {type(exc).__name__}: {exc}")
        self._disabled = True
        self._release()
        if first:
            where = f" (trace: {self.path})" if self.path is not None else ""
            warnings.warn(f"relayviz: recording stopped at pass {pass_name}: {type(exc).__name__}: {exc}; "
                          f"the compilation goes on, the trace is incomplete{where}",
                          TraceIncompleteWarning, stacklevel=2)

    def _finish(self) -> None:
        self._finished = True
        store, self._store = self._store, None
        if store is not None:
            try:
                store.append(self._close_line())
                store.close()
            except Exception as exc:
                if self.strict:
                    raise
                if not self.problems:
                    self._fail(exc, "(closing the trace)")
        # Keep the store for reading snapshots back; drop everything that pins IR objects.
        self._store = store
        self._release()

    def _close_line(self) -> Dict[str, Any]:
        return {"type": "close", "complete": self.complete, "problems": self.problems,
                "events": len(self.records), "instrument_ms": round(1000.0 * self._overhead, 3)}

    def _release(self) -> None:
        self._serializer = None
        self._stack = []
        self._last = None


_CONTEXT_MODULES = ("tvm", "contextlib")


def _built_graphs_in_caller() -> List[Any]:
    """Graph executor factories (``relay.build`` results) among the local variables of the
    frame that entered or exits the pass context: the first frame outside TVM, contextlib
    and this module's callbacks. Read-only; empty where TVM has no Relay."""
    try:
        from tvm.relay.backend.executor_factory import GraphExecutorFactoryModule
    except ImportError:
        return []
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        ours = module == __name__ and frame.f_code.co_name != "trace_build"
        if not (ours or any(module == m or module.startswith(m + ".") for m in _CONTEXT_MODULES)):
            break
        frame = frame.f_back
    if frame is None:
        return []
    return [v for v in list(frame.f_locals.values()) if isinstance(v, GraphExecutorFactoryModule)]


def _compile(patterns: Union[str, Sequence[str], None], what: str) -> Optional[Pattern[str]]:
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns))
    except re.error as exc:
        raise ValueError(f"{what}: invalid regular expression: {exc}") from None


def _structurally_equal(a: tvm.IRModule, b: tvm.IRModule) -> Optional[bool]:
    """``tvm.ir.structural_equal``, or ``None`` when TVM cannot compare the two modules.

    Late in ``relay.build`` functions carry attributes (``relay.backend.FunctionInfo``) that
    have no structural equality registered, and the comparison raises.
    """
    try:
        return bool(tvm.ir.structural_equal(a, b))
    except (tvm.TVMError, TypeError, ValueError):
        return None


_TYPED_KINDS = frozenset({"Call", "Tuple", "TupleGetItem", "Let", "If", "Match"})


def _has_untyped(doc: Dict[str, Any]) -> bool:
    return any(n["node_kind"] in _TYPED_KINDS and "type" not in n for n in doc["nodes"])


def _module_ir(mod: tvm.IRModule) -> str:
    """``relay`` if the module holds a Relay function, ``tir`` if only PrimFuncs, ``empty`` if
    nothing (the device side of a CPU build, after the host/device split), else ``other``."""
    kinds = set()
    for func in mod.functions.values():
        if isinstance(func, tvm.relay.Function):
            return "relay"
        kinds.add("tir" if isinstance(func, tvm.tir.PrimFunc) else "other")
    if not kinds:
        return "empty"
    return "tir" if kinds == {"tir"} else "other"


def _ms(seconds: float) -> float:
    return round(1000.0 * seconds, 4)


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _ERROR_CHARS else text[:_ERROR_CHARS] + " [...]"


def _diff_summary(before: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
    return diff(before, after).summary


def trace_build(mod: tvm.IRModule, *, target: Any = "llvm", params: Optional[Dict[str, Any]] = None,
                opt_level: int = 3, out_dir: Union[str, "os.PathLike[str]", None, bool] = None,
                **options: Any) -> "tuple[Any, RelayVizTrace]":
    """``relay.build(mod, target, params)`` at ``opt_level`` under a new :class:`RelayVizTrace`.

    The built graph is recorded as the trace's last snapshot, as for any ``relay.build``
    result assigned inside the pass context. Returns ``(lib, trace)``; ``options`` go to
    :class:`RelayVizTrace`.
    """
    from tvm import relay

    trace = RelayVizTrace(out_dir, **options)
    with tvm.transform.PassContext(opt_level=opt_level, instruments=[trace]):
        lib = relay.build(mod, target=target, params=params)
    return lib, trace
