"""An edit script that turns the before document into the after document: a test oracle.

Tests rebuild the after document from the before one and a diff (every pairing a diff
returns must make that possible), and count the edits to measure a diff against the truth.

The script keeps every paired node (renumbered to its after id: ids carry no meaning, so
renumbering is not an edit) and lists what remains: ``remove`` a node, ``add`` a node (its
whole content, references in after ids), ``update`` the fields of a kept node that differ
once its references are renumbered (attributes, type, value, or the inputs it reads), and
``root`` for the root fields (the ``functions`` index, ``root``...). :func:`apply_edits`
rebuilds a document equal to the after document; the number of edits measures the diff.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from relayviz_instrument.diff import GraphDiff
from relayviz_instrument.diff.changes import json_equal
from relayviz_instrument.format import labelled_references

__all__ = ["Edit", "EditScript", "edit_script", "apply_edits"]


@dataclass(frozen=True)
class Edit:
    """One edit. ``before``/``after`` are node ids; ``fields`` are values to set (a whole node for
    ``add``); ``unset`` names fields to delete."""

    action: str  # "remove", "add", "update" or "root"
    before: Optional[int] = None
    after: Optional[int] = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    unset: Tuple[str, ...] = ()


@dataclass(frozen=True)
class EditScript:
    """The kept nodes (``mapping``: before id -> after id), the size of the result, and the edits."""

    mapping: Mapping[int, int]
    size: int
    edits: Tuple[Edit, ...]

    def __len__(self) -> int:
        return len(self.edits)


def edit_script(before: Mapping[str, Any], after: Mapping[str, Any], result: GraphDiff) -> EditScript:
    """The edits that rebuild ``after`` from ``before`` given their diff ``result``."""
    mapping = result.mapping
    edits: List[Edit] = []
    old_nodes, new_nodes = before["nodes"], after["nodes"]
    for a in result.removed:
        edits.append(Edit("remove", before=a))
    for a, b in sorted(mapping.items(), key=lambda item: item[1]):
        kept, target = _renumber(old_nodes[a], mapping), new_nodes[b]
        fields = {k: v for k, v in target.items() if k not in kept or not json_equal(kept[k], v)}
        unset = tuple(k for k in kept if k not in target)
        if fields or unset:
            edits.append(Edit("update", before=a, after=b, fields=copy.deepcopy(fields), unset=unset))
    for b in result.added:
        edits.append(Edit("add", after=b, fields=copy.deepcopy(new_nodes[b])))
    kept_root = _renumber_root(before, mapping)
    target_root = {k: v for k, v in after.items() if k != "nodes"}
    fields = {k: v for k, v in target_root.items() if k not in kept_root or not json_equal(kept_root[k], v)}
    unset = tuple(k for k in kept_root if k not in target_root)
    if fields or unset:
        edits.append(Edit("root", fields=copy.deepcopy(fields), unset=unset))
    return EditScript(dict(mapping), len(new_nodes), tuple(edits))


def apply_edits(before: Mapping[str, Any], script: EditScript) -> Dict[str, Any]:
    """The document that ``script`` makes of ``before``."""
    nodes: List[Optional[Dict[str, Any]]] = [None] * script.size
    for a, b in script.mapping.items():
        nodes[b] = _renumber(before["nodes"][a], script.mapping)
    root = _renumber_root(before, script.mapping)
    for edit in script.edits:
        if edit.action == "add":
            nodes[edit.after] = copy.deepcopy(dict(edit.fields))  # type: ignore[index]  # an insert's target is an int here
        elif edit.action == "update":
            node = nodes[edit.after]  # type: ignore[index]  # a change's target is an int here
            assert node is not None
            node.update(copy.deepcopy(dict(edit.fields)))
            for name in edit.unset:
                node.pop(name, None)
        elif edit.action == "root":
            root.update(copy.deepcopy(dict(edit.fields)))
            for name in edit.unset:
                root.pop(name, None)
    missing = [i for i, node in enumerate(nodes) if node is None]
    if missing:
        raise ValueError(f"the edit script leaves nodes {missing[:5]} undefined")
    root["nodes"] = nodes
    return root


def _renumber(node: Mapping[str, Any], mapping: Mapping[int, int]) -> Dict[str, Any]:
    """A copy of ``node`` with its references renumbered; a reference to a node that is not
    kept becomes ``None`` (an ``update`` must set it)."""
    out = copy.deepcopy(dict(node))
    for name, pos, target in labelled_references(node):
        if pos is None:
            out[name] = mapping.get(target)
        else:
            out[name][pos] = mapping.get(target)
    return out


def _renumber_root(doc: Mapping[str, Any], mapping: Mapping[int, int]) -> Dict[str, Any]:
    root = {k: copy.deepcopy(v) for k, v in doc.items() if k != "nodes"}
    if isinstance(root.get("functions"), dict):
        root["functions"] = {name: mapping.get(t) for name, t in root["functions"].items()}
    if root.get("root") is not None:
        root["root"] = mapping.get(root["root"])
    return root
