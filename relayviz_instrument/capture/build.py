"""Tracing a whole build: ``relay.build`` (Relay) or a Relax pipeline and ``tvm.compile`` (Relax),
in the one-call form the demo, the benchmarks and users share."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple, Union

import tvm

from .instrument import RelayVizTrace

__all__ = ["trace_build", "trace_compile", "compile_relax"]


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


def compile_relax(mod: tvm.IRModule, *, target: Any = "llvm", pipeline: Optional[str] = "zero") -> Any:
    """``relax.get_pipeline(pipeline)(mod)`` then ``tvm.compile(mod, target)``: a Relax module to
    a VM executable, in the pass context of the caller.

    TVM 0.2x's default CPU pipeline legalizes but does not fuse; the ``zero`` pipeline runs
    LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps and FuseTIR first. ``pipeline=None``
    compiles the module as it is. TVMs before ``tvm.compile`` (hhb-tvm 0.16) use ``relax.build``.
    """
    from tvm import relax

    if pipeline is not None:
        mod = relax.get_pipeline(pipeline)(mod)
    build = getattr(tvm, "compile", None) or relax.build
    return build(mod, target=target)


def trace_compile(mod: tvm.IRModule, *, target: Any = "llvm", pipeline: Optional[str] = "zero",
                  opt_level: int = 3, out_dir: Union[str, "os.PathLike[str]", None, bool] = None,
                  **options: Any) -> Tuple[Any, RelayVizTrace]:
    """:func:`compile_relax` at ``opt_level`` under a new :class:`RelayVizTrace`.

    The executable is recorded with :meth:`RelayVizTrace.record_graph` (its VM functions and the
    kernels they call, after the last Relax module). Returns ``(executable, trace)``; ``options``
    go to :class:`RelayVizTrace` (``tir=True`` also snapshots the TIR passes of the build).
    ``target`` is a target string or a ``tvm.target.Target``; for a GPU, ``pipeline=None`` runs
    ``tvm.compile``'s default pipeline for it alone (for CUDA, dlight's schedules), as MLC-LLM does. On
    hhb-tvm (TVM 0.16), ``target="llvm"`` means RISC-V: pass ``"llvm -mtriple=x86_64-linux-gnu"``
    to build code this machine runs.
    """
    trace = RelayVizTrace(out_dir, **options)
    with tvm.transform.PassContext(opt_level=opt_level, instruments=[trace]):
        built = compile_relax(mod, target=target, pipeline=pipeline)
    trace.record_graph(built)
    return built, trace
