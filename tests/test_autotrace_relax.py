"""``relayviz run`` on a Relax script (TVM 0.2x): the pipeline run in the script's own context and
the passes tvm.compile runs outside any with-block are all in the trace, each in its context."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

from relayviz_instrument import load_trace

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""\
    import tvm
    from tvm import relax
    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

    mod = relax_workload("mlp")
    with tvm.transform.PassContext(opt_level=3):
        mod = relax.get_pipeline("zero")(mod)
    build = getattr(tvm, "compile", None) or relax.build
    exe = build(mod, target=relax_host_target())
    print("compiled")
""")


def test_relayviz_run_traces_a_relax_pipeline_and_its_compile(tmp_path: Path) -> None:
    script = tmp_path / "r.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYVIZ_TRACE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "run", "-o", str(tmp_path / "T"), "--",
                           sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0 and done.stdout == b"compiled\n", done.stderr.decode()[-3000:]
    trace = load_trace(tmp_path / "T")
    assert trace.complete, trace.problems
    assert [c["opened"] for c in trace.contexts] == ["(no with-block: TVM's default pass context)", f"{script}:6"]
    in_script = {r.name for r in trace.records if r.context == 1}
    assert {"LegalizeOps", "FuseOps", "FuseTIR"} <= in_script
    # the build's own passes ran outside any with-block: in the default context, after the pipeline
    after = [r for r in trace.records if r.context == 0 and r.index > max(x.index for x in trace.records
                                                                           if x.context == 1)]
    assert after and any(r.changed for r in after)
