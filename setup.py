"""The package is described in setup.cfg; this file adds one step to the build: the startup hook
``relayviz-trace.pth`` is installed into site-packages next to the package, where Python runs
it at startup. It does nothing unless ``RELAYVIZ_TRACE`` is set (README: Trace any script)."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HOOK = os.path.join("relayviz_instrument", "startup", "relayviz-trace.pth")


class BuildWithStartupHook(build_py):
    """build_py, then the ``.pth`` at the top of the built tree (the wheel's site-packages)."""

    def run(self) -> None:
        super().run()
        self.copy_file(HOOK, os.path.join(self.build_lib, os.path.basename(HOOK)))


setup(cmdclass={"build_py": BuildWithStartupHook})
