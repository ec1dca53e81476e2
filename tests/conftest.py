"""Shared fixtures: real models from tvm.relay.testing, built once per session.

Building is the expensive part (relay.build of a ResNet-18 takes 10-20 s here), so every
built artefact is session-scoped and shared by all test modules. Add area-specific fixtures
in the test module that uses them.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Tuple

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many damaged inputs the readers were given (tests/fuzzing.py counts them)."""
    fuzzing = sys.modules.get("fuzzing")
    if fuzzing is not None and fuzzing.COUNTS["inputs"]:
        terminalreporter.write_line(f"readers fuzzed: {fuzzing.COUNTS['inputs']} damaged inputs tried, "
                                    f"{fuzzing.COUNTS['escapes']} escapes")


@pytest.fixture(scope="session")
def resnet18() -> Tuple[Any, Dict[str, Any]]:
    """``(mod, params)`` of ResNet-18 (batch 1, 224x224), unoptimized, parameters unbound."""
    import tvm.relay.testing

    return tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)


def _build(workload: Tuple[Any, Dict[str, Any]]) -> Any:
    import tvm
    from tvm import relay

    mod, params = workload
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm", params=params)


@pytest.fixture(scope="session")
def resnet18_built(resnet18: Tuple[Any, Dict[str, Any]]) -> Any:
    """``relay.build(resnet18, target="llvm", params=params)`` at opt_level 3, built once."""
    return _build(resnet18)


@pytest.fixture(scope="session")
def mlp() -> Tuple[Any, Dict[str, Any]]:
    """``(mod, params)`` of the small MLP of tvm.relay.testing (fast to build)."""
    import tvm.relay.testing

    return tvm.relay.testing.mlp.get_workload(batch_size=1)


@pytest.fixture(scope="session")
def mlp_built(mlp: Tuple[Any, Dict[str, Any]]) -> Any:
    """The MLP built with relay.build for llvm at opt_level 3."""
    return _build(mlp)


@pytest.fixture(scope="session")
def resnet18_traced(resnet18: Tuple[Any, Dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``(lib, trace)``: ResNet-18 built like ``resnet18_built`` but under a RelayVizTrace.

    The trace directory is ``trace.path``; read it back with ``load_trace(trace.path)``.
    """
    from relayviz_instrument.capture import trace_build

    mod, params = resnet18
    return trace_build(mod, params=params, target="llvm", opt_level=3,
                       out_dir=tmp_path_factory.mktemp("resnet18") / "trace")
