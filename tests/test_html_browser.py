"""The HTML report of a traced ResNet-18 build, driven in headless Chromium.

Playwright drives Debian's ``/usr/bin/chromium`` (``make setup`` installs it); every test fails
on a JavaScript error or a console error. Screenshots are kept in ``test-artifacts/browser/``
(git ignores it; ``RELAYVIZ_ARTIFACTS`` moves it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator, List

import pytest

from browser import open_report, watch_errors
from relayviz_instrument.html_report import write_html_report
from relayviz_instrument.analysis.provenance import provenance
from relayviz_instrument.store import load_trace

ARTIFACTS = Path(os.environ.get("RELAYVIZ_ARTIFACTS",
                                Path(__file__).resolve().parent.parent / "test-artifacts")) / "browser"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(resnet18_traced: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    _, trace = resnet18_traced
    return write_html_report(load_trace(trace.path), tmp_path_factory.mktemp("html") / "resnet18.html")


@pytest.fixture
def page(browser: Any, request: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors = watch_errors(page)
    page.errors = errors  # type: ignore[attr-defined]  # kept on the page for the tests
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
    page.close()
    assert errors == [], f"JavaScript errors: {errors}"


def selected_pass(page: Any) -> str:
    return page.inner_text(".pass-rows .row.sel .c-name")


def svg_text(page: Any) -> str:
    return page.text_content("svg.graph")


def drawn(page: Any) -> int:
    return page.locator("svg.graph [data-id]").count()


def test_opens_on_the_first_step_and_colours_it(page: Any, report: Path) -> None:
    open_report(page, report)
    assert selected_pass(page) == "SimplifyInference"
    assert page.title() == "relayviz: trace"  # the trace directory's name
    # batch_norms replaced: red removed boxes, green added ones, and the hunk list says so.
    assert page.locator("svg .n.s4").count() > 0 and page.locator("svg .n.s3").count() > 0
    assert "replaced" in page.inner_text(".hunks")
    green = page.eval_on_selector("svg .n.s3 rect", "r => getComputedStyle(r).fill")
    red = page.eval_on_selector("svg .n.s4 rect", "r => getComputedStyle(r).fill")
    assert green == "rgb(220, 252, 231)" and red == "rgb(254, 226, 226)"
    rows = page.locator(".pass-rows .row[data-pass]").count()
    folded = page.locator(".pass-rows .row.fold").count()
    assert folded > 0 and rows < 200  # 1,600 events, the unchanged ones folded
    page.click(".pass-rows .row.fold >> nth=0")
    assert page.locator(".pass-rows .row[data-pass]").count() > rows


def test_click_fuse_ops_shows_its_hunks_and_kernels(page: Any, report: Path) -> None:
    open_report(page, report)
    page.click(".pass-rows .row[data-pass] .c-name:text-is('FuseOps')")
    assert selected_pass(page) == "FuseOps"
    assert re.search(r"#pass=90$", page.url)
    groups = page.locator(".hunk-list li")
    assert groups.count() > 3
    assert set(re.findall(r"^(\w+)", page.inner_text(".hunk-list"), re.M)) == {"wrapped"}
    # Each kernel is a green compound holding its (unchanged) calls.
    kernels = page.locator("svg .cmp.s3")
    assert kernels.count() >= 10
    assert "nn.contrib_conv2d_NCHWc" in svg_text(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "fuseops-pass.png"))
    # A hunk clicked: its nodes marked and brought into view.
    before = page.get_attribute("svg g.viewport", "transform")
    groups.nth(1).click()
    assert page.locator("svg .hunk").count() >= 2
    assert page.get_attribute("svg g.viewport", "transform") != before
    # A function folded by its title, and opened again.
    boxes = drawn(page)
    page.click("svg .cmp.hunk .cmp-title")
    assert drawn(page) < boxes and "▸ fn" in svg_text(page)
    page.locator("svg .n[data-id]", has_text="▸ fn").dispatch_event("click")
    assert drawn(page) == boxes


def test_layout_keeps_boxes_apart(page: Any, report: Path) -> None:
    open_report(page, report, "#pass=90")
    overlaps = page.evaluate("""() => {
      const pane = window.relayvizViewer.pane, pos = pane.layout.pos;
      const boxes = [...pane.elements.keys()].filter((id) => !pane.elements.get(id).classList.contains('cmp'))
        .map((id) => pos.get(id));
      let n = 0;
      for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        if (Math.abs(a.x - b.x) * 2 < a.w + b.w - 1 && Math.abs(a.y - b.y) * 2 < a.h + b.h - 1) n++;
      }
      return [n, boxes.length];
    }""")
    assert overlaps[0] == 0 and overlaps[1] > 100


def test_unchanged_regions_open_on_click(page: Any, report: Path) -> None:
    open_report(page, report, "#pass=19")  # FoldConstant: over 150 nodes, regions collapsed
    regions = page.locator("svg .n.region")
    assert regions.count() > 0
    label = regions.first.text_content()
    assert re.match(r"⋯ \d+ unchanged nodes?", label)
    boxes = drawn(page)
    regions.first.click()
    assert drawn(page) > boxes
    page.uncheck("header .toggle:has-text('collapse unchanged regions') input")
    assert page.locator("svg .n.region").count() == 0


def test_search_a_node_and_follow_its_history(page: Any, report: Path, resnet18_traced: Any) -> None:
    trace_dir = resnet18_traced[1].path
    open_report(page, report, "#pass=90")
    page.click("input.search")
    page.keyboard.type("softmax")
    assert re.match(r"2 matches in this pass", page.inner_text(".results"))
    assert page.locator("svg .match").count() >= 1
    page.keyboard.press("Enter")
    assert page.inner_text(".node h2") == "nn.softmax"
    assert page.locator("svg .sel").count() == 1
    history = page.inner_text(".node")
    assert "In the input module as node" in history
    assert re.search(r"removed by LowerTensorExpr #103", history)
    assert re.search(r"rewired by CanonicalizeOps #60", history)
    # And forward: the kernel that computes it, as the Python provenance says.
    prov = provenance(load_trace(trace_dir))
    [softmax] = prov.find(0, op="nn.softmax")
    below = prov.descendants((0, softmax))
    becomes = re.search(r"Becomes (\d+) nodes? of the last snapshot: (.*)\.", history)
    assert becomes and int(becomes.group(1)) == len(below) == 1
    assert "tvmgen_default_fused_nn_softmax" in becomes.group(2)
    page.click(".events a:text('LowerTensorExpr #103')")
    assert selected_pass(page) == "LowerTensorExpr"
    assert page.inner_text(".node h2") == "nn.softmax" and "removed" in page.inner_text(".node .badge")

    # A built kernel: its history goes back to the input module.
    open_report(page, report, "#pass=1612")
    assert selected_pass(page) == "GraphExecutorCodegen"
    page.fill("input.search", "tvmgen_default_fused_nn_softmax")
    page.keyboard.press("Enter")
    node = page.inner_text(".node")
    assert re.search(r"created by GraphExecutorCodegen #1612", node)
    stems = re.search(r"Stems from (\d+) nodes? of the input module", node)
    # The viewer's walk through the steps agrees with the Python provenance.
    [kernel] = prov.find(prov.last, op="tvmgen_default_fused_nn_softmax")
    assert stems and int(stems.group(1)) == len(prov.history((prov.last, kernel)).roots) > 0
    page.click(".stems a")
    assert selected_pass(page) == "SimplifyInference"
    assert page.locator("svg .root").count() > 0


def test_keyboard_moves_between_passes(page: Any, report: Path) -> None:
    open_report(page, report)
    names: List[str] = [selected_pass(page)]
    for key in ("ArrowDown", "j", "ArrowDown"):
        page.keyboard.press(key)
        names.append(selected_pass(page))
    assert names == ["SimplifyInference", "InferType", "FoldConstant", "FoldScaleAxis"]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("k")
    assert selected_pass(page) == "InferType"
    assert re.search(r"#pass=15$", page.url)
    page.keyboard.press("n")  # the first hunk of the pass
    assert page.locator(".hunk-list li.sel").count() == 1
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.classList.contains('search')")


def test_filter_passes(page: Any, report: Path) -> None:
    open_report(page, report)
    page.fill("input.pass-filter", "^FoldConstant$")
    names = page.locator(".pass-rows .row[data-pass] .c-name").all_inner_texts()
    assert names and set(names) == {"FoldConstant"}
    page.fill("input.pass-filter", "")
    assert page.locator(".pass-rows .row[data-pass]").count() > len(names)
