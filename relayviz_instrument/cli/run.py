"""``relayviz run [-o DIR] -- python script.py ARGS``: run a script unchanged, every pass context
it enters traced, then print the pass table on standard error."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from ..autotrace import ENV_PASSES, ENV_QUIET, ENV_TIR, ENV_TRACE
from ..errors import RelayVizUsageError
from ..store import MANIFEST, load_trace, new_trace_dir
from ..views.show import show_trace
from ._output import OutputConsole

#: The folder whose ``sitecustomize`` starts tracing in the script's process.
STARTUP_DIR = Path(__file__).resolve().parent.parent / "startup"


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "run", help="run a script with every pass context it enters traced",
        description="Run a command (python script.py ARGS, or -m MODULE ARGS) unchanged, with the instrument "
                    "in every PassContext its Python process enters, whoever opens it (relay.quantize, a "
                    "frontend, a test helper), and what relay.build, relay.vm.compile and tvm.compile return "
                    "recorded. The script's output and exit status are its own; the pass table is printed on standard "
                    "error at the end. RELAYVIZ_TRACE=DIR python script.py does the same without this command, "
                    "through the startup hook relayviz-trace.pth that pip installs into site-packages "
                    "(with pip install -e too); relayviz doctor says whether this Python runs it.",
        usage="relayviz run [-o DIR] [--tir] [--passes RE] (-m MODULE [ARGS ...] | -- COMMAND [ARGS ...])")
    parser.add_argument("-o", "--out", metavar="DIR",
                        help="the trace directory (new or empty; default: a new relayviz-trace/<timestamp>/)")
    parser.add_argument("--tir", action="store_true", help="also snapshot modules that hold only TIR")
    parser.add_argument("--passes", metavar="RE", help="snapshot only passes whose name matches RE (re.search)")
    parser.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE ARGS",
                        help="run a module with the arguments after it, as python -m MODULE ARGS does")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.module is not None:
        if not args.module or command:
            raise RelayVizUsageError("relayviz run: -m takes a module and its arguments, and no command after --")
        command = [sys.executable, "-m", *args.module]
    elif not command:
        raise RelayVizUsageError("relayviz run: no command; write it after --: relayviz run -- python script.py")
    elif command[0].endswith(".py"):
        command = [sys.executable, *command]
    if args.passes:
        try:
            re.compile(args.passes)
        except re.error as exc:
            raise RelayVizUsageError(f"--passes: invalid regular expression: {exc}") from None
    out = Path(args.out) if args.out else new_trace_dir()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RelayVizUsageError(f"{out}: the trace directory is not empty; pass a new directory with -o")
    env = dict(os.environ)
    env[ENV_TRACE] = str(out.resolve())
    env[ENV_QUIET] = "1"
    env.pop(ENV_TIR, None)
    env.pop(ENV_PASSES, None)
    if args.tir:
        env[ENV_TIR] = "1"
    if args.passes:
        env[ENV_PASSES] = args.passes
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STARTUP_DIR), env.get("PYTHONPATH")]))
    try:
        status = subprocess.call(command, env=env)
    except OSError as exc:
        raise RelayVizUsageError(f"relayviz run: cannot run {command[0]!r}: {exc.strerror or exc}") from None
    errors = OutputConsole(stderr=True)
    if (out / MANIFEST).is_file():
        errors.print(show_trace(load_trace(out)), crop=False)
    else:
        errors.print(f"relayviz: the command entered no TVM pass context; nothing was traced in {out}",
                     markup=False, highlight=False)
    return status if status >= 0 else 128 - status
