"""ProcessTrace: one trace of every pass context a process enters (``relayviz run``,
``RELAYVIZ_TRACE``, ``pytest --relayviz-trace``).

A :class:`RelayVizTrace` records the one pass context it is given to. A ProcessTrace is the
same instrument put into every context (``patches.py`` does that): it opens its trace the
first time a context is entered and closes it when it is finished (at the process's exit),
and each context entered in between is a *section* of the trace: a ``context`` line in the
manifest (its number, the context it is nested in, where it was opened, its opt_level), and
every event names the context it ran in. A context left by an exception ends the events that
began inside it, with the error, and the trace goes on.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ..capture.artifacts import artifact_document, record_artifact, without_graph
from ..capture.guard import carried_interruption
from ..capture.instrument import RelayVizTrace

__all__ = ["ProcessTrace", "DEFAULT_CONTEXT"]

#: Where the default pass context (the one current outside any ``with PassContext``) is "opened".
DEFAULT_CONTEXT = "(no with-block: TVM's default pass context)"


@dataclass
class _Section:
    index: int
    #: How many events were open when the context was entered: those above it began inside.
    stack_depth: int
    #: The PassContext (None for TVM's default one, which is never left).
    context: Any = None


class ProcessTrace(RelayVizTrace):
    """A :class:`RelayVizTrace` of every pass context of a process, each one a section.

    Make it with the options of :class:`RelayVizTrace`; ``autotrace.start`` puts it into every
    pass context the process enters. Before a context is entered, ``opening(context, where)``
    says which it is and where it was opened (``file:line``); a context entered without that
    (TVM's default context) is named :data:`DEFAULT_CONTEXT`. :meth:`record_built` records what
    a build returned; :meth:`note_unseen` says in the trace what the instrument could not see.
    """

    def __init__(self, out_dir: Any = None, **options: Any) -> None:
        super().__init__(out_dir, **options)
        self._sections: List[_Section] = []
        #: The pass contexts entered so far, as the manifest's ``context`` lines hold them.
        self.contexts: List[Dict[str, Any]] = []
        self._opening: Optional[Dict[str, Any]] = None
        self._opening_context: Any = None

    def opening(self, context: Any, where: str) -> None:
        """The pass context about to be entered, and where (``file:line``) its ``with`` is."""
        if self._thread.other():
            return
        self._opening = {"opened": where, "opt_level": int(context.opt_level)}
        self._opening_context = context

    def enter_pass_ctx(self) -> None:
        try:  # first: see carried_interruption
            if self._thread.other():
                return
            opening, self._opening = self._opening, None
            context, self._opening_context = self._opening_context, None
            life = self._life
            if life.disabled or life.finished:
                return
            with self._guard("(entering a pass context)"):
                events = self._events
                if events.sink is None:
                    life.open()
                assert events.sink is not None
                facts = opening or {"opened": DEFAULT_CONTEXT, "opt_level": None}
                parent = self._sections[-1].index if self._sections else None
                section = _Section(len(self.contexts), len(events.stack), context if opening else None)
                self.contexts.append({"index": section.index, "parent": parent, **facts})
                self._sections.append(section)
                self._sections_changed()
                events.sink.context(section.index, parent, facts["opened"], facts["opt_level"])
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, "(entering a pass context)") from exc

    def exit_pass_ctx(self) -> None:
        try:  # first: see carried_interruption
            if not self._life.finished and not self._thread.other():
                self._exit_context()
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, "(leaving a pass context)") from exc

    def _exit_context(self) -> None:
        section = self._sections.pop() if self._sections else None
        self._sections_changed()
        if self._sections:  # an inner context ends; the trace goes on
            if self._life.disabled or section is None:
                return
            with self._guard("(leaving a pass context)"):
                assert self._events.sink is not None
                section.context = None
                self._events.end_section(section.stack_depth, sys.exc_info()[1])
            return
        self._life.entered = 1
        super()._exit_context()

    def _sections_changed(self) -> None:
        """The pass contexts open changed: the events beginning now are in the innermost."""
        self._life.entered = len(self._sections)
        self._events.context = self._sections[-1].index if self._sections else None

    def left(self, context: Any) -> None:
        """The program's ``with`` left ``context`` (its ``__exit__`` ran, TVM's part raising or
        not). If TVM never called this trace's ``exit_pass_ctx`` for it (an instrument listed
        before it raised there: TVM calls no later one), its section ends here, saying so."""
        if self._life.finished or self._thread.other() or len(self._sections) < 2:
            return
        section = self._sections[-1]
        if section.context is None or not section.context.same_as(context):
            return
        opened = self.contexts[section.index]["opened"]
        why = (f"pass context {section.index} (opened at {opened}) was left without calling this trace's "
               "exit_pass_ctx: an instrument listed before it raised there, and TVM then calls no later one")
        if len(self._events.stack) > section.stack_depth:
            self.note_unseen(why)  # passes of it were cut short
        elif why not in self.notes:
            self.notes.append(f"{why}; its pass events had all ended")
        self._exit_context()

    def record_built(self, built: Any) -> None:
        """Record what a build returned (``relay.build``'s module, ``relay.vm.compile``'s
        executable, the Relax VM executable of ``tvm.compile``) as the artifact of the
        compilation it came from. Unlike :meth:`record_graph`, a failure here never reaches the
        caller: it is one problem in the trace, and recording goes on."""
        life, sink = self._life, self._events.sink
        if life.disabled or sink is None or life.finished or self._thread.other(event=True):
            return  # (a build in another thread counts with that thread's events)
        without = without_graph(built)
        if without is not None:
            self._events.note(without)
            return
        with self._guard("(recording what a build returned)"):
            try:
                name, ir, doc = artifact_document(built)
                record_artifact(self.records, sink, name, ir, doc)
            except Exception as exc:  # the script's build succeeded; only the trace misses its artifact
                if self.strict:
                    raise
                self.note_unseen(f"what a build returned ({type(built).__name__}) could not be recorded: "
                                 f"{type(exc).__name__}: {exc}")

    def note_pass_called(self, in_traced_context: Callable[[], bool]) -> None:
        """A pass is about to run, called from Python: in a thread other than the one this trace
        records, outside any context the trace is in (``in_traced_context()`` says, asked only
        then), nothing will tell the trace, so the call is counted here by thread."""
        thread = self._thread
        if thread.ident is None or threading.get_ident() == thread.ident or self._life.finished:
            return
        if not in_traced_context():
            thread.count_unseen()

    def note_unseen(self, what: str) -> None:
        """Say in the trace (its problems, once per text) that something was not recorded."""
        if what not in self.problems:
            self.complete = False
            self.problems.append(what)

    def finish(self) -> None:
        """Close the trace now (the process is exiting): end every open event and write the
        close line. Later pass contexts are not recorded."""
        life = self._life
        if life.finished:
            return
        if self._events.sink is None:
            life.finished = True
            return
        self._sections = self._sections[:1]
        self._exit_context()  # whichever thread the process ends in
