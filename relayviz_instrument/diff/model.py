"""The result of a diff: node pairs, what changed in them, and hunks. Plain data, no I/O.

Every node of the *before* document is either paired with a node of the *after* document or
removed; every node of the after document is paired or added. A pair is ``unchanged``,
``changed`` (its attributes, type or value differ; :class:`FieldChange` lists them) or
``rewired`` (the same fields, different inputs). Ids are the documents' own node ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Tuple

__all__ = ["FieldChange", "NodeMatch", "NodeInfo", "Hunk", "HunkGroup", "GraphDiff", "HUNK_KINDS",
           "SUMMARY_GROUPS"]

#: Hunk kinds, in the words of the report.
HUNK_KINDS = (
    "replaced",   # a removed region and an added region in the same place
    "merged",     # a removed node equal to one that stays (common sub-expressions)
    "wrapped",    # paired nodes moved into a new function (FuseOps, MergeComposite)
    "unwrapped",  # paired nodes moved out of a function that is gone
    "inserted",   # added nodes on an edge that existed before (layout_transform)
    "removed",    # removed nodes, nothing added in their place
    "added",      # added nodes that sit on no former edge
    "changed",    # one node's attributes, type or value changed in place
    "rewired",    # one node reads different inputs
    "lowered",    # a function or call replaced by the kernel (call) lowered from it (LowerTE, codegen, FuseTIR)
)
#: Hunk groups listed in a summary; the rest are counted in ``more_hunk_groups``.
SUMMARY_GROUPS = 8


@dataclass(frozen=True)
class FieldChange:
    """One field that differs between two paired nodes: ``attrs.data_layout``, ``type``, ``value``..."""

    field: str
    before: Any
    after: Any


@dataclass(frozen=True)
class NodeMatch:
    """A pair whose fields or inputs differ. ``inputs`` holds both input lists (document ids)."""

    before: int
    after: int
    status: str  # "changed" or "rewired"
    fields: Tuple[FieldChange, ...] = ()
    inputs: Tuple[Tuple[int, ...], Tuple[int, ...]] = ((), ())
    inputs_changed: bool = False


@dataclass(frozen=True)
class NodeInfo:
    """How a node is shown: ``kind`` is its node kind, ``name`` its operator or kind, ``detail``
    what tells it apart (a variable's name, a global's name, an index), ``type`` its type in
    short form."""

    kind: str
    name: str
    detail: str = ""
    type: str = ""

    @property
    def text(self) -> str:
        return f"{self.name} {self.detail}" if self.detail else self.name


@dataclass(frozen=True)
class Hunk:
    """One recognisable change: which nodes went, which came, and the pairs involved.

    ``matched`` holds ``(before, after)`` pairs: the changed nodes of the hunk, the nodes a
    ``wrapped`` hunk moved, and the rewired nodes that border it. ``sources`` are the before
    ids, besides ``removed``, that the hunk's added nodes were made from: the nodes a wrapped
    function took in, the convolution whose layout transforms a hunk added, the calls of a
    kernel a hunk added (see :meth:`origins`). ``sites``, for a function called from several
    places, holds each call's ``(removed, added)``: what that call replaced, and its own nodes.
    """

    kind: str
    label: str
    removed: Tuple[int, ...] = ()
    added: Tuple[int, ...] = ()
    matched: Tuple[Tuple[int, int], ...] = ()
    sources: Tuple[int, ...] = ()
    sites: Tuple[Tuple[Tuple[int, ...], Tuple[int, ...]], ...] = ()

    @property
    def origins(self) -> Tuple[int, ...]:
        """The before ids the hunk's added nodes were made from: its removed nodes, then its
        sources (each once)."""
        if not self.sources:
            return self.removed
        return tuple(dict.fromkeys(self.removed + self.sources))

    def origins_of(self, added: int) -> Tuple[int, ...]:
        """The before ids added node ``added`` was made from: for a call of a function called
        from several places (``sites``), what that call replaced; for any other, :attr:`origins`."""
        for removed, site in self.sites:
            if added in site:
                return removed
        return self.origins

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"kind": self.kind, "label": self.label, "removed": list(self.removed),
                               "added": list(self.added), "matched": [list(p) for p in self.matched]}
        if self.sources:
            out["sources"] = list(self.sources)
        if self.sites:
            out["sites"] = [[list(removed), list(added)] for removed, added in self.sites]
        return out


@dataclass(frozen=True)
class HunkGroup:
    """Hunks of the same kind and label: ``count`` of them; ``first`` indexes the first one."""

    kind: str
    label: str
    count: int
    first: int


@dataclass(frozen=True)
class GraphDiff:
    """The node-level difference of two RelayViz documents; see :func:`relayviz_instrument.diff`.

    ``mapping`` pairs before ids with after ids (one to one). ``changed`` and ``rewired`` hold
    the pairs that are not unchanged; ``added`` and ``removed`` the unpaired nodes. ``hunks``
    come in the order of the after document. ``info_before``/``info_after`` describe every
    node the diff mentions. ``op_delta`` counts, per operator, calls added minus calls removed.
    """

    mapping: Mapping[int, int]
    added: Tuple[int, ...]
    removed: Tuple[int, ...]
    changed: Tuple[NodeMatch, ...]
    rewired: Tuple[NodeMatch, ...]
    hunks: Tuple[Hunk, ...]
    info_before: Mapping[int, NodeInfo]
    info_after: Mapping[int, NodeInfo]
    op_delta: Mapping[str, int]
    nodes_before: int
    nodes_after: int
    #: What changed in the module besides its expressions: ``type_definitions.Storage``,
    #: ``attrs.executor`` (a ``before`` or ``after`` of None: added or removed).
    module: Tuple[FieldChange, ...] = ()
    summary: Dict[str, Any] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        groups = self.groups()
        summary: Dict[str, Any] = {
            "added": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
            "rewired": len(self.rewired),
            "unchanged": self.unchanged,
            "hunks": [{"kind": g.kind, "label": g.label, "count": g.count}
                      for g in sorted(groups, key=lambda g: (-g.count, g.first))[:SUMMARY_GROUPS]],
        }
        if len(groups) > SUMMARY_GROUPS:
            summary["more_hunk_groups"] = len(groups) - SUMMARY_GROUPS
        if self.op_delta:
            summary["ops"] = dict(sorted(self.op_delta.items()))
        if self.module:
            summary["module"] = [c.field for c in self.module]
        object.__setattr__(self, "summary", summary)

    @property
    def unchanged(self) -> int:
        return len(self.mapping) - len(self.changed) - len(self.rewired)

    @property
    def is_empty(self) -> bool:
        """True when the two documents are the same graph (up to node numbering)."""
        return not (self.added or self.removed or self.changed or self.rewired or self.module)

    def groups(self) -> List[HunkGroup]:
        """Hunks grouped by kind and label, in the order their first hunk appears."""
        found: Dict[Tuple[str, str], List[int]] = {}
        for i, hunk in enumerate(self.hunks):
            found.setdefault((hunk.kind, hunk.label), []).append(i)
        return [HunkGroup(kind, label, len(idx), idx[0]) for (kind, label), idx in found.items()]

    def to_json(self) -> Dict[str, Any]:
        """The diff as JSON for scripts (``relayviz diff --json``)."""

        def info(table: Mapping[int, NodeInfo], nid: int) -> Dict[str, Any]:
            node = table[nid]
            out = {"node": node.name}
            if node.detail:
                out["detail"] = node.detail
            if node.type:
                out["type"] = node.type
            return out

        return {
            "summary": self.summary,
            "added": [{"after": b, **info(self.info_after, b)} for b in self.added],
            "removed": [{"before": a, **info(self.info_before, a)} for a in self.removed],
            "changed": [{"before": m.before, "after": m.after, **info(self.info_after, m.after),
                         "fields": {c.field: [c.before, c.after] for c in m.fields},
                         "inputs_changed": m.inputs_changed} for m in self.changed],
            "rewired": [{"before": m.before, "after": m.after, **info(self.info_after, m.after),
                         "inputs": {"before": list(m.inputs[0]), "after": list(m.inputs[1])}}
                        for m in self.rewired],
            "hunks": [h.to_json() for h in self.hunks],
            "module": [{"field": c.field, "before": c.before, "after": c.after} for c in self.module],
        }
