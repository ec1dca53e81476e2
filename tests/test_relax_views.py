"""The pictures of a Relax build: the HTML report, driven in headless Chromium, and the
exports, of ResNet-18 exported from PyTorch (``torch.export``, ``from_exported_program``)
through ``tvm.compile``.

A Relax function is a box holding its bindings (a variable is the value bound to it), a
``call_tir`` names the PrimFunc it runs and links to it, and FuseOps reads at the zoom the page
opens with: dataflow from top to bottom, each fused function a box around the calls it took
in. The screenshot of FuseOps is kept in ``test-artifacts/browser/`` (``RELAYVIZ_ARTIFACTS``
moves it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from browser import open_report, watch_errors
from conftest import needs_torch
from relayviz_instrument.cli import main
from relayviz_instrument.diff.graph import CanonicalGraph
from relayviz_instrument.html_report import write_html_report
from relayviz_instrument.html_report.graphs import snapshot_graph
from relayviz_instrument.store import load_trace

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

ARTIFACTS = Path(os.environ.get("RELAYVIZ_ARTIFACTS",
                                Path(__file__).resolve().parent.parent / "test-artifacts")) / "browser"

pytestmark = [pytest.mark.slow, needs_torch]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Any]:
    """The trace of ResNet-18's ``tvm.compile`` and its FuseOps event."""
    from relayviz_instrument.capture import trace_compile
    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

    path = tmp_path_factory.mktemp("resnet18") / "trace"
    trace_compile(relax_workload("resnet18"), target=relax_host_target(), out_dir=path)
    trace = load_trace(path)
    [fuse] = [r for r in trace.records if r.name == "FuseOps"]
    return path, fuse


@pytest.fixture(scope="module")
def report(traced: Tuple[Path, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_html_report(load_trace(traced[0]), tmp_path_factory.mktemp("html") / "resnet18.html")


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors = watch_errors(page)
    yield page
    page.close()
    assert errors == [], f"JavaScript errors: {errors}"


def _says(label: str, text: str) -> bool:
    """Whether a box's ``label`` is ``text``, or its start cut with an ellipsis (44 characters)."""
    return label == text or (label.endswith("…") and text.startswith(label[:-1]))


def _fused_functions(doc: Dict[str, Any]) -> List[str]:
    """The module's functions FuseOps made: Relax functions marked Primitive."""
    nodes = doc["nodes"]
    return sorted(name for name, i in doc["functions"].items()
                  if nodes[i]["node_kind"] == "Function" and (nodes[i].get("attrs") or {}).get("Primitive"))


def test_a_snapshot_draws_functions_as_boxes_of_their_bindings_and_calls_naming_their_primfunc(
        traced: Tuple[Path, Any]) -> None:
    path, fuse = traced
    doc = load_trace(path).snapshot(fuse.after)
    nodes = doc["nodes"]
    graph = snapshot_graph(CanonicalGraph(doc))["nodes"]
    boxes = {graph[i]["d"]: i for i, entry in enumerate(graph) if entry.get("c")}
    assert {"@" + name for name in _fused_functions(doc)} | {"@main"} <= set(boxes)
    # Bindings, blocks and the variables they bind are not drawn: the value stands for its variable.
    for i, node in enumerate(nodes):
        if node["node_kind"] in ("VarBinding", "DataflowBlock", "BindingBlock", "SeqExpr"):
            assert "h" in graph[i]
        if node["node_kind"] == "VarBinding":
            assert "h" in graph[node["var"]]
    # Every call_tir names its PrimFunc and points at it; what it reads are its tensor arguments.
    kernels = 0
    for i, node in enumerate(nodes):
        if node["node_kind"] != "Call" or nodes[node["op"]].get("name") != "relax.call_tir":
            continue
        kernels += 1
        callee = nodes[node["args"][0]]["name"]
        assert graph[i]["d"] == "@" + callee and graph[i]["f"] == doc["functions"][callee]
        assert nodes[graph[i]["f"]]["node_kind"] == "PrimFunc"
        args = nodes[node["args"][1]]
        assert "h" not in graph[i] and bool(graph[i]["in"]) == bool(args.get("fields"))  # zeros reads nothing
    assert kernels > 20


def test_fuse_ops_reads_top_down_at_the_default_zoom_with_fused_groups_boxed(
        page: Any, report: Path, traced: Tuple[Path, Any]) -> None:
    path, fuse = traced
    open_report(page, report, f"#pass={fuse.index}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "relax-fuse-ops.png"))
    scale = float(re.search(r"scale\(([0-9.]+)\)", page.get_attribute("svg g.viewport", "transform")).group(1))
    assert scale >= 0.9  # 11px labels at 10px or more
    fused = _fused_functions(load_trace(path).snapshot(fuse.after))
    titles = page.locator("svg .cmp .cmp-title").all_text_contents()
    shown = sorted(t[2:] for t in titles if t.startswith("▾ fn @fused_"))
    assert len(shown) == len(fused) and all(_says(t, "fn @" + f) for t, f in zip(shown, fused))
    found = page.evaluate("""() => {
      const pane = window.relayvizViewer.pane, pos = pane.layout.pos, G = pane.graph;
      const inside = (a, b) => Math.abs(a.x - b.x) * 2 <= b.w - a.w && Math.abs(a.y - b.y) * 2 <= b.h - a.h;
      // each fused group: the calls drawn inside its box
      const groups = {};
      for (const [id, el] of pane.elements) {
        if (!el.classList.contains('cmp')) continue;
        const title = el.querySelector('.cmp-title').textContent;
        if (!title.startsWith('▾ fn @fused_')) continue;
        const box = pos.get(id);
        groups[title.slice(2)] = [...pane.elements.keys()].filter((k) => k !== id && inside(pos.get(k), box)
          && !pane.elements.get(k).classList.contains('cmp')).map((k) => pane.elements.get(k).textContent);
      }
      // edges of the output module: from a box above to a box below
      let down = 0, up = 0;
      for (const [u, v, side] of G.edges) {
        if (side === 1) continue;
        const a = pos.get('g' + u), b = pos.get('g' + v);
        if (!a || !b) continue;
        if (b.y > a.y) down++; else up++;
      }
      return {groups, down, up};
    }""")
    assert found["up"] == 0 and found["down"] > 100
    assert all(_says(t, "fn @" + f) for t, f in zip(sorted(found["groups"]), fused))
    for title, inner in found["groups"].items():
        # fused_conv2d_add_relu holds the calls of conv2d, add and relu (TVM names the group after them)
        [name] = [f for f in fused if _says(title, "fn @" + f)]
        calls = [t.removeprefix("relax.call_tir @") for t in inner if t.startswith("relax.call_tir @")]
        assert len(calls) >= 2 and all(c.rstrip("0123456789") in name for c in calls), (name, inner)


def test_a_clicked_call_tir_names_its_primfunc_and_links_to_it(page: Any, report: Path,
                                                                traced: Tuple[Path, Any]) -> None:
    _, fuse = traced
    open_report(page, report, f"#pass={fuse.index}")
    call = page.locator("svg .n[data-id]", has_text=re.compile(r"^relax\.call_tir @conv2d$")).first
    call.dispatch_event("click")
    assert page.inner_text(".node h2") == "relax.call_tir @conv2d"
    link = page.locator(".node .callee a")
    assert link.inner_text() == "@conv2d"
    link.click()
    assert page.inner_text(".node h2") == "@conv2d"
    assert "PrimFunc" in page.inner_text(".node")
    selected = page.locator("svg .sel")
    assert selected.count() == 1 and selected.text_content() == "@conv2d"


def test_the_dot_export_of_fuse_ops_draws_fused_functions_as_clusters_and_names_the_kernels(
        traced: Tuple[Path, Any], tmp_path: Path) -> None:
    path, fuse = traced
    out = tmp_path / "fuse.dot"
    assert main(["export", str(path), "--pass", str(fuse.index), "--to", "dot", "-o", str(out)]) == 0
    text = out.read_text()
    clusters = re.findall(r'subgraph cluster_\w+ \{\n\t*[^\n]*label="([^"]*)"', text)
    fused = _fused_functions(load_trace(path).snapshot(fuse.after))
    assert sorted(c.removesuffix(" (Primitive)") for c in clusters if c.startswith("fused_")) == fused
    labels = re.findall(r'label="([^"\\]*)', text)  # each label's first line
    kernels = [label for label in labels if label.startswith("relax.call_tir")]
    assert len(kernels) > 20 and all(re.fullmatch(r"relax\.call_tir @\w+", k) for k in kernels)
    assert re.search(r'tooltip="Call relax\.call_tir @conv2d\\ncalls = @conv2d"', text)
    # Bindings, their blocks and the variables they bind are the values themselves.
    assert not {"VarBinding", "SeqExpr", "DataflowBlock", "BindingBlock"} & set(labels)


def test_a_tir_pass_opens_with_its_primfuncs_boxed_and_statements_worded(
        browser: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    from relayviz_instrument.capture import trace_compile
    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

    path = tmp_path_factory.mktemp("mlp") / "trace"
    trace_compile(relax_workload("mlp"), target=relax_host_target(), out_dir=path, tir=True)
    trace = load_trace(path)
    [flatten] = [r for r in trace.records if r.name.endswith("FlattenBuffer") and r.changed][:1]
    primfuncs = sorted(name for name, i in trace.snapshot(flatten.after)["functions"].items())
    assert len(primfuncs) > 1  # the top level holds only PrimFunc boxes, none connected to another
    report = write_html_report(trace, tmp_path_factory.mktemp("html") / "mlp.html")
    page = browser.new_page()
    errors = watch_errors(page)
    open_report(page, report, f"#pass={flatten.index}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "relax-flatten-buffer.png"))
    titles = page.locator("svg .cmp .cmp-title").all_text_contents()
    assert sorted(t.removeprefix("▾ PrimFunc @") for t in titles if t.startswith("▾ PrimFunc @")) == primfuncs
    boxes = page.locator("svg .n:not(.region) text").all_text_contents()
    assert any(re.fullmatch(r"for \w+ in 0\.\.\d+( \w+)?", t) for t in boxes)
    assert any(re.fullmatch(r"\w+\[[^\]]+\] =", t) for t in boxes)
    page.close()
    assert errors == [], f"JavaScript errors: {errors}"


def test_an_allocation_of_the_vm_lowering_says_its_shape_and_dtype_instead_of_drawing_them(
        traced: Tuple[Path, Any]) -> None:
    path, _ = traced
    trace = load_trace(path)
    [rewrite] = [r for r in trace.records if r.name == "CallTIRRewrite"]
    doc = trace.snapshot(rewrite.after)
    nodes = doc["nodes"]
    graph = snapshot_graph(CanonicalGraph(doc))["nodes"]
    allocs = [i for i, n in enumerate(nodes)
              if n["node_kind"] == "Call" and nodes[n["op"]].get("name") == "relax.builtin.alloc_tensor"]
    assert len(allocs) > 20
    for i in allocs:
        # R.builtin.alloc_tensor(R.shape([1, 64, 112, 112]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        shape, dtype = (nodes[a] for a in nodes[i]["args"][:2])
        assert graph[i]["d"].startswith(f"({', '.join(str(v) for v in shape['values'])}), {dtype['value']}, ")
        assert all("h" in graph[a] for a in nodes[i]["args"])  # none of them a box of its own
