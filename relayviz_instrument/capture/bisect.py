"""RelayVizBisect: let the first N passes that bisection may skip run, and skip the others,
through ``PassInstrument.should_run`` — LLVM's ``-opt-bisect-limit`` for TVM.

Which passes may be skipped: an optimization, that is a pass whose ``opt_level`` is at least
``min_opt_level`` (1: a pass the PassContext's ``opt_level`` could have left out), run on a
Relay or Relax module. Never InferType, a pass the PassContext requires (``required_pass``)
or another pass names in its ``required``, a Sequential as a whole (``sequential``, and the
names in ``keep``: ``relayviz bisect`` adds the user's Sequentials, which it finds as events
holding other passes), nor the TIR lowering. Skipping all of them still builds a correct
``relay.build`` of ResNet-18 on this TVM (the tests check the model's output), so a limit
never breaks the build by itself.

The skippable passes are numbered in the order they are asked about (``bisect`` in the
trace), so a run with limit N runs exactly the passes numbered 0 to N-1 of a run without a
limit: everything before the N-th is the same in both. ``relayviz bisect`` passes N through
``RELAYVIZ_BISECT_LIMIT`` and a directory for the trace through ``RELAYVIZ_BISECT_TRACE``.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Set, Tuple

import tvm

from .._bisect_env import KEEP_ENV, LIMIT_ENV, TRACE_ENV
from ..errors import CompilationInterrupted, RelayVizUsageError
from ..format.irs import MODULE_IRS
from ..serialize import module_ir
from .guard import carried_interruption
from .instrument import RelayVizTrace, _PlainAttributes

__all__ = ["RelayVizBisect", "LIMIT_ENV", "TRACE_ENV", "KEEP_ENV"]

#: Passes never skipped, whatever their opt_level: type inference, and the default Sequential.
_NEVER = frozenset({"InferType", "sequential"})


class RelayVizBisect(_PlainAttributes, tvm.instrument.PassInstrument):  # type: ignore[misc]  # TVM's classes are Any (pyproject.toml)
    """A pass instrument that skips every skippable pass after the first ``limit``.

    ``limit``: how many skippable passes run; ``None`` reads ``RELAYVIZ_BISECT_LIMIT`` (unset
    or empty: no limit, every pass runs and is numbered). ``trace``: a :class:`RelayVizTrace`
    in the same PassContext to tell what was skipped (it records skipped events, and numbers
    the others); without one, and with ``RELAYVIZ_BISECT_TRACE`` set, the instrument records
    its own trace there. ``min_opt_level``: the lowest ``opt_level`` of a skippable pass.
    ``keep``: names of passes never skipped (added to ``RELAYVIZ_BISECT_KEEP``'s).

    ``decisions`` lists ``(number, pass name, skipped)`` for every skippable pass seen.
    """

    def __init__(self, limit: Optional[int] = None, *, trace: Optional[RelayVizTrace] = None,
                 min_opt_level: int = 1, keep: Sequence[str] = ()) -> None:
        if limit is None:
            limit = _limit_from_environment()
        if limit is not None and limit < 0:
            raise RelayVizUsageError(f"RelayVizBisect: limit must be 0 or more, not {limit}")
        self.limit = limit
        self.min_opt_level = min_opt_level
        self.keep = frozenset(keep) | frozenset(filter(None, os.environ.get(KEEP_ENV, "").split(",")))
        self.decisions: List[Tuple[int, str, bool]] = []
        self._required: Set[str] = set()
        #: The trace this instrument records itself (and forwards TVM's callbacks to).
        self._own: Optional[RelayVizTrace] = None
        if trace is None and os.environ.get(TRACE_ENV):
            self._own = trace = RelayVizTrace(os.environ[TRACE_ENV])
        self._trace = trace
        super().__init__()

    @property
    def trace(self) -> Optional[RelayVizTrace]:
        """The trace told about the decisions (given, or recorded by this instrument)."""
        return self._trace

    def should_run(self, mod: tvm.IRModule, info: Any) -> bool:
        try:
            name = str(info.name)
            self._required.update(str(r) for r in info.required)
            if not self._skippable(mod, info, name):
                return True
            number = len(self.decisions)
            skipped = self.limit is not None and number >= self.limit
            self.decisions.append((number, name, skipped))
            if self._trace is not None:
                self._trace.note_bisect(mod, info, number, skipped)
            return not skipped
        except CompilationInterrupted:  # Ctrl-C while the trace recorded the decision: stop
            raise
        except Exception:  # deciding must never break the compilation: run the pass
            return True
        except BaseException as exc:  # Ctrl-C while deciding: TVM would drop a bare one
            raise carried_interruption(exc, info) from exc

    def _skippable(self, mod: tvm.IRModule, info: Any, name: str) -> bool:
        if name in _NEVER or name in self.keep or name in self._required or int(info.opt_level) < self.min_opt_level:
            return False
        context = tvm.transform.PassContext.current()
        if any(str(p) == name for p in context.required_pass):
            return False
        return module_ir(mod) in MODULE_IRS

    # -- the trace this instrument records itself ---------------------------------------------

    def enter_pass_ctx(self) -> None:
        try:  # first: see carried_interruption
            if self._own is not None:
                self._own.enter_pass_ctx()
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, "(entering the pass context)") from exc

    def exit_pass_ctx(self) -> None:
        try:  # first: see carried_interruption
            if self._own is not None:
                self._own.exit_pass_ctx()
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, "(leaving the pass context)") from exc

    def run_before_pass(self, mod: tvm.IRModule, info: Any) -> None:
        try:  # first: see carried_interruption
            if self._own is not None:
                self._own.run_before_pass(mod, info)
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, info) from exc

    def run_after_pass(self, mod: tvm.IRModule, info: Any) -> None:
        try:  # first: see carried_interruption
            if self._own is not None:
                self._own.run_after_pass(mod, info)
        except Exception:
            raise
        except BaseException as exc:  # Ctrl-C: carried, not dropped by TVM
            raise carried_interruption(exc, info) from exc


def _limit_from_environment() -> Optional[int]:
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise RelayVizUsageError(f"{LIMIT_ENV}={text!r}: expected a number of passes (0 or more)") from None

