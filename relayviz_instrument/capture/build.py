"""Tracing a whole ``relay.build``: the one-call form the demo, the benchmarks and users share."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple, Union

import tvm

from .instrument import RelayVizTrace

__all__ = ["trace_build"]


def trace_build(mod: tvm.IRModule, *, target: Any = "llvm", params: Optional[Dict[str, Any]] = None,
                opt_level: int = 3, out_dir: Union[str, "os.PathLike[str]", None, bool] = None,
                **options: Any) -> Tuple[Any, RelayVizTrace]:
    """``relay.build(mod, target, params)`` at ``opt_level`` under a new :class:`RelayVizTrace`.

    The built graph is recorded with :meth:`RelayVizTrace.record_graph`, as a user would
    after their own ``relay.build``. Returns ``(lib, trace)``; ``options`` go to
    :class:`RelayVizTrace`. On hhb-tvm (TVM 0.16), ``target="llvm"`` means RISC-V: pass
    ``"llvm -mtriple=x86_64-linux-gnu"`` to build code this machine runs.
    """
    from tvm import relay

    trace = RelayVizTrace(out_dir, **options)
    with tvm.transform.PassContext(opt_level=opt_level, instruments=[trace]):
        lib = relay.build(mod, target=target, params=params)
    trace.record_graph(lib)
    return lib, trace
