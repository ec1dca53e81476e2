"""The package's declared dependencies against what it imports, and a fresh environment
holding only those: the package imports, the command runs, and a pytest run of a project
that has nothing to do with TVM is not broken by the plugin pytest loads from the package."""

from __future__ import annotations

import ast
import configparser
import functools
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import venv
from pathlib import Path
from typing import Dict, List, Set

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "relayviz_instrument"
#: Imported by the package but never installed by it, each for its reason.
PROVIDED_BY_THE_USER = {
    "tvm": "the user's TVM (a Relay TVM or TVM 0.2x); only capture/, serialize/ and demo/ import it",
    "tvm_ffi": "part of apache-tvm 0.2x, read only where it is found",
    "torch": "the user's PyTorch, for the Relax demo model made from it",
    "pytest": "the snapshot plugin runs inside pytest, which loads it",
}
#: Modules imported only when their feature is used (by a function, never by ``import
#: relayviz_instrument``), and the extra that declares what they import.
FEATURE_MODULES = {"relayviz_instrument/regression/extension.py": "pytest"}


def _requirement_names(text: str) -> Set[str]:
    names = set()
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            names.add(re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def _declared() -> Dict[str, Set[str]]:
    """``install_requires`` and each extra of setup.cfg, as distribution names."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    declared = {"install_requires": _requirement_names(cfg["options"]["install_requires"])}
    for extra, text in cfg["options.extras_require"].items():
        declared[extra] = _requirement_names(text)
    return declared


def _imports(module_level: bool) -> Dict[str, List[str]]:
    """Top-level names of third-party modules the package imports, at module level (run
    by ``import``) or inside functions (run when a feature is used), with where."""
    found: Dict[str, List[str]] = {}
    stdlib = set(sys.stdlib_module_names)

    def visit(node: ast.AST, nested: bool, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # for the type checker only: never imported at run time
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            names: List[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            for name in names:
                top = name.split(".")[0]
                if top not in stdlib and top != "relayviz_instrument" and nested != module_level:
                    found.setdefault(top, []).append(where)
            visit(child, inner, where)

    for path in sorted(PACKAGE.rglob("*.py")):
        visit(ast.parse(path.read_text()), False, str(path.relative_to(ROOT)))
    return found


@functools.lru_cache(maxsize=None)
def _providers() -> Dict[str, str]:
    """Top-level module name -> the installed distribution that provides it, read from the
    files each installed (``packages_distributions`` sees only ``.py`` files; orjson has none)."""
    found: Dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = str(dist.metadata["Name"]).lower().replace("_", "-")
        for file in dist.files or ():
            if file.parts and not file.parts[0].endswith((".dist-info", ".data")) and file.parts[0] != "..":
                found.setdefault(file.parts[0].split(".")[0], name)
    return found


def _distribution(import_name: str) -> str:
    provider = _providers().get(import_name)
    assert provider, f"{import_name} is imported by the package but no installed distribution provides it"
    return provider


def test_every_module_level_import_is_an_install_requirement() -> None:
    declared = _declared()
    undeclared = {}
    for name, where in _imports(module_level=True).items():
        if name in PROVIDED_BY_THE_USER:
            continue
        for module in where:
            if _distribution(name) not in declared[FEATURE_MODULES.get(module, "install_requires")]:
                undeclared.setdefault(name, []).append(module)
    assert not undeclared, f"imported when the package is imported, but not in install_requires: {undeclared}"


def test_every_import_inside_a_feature_is_declared_by_an_extra() -> None:
    declared = set().union(*_declared().values())
    undeclared = {name: where[:3] for name, where in _imports(module_level=False).items()
                  if name not in PROVIDED_BY_THE_USER and _distribution(name) not in declared}
    assert not undeclared, f"imported by a feature, but declared by no extra: {undeclared}"


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment holding the package and what it declares, plus pytest:
    no TVM, no extras. Installed from this checkout by pip, as a user would."""
    if os.environ.get("RELAYVIZ_OFFLINE"):
        pytest.skip("RELAYVIZ_OFFLINE is set: pip cannot fetch the declared requirements")
    where = tmp_path_factory.mktemp("fresh") / "venv"
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           str(ROOT), "pytest"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return where


def _run(venv_dir: Path, *args: str, cwd: Path) -> "subprocess.CompletedProcess[str]":
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run([str(venv_dir / "bin" / args[0]), *args[1:]], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_a_fresh_environment_imports_the_package_and_runs_the_command(fresh_venv: Path, tmp_path: Path) -> None:
    done = _run(fresh_venv, "python", "-c", "import relayviz_instrument as r, sys; "
                "sys.exit(0 if all(hasattr(r, n) for n in r.__all__ if n not in r._LAZY) else 1)", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = _run(fresh_venv, "python", "-c", "import tvm", cwd=tmp_path)
    assert done.returncode != 0, "the fresh environment is meant to have no TVM"
    done = _run(fresh_venv, "relayviz", "--help", cwd=tmp_path)
    assert done.returncode == 0 and "usage: relayviz" in done.stdout, done.stderr


def test_the_install_puts_the_startup_hook_in_site_packages_and_it_is_inert_without_tvm(
        fresh_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = Path(_run(fresh_venv, "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                     cwd=tmp_path).stdout.strip())
    assert (site / "relayviz-trace.pth").is_file()
    monkeypatch.setenv("RELAYVIZ_TRACE", str(tmp_path / "T"))
    done = _run(fresh_venv, "python", "-c", "print('hello')", cwd=tmp_path)
    # the hook ran (the variable is set) and, TVM never being imported, made nothing and said nothing
    assert (done.returncode, done.stdout, done.stderr) == (0, "hello\n", "")
    assert not (tmp_path / "T").exists()
    done = _run(fresh_venv, "python", "-c", "import sys; print('relayviz_instrument' in sys.modules)", cwd=tmp_path)
    assert done.stdout == "True\n", done.stderr


def test_the_plugin_leaves_an_unrelated_pytest_run_alone(fresh_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_unrelated.py").write_text("def test_arithmetic():\n    assert 1 + 1 == 2\n")
    done = _run(fresh_venv, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    # the plugin was loaded (pytest11 entry point) and did not break the run
    done = _run(fresh_venv, "python", "-m", "pytest", "--trace-config", "-q", "-p", "no:cacheprovider",
                cwd=tmp_path)
    assert "relayviz_instrument" in done.stdout, done.stdout[-2000:]


def test_every_public_name_imports_from_the_package() -> None:
    """Users' imports do not break with the layout: every name of ``__all__`` is importable
    from the package itself (those that need TVM where TVM is installed)."""
    import relayviz_instrument

    tvm_present = importlib.util.find_spec("tvm") is not None
    missing = []
    for name in relayviz_instrument.__all__:
        if relayviz_instrument._LAZY.get(name) == "capture" and not tvm_present:
            continue
        namespace: Dict[str, object] = {}
        try:
            exec(f"from relayviz_instrument import {name}", namespace)
        except ImportError as exc:
            missing.append(f"{name}: {exc}")
    assert not missing
    assert sorted(set(relayviz_instrument.__all__)) == sorted(relayviz_instrument.__all__), "a name listed twice"


_TRACE_ONLY = """
import sys, tempfile
import tvm
from relayviz_instrument import RelayVizTrace
trace = RelayVizTrace(tempfile.mkdtemp() + "/t")
try:
    from tvm import relay
except ImportError:  # TVM 0.2x: Relax
    from tvm import relax
    from relayviz_instrument.demo.relax_models import relax_workload
    mod, passes = relax_workload("mlp"), relax.get_pipeline("zero")
else:
    x = relay.var("x", shape=(1, 8), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.add(x, relay.const(1.0)))))
    passes = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.FoldConstant()])
with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
    passes(mod)
assert len(trace.records) > 1 and trace.complete, trace.problems
print(" ".join(sorted(m for m in sys.modules if m.startswith("relayviz_instrument."))))
"""


@pytest.mark.skipif(importlib.util.find_spec("tvm") is None, reason="traces a compilation: needs TVM")
def test_a_process_that_only_traces_imports_only_what_tracing_needs() -> None:
    """Tracing starts in every process ``relayviz run`` or the pytest option traces: importing
    the instrument and recording passes leaves the diff, the analysis, the views and the
    exporters (and what they import) unimported."""
    done = subprocess.run([sys.executable, "-c", _TRACE_ONLY], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = done.stdout.split()
    assert any(m.startswith("relayviz_instrument.serialize.") for m in loaded)  # it did record
    for stage in ("diff", "analysis", "views", "html_report", "export", "cli", "snapshot"):
        assert not [m for m in loaded if m.startswith(f"relayviz_instrument.{stage}")], stage


def test_diff_and_export_stay_functions_whatever_was_imported_first() -> None:
    """``diff`` and ``export`` are functions named like their subpackages; imported lazily, the
    subpackage imported first must not take the name."""
    code = ("import relayviz_instrument.diff.matching, relayviz_instrument.export.dot\n"
            "import relayviz_instrument as package\n"
            "from relayviz_instrument import diff, export\n"
            "from relayviz_instrument.diff import diff as the_diff\n"
            "from relayviz_instrument.export import export as the_export\n"
            "assert diff is the_diff and export is the_export and package.diff is the_diff, (diff, export)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
