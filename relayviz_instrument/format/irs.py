"""The IR vocabulary: the names a document's ``ir`` field and a pass record's ``ir`` take.

A document says which dialect its nodes come from (``docs/format.md``, the root's ``ir``);
a pass record says what the module of that pass held (``serialize.module_ir``), or which
artifact a compilation built. Every stage compares against these names, never a literal.
"""

from __future__ import annotations

from typing import FrozenSet

__all__ = ["RELAY", "RELAX", "TIR", "GRAPH_EXECUTOR", "NNVM", "VM_EXECUTABLE", "EMPTY", "OTHER",
           "MODULE_IRS", "GRAPH_IRS", "ARTIFACT_IRS", "PRIMFUNC_CALLS", "KERNEL_CALLS", "VM_BUILTIN_PREFIX"]

RELAY = "relay"
RELAX = "relax"
#: A module of PrimFuncs only (snapshotted with ``RelayVizTrace(tir=True)``).
TIR = "tir"
#: Graph executor JSON (``relay.build``'s ``get_graph_json()``) and the older NNVM graph JSON.
GRAPH_EXECUTOR = "graph_executor"
NNVM = "nnvm"
#: The bytecode of ``relay.vm.compile``, and the Relax VM executable of ``tvm.compile``.
VM_EXECUTABLE = "vm_executable"
#: Pass records only: a module with no function (the device side of a CPU build after the
#: host/device split), and one of a dialect no serializer writes.
EMPTY = "empty"
OTHER = "other"

#: The IRModule dialects whose modules the instrument snapshots around every pass.
MODULE_IRS: FrozenSet[str] = frozenset({RELAY, RELAX})
#: Documents read from graph JSON.
GRAPH_IRS: FrozenSet[str] = frozenset({GRAPH_EXECUTOR, NNVM})
#: Events that record what a compilation built rather than a pass
#: (``RelayVizTrace.record_graph``).
ARTIFACT_IRS: FrozenSet[str] = frozenset({GRAPH_EXECUTOR, VM_EXECUTABLE})

#: Relax operators whose first argument names the PrimFunc they run (a ``GlobalVar``).
PRIMFUNC_CALLS: FrozenSet[str] = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad"})
#: Relax operators whose first argument names the kernel they run: a PrimFunc, or a packed
#: function outside the module (an ``ExternFunc``).
KERNEL_CALLS: FrozenSet[str] = PRIMFUNC_CALLS | {"relax.call_dps_packed"}
#: The names of the Relax VM's own helpers (allocation, shape checks), called like kernels
#: but computing nothing of the model.
VM_BUILTIN_PREFIX = "vm.builtin."
