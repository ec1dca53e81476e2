"""Messages that say only what happened: an out_dir that is a file, and a process killed
while a pass ran (a SIGKILL from inside the pass, in a child process). A disk that filled
during the trace is in test_faults.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import tvm
from tvm import relax

from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning, load_trace
from relayviz_instrument.demo.relax_models import relax_workload


def _show(path: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(path)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_out_dir_that_is_a_file_is_said_to_be_a_file(tmp_path: Path) -> None:
    # Before: "another trace is being written to this directory".
    taken = tmp_path / "results.txt"
    taken.write_text("the user's own file\n")
    trace = RelayVizTrace(taken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            relax.transform.LegalizeOps()(relax_workload("mlp"))
    (warning,) = [w for w in caught if issubclass(w.category, TraceIncompleteWarning)]
    assert "results.txt: is a file, not a directory; pass a directory" in str(warning.message)
    assert "another trace" not in str(warning.message)
    assert taken.read_text() == "the user's own file\n"


_CHILD = """
import os, signal, sys
import tvm
from tvm import relax
from relayviz_instrument import RelayVizTrace
from relayviz_instrument.demo.relax_models import relax_workload

mod = relax_workload("mlp")
out = sys.argv[1]


@tvm.transform.module_pass(opt_level=0, name="Stops")
def stops(mod, ctx):
    os.kill(os.getpid(), signal.SIGKILL)
    return mod


with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(out)]):
    relax.transform.LegalizeOps()(mod)
    stops(mod)
"""


def _child(tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(_CHILD))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "t")], capture_output=True, text=True,
                          timeout=600)


def test_after_a_kill_show_says_which_pass_was_running(tmp_path: Path) -> None:
    # Before: "passes took 0.01 s" and "pass Stops (#..) failed".
    done = _child(tmp_path)
    assert done.returncode == -9, done.stderr[-3000:]
    loaded = load_trace(tmp_path / "t")
    running = loaded.records[-1]
    assert running.name == "Stops" and running.depth == 1
    shown = _show(tmp_path / "t")
    assert f"pass Stops (#{running.index}) was running when the process stopped" in shown
    assert "passes took" not in shown and "failed" not in shown
    assert "passes that ended took" in shown
