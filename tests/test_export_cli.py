"""Bad input to ``relayviz export`` and ``relayviz view``, format by format: one line on standard
error and exit status 2, never a traceback; nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from export_cases import pass_trace, snapshot
from relayviz_instrument.cli import main

FORMATS = {"dot": "x.dot", "svg": "x.svg", "tensorboard": "tb", "model-explorer": "x.json"}
#: The module each format needs, and the extra that installs it.
EXTRAS = {"dot": ("graphviz", "dot"), "svg": ("graphviz", "dot"), "tensorboard": ("tensorboard", "tensorboard"),
          "model-explorer": ("model_explorer", "model-explorer")}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp()


def one_line_error(capsys: pytest.CaptureFixture) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    return lines[0]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_truncated_snapshot(fmt, base, tmp_path, capsys):
    source, _ = snapshot(base, "mlp")
    cut = tmp_path / "cut.json"
    data = source.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    assert main(["export", str(cut), "--to", fmt, "-o", str(tmp_path / FORMATS[fmt])]) == 2
    assert str(cut) in one_line_error(capsys)
    assert not (tmp_path / FORMATS[fmt]).exists()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_trace_without_the_named_pass(fmt, base, tmp_path, capsys):
    trace = pass_trace(base, "resnet18")
    assert main(["export", str(trace.path), "--pass", "AlterOpLayout", "--to", fmt,
                 "-o", str(tmp_path / FORMATS[fmt])]) == 2
    line = one_line_error(capsys)
    assert "no pass named 'AlterOpLayout'" in line and str(trace.path) in line


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_missing_extra_names_the_extra_to_install(fmt, base, tmp_path):
    source, _ = snapshot(base, "mlp")
    module, extra = EXTRAS[fmt]
    hide = f"import sys; sys.modules[{module!r}] = None; from relayviz_instrument.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", hide, "export", str(source), "--to", fmt, "-o",
                           str(tmp_path / FORMATS[fmt])], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: --to {fmt} needs the Python package '{module}', which is not installed: "
        f"pip install 'relayviz_instrument[{extra}]'"]


def test_view_without_model_explorer_names_the_extra(base):
    source, _ = snapshot(base, "mlp")
    hide = ("import sys; sys.modules['model_explorer'] = None; from relayviz_instrument.cli import main; "
            "sys.exit(main())")
    done = subprocess.run([sys.executable, "-c", hide, "view", str(source), "--no-browser"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "pip install 'relayviz_instrument[model-explorer]'" in done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("args, fragment", [
    (["--pass", "FuseOps"], "--pass picks a pass event of a trace directory"),
    (["--diff"], "--diff draws what a pass changed, from a trace directory"),
    (["--max-nodes", "0"], "--max-nodes must be at least 1"),
])
def test_options_a_file_cannot_honour(args, fragment, base, tmp_path, capsys):
    source, _ = snapshot(base, "mlp")
    assert main(["export", str(source), "--to", "dot", "-o", str(tmp_path / "x.dot")] + args) == 2
    assert fragment in one_line_error(capsys)


def test_netron_refuses_a_diff_and_a_whole_trace(base, tmp_path, capsys):
    trace = pass_trace(base, "resnet18")
    assert main(["export", str(trace.path), "--pass", "FuseOps", "--diff", "--to", "netron",
                 "-o", str(tmp_path / "x.json")]) == 2
    assert "--diff is drawn by dot, svg, tensorboard and model-explorer" in one_line_error(capsys)
    assert main(["export", str(trace.path), "--to", "netron", "-o", str(tmp_path / "x.json")]) == 2
    assert "pick one pass with --pass" in one_line_error(capsys)


def test_model_explorer_output_must_be_a_json_file(base, tmp_path, capsys):
    source, _ = snapshot(base, "mlp")
    assert main(["export", str(source), "--to", "model-explorer", "-o", str(tmp_path / "x.me")]) == 2
    assert "name the output FILE.json" in one_line_error(capsys)


def test_a_pass_event_without_snapshots(tmp_path, capsys):
    """A trace cut short inside a pass: that pass has an input snapshot and no output."""
    import orjson

    from relayviz_instrument.format import encode
    from relayviz_instrument.store import DirectoryStore, begin_line, header_line
    from relayviz_instrument.store.records import PassRecord

    store = DirectoryStore(tmp_path / "trace")
    ref = store.put(orjson.loads(encode({"format": "relayviz", "version": [1, 1], "nodes": [
        {"node_kind": "Var", "name": "x", "dtype": "float32", "shape": [1]}], "root": 0})))
    store.append(header_line({}))
    store.append(begin_line(PassRecord(index=0, name="FuseOps", before=ref)))
    store.close()
    assert main(["export", str(tmp_path / "trace"), "--pass", "0", "--to", "dot", "-o", str(tmp_path / "x.dot")]) == 2
    line = one_line_error(capsys)
    assert "pass event #0 FuseOps has no output snapshot" in line and "did not finish" in line
