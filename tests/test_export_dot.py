"""``relayviz export --to dot|svg`` (export/dot.py): DOT written with the graphviz package,
laid out by GraphViz's own ``dot``, and read back from the SVG it draws.

Expected operators, functions and statuses come from TVM (``export_cases``), never from
the exporter: an SVG node is found by its ``<title>`` (the drawing's key), its fill colour
and its text lines.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import List, Tuple

import pytest

from export_cases import pass_trace, snapshot
from relayviz_instrument.cli import main
from relayviz_instrument.errors import LargeGraphWarning
from relayviz_instrument.export import ExportOptions, export, resolve_graphs
from relayviz_instrument.export.dot import DOT_NODE_LIMIT

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
SVG = "{http://www.w3.org/2000/svg}"
GREEN, RED, AMBER, BLUE = "#c8e6c9", "#ffcdd2", "#ffe0b2", "#bbdefb"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp()


def svg_nodes(path: Path) -> List[Tuple[str, str, List[str]]]:
    """``(title, fill, text lines)`` of every node GraphViz drew (clusters and the legend apart)."""
    root = ET.parse(path).getroot()
    out = []
    for group in root.iter(f"{SVG}g"):
        if group.get("class") != "node":
            continue
        title = group.find(f"{SVG}title").text or ""
        shape = next((e for e in group.iter() if e.tag in (f"{SVG}polygon", f"{SVG}ellipse", f"{SVG}path")), None)
        texts = [t.text or "" for t in group.iter(f"{SVG}text")]
        out.append((title, shape.get("fill") if shape is not None else "", texts))
    return out


def svg_clusters(path: Path) -> List[str]:
    root = ET.parse(path).getroot()
    return [" ".join(t.text or "" for t in g.iter(f"{SVG}text") if t is not None)
            for g in root.iter(f"{SVG}g") if g.get("class") == "cluster"]


def drawn(nodes: List[Tuple[str, str, List[str]]]) -> List[Tuple[str, str, List[str]]]:
    return [n for n in nodes if not n[0].startswith("legend")]


@pytest.mark.parametrize("model", ["mlp", "resnet18", "mobilenet", "squeezenet", "dcgan", "lstm"])
def test_the_svg_of_a_snapshot_shows_every_operator_call(model, base, tmp_path, capsys):
    source, facts = snapshot(base, model)
    out = tmp_path / f"{model}.svg"
    assert main(["export", str(source), "--to", "svg", "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    nodes = drawn(svg_nodes(out))
    # One drawn node per expression TVM counts (Op and Function nodes are not nodes of a picture).
    assert len(nodes) == facts.exprs
    ops = Counter(texts[0] for _, _, texts in nodes if texts and texts[0] in facts.ops)
    assert ops == facts.ops
    # Every operator shows its output dtype and shape (a tuple of them for batch_norm) on its second line.
    tensor = r"(float32|int32|int64|bool)\[[0-9,]*\]"
    assert all(re.fullmatch(rf"{tensor}|\({tensor}(, {tensor})*\)", texts[1])
               for _, _, texts in nodes if texts and texts[0] in facts.ops)


def test_dot_text_is_deterministic_and_renders_with_graphviz(base, tmp_path):
    source, _ = snapshot(base, "resnet18")
    first, second = tmp_path / "a.dot", tmp_path / "b.dot"
    for out in (first, second):
        assert main(["export", str(source), "--to", "dot", "-o", str(out)]) == 0
    assert first.read_bytes() == second.read_bytes()
    done = subprocess.run(["dot", "-Tsvg", str(first)], capture_output=True, check=True)
    assert b"nn.conv2d" in done.stdout and b"%data" in done.stdout


def test_a_fuse_ops_diff_draws_new_functions_green_around_unchanged_operators(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    facts = trace.after["FuseOps"]
    out = tmp_path / "fuse.svg"
    assert main(["export", str(trace.path), "--pass", "FuseOps", "--diff", "--to", "svg", "-o", str(out)]) == 0
    nodes = drawn(svg_nodes(out))
    fills = {title: fill for title, fill, _ in nodes}
    clusters = [c for c in svg_clusters(out) if "(Primitive)" in c]
    assert len(clusters) == facts.primitive
    # FuseOps moves operators into functions: the operators stay (white), the functions' parameters
    # and calls are new (green), nothing is removed.
    op_fills = Counter(fill for _, fill, texts in nodes if texts and texts[0] in facts.ops)
    assert op_fills == Counter({"#ffffff": sum(facts.ops.values())})
    params = [t for t, f, texts in nodes if texts[0].startswith("%p") and f == GREEN]
    calls = [t for t, f, texts in nodes if texts[0] == "call" and f == GREEN]
    assert (len(params), len(calls)) == (facts.params_in_functions, facts.primitive)
    assert RED not in fills.values()
    legend = {texts[0] for title, _, texts in svg_nodes(out) if title.startswith("legend_") and title != "legend_edges"}
    assert legend == {f"added: {len(params) + len(calls)}", "removed: 0", "changed: 0", "rewired: 0",
                      f"unchanged: {len(nodes) - len(params) - len(calls)}"}


def test_a_fuse_ops_diff_renders_to_png(base):
    """The picture described in the issue's closing note: test-artifacts/fuse_ops_diff.png."""
    trace = pass_trace(base, "resnet18")
    ARTIFACTS.mkdir(exist_ok=True)
    dot_file = ARTIFACTS / "fuse_ops_diff.dot"
    export(resolve_graphs(trace.path, select="FuseOps", diff=True), "dot", dot_file)
    png = ARTIFACTS / "fuse_ops_diff.png"
    subprocess.run(["dot", "-Tpng", "-Gdpi=40", str(dot_file), "-o", str(png)], check=True)
    from PIL import Image

    with Image.open(png) as image:
        colours = Counter(image.convert("RGB").get_flattened_data())
    assert colours[(0xc8, 0xe6, 0xc9)] > 1000  # the green of what FuseOps added fills many nodes


def test_simplify_inference_removes_batch_norm_in_red(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    out = tmp_path / "simplify.svg"
    assert main(["export", str(trace.path), "--pass", "SimplifyInference", "--diff", "--to", "svg",
                 "-o", str(out)]) == 0
    nodes = drawn(svg_nodes(out))
    norms = [(title, fill) for title, fill, texts in nodes if texts[0] == "nn.batch_norm"]
    assert len(norms) == trace.before.ops["nn.batch_norm"]
    assert "nn.batch_norm" not in trace.after["SimplifyInference"].ops
    assert {fill for _, fill in norms} == {RED} and all(title.startswith("r") for title, _ in norms)
    new_ops = Counter(texts[0] for _, fill, texts in nodes if fill == GREEN)
    assert new_ops["sqrt"] == trace.after["SimplifyInference"].ops["sqrt"]


def test_convert_layout_changes_convolutions_in_amber(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    out = tmp_path / "layout.svg"
    assert main(["export", str(trace.path), "--pass", "ConvertLayout", "--diff", "--to", "svg", "-o", str(out)]) == 0
    nodes = drawn(svg_nodes(out))
    convs = [(fill, texts) for _, fill, texts in nodes if texts[0] == "nn.conv2d"]
    assert len(convs) == trace.after["ConvertLayout"].ops["nn.conv2d"]
    assert {fill for fill, _ in convs} == {AMBER}
    assert all(any(line.startswith("~ attrs.data_layout: NCHW -> NHWC") for line in texts) for _, texts in convs)
    inserted = [fill for _, fill, texts in nodes if texts[0] == "layout_transform"]
    assert inserted == [GREEN] * trace.after["ConvertLayout"].ops["layout_transform"]


def test_a_whole_trace_gives_a_directory_with_one_picture_per_changed_pass(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    out = tmp_path / "pictures"
    assert main(["export", str(trace.path), "--to", "dot", "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert sorted(re.sub(r"^\d+_", "", n) for n in names) == sorted(
        ["SimplifyInference.dot", "CanonicalizeOps.dot", "ConvertLayout.dot", "FuseOps.dot"])


def test_big_graphs_warn_and_max_nodes_collapses_unchanged_regions_first(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    graphs = resolve_graphs(trace.path, select="FuseOps", diff=True)
    with pytest.warns(LargeGraphWarning, match=r"--max-nodes"):
        from relayviz_instrument.export.sizing import prepare

        whole = prepare(graphs, ExportOptions(), fmt="dot", node_limit=100)[0]
    limit = 500
    cut = prepare(graphs, ExportOptions(max_nodes=limit), fmt="dot", node_limit=DOT_NODE_LIMIT)[0]
    assert len(whole.nodes) > limit >= len(cut.nodes)
    assert "unchanged nodes away from the changes" in cut.notes[0]
    # What the pass changed is all still drawn; only unchanged nodes were merged.
    changed = lambda d: sum(n.count for n in d.nodes if n.status not in ("", "unchanged"))  # noqa: E731  # a one-line helper beside its use
    assert changed(cut) == changed(whole)
    assert sum(n.count for n in cut.nodes) == len(whole.nodes)
    out = tmp_path / "cut.svg"
    assert main(["export", str(trace.path), "--pass", "FuseOps", "--diff", "--to", "svg", "--max-nodes",
                 str(limit), "-o", str(out)]) == 0
    assert len(drawn(svg_nodes(out))) <= limit


def test_a_plain_graph_is_cut_by_folding_inputs_then_collapsing_functions(base):
    trace = pass_trace(base, "resnet18")
    graphs = resolve_graphs(trace.path, select="FuseOps")
    from relayviz_instrument.export.sizing import prepare

    cut = prepare(graphs, ExportOptions(max_nodes=150), fmt="dot")[0]
    assert len(cut.nodes) <= 150
    assert [note.split(" ", 1)[1] for note in cut.notes] == [
        "inputs used once folded into their users", "functions collapsed into one node each"]
    collapsed = [n for n in cut.nodes if n.role == "collapsed"]
    assert len(collapsed) == trace.after["FuseOps"].primitive
    assert all(n.label.startswith("fused_") for n in collapsed)


def test_svg_without_the_dot_program_is_one_line_naming_graphviz(base, tmp_path, monkeypatch, capsys):
    source, _ = snapshot(base, "mlp")
    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    assert main(["export", str(source), "--to", "svg", "-o", str(tmp_path / "x.svg")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "apt-get install graphviz" in err
    assert not (tmp_path / "x.svg").exists()
    assert shutil.which("dot") is None
