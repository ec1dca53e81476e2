"""What a pass event records as it begins and ends: the pass's facts (``pass_info.py``), the
dialect of its module, its input and output snapshots (through the policy, ``policy.py``, when
``snapshotter.py`` wants them), whether its input is a module the caller made anew or changed
since the last pass, its bisection number, and its input kept for ``relayviz replay``.

The instrument calls :class:`PassRecorder` from its callbacks, inside their guard; the recorder
hands the events to the state machine (``events.py``), which owns the records, the open events
and the manifest's lines.
"""

from __future__ import annotations

from types import FrameType
from typing import Any, Callable, Dict, List, Optional, Pattern, Protocol, Tuple

import tvm

from ..errors import RelayVizTraceError
from ..store import PassRecord
from ..serialize.reflection import object_key
from .equality import ModuleFacts, ModuleReader, shares_functions
from .events import OpenEvent, PassEvents
from .guard import GuardedCall, InstrumentGuard
from .pass_frames import NEVER_OPENED, caller_frame, code_between, stack_of
from .pass_info import PassInfos
from .policy import Snapshot, SnapshotPolicy
from .reproducer import replay_facts
from .snapshotter import Snapshotter, module_ir

__all__ = ["PassRecorder"]


class _Instrument(Protocol):
    """What the recorder reads of its instrument: whether the instrument's failures propagate."""

    strict: bool


class PassRecorder:
    """Records the pass events of one trace into its :class:`PassEvents` (``events``).

    ``owner``: the instrument (its ``strict`` is read when a module cannot be kept);
    ``snapshots``: what is snapshotted, and how; ``keep``: the passes whose input is kept
    for replay before they run; ``progress``: called with each record when its pass ends;
    ``guard``: the instrument's guard (its seconds, and the garbage collector it pauses).
    """

    def __init__(self, owner: _Instrument, snapshots: Snapshotter, keep: Optional[Pattern[str]],
                 progress: Optional[Callable[[PassRecord], None]], guard: InstrumentGuard) -> None:
        self._owner = owner
        self._snapshots = snapshots
        self._keep = keep
        self._progress = progress
        self._guard = guard
        #: The records, the open events, the sink, and what the close line will say.
        self.events = PassEvents(owner, guard, self._keep_input)
        self._pass_infos = PassInfos()
        #: Each module state's dialect and functions, read once (see capture/equality.py).
        self._modules = ModuleReader()
        self._policy = SnapshotPolicy(self._take, self._modules.equal)
        #: The module the last pass run directly in the context returned, its snapshot, and the
        #: stack of frames that ran it: what a new module is told apart from (see
        #: ``PassRecord.new_module``), and where a change made after it ran (``PassRecord.between``).
        self._last_top: Optional[Tuple[Any, str, List[FrameType]]] = None
        #: A RelayVizBisect's number for the pass about to begin: ``(PassInfo, number)``.
        self._bisect_next: Optional[Tuple[Any, int]] = None

    @property
    def pass_infos(self) -> PassInfos:
        """The PassInfos read so far (see ``pass_info.py``)."""
        return self._pass_infos

    def begin(self, mod: tvm.IRModule, info: Any, frame: Optional[FrameType], guard: GuardedCall) -> None:
        """A pass event begins: the pass that ``frame`` ran (in ``run_before_pass``'s guard)."""
        events = self.events
        sink = events.sink
        if sink is None:
            raise RelayVizTraceError(NEVER_OPENED)
        events.close_ended(frame)
        state = self._modules.facts(mod)  # what the module holds now, read once per callback
        record = self.new_record(mod, info, state)
        if self._bisect_next is not None and self._bisect_next[0].same_as(info):
            record.bisect = self._bisect_next[1]
        self._bisect_next = None
        events.records.append(record)  # first: a failure below still leaves the event on record
        context = tvm.transform.PassContext.current()
        target = tvm.target.Target.current(allow_none=True)
        if self._keep is not None and self._keep.search(record.name):
            self._keep_for_replay(record, mod, context, target)
        before = self._before(record, state, frame) if self._snapshots.wanted(record) else None
        opened = OpenEvent(record, before, mod=mod, context=context, target=target, frame=frame,
                           key=object_key(info))
        events.stack.append(opened)
        guard.starts(opened)
        sink.begin(record)

    def _before(self, record: PassRecord, state: ModuleFacts, frame: Optional[FrameType]) -> Snapshot:
        """The snapshot of a pass's input module (``state``: what it holds), noted in its record;
        ``frame`` ran the pass."""
        mod = state.mod
        before = self._policy.before(state)
        record.before, record.nodes_before = before.ref, before.nodes
        last = self._last_top
        if record.depth == 1 and last is not None and before.ref != last[1]:
            if not shares_functions(last[0], mod):
                record.new_module = True  # a module the caller made anew: a pipeline of its own
            else:  # changed since the last pass: by the code that ran both
                record.between = code_between(last[2], frame)
        return before

    def _keep_for_replay(self, record: PassRecord, mod: tvm.IRModule, context: Any, target: Any) -> None:
        """Keep the input module of a pass ``keep=`` names, for ``relayviz replay``."""
        try:
            record.replay = self._replay_facts(mod, context, target)
        except Exception as failure:  # a module no safe form carries here: not kept, recording goes on
            if self._owner.strict:
                raise
            events = self.events
            events.complete = False
            why = f"could not be kept for relayviz replay: {type(failure).__name__}: {failure}"
            if not any(problem.endswith(why) for problem in events.problems):  # once per reason
                events.problems.append(f"the input module of pass {record.name} (#{record.index}), and of "
                                       f"any later pass for the same reason, {why}")

    def end(self, mod: tvm.IRModule, info: Any, now: float) -> None:
        """A pass event ends, ``now`` (in ``run_after_pass``'s guard)."""
        events = self.events
        stack = events.stack
        key = object_key(info)
        if not stack or stack[-1].key != key:
            events.unmatched_after(key, lambda: self._pass_infos.facts(info)[0])
            if not stack or stack[-1].key != key:
                return
        opened = stack[-1]
        record = opened.record
        record.duration_ms = opened.own_ms(now, self._guard.seconds)
        if opened.before is not None:
            state = self._modules.facts(mod)
            after, changed = self._policy.after(opened.before, state)
            record.after, record.nodes_after, record.changed = after.ref, after.nodes, changed
            if not changed:  # the next pass receives it: its dialect is known
                self._modules.alias(state, opened.before.state)
        assert events.sink is not None
        events.sink.end(record)
        if record.depth == 1 and record.after is not None:
            self._last_top = (mod, record.after, stack_of(caller_frame()))
        stack.pop()  # last: an interruption above leaves the pass open, to be closed on exit
        if self._progress is not None:
            self._progress(record)

    def bisect(self, mod: tvm.IRModule, info: Any, number: int, skipped: bool, frame: Optional[FrameType]) -> None:
        """A RelayVizBisect decided about the pass about to begin (see ``RelayVizTrace.note_bisect``):
        a pass that runs gets ``number`` when it begins; a skipped one, called from ``frame``, is
        an event that begins and ends at once."""
        if not skipped:
            self._bisect_next = (info, number)
            return
        events = self.events
        sink = events.sink
        assert sink is not None
        events.close_ended(frame)
        record = self.new_record(mod, info)
        record.skipped, record.bisect = True, number
        events.records.append(record)
        sink.begin(record)
        sink.end(record)

    def new_record(self, mod: tvm.IRModule, info: Any, state: Optional[ModuleFacts] = None) -> PassRecord:
        """The record of a pass event beginning now on ``mod`` (``state``: what it holds, if
        read already), nested in the innermost open one."""
        name, opt_level, required = self._pass_infos.facts(info)
        return self.events.new_record(name, opt_level, required,
                                      module_ir(self._modules.facts(mod) if state is None else state))

    def _take(self, state: ModuleFacts) -> Snapshot:
        assert self.events.sink is not None
        return self._snapshots.take(state, self.events.sink, self._guard)

    def _keep_input(self, opened: OpenEvent) -> Dict[str, Any]:
        return self._replay_facts(opened.mod, opened.context, opened.target)

    def _replay_facts(self, mod: tvm.IRModule, context: Any, target: Any) -> Dict[str, Any]:
        """What ``relayviz replay`` needs to run a pass on ``mod`` again; the module is stored."""
        assert self.events.sink is not None
        facts, module_json = replay_facts(mod, context, target)
        facts["module"] = self.events.sink.put_module(module_json)
        return facts

    def release(self) -> None:
        """Hold nothing that pins IR objects (recording stopped, or the trace is closed)."""
        self._snapshots.forget()
        self._pass_infos.forget()
        self.events.stack = []
        self._last_top = None
        self._policy.forget()
        self._modules.forget()
