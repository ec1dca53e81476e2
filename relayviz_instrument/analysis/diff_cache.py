"""The diff summaries cached in a trace directory: ``cache/diff-v<DIFF_VERSION>.json``.

The cache saves the second ``relayviz show`` of a trace its diffs. Like everything in a trace
directory it may come from anyone, so it is read as untrusted input: an entry is kept only
when it is keyed by two snapshots this trace records and is a diff summary in every field
(the types and ranges :class:`~relayviz_instrument.diff.GraphDiff` gives them, no other keys),
whose counts add up to the node counts the trace records for its two snapshots and whose
operator deltas fit in its added and removed nodes. Anything else is dropped and computed
again from the snapshots; nothing in the cache is shown unless it passes. The file is read
and written without following a symbolic link below the trace directory
(:func:`~relayviz_instrument._files.read_inside`, :func:`~relayviz_instrument._files.atomic_write_bytes`):
a ``cache`` that links elsewhere is neither read nor written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional

import orjson

from .._files import atomic_write_bytes, read_inside
from ..diff import DIFF_VERSION
from ..diff.model import HUNK_KINDS, SUMMARY_GROUPS
from ..errors import RelayVizIOError
from ..format.checks import is_int
from ..store import PassRecord

__all__ = ["CACHE_DIR", "cache_file", "read_cache", "write_cache", "valid_summary"]

CACHE_DIR = "cache"
#: Suffix of the key of a summary of the two snapshots without their inferred types.
UNTYPED = "untyped"

_COUNTS = ("added", "removed", "changed", "rewired", "unchanged")
_OPTIONAL = frozenset({"more_hunk_groups", "ops", "module"})
_HUNK_KEYS = frozenset({"kind", "label", "count"})


def cache_file(root: Path) -> Path:
    """The cache file of the trace directory ``root`` for this diff engine's version."""
    return root / CACHE_DIR / f"diff-v{DIFF_VERSION}.json"


def read_cache(root: Path, records: Iterable[PassRecord]) -> Dict[str, Dict[str, Any]]:
    """The valid summaries of ``root``'s cache, by key (``<before>-<after>`` or
    ``<before>-<after>-untyped``); ``{}`` when there is no cache, or it cannot be read, is a
    link, is not JSON or is of another diff version. ``records`` are the trace's: they say
    which snapshots it has and how many nodes each holds."""
    try:
        cached = orjson.loads(read_inside(root, cache_file(root)))
    except (RelayVizIOError, orjson.JSONDecodeError):
        return {}
    if not (isinstance(cached, dict) and cached.get("diff_version") == DIFF_VERSION
            and isinstance(cached.get("summaries"), dict)):
        return {}
    nodes = _node_counts(records)
    return {key: value for key, value in cached["summaries"].items() if valid_summary(key, value, nodes)}


def write_cache(root: Path, summaries: Mapping[str, Mapping[str, Any]]) -> bool:
    """Write ``summaries`` to ``root``'s cache; False when it cannot be written (a read-only
    trace, or a ``cache`` that is a link): the summaries are computed again next time."""
    data = orjson.dumps({"diff_version": DIFF_VERSION, "summaries": summaries},
                        option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
    try:
        atomic_write_bytes(cache_file(root), data, within=root)
    except RelayVizIOError:
        return False
    return True


def _node_counts(records: Iterable[PassRecord]) -> Dict[str, Optional[int]]:
    """Every snapshot the records name, with the node count they record for it (None: none)."""
    nodes: Dict[str, Optional[int]] = {}
    for r in records:
        for ref, count in ((r.before, r.nodes_before), (r.after, r.nodes_after)):
            if ref is not None and nodes.get(ref) is None:
                nodes[ref] = count
    return nodes


def valid_summary(key: Any, value: Any, nodes: Mapping[str, Optional[int]]) -> bool:
    """Whether ``value`` may stand, under ``key``, for the diff summary of two snapshots of a
    trace whose snapshots and node counts are ``nodes`` (see the module docstring)."""
    parts = key.split("-") if isinstance(key, str) else []
    if not (len(parts) == 2 or (len(parts) == 3 and parts[2] == UNTYPED)):
        return False
    before, after = parts[0], parts[1]
    if before not in nodes or after not in nodes or not isinstance(value, dict):
        return False
    if not all(is_int(value.get(k)) and value[k] >= 0 for k in _COUNTS) or "hunks" not in value:
        return False
    if not set(value) <= {*_COUNTS, "hunks", *_OPTIONAL}:
        return False
    added, removed, changed, rewired, unchanged = (value[k] for k in _COUNTS)
    paired = changed + rewired + unchanged
    if nodes[before] is not None and removed + paired != nodes[before]:
        return False
    if nodes[after] is not None and added + paired != nodes[after]:
        return False
    hunks = value["hunks"]
    if not (isinstance(hunks, list) and len(hunks) <= SUMMARY_GROUPS and all(_valid_group(g) for g in hunks)):
        return False
    more = value.get("more_hunk_groups")
    if more is not None and not (is_int(more) and more > 0 and len(hunks) == SUMMARY_GROUPS):
        return False
    ops = value.get("ops")
    if ops is not None:
        if not (isinstance(ops, dict) and ops and all(is_int(n) and n != 0 for n in ops.values())):
            return False
        # Operator deltas count added calls minus removed calls: they fit in those nodes.
        if sum(n for n in ops.values() if n > 0) > added or sum(-n for n in ops.values() if n < 0) > removed:
            return False
    module = value.get("module")
    return module is None or (isinstance(module, list) and all(isinstance(f, str) for f in module))


def _valid_group(group: Any) -> bool:
    return (isinstance(group, dict) and set(group) == _HUNK_KEYS and group["kind"] in HUNK_KINDS
            and isinstance(group["label"], str) and is_int(group["count"]) and group["count"] > 0)
