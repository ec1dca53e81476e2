"""The startup hook of ``relayviz run``: this folder is put first on ``PYTHONPATH``, so Python
imports this module at startup (``site`` imports ``sitecustomize``). It starts tracing when
``RELAYVIZ_TRACE`` is set, then runs the ``sitecustomize`` this one hides, if there is one.

This folder is not a package of relayviz_instrument: it holds only this file, so that nothing
else is put on the traced process's path.
"""

import os
import sys


def _chain() -> None:
    """Run the next ``sitecustomize`` on the path (the one this module took the place of)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _start() -> None:
    if not os.environ.get("RELAYVIZ_TRACE"):
        return
    try:
        from relayviz_instrument.autotrace import start_from_environment
    except ImportError as exc:  # the traced Python has no relayviz_instrument: say so, run the script
        sys.stderr.write(f"relayviz: RELAYVIZ_TRACE is set but relayviz_instrument cannot be imported "
                         f"in {sys.executable} ({exc}); the script runs untraced\n")
        return
    start_from_environment()


_start()
_chain()
