"""The baseline a user would otherwise run, for the benchmarks to measure beside tracing."""

from __future__ import annotations

from typing import Any


def print_after_all() -> Any:
    """TVM's ``PrintAfterAll`` instrument (the pass, then ``str(mod)``, printed after every pass);
    on TVMs that predate it (hhb-tvm's 0.16), an instrument that prints the same two things."""
    import tvm

    found = getattr(tvm.instrument, "PrintAfterAll", None)
    if found is not None:
        return found()

    @tvm.instrument.pass_instrument
    class PrintAfterAll:
        def run_after_pass(self, mod: Any, info: Any) -> None:
            print(f"After Running Pass: {info}")
            print(mod)

    return PrintAfterAll()
