"""`relayviz demo` and `relayviz show`, end to end."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from relayviz_instrument import load_trace
from relayviz_instrument.cli import main


def test_demo_traces_a_build_and_prints_the_table(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--model", "mlp", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    trace = load_trace(out)
    assert trace.complete
    assert str(out) in printed
    from relayviz_instrument.analysis.pipeline import event_roles

    roles = event_roles(trace.records)
    changed = [r for r in trace.records if r.changed and roles.get(r.index, "pipeline") == "pipeline"]
    assert changed
    for record in changed:
        assert record.name in printed
    assert f"relayviz report {out}" in printed
    # The build's own steps are named, not left as unexplained changes.
    assert "note:" not in printed and "(outside any pass)" not in printed


def test_demo_relax_names_the_builds_own_steps_and_leaves_nothing_unexplained(tmp_path, capsys):
    """``relayviz demo --relax``, default and with the TIR passes: ``relax.build`` handing the
    PrimFuncs to the TIR build is a step of the build, not a change outside any pass."""
    for extra in ([], ["--tir"]):
        out = tmp_path / f"demo{len(extra)}"
        assert main(["demo", "--relax", "--model", "mlp", "--out", str(out), *extra]) == 0
        printed = capsys.readouterr().out
        assert load_trace(out).complete
        assert "note:" not in printed and "(outside any pass)" not in printed
        if extra:
            assert "(step of relax.build: kept " in " ".join(printed.split())


def test_show_lists_changed_passes_by_default_and_everything_with_all(resnet18_traced, capsys):
    _, trace = resnet18_traced
    assert main(["show", str(trace.path)]) == 0
    default = capsys.readouterr().out
    assert main(["show", str(trace.path), "--all"]) == 0
    everything = capsys.readouterr().out
    assert "FuseOps" in default and "tir.Simplify" not in default
    assert "tir.Simplify" in everything
    assert f"{len(trace.records)} pass events" in default


def test_show_json_is_the_records(resnet18_traced, capsys):
    _, trace = resnet18_traced
    assert main(["show", str(trace.path), "--json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["complete"] is True
    assert data["records"] == [r.to_json() for r in trace.records]


def test_show_names_the_failed_pass(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per message
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    @tvm.transform.module_pass(opt_level=0, name="BrokenRewrite")
    def broken(mod, ctx):
        raise RuntimeError("BrokenRewrite cannot handle nn.dense")

    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    with pytest.raises(RuntimeError):
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "t")]):
            tvm.transform.Sequential([relay.transform.InferType(), broken])(mod)
    assert main(["show", str(tmp_path / "t")]) == 0
    printed = capsys.readouterr().out
    assert "pass BrokenRewrite (#2) failed: RuntimeError: BrokenRewrite cannot handle nn.dense" in printed


def test_show_of_a_missing_trace_exits_2_with_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "show", str(tmp_path / "nope")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a trace directory" in lines[0] and "nope" in lines[0]


def test_every_command_has_help():
    from relayviz_instrument.cli import COMMANDS

    for command in COMMANDS:
        done = subprocess.run([sys.executable, "-m", "relayviz_instrument", command, "--help"],
                              capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stderr)
        assert command in done.stdout
