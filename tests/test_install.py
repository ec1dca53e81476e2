"""Tracing without editing the script, however the package was installed: ``pip install -e`` of a
checkout, and the wheel ``python -m build`` makes. Each goes into a new virtual environment, then
``RELAYVIZ_TRACE=DIR python script.py`` must leave a complete trace in DIR, and ``relayviz doctor``
must say the startup hook is active.

Why this is a real install although TVM is not reinstalled (pip installing TVM and PyTorch into a
new environment takes minutes and gigabytes): pip installs the package under test into the new
environment's own site-packages exactly as a user's pip does, through the same build backend
(isolated, as pip builds by default), and Python starts there as it does for a user: it runs the
``.pth`` files of that site-packages, the startup hook among them. Only the dependencies, which
this test is not about, are borrowed: one path line appends the leg's site-packages after the new
environment's own, so nothing of relayviz_instrument can come from the leg (a path line runs no
``.pth`` of the directory it names), which each test checks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest

from relayviz_instrument import load_trace

ROOT = Path(__file__).resolve().parent.parent

#: A user's script: it knows nothing of relayviz. One small build, on the leg's IR.
RELAY_SCRIPT = """
import tvm
from tvm import relay
x = relay.var("x", shape=(1, 8), dtype="float32")
mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.add(x, relay.const(1.0)))))
with tvm.transform.PassContext(opt_level=3):
    relay.build(mod, target="llvm -mtriple=x86_64-linux-gnu")
print("built")
"""
RELAX_SCRIPT = """
import tvm
from tvm.relax.frontend import nn
class MLP(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(8, 4)
    def forward(self, x):
        return nn.relu(self.fc(x))
mod, _ = MLP().export_tvm({"forward": {"x": nn.spec.Tensor((1, 8), "float32")}})
tvm.compile(mod, target="llvm")
print("built")
"""
#: What the last event of each script's trace is: the build's result, recorded by the hook.
BUILT_EVENTS = {"GraphExecutorCodegen", "VMCodeGen"}

pytestmark = pytest.mark.skipif(bool(os.environ.get("RELAYVIZ_OFFLINE")),
                                reason="RELAYVIZ_OFFLINE is set: pip cannot fetch the build backend")


def _has_relay() -> bool:
    import importlib.util

    return importlib.util.find_spec("tvm.relay") is not None


def _copy_checkout(where: Path) -> Path:
    """The checkout's files, without environments, caches and build output: pip builds in the
    source tree (``*.egg-info``, ``build/``), and the two legs run this test at the same time."""
    ignore = shutil.ignore_patterns(".venv*", ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
                                    ".hypothesis", "node_modules", "test-artifacts", "relayviz-trace", "_site")
    return Path(shutil.copytree(ROOT, where, ignore=ignore))


def _fresh_venv(where: Path) -> Path:
    """A new environment without pip (the leg's pip installs into it: ``pip --python``), whose
    path ends with the leg's site-packages, for TVM and the package's dependencies."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    leg = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "leg-site-packages.pth").write_text("".join(f"{path}\n" for path in sorted(leg)))
    return python


def _clean_env(**env: str) -> Dict[str, str]:
    """The environment a user's shell would give: none of the test run's PYTHONPATH (a checkout on
    it holds an ``.egg-info`` that pip and ``importlib.metadata`` would take for the install)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "RELAYVIZ_"))}
    return {**clean, **env}


def _pip(python: Path, *args: str) -> None:
    """The leg's pip, acting on the new environment (``pip --python``)."""
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args, "--quiet",
                           "--disable-pip-version-check"], capture_output=True, text=True, cwd=python.parent,
                          env=_clean_env(), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def _pip_install(python: Path, *args: str) -> None:
    _pip(python, "install", "--no-deps", *args)


def _run(program: Path, args: List[str], cwd: Path, **env: str) -> "subprocess.CompletedProcess[str]":
    """Run a program of the new environment as a user's shell would."""
    return subprocess.run([str(program), *args], capture_output=True, text=True, cwd=cwd, env=_clean_env(**env),
                          timeout=600)


def _trace_a_script(python: Path, tmp_path: Path, package_dir: Path) -> Path:
    """``RELAYVIZ_TRACE=DIR python script.py`` with an unedited script; return DIR after checking it."""
    script = tmp_path / "script.py"
    script.write_text(RELAY_SCRIPT if _has_relay() else RELAX_SCRIPT)
    out = tmp_path / "trace"
    done = _run(python, [str(script)], tmp_path, RELAYVIZ_TRACE=str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "built\n"
    assert f"pass events traced in {out}" in done.stderr, done.stderr[-3000:]
    trace = load_trace(out)
    assert trace.complete, trace.problems
    assert len(trace.records) > 5
    assert trace.records[-1].name in BUILT_EVENTS, trace.records[-1].name
    # the hook ran the package this environment installed, not the leg's
    where = _run(python, ["-c", "import relayviz_instrument; print(relayviz_instrument.__path__[0])"], tmp_path)
    assert Path(where.stdout.strip()) == package_dir, where.stdout + where.stderr
    return out


def _doctor(python: Path, cwd: Path) -> dict:
    done = _run(python, ["-m", "relayviz_instrument", "doctor", "--json"], cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_an_editable_install_traces_a_script_from_the_environment(tmp_path: Path) -> None:
    checkout = _copy_checkout(tmp_path / "checkout")
    python = _fresh_venv(tmp_path / "venv")
    _pip_install(python, "--editable", str(checkout))
    _trace_a_script(python, tmp_path, checkout / "relayviz_instrument")
    found = _doctor(python, tmp_path)
    assert found["install"] == "editable install" and found["hook_active"], found
    # the hook is one of the package's files: pip uninstall takes it away again
    done = _run(python.parent / "relayviz", ["doctor"], tmp_path)
    assert done.returncode == 0 and "RELAYVIZ_TRACE" in done.stdout and "not active" not in done.stdout, done.stdout
    _pip(python, "uninstall", "--yes", "relayviz_instrument")
    site = Path(_run(python, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     tmp_path).stdout.strip())
    assert not (site / "relayviz-trace.pth").exists()
    # the checkout on PYTHONPATH, nothing installed: doctor says the hook is not active, and what to do
    done = _run(python, ["-m", "relayviz_instrument", "doctor"], tmp_path, PYTHONPATH=str(checkout))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not installed" in done.stdout and "not active" in done.stdout and "relayviz run" in done.stdout


def test_the_built_wheel_holds_what_the_package_needs_and_traces_a_script(tmp_path: Path) -> None:
    checkout = _copy_checkout(tmp_path / "checkout")
    dist = tmp_path / "dist"
    # sdist first, then the wheel from the unpacked sdist: what a release does, so a file the sdist
    # forgot is missing from the wheel too
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(checkout)],
                          capture_output=True, text=True, cwd=tmp_path, env=_clean_env(), timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ["relayviz-trace.pth", "relayviz_instrument/autotrace/startup/sitecustomize.py",
                   "relayviz_instrument/schema/relayviz.schema.json"]:
        assert needed in names, needed
    assets = sorted(p.name for p in (ROOT / "relayviz_instrument" / "html_report" / "assets").iterdir())
    assert assets and all(f"relayviz_instrument/html_report/assets/{a}" in names for a in assets)

    python = _fresh_venv(tmp_path / "venv")
    _pip_install(python, str(wheel))
    site = Path(_run(python, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     tmp_path).stdout.strip())
    out = _trace_a_script(python, tmp_path, site / "relayviz_instrument")
    found = _doctor(python, tmp_path)
    assert found["install"] == "installed" and found["hook_active"], found

    # the HTML report and validation run from the wheel's own assets and schema
    relayviz = python.parent / "relayviz"
    done = _run(relayviz, ["report", str(out), "--html", str(tmp_path / "report.html")], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "report.html").read_text()
    assert "Content-Security-Policy" in page and trace_name_in(page, out)
    snapshot = next((out / "snapshots").iterdir())
    done = _run(relayviz, ["validate", str(snapshot)], tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("valid"), done.stdout + done.stderr


def trace_name_in(page: str, out: Path) -> bool:
    """Whether the page embeds the trace's own data (its last event's name)."""
    return load_trace(out).records[-1].name in page
