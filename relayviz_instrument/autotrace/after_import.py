"""Running an action on a module when its import ends, so that starting a process trace costs
nothing in a process that never imports TVM: the patches wait for TVM's modules."""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Callable, Dict, Optional, Sequence

__all__ = ["AfterImport"]


class AfterImport:
    """A ``sys.meta_path`` finder that runs an action on a module when its import ends.

    It finds the module with the finders after it and wraps its loader's ``exec_module``; it
    never loads anything itself, and forgets each name once its action ran."""

    def __init__(self, actions: Dict[str, Callable[[ModuleType], None]]) -> None:
        self._actions = actions

    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None) -> Optional[ModuleSpec]:
        action = self._actions.get(name)
        if action is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        actions = self._actions

        def exec_module(module: ModuleType) -> None:
            run(module)
            if actions.pop(name, None) is None:
                return
            try:
                action(module)
            except Exception as exc:  # never break the script's import: it runs untraced, and says so
                sys.stderr.write(f"relayviz: {name} is not traced: {type(exc).__name__}: {exc}\n")

        try:
            loader.exec_module = exec_module
        except AttributeError:  # a loader that takes no attributes: the module is not watched
            return spec
        return spec
