"""The ``relayviz_snapshot`` fixture, driven the way a user drives it: a child pytest project
(pytester) whose test traces ``relay.optimize`` of the MLP of tvm.relay.testing and pins it.

Runs that show determinism across processes and hash seeds run in processes of their own;
the others run in this process (a second or so each instead of the four a process spends
importing TVM), with what the child imports imported here first so that pytester, which
drops the modules a run imported, never makes TVM import twice.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, List

import pytest

syrupy = pytest.importorskip("syrupy")
pytest.importorskip("tvm.relay.testing")
import relayviz_instrument.capture  # noqa: E402  (imported by the child, see above)
import relayviz_instrument.regression.extension  # noqa: E402,F401  (imported by the child, see above)

CHILD = '''
import os

import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import RelayVizTrace


def test_mlp(relayviz_snapshot):
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    disabled = [p for p in os.environ.get("CHILD_DISABLED", "").split(",") if p]
    trace = RelayVizTrace(out_dir=False)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace], disabled_pass=disabled):
        relay.optimize(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
    assert relayviz_snapshot == trace


def test_module(relayviz_snapshot):
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    assert relayviz_snapshot(constants="shapes", names=False) == mod
'''
#: The plugin by its module name, which is also its entry point's name: this works whether or
#: not the package's entry points are installed.
PLUGIN = ("-p", "relayviz_instrument.regression.plugin", "-p", "no:cacheprovider")


@pytest.fixture(autouse=True)
def syrupy_session_kept() -> Iterator[None]:
    """syrupy keeps the running session in a module global, which a run in this process
    replaces with its own: put this session's back."""
    import syrupy as plugin

    kept = plugin._syrupy
    yield
    plugin._syrupy = kept


@pytest.fixture
def child(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("CI", "BUILD_NUMBER", "CHILD_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_child=CHILD)
    return pytester


def run(pytester: pytest.Pytester, *args: str, process: bool = False) -> pytest.RunResult:
    if process:
        return pytester.runpytest_subprocess(*PLUGIN, *args)
    return pytester.runpytest_inprocess(*PLUGIN, *args)


def snapshot_files(pytester: pytest.Pytester) -> List[Path]:
    return sorted((pytester.path / "snapshots").rglob("*.relayviz.txt"))


def test_update_writes_one_file_per_test_the_same_bytes_in_every_process_and_a_rerun_passes(
        child: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    first = run(child, "--snapshot-update", process=True)
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["2 snapshots generated."])
    files = snapshot_files(child)
    assert [f.relative_to(child.path).as_posix() for f in files] == [
        "snapshots/test_child/test_mlp.relayviz.txt", "snapshots/test_child/test_module.relayviz.txt"]
    written = {f: f.read_bytes() for f in files}
    header = written[files[0]].decode().split("\n")[:5]
    assert header[0] == "relayviz snapshot format 1" and header[3] == "object trace"
    assert re.fullmatch(r"tvm \S+", header[1]) and re.fullmatch(r"python 3\.\d+", header[2])
    assert written[files[1]].decode().split("\n")[3:5] == [
        "object module", 'options {"constants":"shapes","exclude":null,"names":false,"passes":null}']

    # Another process and another hash seed serialize the same bytes: updating changes nothing.
    monkeypatch.setenv("PYTHONHASHSEED", "2")
    again = run(child, "--snapshot-update", process=True)
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["2 snapshots passed."])
    assert "updated" not in again.stdout.str()
    assert {f: f.read_bytes() for f in snapshot_files(child)} == written

    plain = run(child)
    plain.assert_outcomes(passed=2)
    assert plain.ret == 0
    assert {f: f.read_bytes() for f in snapshot_files(child)} == written


def test_a_disabled_pass_fails_naming_it_with_its_node_diff(child: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    run(child, "--snapshot-update").assert_outcomes(passed=2)
    stored = {f: f.read_bytes() for f in snapshot_files(child)}
    monkeypatch.setenv("CHILD_DISABLED", "FoldConstant")
    monkeypatch.setenv("CI", "1")  # as on CI: pytest prints the whole explanation
    result = run(child)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    explanation = [line[len("E         "):] for line in result.stdout.lines if line.startswith("E         ")]
    first = next(i for i, line in enumerate(explanation) if line.startswith("first divergence: "))
    assert re.fullmatch(r"first divergence: FoldConstant \(#\d+ in the snapshot\) ran only in the snapshot",
                        explanation[first])
    # Before it, FoldConstant's first run (which changed nothing) is named as such, not as a cascade.
    assert explanation[first - 1].startswith("before the first divergence, ")
    assert "(only in the snapshot: FoldConstant ×2, InferType ×2)" in explanation[first - 1]
    # The node diff: what the module lacks now that FoldConstant did not fold the weights' layout.
    assert explanation[first + 1].startswith("the snapshot's module → this run's module after FoldConstant  ")
    assert "├── replaced ×3  Const → layout_transform+Const" in explanation
    assert any(line.endswith("── + layout_transform  float32[16, 784, 8]") for line in explanation)
    assert re.fullmatch(r"\d+ later divergences?: .*", explanation[-1])
    assert "snapshot failed" in out and {f: f.read_bytes() for f in snapshot_files(child)} == stored


def test_without_update_nothing_is_written_a_missing_snapshot_fails_also_on_ci_and_unused_ones_are_reported(
        child: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    run(child, "--snapshot-update").assert_outcomes(passed=2)
    mlp, module = snapshot_files(child)
    module.unlink()
    unused = mlp.with_name("test_gone.relayviz.txt")
    unused.write_bytes(mlp.read_bytes())
    monkeypatch.setenv("CI", "1")
    result = run(child)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*Snapshot 'test_module' does not exist!",
                                 "*no snapshot is stored for this test: run pytest --snapshot-update to write it",
                                 "*1 snapshot failed. 1 snapshot passed. 1 snapshot unused.*"])
    assert not module.exists() and unused.exists()

    monkeypatch.delenv("CI")
    update = run(child, "--snapshot-update")
    update.assert_outcomes(passed=2)
    update.stdout.fnmatch_lines(["*1 snapshot generated. 1 unused snapshot deleted.*"])
    assert module.exists() and not unused.exists()


def test_an_old_format_fails_with_the_update_hint_and_another_tvm_is_only_a_note(child: pytest.Pytester) -> None:
    run(child, "--snapshot-update").assert_outcomes(passed=2)
    mlp, _ = snapshot_files(child)
    current = mlp.read_bytes()
    mlp.write_bytes(current.replace(b"relayviz snapshot format 1\n", b"relayviz snapshot format 0\n", 1))
    old = run(child, "-k", "test_mlp")
    old.assert_outcomes(failed=1, deselected=1)
    explanation = [line[1:].strip() for line in old.stdout.lines if line.startswith("E ")]
    assert explanation[-1] == "snapshot written by format 0; run pytest --snapshot-update"
    assert not any("divergence" in line for line in explanation)

    tvm_line = next(line for line in current.split(b"\n") if line.startswith(b"tvm "))
    mlp.write_bytes(current.replace(tvm_line, b"tvm 0.0.1", 1))
    noted = run(child, "-k", "test_mlp")
    noted.assert_outcomes(passed=1, deselected=1)
    noted.stdout.fnmatch_lines(["*relayviz snapshot notes*",
                                "test_child.py::test_mlp: the snapshot was written with TVM 0.0.1, Python 3.*; "
                                "this is TVM *"])
    updated = run(child, "-k", "test_mlp", "--snapshot-update")  # updating records this run's versions
    updated.stdout.fnmatch_lines(["*1 snapshot updated.*"])
    assert mlp.read_bytes() == current


def test_a_tvm_object_on_the_left_of_the_assert_is_explained(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_reversed='''
        import tvm

        def test_reversed(relayviz_snapshot):
            assert tvm.IRModule() == relayviz_snapshot
    ''')
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E       assert IRModule == relayviz_snapshot: the IRModule answered == itself and the snapshot was never "
        "compared",
        "E         write the snapshot first: assert relayviz_snapshot == value"])


def test_the_fixture_without_syrupy_says_what_to_install(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('''
        import sys
        sys.modules["relayviz_instrument.regression.extension"] = None  # as if syrupy were not installed
    ''')
    pytester.makepyfile(test_nothing='''
        def test_nothing(relayviz_snapshot):
            pass
    ''')
    result = run(pytester, process=True)
    result.assert_outcomes(errors=1)
    error = next(line for line in result.stdout.lines if line.startswith("E   "))
    assert "RelayVizDependencyError: the relayviz_snapshot fixture needs syrupy" in error
    assert error.endswith(": pip install 'relayviz_instrument[pytest]'")


def test_the_fixture_with_syrupy_disabled_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing='''
        def test_nothing(relayviz_snapshot):
            pass
    ''')
    result = run(pytester, "-p", "no:syrupy")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["E   *RelayVizDependencyError: the relayviz_snapshot fixture needs syrupy's "
                                 "pytest plugin, which this session does not load (-p no:syrupy?)"])
