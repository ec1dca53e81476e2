"""The package is described in setup.cfg; this file adds one step to the build: the startup hook
``relayviz-trace.pth`` is installed into site-packages next to the package, where Python runs
it at startup. It does nothing unless ``RELAYVIZ_TRACE`` is set (docs/tracing.md).

Both ways pip installs a checkout get it:

- ``pip install .`` and a wheel from ``python -m build``: ``build_py`` copies the hook to the top
  of the built tree, which is the wheel's root, which pip unpacks into site-packages;
- ``pip install -e .`` (PEP 660): setuptools' ``editable_wheel`` writes a wheel that holds only
  a path hook of its own; nothing ``build_py`` wrote goes into it. The hook is added to that
  wheel after it is written, with its line in the wheel's RECORD, so that pip installs it into
  site-packages and ``pip uninstall`` removes it like any other file of the package.
"""

import base64
import hashlib
import os
import zipfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

HOOK = os.path.join("relayviz_instrument", "autotrace", "startup", "relayviz-trace.pth")


class BuildWithStartupHook(build_py):
    """build_py, then the ``.pth`` at the top of the built tree (the wheel's site-packages)."""

    def run(self) -> None:
        super().run()
        self.copy_file(HOOK, os.path.join(self.build_lib, os.path.basename(HOOK)))


class EditableWheelWithStartupHook(editable_wheel):
    """editable_wheel, then the ``.pth`` added to the root of the editable wheel it wrote."""

    def run(self) -> None:
        dist_dir = Path(self.dist_dir)
        before = {path: path.stat().st_mtime_ns for path in dist_dir.glob("*.whl")}
        super().run()
        written = [path for path in dist_dir.glob("*.whl") if before.get(path) != path.stat().st_mtime_ns]
        if len(written) != 1:  # never a silent editable install without the hook
            raise RuntimeError(f"relayviz-trace.pth: expected one editable wheel in {dist_dir}, found {written}")
        _add_to_wheel(written[0], os.path.basename(HOOK), Path(HOOK).read_bytes())


def _add_to_wheel(wheel: Path, name: str, data: bytes) -> None:
    """Rewrite ``wheel`` with ``name`` (holding ``data``) at its root and listed in its RECORD."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record_line = f"{name},sha256={digest},{len(data)}\n".encode()
    partial = wheel.with_name(wheel.name + ".partial")
    with zipfile.ZipFile(wheel) as old, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            content = old.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                content = content.rstrip(b"\n") + b"\n" + record_line
            new.writestr(info, content)
        new.writestr(name, data)
    os.replace(partial, wheel)


setup(cmdclass={"build_py": BuildWithStartupHook, "editable_wheel": EditableWheelWithStartupHook})
