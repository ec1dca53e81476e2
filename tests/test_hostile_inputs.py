"""Input from anyone, without TVM: names with control characters and of any size
(names.py), writes and reads that follow no symbolic link inside a trace (_files.py), the
checks of the diff cache (analysis/diff_cache.py), and an optional dependency whose import
fails (export/base.py), in a child process of the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from relayviz_instrument._files import atomic_write_bytes, read_inside
from relayviz_instrument.analysis.diff_cache import valid_summary
from relayviz_instrument.errors import RelayVizIOError
from relayviz_instrument.names import NAME_CHARS, printable, printable_lines

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "tests" / "data" / "valid" / "spec_1_0_example.json"


@pytest.mark.parametrize("raw, shown", [
    ("data\x1b[2J", "data\\x1b[2J"),
    ("a\x1b]0;title\x07b", "a\\x1b]0;title\\x07b"),
    ("a\x01b\x7f\x9b", "a\\x01b\\x7f\\x9b"),
    ("line\nbreak\ttab\rcr", "line\\nbreak\\ttab\\rcr"),
    ("abc\u202eevil\u2066", "abc\\u202eevil\\u2066"),
    ("nn.conv2d", "nn.conv2d"),
    ("tvmgen_default_fused_nn_conv2d_add_nn_relu_1", "tvmgen_default_fused_nn_conv2d_add_nn_relu_1"),
    ("ünïcödé 名前", "ünïcödé 名前"),
])
def test_printable_escapes_every_control_character_visibly(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_printable_leaves_no_character_a_terminal_or_xml_reads_as_control() -> None:
    every = "".join(chr(c) for c in range(0x250)) + "".join(chr(c) for c in range(0x2000, 0x2070)) + "\ufffe\uffff"
    out = printable(every, None)
    for c in out:
        assert not (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029\u202a\u202e\u2066\u2069\ufffe")
    assert printable_lines("a\x1bb\nc") == "a\\x1bb\nc"  # laid-out lines keep their breaks


def test_a_huge_name_is_shown_by_its_ends_and_costs_what_is_shown() -> None:
    name = "FoldConstant" + "x" * 5_000_000 + "\x1b[2J_end"
    shown = printable(name)
    assert len(shown) < NAME_CHARS + 40
    assert shown.startswith("FoldConstantxxx") and shown.endswith("x\\x1b[2J_end")
    assert f"…[{len(name) - 2 * (NAME_CHARS // 2):,} characters]…" in shown


def test_a_cache_folder_that_links_elsewhere_gets_nothing_written(tmp_path: Path) -> None:
    trace, elsewhere = tmp_path / "trace", tmp_path / "elsewhere"
    trace.mkdir()
    elsewhere.mkdir()
    (trace / "cache").symlink_to(elsewhere)
    with pytest.raises(RelayVizIOError, match="cache is a symbolic link"):
        atomic_write_bytes(trace / "cache" / "diff-v3.json", b"{}", within=trace)
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(RelayVizIOError, match="cache is a symbolic link"):
        read_inside(trace, trace / "cache" / "x.json")
    # Without within= (an output the user named) the link is followed, as it always was.
    atomic_write_bytes(trace / "cache" / "out.json", b"{}")
    assert (elsewhere / "out.json").read_bytes() == b"{}"


def test_a_file_that_links_elsewhere_is_replaced_not_written_through(tmp_path: Path) -> None:
    trace, outside = tmp_path / "trace", tmp_path / "outside.json"
    (trace / "cache").mkdir(parents=True)
    outside.write_bytes(b"keep")
    (trace / "cache" / "diff-v3.json").symlink_to(outside)
    with pytest.raises(RelayVizIOError, match="symbolic link"):
        read_inside(trace, trace / "cache" / "diff-v3.json")
    atomic_write_bytes(trace / "cache" / "diff-v3.json", b"new", within=trace)
    assert outside.read_bytes() == b"keep"
    assert not (trace / "cache" / "diff-v3.json").is_symlink()
    assert read_inside(trace, trace / "cache" / "diff-v3.json") == b"new"
    atomic_write_bytes(trace / "made" / "below" / "x", b"x", within=trace)  # missing folders made
    assert (trace / "made" / "below" / "x").read_bytes() == b"x"


def test_a_fifo_named_as_a_trace_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "diff-v3.json")
    with pytest.raises(RelayVizIOError, match="not a regular file"):
        read_inside(tmp_path, tmp_path / "diff-v3.json")


#: A diff summary as GraphDiff makes one: 10 nodes before, 11 after.
SUMMARY = {"added": 3, "removed": 2, "changed": 1, "rewired": 1, "unchanged": 6,
           "hunks": [{"kind": "replaced", "label": "nn.batch_norm → add", "count": 2}],
           "ops": {"add": 2, "nn.batch_norm": -1}}
NODES = {"a" * 32: 10, "b" * 32: 11, "c" * 32: None}
KEY = f"{'a' * 32}-{'b' * 32}"


@pytest.mark.parametrize("key, change", [
    (KEY, {"added": 9999}),                                  # counts that do not add up to the snapshots'
    (KEY, {"added": "<img src=x onerror=alert(1)>"}),        # a string where a count goes
    (KEY, {"unchanged": -1, "added": 10}),
    (KEY, {"added": True}),
    (KEY, {"hunks": [{"kind": "<script>", "label": "x", "count": 1}]}),
    (KEY, {"hunks": [{"kind": "replaced", "label": 3, "count": 1}]}),
    (KEY, {"hunks": [{"kind": "replaced", "label": "x", "count": 0}]}),
    (KEY, {"hunks": [{"kind": "replaced", "label": "x", "count": 1, "html": "<b>"}]}),
    (KEY, {"hunks": "</script>"}),
    (KEY, {"ops": {"add": 4}}),                              # more calls added than nodes added
    (KEY, {"ops": {"add": "1"}}),
    (KEY, {"module": [1]}),
    (KEY, {"more_hunk_groups": 3}),                          # more groups, but fewer than 8 listed
    (KEY, {"extra": "<img onerror>"}),
    (f"{'a' * 32}-{'d' * 32}", {}),                          # a snapshot this trace does not have
    (f"{'a' * 32}-{'b' * 32}-typed", {}),
    ("../../etc", {}),
])
def test_a_cache_entry_that_does_not_check_out_is_dropped(key: str, change: dict) -> None:
    assert valid_summary(KEY, SUMMARY, NODES)
    assert valid_summary(f"{KEY}-untyped", SUMMARY, NODES)
    assert not valid_summary(key, {**SUMMARY, **change}, NODES)


def test_a_cache_entry_of_snapshots_without_node_counts_is_checked_for_types_only() -> None:
    assert valid_summary(f"{'c' * 32}-{'c' * 32}", {**SUMMARY, "unchanged": 500}, NODES)
    assert not valid_summary(f"{'c' * 32}-{'c' * 32}", {**SUMMARY, "unchanged": 2 ** 70}, NODES)


def test_an_exporter_whose_package_fails_to_import_gives_one_line(tmp_path: Path) -> None:
    """A Model Explorer built for a newer torch, beside torch 2.0.1 (what Relay users have): its
    own import raises AttributeError. Real packages on sys.path, in a child process of the CLI."""
    (tmp_path / "model_explorer").mkdir()
    (tmp_path / "model_explorer" / "__init__.py").write_text("import torch\n\ntorch.export.ExportedProgram\n")
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text('__version__ = "2.0.1"\n')
    (tmp_path / "torch-2.0.1.dist-info").mkdir()
    (tmp_path / "torch-2.0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.0.1\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = tmp_path / "out.json"
    run = subprocess.run([sys.executable, "-m", "relayviz_instrument", "export", str(VALID), "--to", "model-explorer",
                          "-o", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith("error: --to model-explorer needs the Python package 'model_explorer'")
    assert "AttributeError: module 'torch' has no attribute 'export'" in lines[0]
    assert "torch 2.0.1 is installed" in lines[0] and "upgrade torch" in lines[0]
    assert not out.exists()


def test_an_exporter_whose_package_is_missing_says_how_to_install_it(tmp_path: Path) -> None:
    """Without the package (a directory on sys.path that hides nothing): the install command."""
    code = textwrap.dedent("""
        import sys
        from relayviz_instrument.errors import RelayVizDependencyError
        from relayviz_instrument.export.base import require
        try:
            require("relayviz_no_such_package.sub", "model-explorer", "--to model-explorer")
        except RelayVizDependencyError as exc:
            print(exc)
    """)
    run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == ("--to model-explorer needs the Python package 'relayviz_no_such_package', which is "
                                  "not installed: pip install 'relayviz_instrument[model-explorer]'")


def test_the_page_policy_allows_only_its_own_script_and_style() -> None:
    import base64
    import hashlib
    import re

    from relayviz_instrument.html_report.page import render_page

    page = render_page({"format": "relayviz-html/1", "trace": {"name": "</title><script>alert(1)</script>"}}).decode()
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page).group(1)
    policy = policy.replace("&#x27;", "'")
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives == {"default-src": "'none'", "script-src": digest(script), "style-src": digest(style),
                          "img-src": "data:", "base-uri": "'none'", "form-action": "'none'",
                          "require-trusted-types-for": "'script'"}
    assert page.index("Content-Security-Policy") < page.index("<style>") < page.index("<script")
    assert "<title>relayviz: &lt;/title&gt;&lt;script&gt;" in page
