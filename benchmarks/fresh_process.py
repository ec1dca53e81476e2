"""One measurement in a fresh Python process: the benchmark script runs itself with
``--child ARGS... OUT`` (``OUT`` a scratch directory, removed afterwards) and prints one JSON
line of what it measured, the last line of its output.

``code`` runs the child with another checkout of the package first on its path (``--against
DIR`` of the benchmarks that take it): the code before a change, measured side by side with
the code after it in one run, the ways alternating.

The child may write bytecode (``__pycache__``) whatever ``PYTHONDONTWRITEBYTECODE`` says: a
user's installed package has its modules compiled (pip does it at install), and a child that
compiles the instrument's modules from source each time would count that as the instrument's
cost (the serializers are imported when the first module is snapshotted, inside the compile).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, Optional


def run_fresh(script: str, *args: str, code: Optional[str] = None) -> Dict[str, Any]:
    """Run ``script --child *args OUT`` in a new interpreter and return its last output line,
    parsed; ``code``: a checkout whose ``relayviz_instrument`` the child imports instead."""
    out = tempfile.mkdtemp(prefix="bench-")
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        if code is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.abspath(code), env.get("PYTHONPATH")]))
        done = subprocess.run([sys.executable, script, "--child", *args, out],
                              capture_output=True, text=True, check=True, env=env)
        result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result
    finally:
        shutil.rmtree(out, ignore_errors=True)
