"""The reproducer and ``relayviz replay``: a failing pass run again, in a fresh process, from
what the trace kept, without the script that first ran it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument import RelayVizTrace, load_trace
from relayviz_instrument.errors import RelayVizUsageError
from relayviz_instrument.views.replay import DIFFERS, REPRODUCED, SUCCEEDS, replay_event

#: A user's script: ResNet-18 through a Sequential holding a pass of theirs that wraps the
#: first convolution in a reshape of the wrong size; the next pass's type inference fails.
#: Each run appends a line to runs.log, so a test can tell whether it ever ran again.
BROKEN_RESNET = textwrap.dedent("""
    import sys
    import tvm, tvm.relay.testing
    from tvm import relay
    from relayviz_instrument import RelayVizTrace

    with open(sys.argv[2], "a") as log:
        log.write("ran\\n")

    @tvm.transform.module_pass(opt_level=0, name="WrapFirstConv")
    def wrap_first_conv(mod, ctx):
        class Wrap(relay.ExprMutator):
            done = False
            def visit_call(self, call):
                new = super().visit_call(call)
                if not Wrap.done and getattr(call.op, "name", "") == "nn.conv2d":
                    Wrap.done = True
                    return relay.reshape(new, newshape=(7, 7))
                return new
        return tvm.IRModule({mod.get_global_var("main"): Wrap().visit(mod["main"])})

    mod, _ = tvm.relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
    seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference(),
                                    wrap_first_conv, relay.transform.FoldConstant(), relay.transform.FuseOps()])
    with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(sys.argv[1])],
                                   config={"relay.FuseOps.max_depth": 10}, disabled_pass=["AlterOpLayout"]):
        with tvm.target.Target("llvm -mtriple=x86_64-linux-gnu"):
            seq(mod)
""")


def _relayviz(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relayviz_instrument", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "200"}, **kwargs)


@pytest.mark.slow
def test_replay_reproduces_a_failure_in_a_sequential_on_resnet18_in_a_fresh_process(tmp_path):
    scripts = tmp_path / "user"
    scripts.mkdir()
    (scripts / "build_it.py").write_text(BROKEN_RESNET)
    log = tmp_path / "runs.log"
    done = subprocess.run([sys.executable, str(scripts / "build_it.py"), str(tmp_path / "t"), str(log)],
                          capture_output=True, text=True, timeout=300)
    message = "Input tensor shape(1,64,112,112) and reshaped shape(7,7) are not compatible!"
    assert done.returncode == 1 and message in done.stderr
    trace = load_trace(tmp_path / "t")
    failed = trace.failed
    assert failed.name == "InferType" and trace.records[failed.parent].name == "FoldConstant"
    facts = failed.replay
    assert facts["context"]["opt_level"] == 3 and facts["context"]["disabled_pass"] == ["AlterOpLayout"]
    assert set(facts["context"]["config"]) == {"relay.FuseOps.max_depth"}
    assert facts["target"] == "llvm -keys=cpu -mtriple=x86_64-linux-gnu"
    assert [p.parent.name for p in (tmp_path / "t").rglob("*.json.zst") if p.parent.name == "modules"] == ["modules"]

    replayed = _relayviz("replay", str(tmp_path / "t"), cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stderr
    assert f"replayed InferType (#{failed.index})" in replayed.stdout
    assert "tvm.relay.transform.InferType() at opt_level 3, disabled AlterOpLayout, config relay.FuseOps.max_depth" \
        in replayed.stdout
    assert "the pass fails the same way as recorded" in replayed.stdout
    assert f"InternalError: Check failed: oshape_sum == data_shape_sum (49 vs. 802816) : {message}" \
        in replayed.stdout
    assert log.read_text() == "ran\n"  # the replay never ran (or imported) the user's script
    as_json = json.loads(_relayviz("replay", str(tmp_path / "t"), "--json").stdout)
    assert as_json["status"] == REPRODUCED and as_json["error"].startswith("InternalError")


def test_a_failure_that_came_from_the_scripts_own_registrations_succeeds_on_replay(tmp_path):
    # The script registers a broken legalization for nn.relu; TVM's Legalize pass calls it and
    # raises. Replayed in a fresh process without the script, Legalize succeeds: exit status 0,
    # which tells the user the failure is in what their script registered, not in the pass.
    script = tmp_path / "legalize.py"
    script.write_text(textwrap.dedent(f"""
        import tvm, tvm.relay.testing
        from tvm import relay
        from relayviz_instrument import RelayVizTrace

        @relay.op.register_legalize("nn.relu", level=20)
        def broken(attrs, inputs, types):
            raise ValueError("legalize of nn.relu is broken in this build")

        mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace({str(tmp_path / 't')!r})]):
            tvm.transform.Sequential([relay.transform.InferType(), relay.transform.Legalize()])(mod)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "legalize of nn.relu is broken" in done.stderr
    replayed = _relayviz("replay", str(tmp_path / "t"))
    assert replayed.returncode == 0, replayed.stderr
    assert "the pass succeeds now (it raised when traced)" in replayed.stdout
    assert "Legalize #" in replayed.stdout and "no differences" in replayed.stdout


def _fuse_trace(tmp_path: Path, **options):
    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    mod = tvm.IRModule.from_expr(relay.build_module.bind_params_by_name(mod["main"], params))
    seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference(),
                                    relay.transform.FoldConstant(), relay.transform.FuseOps()])
    trace = RelayVizTrace(tmp_path / "t", **options)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace], config={"relay.FuseOps.max_depth": 2}):
        seq(mod)
    return load_trace(tmp_path / "t"), mod


def test_replay_of_a_kept_pass_runs_it_under_the_recorded_config_and_compares_outputs(tmp_path):
    trace, mod = _fuse_trace(tmp_path, keep_modules="FuseOps")
    fuse = next(r for r in trace.records if r.name == "FuseOps")
    assert fuse.replay is not None and all(r.replay is None for r in trace.records if r is not fuse)
    result = replay_event(trace, "FuseOps")
    assert result.status == SUCCEEDS and result.outcome == "the pass succeeds, with the recorded output"
    assert result.comparison is not None and result.comparison.same
    # The config matters: FuseOps at its default depth makes another module than recorded.
    lines = [orjson.loads(line) for line in (tmp_path / "t" / "manifest.jsonl").read_bytes().splitlines()]
    for line in lines:
        if line.get("replay"):
            line["replay"]["context"]["config"] = {}
    (tmp_path / "t" / "manifest.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    result = replay_event(tmp_path / "t", fuse.index)
    assert result.status == DIFFERS and result.outcome == "the pass succeeds, with another output than recorded"
    assert not result.comparison.same
    shown = _relayviz("replay", str(tmp_path / "t"), "--pass", "FuseOps")
    assert shown.returncode == DIFFERS and "with another output than recorded" in shown.stdout


def test_keeping_modules_is_opt_in_and_a_successful_trace_keeps_none(tmp_path):
    trace, _ = _fuse_trace(tmp_path)
    assert not (tmp_path / "t" / "modules").exists() and all(r.replay is None for r in trace.records)
    with pytest.raises(RelayVizUsageError, match="no pass failed in this trace; name one with --pass"):
        replay_event(trace)
    with pytest.raises(RelayVizUsageError, match=r"#\d+ \(FuseOps\) cannot be replayed: input modules are kept"):
        replay_event(trace, "FuseOps")
    shown = _relayviz("replay", str(tmp_path / "t"))
    assert shown.returncode == 2 and shown.stderr.startswith("error: ") and "Traceback" not in shown.stderr


def test_a_pass_defined_in_python_cannot_be_made_from_its_name_but_from_an_importable_module(tmp_path):
    (tmp_path / "mypasses.py").write_text(textwrap.dedent("""
        import tvm

        @tvm.transform.module_pass(opt_level=0, name="ExplodingPass")
        def exploding(mod, ctx):
            raise ValueError("ExplodingPass refuses this module")
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        from mypasses import exploding  # the user's module, on their path
    finally:
        sys.path.remove(str(tmp_path))
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    with pytest.raises(ValueError):
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(tmp_path / "t")]):
            tvm.transform.Sequential([relay.transform.InferType(), exploding])(mod)
    shown = _relayviz("replay", str(tmp_path / "t"))
    assert shown.returncode == 2
    assert "cannot make the pass 'ExplodingPass' again: it is not one of TVM's passes" in shown.stderr
    assert "--pass-from MODULE:NAME" in shown.stderr
    replayed = _relayviz("replay", str(tmp_path / "t"), "--pass-from", "mypasses:exploding",
                         cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stderr
    assert "the pass fails the same way as recorded" in replayed.stdout
    assert "ValueError: ExplodingPass refuses this module" in replayed.stdout


def test_a_pass_whose_process_died_has_no_module_to_replay_and_says_so(tmp_path):
    script = tmp_path / "die.py"
    script.write_text(textwrap.dedent(f"""
        import os, tvm, tvm.relay.testing
        from tvm import relay
        from relayviz_instrument import RelayVizTrace

        @tvm.transform.module_pass(opt_level=0, name="Dies")
        def die(mod, ctx):
            os._exit(3)

        mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
        with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace({str(tmp_path / 't')!r})]):
            tvm.transform.Sequential([relay.transform.InferType(), die])(mod)
    """))
    assert subprocess.run([sys.executable, str(script)], timeout=300).returncode == 3
    with pytest.raises(RelayVizUsageError, match="the process stopped during this pass, before the module"):
        replay_event(tmp_path / "t")
