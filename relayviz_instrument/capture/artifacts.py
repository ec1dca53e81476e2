"""What a compilation built, recorded as the trace's last event: the graph executor JSON that
``relay.build`` returns, the VM executable of ``relay.vm.compile``, or the Relax VM executable
of ``tvm.compile`` (``relax.build``).

The artifact is not a pass's output, so no callback sees it: :meth:`RelayVizTrace.record_graph`
(which ``trace_build`` calls) hands it here. It becomes an event whose ``after`` is the
artifact's document and whose ``before`` is the last module of the compilation that built it,
found by content (the functions the artifact calls), not by order, so that several
compilations in one pass context each get their own.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from ..format import Document
from ..format.irs import ARTIFACT_IRS, GRAPH_EXECUTOR, MODULE_IRS, VM_EXECUTABLE
from ..store import PassRecord, TraceSink
from ..store.builds import best_build_for, split_builds
from ..store.records import NO_GRAPH

__all__ = ["artifact_document", "artifact_kernels", "module_that_built", "record_artifact", "without_graph"]

#: The node kinds that name a module's functions.
_FUNCTION_KINDS = ("GlobalVar", "PrimFunc")


def artifact_document(built: Any) -> Tuple[str, str, Document]:
    """``(event name, ir, document)`` of a build's artifact: graph executor JSON (what
    ``relay.build`` returned, anything with ``get_graph_json()``, or the JSON itself) or a VM
    executable (``relay.vm.compile``'s ``Executable``; a ``VMCodeGen`` event for the Relax VM
    ``Executable`` of ``tvm.compile``)."""
    if type(built).__name__ == "Executable" and hasattr(built, "bytecode"):
        from ..serialize.vm import from_vm_executable

        return "VMCompiler", VM_EXECUTABLE, from_vm_executable(built)
    from ..serialize.relax_vm import from_relax_executable, is_relax_executable

    if is_relax_executable(built):
        return "VMCodeGen", VM_EXECUTABLE, from_relax_executable(built)
    from ..graph_json import from_graph_json

    graph = built.get_graph_json() if hasattr(built, "get_graph_json") else built
    return "GraphExecutorCodegen", GRAPH_EXECUTOR, from_graph_json(graph, source_name="relay.build")


def without_graph(built: Any) -> Optional[str]:
    """Why what a build returned has no graph to record (``relay.build`` with the AOT executor
    returns an ``AOTExecutorFactoryModule``: compiled code and no graph), as a note; None for
    anything :func:`artifact_document` reads (a graph, its JSON, a VM executable)."""
    cls = type(built).__name__
    if not cls.endswith("ExecutorFactoryModule") or hasattr(built, "get_graph_json"):
        return None  # a graph (or its JSON, or a VM executable): artifact_document reads it
    what = " (the AOT executor)" if cls.startswith("AOT") else ""
    return (f"what the build returned, {cls}{what}, {NO_GRAPH}: the trace ends at the last module the "
            "compilation's passes made")


def artifact_kernels(doc: Document) -> Set[str]:
    """The names of the functions an artifact document calls (its Op nodes' names)."""
    return {n["name"] for n in doc["nodes"] if n["node_kind"] == "Op"}


def module_that_built(records: List[PassRecord], sink: TraceSink, kernels: Set[str]) -> Optional[PassRecord]:
    """The last module event of the compilation in ``records`` whose functions ``kernels``
    names best; a compilation that has an artifact recorded already loses ties."""
    lasts: Dict[int, PassRecord] = {}
    names: Dict[int, Set[str]] = {}
    taken: Set[int] = set()
    for build in split_builds(records):
        modules = [records[i] for i in build.events if records[i].after is not None and records[i].ir in MODULE_IRS]
        if not modules:
            continue
        lasts[build.number] = modules[-1]
        last_after = modules[-1].after
        assert last_after is not None
        # The last compilation's last module was stored last: the trace holds its document.
        doc = sink.held(last_after)
        if doc is None:
            doc = sink.get(last_after)
        names[build.number] = {n.get("name", "") for n in doc["nodes"] if n["node_kind"] in _FUNCTION_KINDS}
        if any(a.ir in ARTIFACT_IRS for a in build.artifacts):
            taken.add(build.number)
    number = best_build_for(kernels, names, taken)
    return None if number is None else lasts[number]


def record_artifact(records: List[PassRecord], sink: TraceSink, name: str, ir: str,
                    doc: Document) -> PassRecord:
    """Store an artifact's document and append its event to ``records`` and the manifest
    (after the close line if the pass context has exited). An artifact recorded already is
    not recorded again: its existing record is returned."""
    ref = sink.put(doc)
    for existing in records:
        if existing.ir == ir and existing.after == ref:
            return existing
    before = module_that_built(records, sink, artifact_kernels(doc))
    record = PassRecord(index=len(records), name=name, depth=1, ir=ir, changed=True, after=ref,
                        nodes_after=len(doc["nodes"]), before=before.after if before else None,
                        nodes_before=before.nodes_after if before else None)
    records.append(record)
    if sink.closed:
        sink.add_after_close(record)
    else:
        sink.begin(record)
        sink.end(record)
    return record
