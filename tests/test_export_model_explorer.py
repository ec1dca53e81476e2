"""``relayviz export --to model-explorer`` and ``relayviz view`` (export/model_explorer.py).

The graph JSON is loaded into the ``ai-edge-model-explorer`` package's own classes with
``dacite.from_dict``, as the package's node data provider runner loads graphs; the browser
test starts ``relayviz view`` (Model Explorer's own server) and opens it in Debian's Chromium
through Playwright, keeping a screenshot in test-artifacts/.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from dacite import from_dict
from model_explorer.graph_builder import Graph, GraphCollection
from model_explorer.node_data_builder import GraphNodeData

from export_cases import pass_trace, read_json
from relayviz_instrument.cli import main

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp()


def load_collection(path: Path) -> GraphCollection:
    data = read_json(path)
    return GraphCollection(label=data["label"], graphs=[from_dict(data_class=Graph, data=g) for g in data["graphs"]])


def test_a_fuse_ops_diff_loads_as_model_explorer_graph_with_namespaces_and_node_data(base, tmp_path, capsys):
    trace = pass_trace(base, "resnet18")
    facts = trace.after["FuseOps"]
    out = tmp_path / "fuse.json"
    assert main(["export", str(trace.path), "--pass", "FuseOps", "--diff", "--to", "model-explorer",
                 "-o", str(out)]) == 0
    overlay_path = tmp_path / "fuse.nodedata.json"
    assert capsys.readouterr().out.split() == ["wrote", str(out), "wrote", str(overlay_path)]
    (graph,) = load_collection(out).graphs
    assert graph.id.endswith("FuseOps")
    assert len(graph.nodes) == facts.exprs  # FuseOps removed nothing: the after graph's expressions
    ops = Counter(n.label for n in graph.nodes if n.label in facts.ops)
    assert ops == facts.ops
    namespaces = {n.namespace for n in graph.nodes if n.namespace}
    assert len(namespaces) == facts.primitive
    assert all(n.namespace.startswith("fused_") for n in graph.nodes if n.label in facts.ops and n.label != "nn.softmax"
               or n.label == "nn.conv2d")
    ids = {n.id for n in graph.nodes}
    assert all(e.sourceNodeId in ids for n in graph.nodes for e in n.incomingEdges)
    convs = [n for n in graph.nodes if n.label == "nn.conv2d"]
    assert all(n.outputsMetadata[0].attrs[0].key == "tensor_shape"
               and n.outputsMetadata[0].attrs[0].value.startswith("float32[1,") for n in convs)
    assert all({"data_layout": "NHWC"}.items() <= {a.key: a.value for a in n.attrs}.items() for n in convs)

    overlay = read_json(overlay_path)
    data = from_dict(data_class=GraphNodeData, data=overlay[graph.id])
    assert set(data.results) == ids
    statuses = Counter(r.value for r in data.results.values())  # 1: added, 0: unchanged
    assert statuses == Counter({1: facts.params_in_functions + facts.primitive,
                                0: facts.exprs - facts.params_in_functions - facts.primitive})
    assert {r.bgColor for r in data.results.values() if r.value == 1} == {"#c8e6c9"}


def test_a_whole_trace_is_one_collection_of_graphs(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    out = tmp_path / "all.json"
    assert main(["export", str(trace.path), "--to", "model-explorer", "-o", str(out)]) == 0
    collection = load_collection(out)
    by_pass = {g.id.split(" ", 1)[1]: g for g in collection.graphs}
    assert sorted(by_pass) == sorted(["SimplifyInference", "CanonicalizeOps", "ConvertLayout", "FuseOps"])
    for name, facts in trace.after.items():
        assert len(by_pass[name].nodes) == facts.exprs
    assert not (tmp_path / "all.nodedata.json").exists()  # no diff, no node data


def test_export_is_deterministic(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        assert main(["export", str(trace.path), "--pass", "ConvertLayout", "--diff", "--to", "model-explorer",
                     "-o", str(out)]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert (tmp_path / "a.nodedata.json").read_bytes() == (tmp_path / "b.nodedata.json").read_bytes()


# -- the browser ----------------------------------------------------------------------------------

def screenshot_model_explorer(url: str, picture: Path) -> str:
    """Open ``url`` in headless Chromium, wait for the graph, screenshot it; return the page's text."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                       args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 900})
        try:
            page = context.new_page()
            page.goto(url)
            page.wait_for_selector("canvas", timeout=60_000)
            page.wait_for_function("document.body.innerText.includes('relayviz diff')", timeout=60_000)
            time.sleep(2)  # the WebGL renderer draws after the panel fills in
            page.screenshot(path=str(picture))
            return page.inner_text("body")
        finally:
            context.close()


def test_relayviz_view_serves_the_diff_and_chromium_draws_it(base, tmp_path):
    trace = pass_trace(base, "resnet18")
    facts = trace.after["FuseOps"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    server = subprocess.Popen([sys.executable, "-m", "relayviz_instrument", "view", str(trace.path), "--pass",
                               "FuseOps", "--diff", "--no-browser"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
                              # Ctrl-C stops the server, even when this run was started with SIGINT
                              # ignored (a background job of a shell without job control).
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        url = ""
        lines = []
        for line in server.stdout:
            lines.append(line)
            if line.startswith("Model Explorer: "):
                url = line.split(": ", 1)[1].strip()
            if "Press Ctrl+C" in line:
                break
        assert url.startswith("http://localhost:"), "".join(lines)
        ARTIFACTS.mkdir(exist_ok=True)
        picture = ARTIFACTS / "model_explorer_fuse_ops.png"
        text = screenshot_model_explorer(url, picture)
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=30)
    # Model Explorer read our graph: its count of layers is the primitive functions TVM reports.
    assert re.search(rf"layer count\s+{facts.primitive}\s", text), text[:300]
    # ... and our node data: its sum is the number of nodes added (status 1), all others are 0.
    assert re.search(rf"Sum\s+{facts.params_in_functions + facts.primitive}\s", text), text[:600]
    from PIL import Image

    with Image.open(picture) as image:
        graph_area = image.convert("RGB").crop((0, 100, 1000, 880))
        greens = sum(1 for r, g, b in graph_area.get_flattened_data() if g > r + 15 and g > b + 15)
    # The graph is drawn, and what FuseOps added shows in the diff's green (shaded by the renderer).
    assert greens > 1000
