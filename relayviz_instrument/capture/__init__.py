"""Capture: the pass instrument and what it needs, one job per module::

    instrument.py   RelayVizTrace: TVM's callbacks -> pass records, snapshots through the sink
    guard.py        the one guard of every callback: times it, keeps its failures from TVM
    policy.py       SnapshotPolicy: reuse the previous snapshot or take a new one
    equality.py     structurally_equal: whether a pass changed its module, cheaply and safely
    artifacts.py    what a compilation built (graph JSON, VM executable) as the last event
    build.py        trace_build: relay.build under a new trace, with its graph recorded;
                    trace_compile: a Relax pipeline and tvm.compile under a new trace
    reproducer.py   what relayviz replay needs to run a pass again: kept, and made again
    pass_limit.py   RelayVizBisect: skip every pass after the first N (should_run)
    process_trace.py ProcessTrace: one trace of every pass context of a process, each a section
                    (put into every context by relayviz_instrument.autotrace)

Use it as any TVM pass instrument::

    trace = RelayVizTrace("my-trace")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        lib = relay.build(mod, target="llvm", params=params)
    trace.record_graph(lib)
"""

from __future__ import annotations

from .pass_limit import RelayVizBisect
from .build import compile_relax, trace_build, trace_compile
from .instrument import RelayVizTrace
from .policy import Snapshot, SnapshotPolicy

__all__ = ["RelayVizTrace", "RelayVizBisect", "trace_build", "trace_compile", "compile_relax", "SnapshotPolicy",
           "Snapshot"]
