"""A trace from anywhere: a real trace of relay.optimize on the MLP of tvm.relay.testing, whose
input variable and a pass of its own hold terminal control sequences and HTML (TVM keeps
names as given), then damaged as someone else's trace could be: a poisoned diff cache, a
``cache`` that links to another directory, a snapshot altered and recompressed, a pass name
of megabytes. Every command reads it without running its text or writing outside it."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Tuple

import orjson
import pytest
import zstandard

from relayviz_instrument.cli import main
from relayviz_instrument.diff import DIFF_VERSION
from relayviz_instrument.errors import RelayVizExportError, RelayVizTraceError
from relayviz_instrument.store import load_trace
from relayviz_instrument.store.trace import MANIFEST_LINE_BYTES

ROOT = Path(__file__).resolve().parent.parent
#: Clears the screen, then sets the window title.
CONTROL = "\x1b[2J\x1b]0;pwned\x07"
MARKUP = "<img src=x onerror=\"document.title='pwned'\"></script><script>document.title='pwned'</script>"
VARIABLE = "data" + CONTROL + MARKUP
PASS = "Rename" + CONTROL


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trace: a pass named ``Rename ESC[2J...`` gives the input variable a name holding
    control sequences and markup, then relay.optimize runs, all under one RelayVizTrace."""
    import tvm
    import tvm.relay.testing
    from tvm import relay

    from relayviz_instrument import RelayVizTrace

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)

    @tvm.transform.module_pass(opt_level=0, name=PASS)
    def rename(mod: Any, ctx: Any) -> Any:
        main = mod["main"]
        new = [relay.var(VARIABLE, p.type_annotation) if p.name_hint == "data" else p for p in main.params]
        body = relay.bind(main.body, dict(zip(main.params, new)))
        return tvm.IRModule.from_expr(relay.Function(new, body))

    root = tmp_path_factory.mktemp("hostile") / "trace"
    trace = RelayVizTrace(root)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        mod = relay.transform.InferType()(rename(mod))
        relay.optimize(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
    return root


def _copy(trace: Path, to: Path) -> Path:
    shutil.copytree(trace, to, ignore=shutil.ignore_patterns("cache"))
    return to


def _run(argv: List[str]) -> Tuple[int, str, str]:
    """``relayviz ARGV`` in this process: its exit status, standard output and error."""
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    out.seek(0)
    return status, out.read(), err.getvalue()


def _no_control(text: str) -> None:
    assert "\x1b[2J" not in text and "\x1b]0;" not in text and "\x07" not in text


def _index(trace: Path, name: str) -> int:
    return next(r.index for r in load_trace(trace).records if r.name == name)


def test_control_characters_print_escaped_in_show_report_and_history(hostile: Path) -> None:
    for argv, shows in ((["show", str(hostile)], "Rename\\x1b[2J\\x1b]0;pwned\\x07"),
                        (["show", str(hostile), "--all", "--paths"], "Rename\\x1b[2J"),
                        (["report", str(hostile)], "data\\x1b[2J\\x1b]0;pwned\\x07<img src=x"),
                        (["history", str(hostile), VARIABLE], "data\\x1b[2J\\x1b]0;pwned\\x07<img"),
                        (["diff", str(hostile), "--pass", str(_index(hostile, PASS))], "data\\x1b[2J")):
        status, out, err = _run(argv)
        assert status in (0, 1), err
        _no_control(out)
        assert shows in out, (argv, out)


def test_control_characters_print_escaped_on_a_terminal(hostile: Path) -> None:
    """Through a real TTY, where rich writes its own colour sequences but none of the trace's."""
    for argv in (["show", str(hostile)], ["report", str(hostile)], ["history", str(hostile), VARIABLE]):
        leader, follower = pty.openpty()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "TERM": "xterm-256color"}
        env.pop("NO_COLOR", None)
        child = subprocess.Popen([sys.executable, "-m", "relayviz_instrument", *argv], stdin=follower,
                                 stdout=follower, stderr=follower, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert child.wait(timeout=120) == 0
        os.close(leader)
        text = b"".join(chunks).decode("utf-8", "replace")
        assert "\x1b[" in text  # it is a terminal: rich coloured the output
        _no_control(text)
        assert "\\x1b[2J" in text


def test_export_svg_and_dot_write_escaped_names(hostile: Path, tmp_path: Path) -> None:
    index = str(_index(hostile, PASS))
    status, out, err = _run(["export", str(hostile), "--pass", index, "--to", "svg", "-o", str(tmp_path / "g.svg")])
    assert status == 0 and out.startswith("wrote "), err
    svg = (tmp_path / "g.svg").read_bytes()
    assert b"\x1b" not in svg and b"\x07" not in svg
    texts = [t.text or "" for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert any(t.startswith("%data\\x1b[2J\\x1b]0;pwned\\x07<img") for t in texts), texts
    status, out, err = _run(["export", str(hostile), "--pass", index, "--to", "dot", "-o", str(tmp_path / "g.dot")])
    assert status == 0, err
    dot = (tmp_path / "g.dot").read_text()
    _no_control(dot)
    assert "data\\\\x1b[2J" in dot  # printable's backslash, quoted by GraphViz


def test_an_svg_that_is_not_xml_is_refused_not_written() -> None:
    from relayviz_instrument.export.dot import render_svg

    assert render_svg('digraph { a [label="x"] }', "g").startswith(b"<?xml")
    with pytest.raises(RelayVizExportError, match="g: dot wrote an SVG that is not valid XML"):
        render_svg('digraph { a [label="x\x01y"] }', "g")


def _summaries(trace: Path) -> Dict[str, Any]:
    status, out, err = _run(["show", str(trace), "--all", "--json"])
    assert status == 0, err
    return orjson.loads(out)["summaries"]


def _poison(trace: Path) -> None:
    """Every entry of the trace's cache made false, and entries for snapshots it does not have."""
    path = trace / "cache" / f"diff-v{DIFF_VERSION}.json"
    cache = orjson.loads(path.read_bytes())
    for i, (key, summary) in enumerate(sorted(cache["summaries"].items())):
        summary["added"] = [9999, "<img src=x onerror=\"document.title='pwned-cache'\">", -1, 2 ** 60][i % 4]
        summary["hunks"] = [{"kind": "replaced", "label": MARKUP, "count": 1}]
        cache["summaries"][key] = summary
    cache["summaries"]["a" * 32 + "-" + "b" * 32] = {"added": 1, "removed": 1, "changed": 0, "rewired": 0,
                                                     "unchanged": 0, "hunks": []}
    path.write_bytes(orjson.dumps(cache))


def test_show_ignores_a_poisoned_cache(hostile: Path, tmp_path: Path) -> None:
    trace = _copy(hostile, tmp_path / "trace")
    clean = _summaries(trace)  # computed: copies carry no cache
    assert clean and (trace / "cache" / f"diff-v{DIFF_VERSION}.json").is_file()
    _poison(trace)
    assert _summaries(trace) == clean
    status, out, _ = _run(["show", str(trace), "--all"])
    assert status == 0 and "9999" not in out and "pwned-cache" not in out


def test_a_cache_that_links_to_another_directory_gets_nothing(hostile: Path, tmp_path: Path) -> None:
    trace, elsewhere = _copy(hostile, tmp_path / "trace"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (trace / "cache").symlink_to(elsewhere, target_is_directory=True)
    index = str(_index(hostile, PASS))
    for argv in (["show", str(trace), "--all"], ["report", str(trace)], ["diff", str(trace), "--pass", index],
                 ["history", str(trace), VARIABLE], ["report", str(trace), "--html", str(tmp_path / "r.html")]):
        status, _, err = _run(argv)
        assert status in (0, 1), (argv, err)
    assert list(elsewhere.iterdir()) == []


def test_a_recompressed_altered_snapshot_is_refused_naming_the_file(hostile: Path, tmp_path: Path) -> None:
    trace = _copy(hostile, tmp_path / "trace")
    record = next(r for r in load_trace(trace).records if r.name == PASS)
    path = trace / "snapshots" / f"{record.after}.json.zst"
    data = zstandard.ZstdDecompressor().decompressobj().decompress(path.read_bytes())
    assert b"pwned" in data
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(data.replace(b"pwned", b"PWNED")))
    with pytest.raises(RelayVizTraceError, match=f"{path}: the snapshot does not match its digest"):
        load_trace(trace).snapshot(record.after)
    for argv in (["show", str(trace)], ["report", str(trace)], ["diff", str(trace), "--pass", str(record.index)],
                 ["validate", str(path)]):
        status, _, err = _run(argv)
        assert status == 2, (argv, err)
        assert len(err.strip().splitlines()) == 1 and str(path) in err and "does not match its digest" in err, err


def _rename_pass(trace: Path, old: str, new: str) -> None:
    lines = (trace / "manifest.jsonl").read_bytes().split(b"\n")
    out = []
    for raw in lines:
        if raw.strip():
            line = orjson.loads(raw)
            if line.get("type") == "begin" and line["name"] == old:
                line["name"] = new
            raw = orjson.dumps(line)
        out.append(raw)
    (trace / "manifest.jsonl").write_bytes(b"\n".join(out))


def test_a_pass_name_of_megabytes_is_shown_shortened(hostile: Path, tmp_path: Path) -> None:
    trace = _copy(hostile, tmp_path / "trace")
    name = "FoldConstant" + "x" * 5_000_000
    _rename_pass(trace, "FoldConstant", name)
    status, out, err = _run(["show", str(trace)])
    assert status == 0, err
    assert "FoldConstantxxx" in out and f"…[{len(name) - 1000:,} characters]…" in out
    assert len(out) < 100_000  # the name is shown by its ends, on each of its rows
    status, out, _ = _run(["show", str(trace), "--json"])
    assert status == 0 and name in out  # JSON keeps it whole


def test_a_manifest_line_beyond_the_bound_is_refused_in_one_line(hostile: Path, tmp_path: Path) -> None:
    trace = _copy(hostile, tmp_path / "trace")
    _rename_pass(trace, "FoldConstant", "x" * (MANIFEST_LINE_BYTES + 1))
    status, out, err = _run(["show", str(trace)])
    assert status == 2 and out == ""
    assert err.startswith(f"error: {trace / 'manifest.jsonl'}:") and "longer than 64 MiB" in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 400


def _everything_markup(data: Dict[str, Any]) -> Dict[str, Any]:
    """The page's data with markup in every text and number it shows, as if a hostile cache or
    trace had put it there past every check of the Python side."""
    for p in data["passes"]:
        p["name"] = MARKUP + p["name"]
        if "counts" in p:
            p["counts"] = [MARKUP, MARKUP, MARKUP]
        if "error" in p:
            p["error"] = MARKUP
    for graph in data["graphs"]:
        graph["summary"] = {k: MARKUP for k in ("added", "removed", "changed", "rewired", "unchanged")}
        for hunk in graph["hunks"]:
            hunk["label"] = MARKUP
        graph["fields"] = {k: [[MARKUP, MARKUP, MARKUP] for _ in v] for k, v in graph["fields"].items()}
    for snapshot in data["snapshots"]:
        for entry in snapshot["nodes"]:
            entry["n"], entry["d"], entry["t"] = MARKUP, MARKUP, MARKUP
        for raw in snapshot["raw"]:
            raw["name"] = MARKUP
    for step in data["steps"]:
        step["name"] = MARKUP
    data["statuses"] = [MARKUP + s for s in data["statuses"]]
    data["trace"].update(complete=False, problems=[MARKUP])
    return data


#: Probes of the page's Content-Security-Policy, run in the page.
PROBES = """async () => {
  const violations = [];
  document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
  const attempt = (f) => { try { f(); return 'done'; } catch (e) { return e.name; } };
  const html = attempt(() => document.body.insertAdjacentHTML('beforeend', '<b id="probe">x</b>'));
  const img = document.createElement('img');
  const handler = attempt(() => img.setAttribute('onerror', "document.title = 'pwned-handler'"));
  img.src = 'http://127.0.0.1:9/x.png';
  document.body.append(img);
  await new Promise((r) => setTimeout(r, 500));
  img.remove();
  return {html, handler, title: document.title, violations: [...new Set(violations)].sort()};
}"""


@pytest.mark.slow
def test_a_poisoned_trace_gives_a_page_that_runs_none_of_its_text(hostile: Path, tmp_path: Path) -> None:
    from browser import chromium, missing, open_report, watch_errors
    from relayviz_instrument.html_report.page import render_page
    from relayviz_instrument.html_report.payload import report_data

    why = missing()
    if why:
        pytest.fail(f"the browser test cannot run: {why}")
    trace = _copy(hostile, tmp_path / "trace")
    _summaries(trace)
    _poison(trace)
    _rename_pass(trace, "FoldConstant", "FoldConstant" + MARKUP)
    status, _, err = _run(["report", str(trace), "--html", str(tmp_path / "report.html")])
    assert status == 0, err
    (tmp_path / "unchecked.html").write_bytes(render_page(_everything_markup(report_data(load_trace(trace)))))
    with chromium() as browser:
        for page_file in ("report.html", "unchecked.html"):
            page = browser.new_page()
            errors = watch_errors(page)
            open_report(page, tmp_path / page_file)
            viewer = "window.relayvizViewer"
            # Every pass with a graph drawn, a node of each opened in the panel, a search run.
            shown = page.evaluate(f"""() => {{
              const v = {viewer}; let n = 0;
              v.data.passes.forEach((p, i) => {{
                if (p.graph != null) {{ v.selectPass(i); v.pane.onSelect(0); n++; }} }});
              return n; }}""")
            assert shown > 3
            page.fill("input.search", "img")
            assert page.title() == "relayviz: trace"
            assert page.locator("img").count() == 0 and page.locator("[onerror]").count() == 0
            assert page.locator("script").count() == 2  # the data and the viewer
            assert "<img src=x onerror=" in page.inner_text(".pass-rows")  # shown as text
            assert errors == [], errors
            probed = page.evaluate(PROBES)
            # Trusted Types: no HTML and no inline handler from a string; nothing loaded from elsewhere.
            assert probed["html"] == probed["handler"] == "TypeError"
            assert probed["title"] == "relayviz: trace"
            assert probed["violations"] == ["img-src", "require-trusted-types-for"]
            page.close()
