"""What a trace snapshots, and how: the passes and dialects it snapshots (the instrument's
``passes``, ``exclude`` and ``tir`` options), and the serializer of each dialect, made once.

Whether a snapshot is taken anew or an earlier one stands for the module is the policy's
business (``policy.py``); this module only says whether a pass event is snapshotted at all,
and takes a snapshot when the policy asks for one.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Pattern, Sequence, Union

from ..errors import RelayVizDependencyError, RelayVizSerializeError, RelayVizUsageError
from ..format.irs import EMPTY, MODULE_IRS, OTHER, RELAY, TIR
from ..serialize import Serializer, serializer_for
from ..store import PassRecord, TraceSink
from .equality import ModuleFacts
from .guard import InstrumentGuard
from .policy import Snapshot

__all__ = ["Snapshotter", "pass_pattern", "module_ir"]


class Snapshotter:
    """Chooses the pass events to snapshot and takes their snapshots.

    ``passes`` / ``exclude``: patterns on pass names (see :func:`pass_pattern`); ``tir``: also
    snapshot modules that hold only TIR PrimFuncs (with their bodies); ``full_values``: write
    every constant's values.
    """

    def __init__(self, passes: Optional[Pattern[str]], exclude: Optional[Pattern[str]], *, tir: bool,
                 full_values: bool) -> None:
        self.passes = passes
        self.exclude = exclude
        self.tir = tir
        self.full_values = full_values
        self._serializers: Dict[str, Union[Serializer, str]] = {}  # dialect -> serializer, or why none

    def wanted(self, record: PassRecord) -> bool:
        """Whether the pass event of ``record`` is snapshotted; when it is not for a reason the
        user may not expect (a dialect without a serializer here), ``record.note`` says why."""
        if record.ir == OTHER:
            record.note = "not snapshotted: the module holds functions of a dialect relayviz does not know"
            return False
        if record.ir not in MODULE_IRS and not (record.ir == TIR and self.tir):
            return False
        if self.passes is not None and not self.passes.search(record.name):
            return False
        if self.exclude is not None and self.exclude.search(record.name):
            return False
        serializer = self._serializer(record.ir)
        if isinstance(serializer, str):
            record.note = serializer
            return False
        return True

    def _serializer(self, ir: str) -> Union[Serializer, str]:
        """The serializer of dialect ``ir``, made once; or why there is none (the record's note)."""
        found = self._serializers.get(ir)
        if found is None:
            try:
                found = serializer_for(ir, full_values=self.full_values, tir_bodies=self.tir)
            except (RelayVizDependencyError, RelayVizSerializeError) as exc:
                found = f"not snapshotted: {exc}"
            self._serializers[ir] = found
        return found

    def take(self, state: ModuleFacts, sink: TraceSink, guard: InstrumentGuard) -> Snapshot:
        """Serialize the module ``state`` was read from and store its document in ``sink``, the
        garbage collector paused meanwhile (see ``InstrumentGuard.pause_gc``)."""
        ir, mod = module_ir(state), state.mod
        serializer = self._serializer(ir)
        if isinstance(serializer, str) and ir == EMPTY:  # a pass removed every function: any serializer
            serializer = next((s for s in self._serializers.values() if not isinstance(s, str)), serializer)
        if isinstance(serializer, str):  # a pass turned the module into a dialect without a serializer
            raise RelayVizSerializeError(serializer)
        guard.pause_gc()
        try:
            doc = serializer.module(mod)
        finally:
            guard.resume_gc()
        return Snapshot(state, sink.put(doc), doc)

    def forget(self) -> None:
        """Drop the serializers (when recording stops)."""
        self._serializers = {}


def pass_pattern(patterns: Union[str, Sequence[str], None], what: str) -> Optional[Pattern[str]]:
    """One regular expression matching any of ``patterns`` (``re.search`` on a pass name), or
    None for None; an invalid one is the user's error, naming the option ``what``."""
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns))
    except re.error as exc:
        raise RelayVizUsageError(f"{what}: invalid regular expression: {exc}") from None


def module_ir(state: ModuleFacts) -> str:
    """A module state's dialect (``serialize.module_ir``), where a module holding type definitions
    and no function is Relay: its type definitions (Relay's algebraic data types) are recorded."""
    if state.ir == EMPTY and state.types:
        return RELAY
    return state.ir
