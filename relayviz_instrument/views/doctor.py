"""``check_installation``: how this package is installed, and whether ``RELAYVIZ_TRACE=DIR python
script.py`` traces a script with this Python — the use case behind ``relayviz doctor``.

Tracing a script without editing it rests on a startup hook, ``relayviz-trace.pth``, that pip
puts into site-packages (from a wheel and, since the package's ``setup.py`` adds it to the
editable wheel, from ``pip install -e``). Whether it works is asked of a child Python run as
the user's script would be (this interpreter, this environment) with ``RELAYVIZ_TRACE`` set:
the hook either started tracing in it or not. The child never imports TVM, so it writes
nothing.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from .._version import __version__
from ..names import printable

__all__ = ["HOOK_FILE", "InstallationCheck", "check_installation"]

#: The startup hook's file name in site-packages.
HOOK_FILE = "relayviz-trace.pth"
#: Run in the child: did the startup hook start tracing, and which package did it import?
_PROBE = ("import json, sys; a = sys.modules.get('relayviz_instrument.autotrace'); "
          "p = sys.modules.get('relayviz_instrument'); "
          "print(json.dumps({'started': bool(a and a._tracing is not None), "
          "'package': p and str(p.__path__[0])}))")
#: Optional features: the module each imports, and the extra that installs it.
_EXTRAS = (("graphviz", "dot"), ("tensorboard", "tensorboard"), ("model_explorer", "model-explorer"),
           ("syrupy", "pytest"))


@dataclass
class InstallationCheck:
    """What ``relayviz doctor`` found: where the package is and how it was installed, the
    startup hook files on this Python's site paths, whether the hook starts tracing in a new
    process (``hook_active``; ``hook_error`` says why not), the TVM found, and the optional
    extras present."""

    version: str
    python: str
    package: str
    install: str
    hook_files: List[str] = field(default_factory=list)
    hook_active: bool = False
    hook_package: Optional[str] = None
    hook_error: str = ""
    tvm: str = ""
    extras: Dict[str, bool] = field(default_factory=dict)

    @property
    def advice(self) -> str:
        """What to do when the hook is not active (empty when it is)."""
        if self.hook_active:
            return ""
        if not self.hook_files:
            return (f"no {HOOK_FILE} in this Python's site-packages: reinstall the package with pip "
                    f"(pip install relayviz_instrument, or pip install -e . in a checkout), or use "
                    f"relayviz run -- python script.py, which needs no hook")
        return (f"{HOOK_FILE} is installed but did not start tracing ({self.hook_error}); "
                f"relayviz run -- python script.py needs no hook")

    def to_json(self) -> Dict[str, Any]:
        """The check as JSON-able values (``relayviz doctor --json``)."""
        return {"version": self.version, "python": self.python, "package": self.package,
                "install": self.install, "hook_files": self.hook_files, "hook_active": self.hook_active,
                "hook_package": self.hook_package, "hook_error": self.hook_error, "tvm": self.tvm,
                "extras": self.extras, "advice": self.advice}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        table.add_row("relayviz_instrument", Text(f"{self.version}, {self.install}: {printable(self.package)}"))
        table.add_row("python", Text(printable(self.python)))
        hook = Text("active", "green") if self.hook_active else Text("not active", "red")
        if self.hook_files:
            hook.append(f"  ({', '.join(printable(f) for f in self.hook_files)})")
        table.add_row("RELAYVIZ_TRACE", hook)
        table.add_row("tvm", Text(self.tvm or "not found"))
        table.add_row("extras", Text(", ".join(f"{extra} {'yes' if present else 'no'}"
                                               for extra, present in self.extras.items())))
        yield table
        if self.advice:
            yield Text(f"note: {self.advice}", "yellow")


def check_installation() -> InstallationCheck:
    """Check this package's installation and its startup hook in the running Python (see the
    module docstring); the result prints as ``relayviz doctor`` shows it."""
    package = str(Path(__file__).resolve().parent.parent)
    check = InstallationCheck(__version__, sys.executable, package, _install_kind(package))
    check.hook_files = [str(Path(d) / HOOK_FILE) for d in _site_dirs() if (Path(d) / HOOK_FILE).is_file()]
    _probe_hook(check)
    check.tvm = _tvm()
    check.extras = {extra: importlib.util.find_spec(module) is not None for module, extra in _EXTRAS}
    return check


def _install_kind(package: str) -> str:
    """``editable install``, ``installed``, or how the package got on the path otherwise. Only a
    distribution in a site directory counts: a checkout on ``PYTHONPATH`` may hold an
    ``.egg-info`` of its own."""
    sites = {str(Path(d).resolve()) for d in _site_dirs()}
    source = str(Path(package).parent)
    for dist in importlib.metadata.distributions(name="relayviz_instrument"):
        where = str(Path(str(dist.locate_file(""))).resolve())
        if where not in sites:
            continue
        direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
        if direct_url.get("dir_info", {}).get("editable"):
            checkout = direct_url.get("url", "").replace("file://", "", 1)
            return "editable install" if checkout == source else \
                f"imported from {source}, not from the editable install of {checkout}"
        installed = str(Path(where) / "relayviz_instrument")
        return "installed" if installed == package else f"imported from the path, not from the install in {where}"
    return "not installed (imported from the path)"


def _site_dirs() -> List[str]:
    """The directories whose ``.pth`` files this Python runs at startup."""
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return dirs


def _probe_hook(check: InstallationCheck) -> None:
    """Run a new Python as a traced script would run, and read whether the hook started tracing."""
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, RELAYVIZ_TRACE=str(Path(scratch) / "never-written"), RELAYVIZ_TRACE_QUIET="1")
        try:
            done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env,
                                  cwd=scratch, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            check.hook_error = f"the probe could not run: {exc}"
            return
    if done.returncode != 0:
        check.hook_error = f"the probe failed: {done.stderr.strip()[-500:]}"
        return
    result = json.loads(done.stdout.strip().splitlines()[-1])
    check.hook_active = bool(result["started"])
    check.hook_package = result["package"]
    if not check.hook_active:
        check.hook_error = "a new Python with RELAYVIZ_TRACE set did not start tracing"


def _tvm() -> str:
    """The TVM distribution found and which IRs it has, without importing it (a second or two)."""
    spec = importlib.util.find_spec("tvm")
    if spec is None or not spec.submodule_search_locations:
        return ""
    version = "unknown version"
    for name in ("apache-tvm", "hhb-tvm", "tlcpack", "tvm"):
        try:
            version = f"{name} {importlib.metadata.version(name)}"
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    root = Path(list(spec.submodule_search_locations)[0])
    irs = [ir for ir in ("relay", "relax") if (root / ir).is_dir()]
    return f"{version} ({', '.join(irs) or 'neither Relay nor Relax'})"
