"""A traced process does not see its trace: under ``relayviz run`` and ``pytest --relayviz-trace``
the program reads every pass context's instruments as it would untraced, also after an
instrument of its own raised in ``enter_pass_ctx`` or ``exit_pass_ctx`` (TVM's own
test_pass_instrument.py checks exactly that). On both legs, with a Relax module."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

from relayviz_instrument import load_trace

ROOT = Path(__file__).resolve().parent.parent

#: What TVM's tests do: a context whose second instrument raises on entry (then on exit), and
#: what the program then finds in the current context and in the one that failed.
PROGRAM = textwrap.dedent("""\
    import tvm
    from tvm import relax
    from relayviz_instrument.demo.relax_models import relax_workload

    @tvm.instrument.pass_instrument
    class Plain:
        def __init__(self, label):
            self.label = label

    @tvm.instrument.pass_instrument
    class EnterRefuses(Plain):
        def enter_pass_ctx(self):
            raise RuntimeError("EnterRefuses refuses to enter")

    @tvm.instrument.pass_instrument
    class ExitRefuses(Plain):
        def exit_pass_ctx(self):
            raise RuntimeError("ExitRefuses refuses to leave")

    def seen():
        mod = relax_workload("mlp")
        lines = [f"default: {len(tvm.transform.PassContext.current().instruments)}"]
        for broken in (EnterRefuses, ExitRefuses):
            context = tvm.transform.PassContext(instruments=[Plain("1"), broken("2"), Plain("3")])
            lines.append(f"{broken.__name__} made: {len(context.instruments)}")
            try:
                with context:
                    relax.transform.LegalizeOps()(mod)
            except Exception as exc:
                lines.append(f"{broken.__name__} raised: {'refuses' in str(exc)}")
            current = tvm.transform.PassContext.current()
            lines.append(f"{broken.__name__} current: {len(current.instruments)} {bool(current.instruments)}, "
                         f"failed context: {len(context.instruments)}")
        with tvm.transform.PassContext(opt_level=3, instruments=[Plain("own")]) as own:
            current = tvm.transform.PassContext.current()
            lines.append(f"own: {len(own.instruments)}, current: {len(current.instruments)}")
            relax.transform.LegalizeOps()(mod)
        return lines
""")


def _env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYVIZ_TRACE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _untraced(tmp_path: Path) -> List[str]:
    script = tmp_path / "untraced.py"
    script.write_text(PROGRAM + "print('\\n'.join(seen()))\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_under_relayviz_run_the_program_sees_the_instruments_it_would_see_untraced(tmp_path: Path) -> None:
    expected = _untraced(tmp_path)
    # What TVM does untraced, read here rather than assumed: a failed context is left with none.
    assert expected[0] == "default: 0" and "EnterRefuses current: 0 False, failed context: 0" in expected
    assert "ExitRefuses current: 0 False, failed context: 0" in expected and expected[-1] == "own: 1, current: 1"
    script = tmp_path / "traced.py"
    script.write_text(PROGRAM + "print('\\n'.join(seen()))\n")
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "run", "-o", str(tmp_path / "T"), "--",
                           sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == expected
    trace = load_trace(tmp_path / "T")
    assert trace.complete, trace.problems
    legalized = [r for r in trace.records if r.name == "LegalizeOps"]
    assert len(legalized) == 2 and all(r.error is None for r in legalized)  # the ExitRefuses context's, and own
    # The section of the context TVM left without telling the trace ends all the same, and says so.
    (left,) = [n for n in trace.notes if "was left without calling this trace's exit_pass_ctx" in n]
    assert f"{script}:" in left and left.endswith("its pass events had all ended")
    assert [c["parent"] for c in trace.contexts] == [None, 0, 0]  # the last context is not nested in the one left


CHILD_TEST = PROGRAM + textwrap.dedent("""\

    def test_instruments_as_untraced():
        assert seen() == EXPECTED
""")


def test_under_the_pytest_option_the_tests_see_the_instruments_they_would_see_untraced(tmp_path: Path) -> None:
    expected = _untraced(tmp_path)
    (tmp_path / "test_child.py").write_text(CHILD_TEST.replace("EXPECTED", repr(expected)))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--relayviz-trace", "D",
                           "test_child.py"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    (folder,) = [p for p in (tmp_path / "D").iterdir() if p.is_dir()]
    trace = load_trace(folder)
    assert trace.complete, trace.problems
    assert sum(r.name == "LegalizeOps" for r in trace.records) == 2
