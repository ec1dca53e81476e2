"""Which Python frame ran a pass, to tell when a pass ended without TVM saying so.

TVM sends no after-pass callback for a pass that raised. When the user catches that exception
inside the pass context and goes on, the next pass begins while the failed one is still open,
and would be recorded as its child. The instrument therefore remembers, when a pass begins,
the innermost Python frame outside the instruments' callbacks: the frame that called into TVM
to run it (``Pass.__call__``, or a Python pass calling another). While the pass runs that frame
is on the stack; a pass nested in it by TVM's C++ (a Sequential's passes) is run from the same
frame, and one nested by a Python pass from a frame above it. When a later callback finds the
frame of an open pass no longer on the current stack, that pass has ended: it raised.

The exception itself is the one whose traceback passes through the pass's frame. It is found
when it is still being handled at the next callback (a pass run in an ``except`` block), when
it is the one leaving the pass context, or else when anything still holds it (``pytest.raises``,
an ``except ... as e`` that kept ``e``): the objects the garbage collector tracks are searched
for it, once per pass that raised unseen (a few tens of milliseconds in a large process; no
cost for a pass that ends normally). An exception nothing holds any more is gone: the trace
then says the pass raised and that its error did not reach the instrument.

Measured on hhb-tvm 0.16 and TVM 0.27 (tests/test_capture_closing.py): both call a Python
callback with the frame that called into TVM as its caller (TVM 0.27's Cython FFI adds no
frame of its own).
"""

from __future__ import annotations

import gc
import os
import sys
from types import FrameType
from typing import Any, Dict, FrozenSet, List, Optional, Set

import tvm

from ..errors import CompilationInterrupted, RelayVizError

__all__ = ["caller_frame", "frames_on_stack", "stack_of", "code_between", "error_through", "held_exceptions",
           "error_still_held", "CALLBACKS",
           "error_text", "interruption", "instrument_that_raised", "own_callback_that_raised", "through_tvm",
           "RAISED_UNSEEN", "EXITED_FIRST",
           "EXIT_NEVER_CAME", "ENDED_INSIDE", "NEVER_OPENED",
           "ENTRY_INTERRUPTED", "CUT_SHORT", "CUT_BY"]

#: An error text longer than this keeps its start and its end (where TVM puts the message).
_ERROR_CHARS = 4000
#: What the trace says of a pass that raised an exception the instrument never saw.
RAISED_UNSEEN = "raised (the error did not reach the instrument)"
#: What the trace says of a pass still running when its pass context exited.
EXITED_FIRST = "did not finish (the pass context exited first)"
#: Why a trace was closed without its exit_pass_ctx (``{when}``: when it was closed).
EXIT_NEVER_CAME = ("the pass context exited without calling this instrument's exit_pass_ctx (an instrument "
                   "listed before it raised there, and TVM then calls no later one), or a Ctrl-C cut that callback "
                   "short before it closed the trace; the trace was closed {when}")
#: Why a trace was closed while its pass context was still current.
ENDED_INSIDE = "the process ended inside the pass context; the trace was closed when it ended"
#: Why a trace records nothing: its enter_pass_ctx was cut short, and TVM went on.
NEVER_OPENED = ("the trace never opened: an interruption (Ctrl-C) cut its enter_pass_ctx short, and TVM dropped "
                "it and went on with the compilation; nothing is recorded. Run the compilation again to trace it")
#: Why a trace was closed as soon as its pass context was entered.
ENTRY_INTERRUPTED = ("the compilation was interrupted (Ctrl-C) while the trace was opening, before any pass; TVM "
                     "calls no exit_pass_ctx after an enter_pass_ctx that raised, so the trace was closed then")
#: Why TVM ended a pass the trace did not see begin, or did not see end (``{callback}``).
CUT_SHORT = ("TVM dropped a Ctrl-C that landed as it called the instrument's {callback} (in TVM's own Python "
             "code, or before the callback's first line), never ran the callback, and went on")
#: What an error that came out of the trace's own callback ``{callback}`` was (``{error}``: its class).
CUT_BY = "a Ctrl-C that landed in {callback} before its guard, which TVM passed on as {error}"
#: This package's code: the instrument's callbacks are in capture/, a process trace's in autotrace/.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: TVM's Python package: code an exception went through when TVM raised it.
_TVM_DIR = os.path.dirname(os.path.abspath(tvm.__file__)) + os.sep

#: The callbacks of a pass instrument: frames that run one (ours, a subclass's, or
#: RelayVizBisect forwarding to its own trace) last only as long as the callback.
CALLBACKS: FrozenSet[str] = frozenset({"enter_pass_ctx", "exit_pass_ctx", "should_run", "run_before_pass",
                                       "run_after_pass"})
#: How many causes and contexts of an exception are searched for a pass's frame.
_CHAIN = 16


def caller_frame() -> Optional[FrameType]:
    """The innermost frame of the current stack that is not a pass instrument's callback (nor
    this function): the frame that asked TVM to run the pass whose callback is running."""
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None and frame.f_code.co_name in CALLBACKS:
        frame = frame.f_back
    return frame


def frames_on_stack(frame: Optional[FrameType]) -> Set[int]:
    """The ``id`` of ``frame`` and of every frame below it (the frames that called it). Frames
    the caller keeps a reference to have ids no other frame has."""
    found = set()
    while frame is not None:
        found.add(id(frame))
        frame = frame.f_back
    return found


def stack_of(frame: Optional[FrameType]) -> List[FrameType]:
    """``frame`` and every frame below it (the frames that called it), innermost first. Held,
    they stay these frames: a frame that ended is not another's while it is referenced."""
    found = []
    while frame is not None:
        found.append(frame)
        frame = frame.f_back
    return found


def code_between(earlier: List[FrameType], frame: Optional[FrameType]) -> Optional[Dict[str, Any]]:
    """Where the code ran that came between two pass events: the innermost frame of ``frame``'s
    stack that was on the stack ``earlier`` (:func:`stack_of` when the first event ended) too,
    the function that ran both, and in which (or in what it called) whatever happened between
    them happened. ``{"function": module.qualified name, "file", "line"}`` (the line it is at
    now: the call that runs the second event), or None when the two stacks share no frame."""
    known = {id(f) for f in earlier}  # the frames are held in ``earlier``: their ids are theirs
    while frame is not None and id(frame) not in known:
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    qualified = getattr(code, "co_qualname", code.co_name)  # Python 3.11+ names a method with its class
    module = frame.f_globals.get("__name__")
    return {"function": f"{module}.{qualified}" if isinstance(module, str) else qualified,
            "file": code.co_filename, "line": frame.f_lineno}


def error_through(frame: Optional[FrameType], exc: Optional[BaseException]) -> Optional[BaseException]:
    """The exception, among ``exc`` and its causes and contexts, whose traceback passes through
    ``frame``: the one the pass run from ``frame`` raised. None if there is none."""
    if frame is None:
        return None
    seen: List[BaseException] = []
    pending = [exc]
    while pending and len(seen) < _CHAIN:
        current = pending.pop(0)
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        tb = current.__traceback__
        while tb is not None:
            if tb.tb_frame is frame:
                return current
            tb = tb.tb_next
        pending.extend((current.__cause__, current.__context__))
    return None


def held_exceptions() -> List[BaseException]:
    """Every exception with a traceback that something still holds (one pass over the objects
    the garbage collector tracks)."""
    # type(), not isinstance(): isinstance asks a lazy proxy for its __class__, which may import or warn.
    return [obj for obj in gc.get_objects() if issubclass(type(obj), BaseException) and obj.__traceback__ is not None]


def error_still_held(frame: Optional[FrameType], held: List[BaseException]) -> Optional[BaseException]:
    """The exception among ``held`` (see :func:`held_exceptions`) whose own traceback passes
    through ``frame``; of several, one that is no other's cause or context (the outermost)."""
    if frame is None:
        return None
    found = [e for e in held if error_through(frame, e) is e]
    inner = {id(e.__cause__) for e in found} | {id(e.__context__) for e in found}
    outer = [e for e in found if id(e) not in inner]
    first = outer or found
    return first[0] if first else None


def error_text(exc: BaseException) -> str:
    """``Type: message`` of an exception as the trace records it, its middle left out past
    4,000 characters (TVM puts the message at the end, after its C++ backtrace)."""
    text = f"{type(exc).__name__}: {exc}"
    half = _ERROR_CHARS // 2
    return text if len(text) <= _ERROR_CHARS else f"{text[:half]} [...] {text[-half:]}"


def interruption(exc: Optional[BaseException]) -> bool:
    """Ctrl-C or an exit (carried through TVM as CompilationInterrupted, an Exception too)."""
    return isinstance(exc, (KeyboardInterrupt, SystemExit)) or (exc is not None and not isinstance(exc, Exception))


def instrument_that_raised(exc: Optional[BaseException], this: Any) -> Optional[str]:
    """``Class.callback`` of the pass instrument other than ``this`` whose callback raised
    ``exc``, read from its traceback (TVM keeps the Python frames), or None."""
    tb = exc.__traceback__ if exc is not None else None
    found = None
    while tb is not None:
        frame = tb.tb_frame
        owner = frame.f_locals.get("self") if frame.f_code.co_name in CALLBACKS else None
        if isinstance(owner, tvm.instrument.PassInstrument) and owner is not this:
            found = f"{type(owner).__name__}.{frame.f_code.co_name}"
        tb = tb.tb_next
    return found


def own_callback_that_raised(exc: Optional[BaseException], this: Any) -> Optional[str]:
    """Where in relayviz's own callbacks ``exc`` was raised (``Class.function``), or None.

    Everything a callback does runs in its guard, which lets out only CompilationInterrupted
    (and, with ``strict=True``, the instrument's failures). What else went through one of this
    package's callbacks is a Ctrl-C that landed on a line before the guard: TVM 0.2x (tvm-ffi)
    passes it on as a RuntimeError with no message, its Python frames named but without their
    locals. (A pass's own error goes through no callback; it may go through ``compile_relax``
    or ``trace_build``, which are in this package too.)"""
    if exc is None or isinstance(exc, (CompilationInterrupted, RelayVizError)) or getattr(this, "strict", False):
        return None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name in CALLBACKS and os.path.abspath(code.co_filename).startswith(_PACKAGE_DIR):
            return f"{type(this).__name__}.{code.co_name}"
        tb = tb.tb_next
    return None


def through_tvm(exc: Optional[BaseException]) -> bool:
    """Whether ``exc`` was raised in TVM's own Python code or below it (``tvm.compile``,
    ``relay.build``): its traceback passes through a file of TVM's package. An error a user's
    script raised itself does not."""
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_TVM_DIR):
            return True
        tb = tb.tb_next
    return False
