"""What changed a module between two pass events, when no recorded pass did.

The instrument notes, for a pass run directly in its context on a module that is not the one
the last such pass left, the code that ran both passes (``PassRecord.between``): the function
in which, or in whose callees, the module was changed. Three kinds of code do that:

- a step of TVM's own build (:data:`BUILD_STEP`): ``relay.build`` sets the memory plan of
  ``main`` as module attributes after ``LabelOps``; ``relax.build`` hands the PrimFuncs of the
  Relax module to the TIR build. Part of the compilation, named as such;
- other TVM code (:data:`TVM_CODE`), such as ``relay.quantize``, which runs passes under a
  PassContext of its own that an instrument of another context cannot see;
- the user's code (:data:`USER_CODE`) between two passes: a real change outside any pass.

A trace written before the instrument noted it says nothing (:data:`UNKNOWN`). What the step
did to the module (the functions it kept, dropped or added, the attributes it set) is read
from the two snapshots by :func:`module_step`. Pure functions over records and documents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from ..format import Document

__all__ = ["BUILD_STEP", "TVM_CODE", "USER_CODE", "UNKNOWN", "Origin", "origin_of", "ModuleStep", "module_step"]

BUILD_STEP, TVM_CODE, USER_CODE, UNKNOWN = "build step", "TVM code", "user code", "unknown"

#: TVM's modules whose functions build a model, and the name a user calls the build by.
_BUILDS = {
    "tvm.relay.build_module": "relay.build",
    "tvm.relay.backend.vm": "relay.vm.compile",
    "tvm.relax.vm_build": "relax.build",
    "tvm.driver.build_module": "tvm.compile",
    "tvm.tir.build": "tir.build",
    "tvm.tirx.build": "tir.build",
}


@dataclass(frozen=True)
class Origin:
    """Where a change between two passes was made: its kind (:data:`BUILD_STEP`,
    :data:`TVM_CODE`, :data:`USER_CODE` or :data:`UNKNOWN`), the function (``relay.build`` for
    a build step, the qualified name otherwise), and ``file:line`` of the call that ran the
    next pass (empty when unknown)."""

    kind: str
    function: str = ""
    where: str = ""

    def to_json(self) -> Dict[str, str]:
        """``{"kind", "function", "where"}``."""
        return {"kind": self.kind, "function": self.function, "where": self.where}


def origin_of(between: Optional[Mapping[str, Any]]) -> Origin:
    """The :class:`Origin` of a change from what a record's ``between`` says (None: unknown)."""
    if not between:
        return Origin(UNKNOWN)
    function = str(between.get("function", ""))
    where = f"{between.get('file', '')}:{between.get('line', '')}"
    module, _, _ = function.rpartition(".")
    while module and module not in _BUILDS:  # a method: tvm.relay.build_module.BuildModule.build
        module, _, _ = module.rpartition(".")
    if module:
        return Origin(BUILD_STEP, _BUILDS[module], where)
    if function == "tvm" or function.startswith("tvm."):
        return Origin(TVM_CODE, function, where)
    return Origin(USER_CODE, function, where)


@dataclass(frozen=True)
class ModuleStep:
    """What a change did to a module as a whole: the functions it kept, dropped and added (by
    name, sorted), and the module attributes it set (added or changed) and removed."""

    kept: List[str]
    dropped: List[str]
    added: List[str]
    attrs_set: List[str]
    attrs_removed: List[str]

    def describe(self, limit: int = 3) -> str:
        """One line: ``kept 18 functions, dropped 1 (@main)``, ``set attributes main_func_info``."""
        parts = []
        if self.dropped or self.added:
            parts.append(f"kept {len(self.kept)} function{'s' if len(self.kept) != 1 else ''}")
        for verb, names in (("dropped", self.dropped), ("added", self.added)):
            if names:
                parts.append(f"{verb} {len(names)} ({_names(['@' + n for n in names], limit)})")
        if self.attrs_set:
            parts.append(f"set attribute{'s' if len(self.attrs_set) > 1 else ''} {_names(self.attrs_set, limit)}")
        if self.attrs_removed:
            parts.append(f"removed attribute{'s' if len(self.attrs_removed) > 1 else ''} "
                         f"{_names(self.attrs_removed, limit)}")
        return ", ".join(parts) or "changed its functions"

    def to_json(self) -> Dict[str, List[str]]:
        """``{"kept", "dropped", "added", "attrs_set", "attrs_removed"}``."""
        return {"kept": self.kept, "dropped": self.dropped, "added": self.added, "attrs_set": self.attrs_set,
                "attrs_removed": self.attrs_removed}


def module_step(old: Document, new: Document) -> ModuleStep:
    """The :class:`ModuleStep` from the module ``old`` to the module ``new`` (two snapshots)."""
    before, after = set(old.get("functions") or {}), set(new.get("functions") or {})
    attrs_old: Mapping[str, Any] = old.get("attrs") or {}
    attrs_new: Mapping[str, Any] = new.get("attrs") or {}
    return ModuleStep(kept=sorted(before & after), dropped=sorted(before - after), added=sorted(after - before),
                      attrs_set=sorted(k for k in attrs_new if k not in attrs_old or attrs_old[k] != attrs_new[k]),
                      attrs_removed=sorted(k for k in attrs_old if k not in attrs_new))


def _names(names: List[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, +{len(names) - limit} more"
