"""The readers under fuzzing, shared by the hypothesis tests (tests/test_fuzz_readers.py) and
the atheris target (fuzz/fuzz_readers.py).

An input is a file: a document (RelayViz or graph JSON), or a trace directory whose manifest
or one of whose snapshots was damaged. :func:`read_file` and :func:`read_trace` hand it to
every reader and every command that takes such a file, and check the one rule: a reader
returns, or raises one of the package's own errors (``RelayVizError``) whose message names
the file; a command exits with 0, 1 (diff: different; replay: failed again) or 2 with one
line on standard error. Anything else is an *escape*, raised as :class:`Escape` with the
reader's name. :data:`COUNTS` counts inputs and escapes for the report at the end of a run.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List

from rich.console import Console

from relayviz_instrument import RelayVizError, load, load_trace
from relayviz_instrument.cli import main
from relayviz_instrument.graph_json import from_graph_json
from relayviz_instrument.views.report import report_trace
from relayviz_instrument.store.documents import read_document
from relayviz_instrument.views.validate import check_file
from relayviz_instrument.views.show import show_trace

__all__ = ["Escape", "COUNTS", "read_file", "read_trace", "make_seed_trace", "copy_trace"]

#: Inputs tried and escapes found in this process, by kind of input.
COUNTS: Dict[str, int] = {"inputs": 0, "escapes": 0}


class Escape(AssertionError):
    """A reader let an exception other than the package's own errors escape, or printed an
    error that does not name its file."""


def _library(name: str, call: Callable[[], Any], named: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # UnknownNodeKindWarning on newer minors is expected
            result = call()
            if result is not None and hasattr(result, "__rich_console__"):
                Console(file=io.StringIO(), width=100).print(result)  # views are read lazily too
    except RelayVizError as exc:
        message = str(exc)
        if named not in message or "\n" in message:
            raise Escape(f"{name}: the error does not name {named} on one line: {message!r}") from exc
    except Exception as exc:  # this is what is being looked for
        raise Escape(f"{name}: {type(exc).__name__} escaped: {exc}") from exc


def _command(argv: List[str], named: str, statuses=(0, 2)) -> None:
    out, err = io.TextIOWrapper(io.BytesIO(), write_through=True), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            status = main(argv)
    except SystemExit as exc:  # argparse
        raise Escape(f"relayviz {' '.join(argv)}: exited through argparse ({exc.code}): {err.getvalue()}") from exc
    except Exception as exc:
        raise Escape(f"relayviz {' '.join(argv)}: {type(exc).__name__} escaped: {exc}") from exc
    if status not in statuses:
        raise Escape(f"relayviz {' '.join(argv)}: exit status {status}")
    text = err.getvalue()
    # `relayviz validate` reports each file as "invalid FILE: ..."; other commands "error: ...".
    if status == 2 and not (text.startswith(("error: ", "invalid ")) and named in text and "Traceback" not in text):
        raise Escape(f"relayviz {' '.join(argv)}: the error does not name {named}: {text!r}")


def read_file(path: Path, other: Path, out_dir: Path) -> None:
    """Every reader and command that takes a document file, on ``path`` (``other``: a valid
    document to diff it with; ``out_dir``: where exports go)."""
    COUNTS["inputs"] += 1
    try:
        named = str(path)
        _library("load", lambda: load(path), named)
        _library("from_graph_json", lambda: from_graph_json(path), named)
        _library("read_document", lambda: read_document(path), named)
        check = check_file(path)
        if check.error is not None and named not in str(check.error):
            raise Escape(f"check_file: the error does not name {named}: {check.error}")
        _command(["validate", named], named, (0, 2))
        _command(["inspect", named], named)
        _command(["diff", named, str(other)], named, (0, 1, 2))
        _command(["export", named, "--to", "netron", "-o", str(out_dir / "out.json")], named)
    except Escape:
        COUNTS["escapes"] += 1
        raise


def read_trace(root: Path) -> None:
    """Every reader and command that takes a trace directory, on ``root``."""
    COUNTS["inputs"] += 1
    try:
        named = str(root)
        _library("load_trace", lambda: load_trace(root), named)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trace = load_trace(root)
        except RelayVizError:
            trace = None
        if trace is not None:
            _library("show_trace", lambda: show_trace(trace, everything=True), named)
            _library("report_trace", lambda: report_trace(trace, everything=True), named)
            for record in trace.records:
                for ref in (record.before, record.after):
                    if ref is not None:
                        _library("Trace.snapshot", lambda: trace.snapshot(ref), named)
        for argv in (["show", named], ["show", named, "--all", "--json"], ["report", named],
                     ["history", named, "0"], ["diff", named, "--pass", "FuseOps"]):
            _command(argv, named, (0, 1, 2))
        _command(["replay", named], named, (0, 1, 2, 3))
    except Escape:
        COUNTS["escapes"] += 1
        raise


def make_seed_trace(root: Path) -> Path:
    """A small real trace for the mutations to start from: an MLP through a Sequential whose
    last pass fails (so the trace keeps a reproducer), then its built graph. Needs TVM."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)

    @tvm.transform.module_pass(opt_level=0, name="WrongReshape")
    def wrong_reshape(mod, ctx):
        main = mod["main"]
        return tvm.IRModule.from_expr(relay.Function(main.params, relay.reshape(main.body, newshape=(3, 7))))

    seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference(),
                                    relay.transform.FoldConstant(), relay.transform.FuseOps(), wrong_reshape,
                                    relay.transform.InferType()])
    trace = RelayVizTrace(root)
    try:
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            seq(mod)
    except tvm.TVMError:
        pass
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
    trace.record_graph(lib)
    return root


def copy_trace(seed: Path, target: Path) -> Path:
    """A fresh copy of the seed trace (derived caches left out) to damage."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(seed, target, ignore=shutil.ignore_patterns("cache"))
    return target


def snapshot_files(root: Path) -> List[Path]:
    """The stored files of a trace, sorted (snapshots, then kept modules)."""
    return sorted(p for folder in ("snapshots", "modules") for p in (root / folder).glob("*") if p.is_file())


def environment_note() -> str:
    """One line for reports: where the counts come from."""
    return f"pid {os.getpid()}: {COUNTS['inputs']} inputs, {COUNTS['escapes']} escapes"
