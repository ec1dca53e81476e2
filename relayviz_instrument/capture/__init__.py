"""Capture: the pass instrument and what it needs, one job per module::

    instrument.py   RelayVizTrace: TVM's callbacks, each in the guard, to the recorder and the lifecycle
    guard.py        the one guard of every callback: times it, keeps its failures from TVM
    recording.py    PassRecorder: what a pass event records as it begins and ends
    events.py       PassEvents: the records, the open events, and the rules that end those TVM
                    does not end (plain Python: tested without TVM)
    lifecycle.py    TraceLifecycle: the trace opened, closed (at exit if its context never
                    exited), stopped when the instrument fails
    pass_frames.py  which Python frame ran a pass, and which exception went through it
    pass_info.py    a pass's name, opt_level and required passes, read once per PassInfo
    threads.py      RecordedThread: the one thread a trace records, the others counted
    snapshotter.py  Snapshotter: which events are snapshotted, and the serializer of each dialect
    policy.py       SnapshotPolicy: reuse the previous snapshot or take a new one
    equality.py     structurally_equal: whether a pass changed its module, cheaply and safely
    artifacts.py    what a compilation built (graph JSON, VM executable) as the last event
    build.py        trace_build: relay.build under a new trace, with its graph recorded;
                    trace_compile: a Relax pipeline and tvm.compile under a new trace
    reproducer.py   what relayviz replay needs to run a pass again: kept, and made again
    kept_module.py  the forms a pass's input module is kept in (save_json, TVMScript)
    script_allowlist.py  what a kept TVMScript module may call when it is read back
    bisect.py       RelayVizBisect: skip every pass after the first N (should_run)
    contexts.py     a PassContext's instruments as TVM holds them, and as a traced program sees them

Tracing every pass context of a process (``relayviz run``, ``RELAYVIZ_TRACE``, ``pytest
--relayviz-trace``) builds on this package from ``relayviz_instrument.autotrace``.

Use it as any TVM pass instrument::

    trace = RelayVizTrace("my-trace")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        lib = relay.build(mod, target="llvm", params=params)
    trace.record_graph(lib)
"""

from __future__ import annotations

from .bisect import RelayVizBisect
from .build import compile_relax, trace_build, trace_compile
from .instrument import RelayVizTrace
from .policy import Snapshot, SnapshotPolicy

__all__ = ["RelayVizTrace", "RelayVizBisect", "trace_build", "trace_compile", "compile_relax", "SnapshotPolicy",
           "Snapshot"]
