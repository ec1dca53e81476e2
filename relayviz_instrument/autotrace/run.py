"""``relayviz run``'s use case: run a command unchanged, every pass context its Python process
enters traced, and read the trace it left.

The command runs in a new process whose environment starts tracing at startup: ``RELAYVIZ_TRACE``
and the variables beside it (``environment.py``), and :data:`STARTUP_DIR` first on its
``PYTHONPATH``, whose ``sitecustomize`` starts tracing (the same as the ``.pth`` an install puts
into site-packages, for a Python that does not have this package installed with its hook).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from ..errors import RelayVizUsageError
from ..store import MANIFEST, Trace, load_trace, new_trace_dir
from .environment import ENV_PASSES, ENV_QUIET, ENV_TIR, ENV_TRACE

__all__ = ["TracedRun", "run_traced", "STARTUP_DIR"]

#: The folder whose ``sitecustomize`` starts tracing in the command's process.
STARTUP_DIR = Path(__file__).resolve().parent / "startup"


@dataclass
class TracedRun:
    """What a traced run did: the command run, its exit status (as a shell reports it: 128 + N
    for a process a signal N ended), the trace directory, and the trace read back (None when the
    command entered no TVM pass context, and nothing was traced)."""

    command: List[str]
    status: int
    out: Path
    trace: Optional[Trace]

    @property
    def untraced(self) -> str:
        """What to say when nothing was traced."""
        return f"relayviz: the command entered no TVM pass context; nothing was traced in {self.out}"

    def to_json(self) -> Dict[str, Any]:
        """The run as JSON: the command, its status, and the trace directory (None if nothing was traced)."""
        return {"command": self.command, "status": self.status,
                "trace": str(self.out) if self.trace is not None else None}


def run_traced(command: Sequence[str], out_dir: Union[str, "os.PathLike[str]", None] = None, *,
               tir: bool = False, passes: Optional[str] = None) -> TracedRun:
    """Run ``command`` (``["python", "script.py", ...]``; a first word ending in ``.py`` runs with
    this Python) with every pass context its process enters traced into ``out_dir`` (new or
    empty; None: a new ``relayviz-trace/<timestamp>/``), what ``relay.build``,
    ``relay.vm.compile`` and ``tvm.compile`` return recorded. ``tir``: also snapshot modules that
    hold only TIR; ``passes``: snapshot only the passes whose name it matches (``re.search``).
    The command's output and status are its own; raises :class:`RelayVizUsageError` for a
    pattern that is not one, a directory that is not empty, or a command that cannot run."""
    command = list(command)
    if not command:
        raise RelayVizUsageError("relayviz run: no command to run")
    if command[0].endswith(".py"):
        command = [sys.executable, *command]
    if passes:
        try:
            re.compile(passes)
        except re.error as exc:
            raise RelayVizUsageError(f"--passes: invalid regular expression: {exc}") from None
    out = Path(out_dir) if out_dir else new_trace_dir()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RelayVizUsageError(f"{out}: the trace directory is not empty; pass a new directory with -o")
    env = dict(os.environ)
    env[ENV_TRACE] = str(out.resolve())
    env[ENV_QUIET] = "1"
    env.pop(ENV_TIR, None)
    env.pop(ENV_PASSES, None)
    if tir:
        env[ENV_TIR] = "1"
    if passes:
        env[ENV_PASSES] = passes
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), env.get("PYTHONPATH")]))
    try:
        status = subprocess.call(command, env=env)
    except OSError as exc:
        raise RelayVizUsageError(f"relayviz run: cannot run {command[0]!r}: {exc.strerror or exc}") from None
    trace = load_trace(out) if (out / MANIFEST).is_file() else None
    return TracedRun(command, status if status >= 0 else 128 - status, out, trace)
