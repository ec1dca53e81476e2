"""The project's own regression snapshots: what ``relay.optimize`` at opt_level 3 does to
models of ``tvm.relay.testing`` and to Relay text programs with control flow and ADTs, pinned
pass by pass in ``snapshots/test_regression/`` (the ``relayviz_snapshot_dir`` of setup.cfg).

A change to TVM, to a serializer or to the capture that alters what is recorded fails here,
naming the first pass that behaves differently. When the change is intended, regenerate with
``make snapshots`` (``pytest tests/test_regression.py --snapshot-update``) and review the
files' diff: the pass list first, then each module that changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

import pytest

tvm = pytest.importorskip("tvm")
relay = pytest.importorskip("tvm.relay")
testing = pytest.importorskip("tvm.relay.testing")

from relayviz_instrument import RelayVizTrace  # noqa: E402  # after the importorskip above

PROGRAMS = Path(__file__).parent / "relay_programs"
#: The target is named in full, not taken from this machine: relay.optimize runs no code, and
#: AlterOpLayout's choices depend on the target, so the snapshots hold on every machine.
TARGET = "llvm -mtriple=x86_64-linux-gnu"


def optimized(mod: Any, params: Optional[Dict[str, Any]] = None) -> RelayVizTrace:
    """The trace of ``relay.optimize(mod, params)`` at opt_level 3, kept in memory."""
    trace = RelayVizTrace(out_dir=False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        relay.optimize(mod, target=TARGET, params=params)
    return trace


def test_mlp(relayviz_snapshot) -> None:
    assert relayviz_snapshot == optimized(*testing.mlp.get_workload(batch_size=1))


def test_dqn(relayviz_snapshot) -> None:
    assert relayviz_snapshot == optimized(*testing.dqn.get_workload(batch_size=1))


def test_dcgan(relayviz_snapshot) -> None:
    # FoldConstant folds the batch norms into new constants by running LLVM-built kernels,
    # whose rounding may differ between CPUs: pin their shapes and dtypes, not their bytes.
    assert relayviz_snapshot(constants="shapes") == optimized(*testing.dcgan.get_workload(batch_size=1))


def test_recursion_and_if(relayviz_snapshot) -> None:
    assert relayviz_snapshot == optimized(relay.fromtext((PROGRAMS / "recursion.relay").read_text()))


def test_adt_match(relayviz_snapshot) -> None:
    assert relayviz_snapshot == optimized(relay.fromtext((PROGRAMS / "list_sum.relay").read_text()))
