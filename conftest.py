"""The code examples of README.md, CONTRIBUTING.md and the manual (docs/*.md) run as tests, with
Sybil: each block is one test item, run in the leg it belongs to.

- A ``python`` block runs in the page's namespace, after the blocks above it (hidden set-up is an
  ``<!-- invisible-code-block: python -->`` comment). A block whose first line is ``# NAME.py``
  is a file the page's commands run: it is written to NAME.py, not run in the namespace.
- A ``sh`` block runs each of its commands: ``relayviz ...`` in this process (a new interpreter
  per command would cost a second each), anything else with bash, the leg's ``bin/`` first on
  ``PATH``. A command fails its example when it exits non-zero, except ``relayviz`` exiting with
  1, which is a finding (two traces differ, a hook is not active), not an error.
- ``<!-- skip: next if(LEG != "relay", reason="...") -->`` runs a block on one leg only: ``LEG``
  is ``"relay"`` on a TVM with Relay and ``"relax"`` on TVM 0.2x.
- Every page runs in a folder of its own, holding ``my-trace``: a traced ``relay.build`` of the
  MLP of ``tvm.relay.testing``, made once per session (Relay leg).

``text`` blocks are output and synopses, and are not run; tests/test_examples.py checks that every
block is one of these kinds.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from sybil import Example, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.myst import CodeBlockParser, SkipParser

#: The leg this run is on: what the examples' skip conditions read.
LEG = "relay" if importlib.util.find_spec("tvm") and importlib.util.find_spec("tvm.relay") else "relax"
#: The first line of a python block that is a file for the commands after it.
_FILE_BLOCK = re.compile(r"# ([\w-]+\.py)(:.*)?$")
#: The pages whose examples run.
EXAMPLE_PAGES = ["README.md", "CONTRIBUTING.md", "docs/*.md"]


class _PythonOrFile:
    """Run a python block in the page's namespace, or write it to the file its first line names."""

    def __init__(self) -> None:
        self.python = PythonEvaluator()

    def __call__(self, example: Example) -> Any:
        source = str(example.parsed)
        named = _FILE_BLOCK.match(source.split("\n", 1)[0])
        if named:
            Path(named.group(1)).write_text(source)
            return None
        return self.python(example)


def _commands(source: str) -> Iterator[str]:
    """The commands of a sh block: continuation lines joined, comments and blank lines dropped."""
    for command in source.replace("\\\n", " ").splitlines():
        if command.strip() and not command.lstrip().startswith("#"):
            yield command


def _run_relayviz(argv: list) -> "tuple[int, str]":
    from relayviz_instrument.cli import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = main(argv)
        out.flush()
    return status, out.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]  # a TextIOWrapper over BytesIO


def _evaluate_sh(example: Example) -> None:
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])  # `relayviz run -- python`
    try:
        _run_commands(str(example.parsed))
    finally:
        os.environ["PATH"] = path


def _run_commands(source: str) -> None:
    for command in _commands(source):
        argv = shlex.split(command, comments=True)
        if argv[0] == "relayviz":
            status, output = _run_relayviz(argv[1:])
            failed = status not in (0, 1)
        else:
            done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=600)
            status, output = done.returncode, done.stdout + done.stderr
            failed = status != 0
        if failed:
            raise AssertionError(f"{command!r} exited with {status}:\n{output[-4000:]}")


@pytest.fixture(scope="session")
def docs_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trace the pages call ``my-trace``: a traced relay.build of the MLP (Relay leg only;
    on the Relax leg every example that reads it is skipped)."""
    where = tmp_path_factory.mktemp("docs-trace") / "my-trace"
    if LEG == "relay":
        import tvm.relay.testing

        from relayviz_instrument import trace_build

        mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
        trace_build(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params, out_dir=where)
    return where


@pytest.fixture(scope="module")
def docs_folder(docs_trace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A working folder of the page's own, with ``my-trace`` in it; the page's examples run there."""
    folder = tmp_path_factory.mktemp("docs-page")
    if docs_trace.is_dir():
        (folder / "my-trace").symlink_to(docs_trace, target_is_directory=True)
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)


def _setup(namespace: Dict[str, Any]) -> None:
    namespace["LEG"] = LEG


#: The runner of every page's examples (tests/test_examples.py checks that it finds every block).
EXAMPLES = Sybil(
    parsers=[CodeBlockParser(language="python", evaluator=_PythonOrFile()),
             CodeBlockParser(language="sh", evaluator=_evaluate_sh),
             SkipParser()],
    patterns=EXAMPLE_PAGES,
    fixtures=["docs_folder"],
    setup=_setup,
)
pytest_collect_file = EXAMPLES.pytest()
