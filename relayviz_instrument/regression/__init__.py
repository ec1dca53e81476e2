"""Regression snapshots: pin what a compilation does to a model, and say which pass first
behaves differently when it changes. (A *snapshot* elsewhere in the package is a module's
RelayViz document in a trace; here, as in syrupy, a regression snapshot is the file a test
pins, which holds a trace's modules as text.) One job per module::

    codec.py       the snapshot file: written from a trace or a module, read back (one home)
    explain.py     why two snapshots differ, as plain text: the first divergent pass, its diff
    extension.py   the syrupy extension and assertion behind the fixture (imports syrupy)
    plugin.py      the pytest plugin: the relayviz_snapshot fixture (pytest11 entry point)

In a test::

    def test_resnet(relayviz_snapshot):
        trace = RelayVizTrace(out_dir=False)
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            relay.optimize(mod, target=target, params=params)
        assert relayviz_snapshot == trace

Nothing here imports TVM; only ``extension.py`` imports syrupy.
"""

from __future__ import annotations

from .codec import (SNAPSHOT_FORMAT, SnapshotFormatError, SnapshotOptions, StoredSnapshot, decode_snapshot,
                    encode_snapshot)
from .explain import explain

__all__ = ["SNAPSHOT_FORMAT", "SnapshotOptions", "StoredSnapshot", "SnapshotFormatError", "encode_snapshot",
           "decode_snapshot", "explain"]
