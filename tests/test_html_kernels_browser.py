"""The HTML report of the decoder's CUDA build (``tests/kerneltraces.py``), driven in headless
Chromium: a pass that scheduled kernels lists them with what it did, and shows the selected
kernel's loop nest before and after it, bound loops marked; a device kernel's name is found by
the search. Screenshots are kept in ``test-artifacts/browser/`` (``RELAYVIZ_ARTIFACTS`` moves
it). Skipped, with the reason, where nvcc is missing."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from browser import open_report, watch_errors
from kerneltraces import FUSED_MATMUL, cuda_llama
from relayviz_instrument.html_report import write_html_report
from relayviz_instrument.store import load_trace
from relayviz_instrument.views.report import report_trace

ARTIFACTS = Path(os.environ.get("RELAYVIZ_ARTIFACTS",
                                Path(__file__).resolve().parent.parent / "test-artifacts")) / "browser"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cuda = cuda_llama(tmp_path_factory)
    return write_html_report(load_trace(cuda.path), tmp_path_factory.mktemp("html") / "cuda-llama.html")


@pytest.fixture
def page(browser: Any, request: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors = watch_errors(page)
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
    page.close()
    assert errors == [], f"JavaScript errors: {errors}"



def test_the_schedule_pass_shows_the_kernels_loop_nest_with_its_bound_loops(page: Any, report: Path,
                                                                             tmp_path_factory: Any) -> None:
    trace = load_trace(cuda_llama(tmp_path_factory).path)
    [schedule] = [r for r in trace.records if r.name == "ApplyDefaultSchedule"]
    open_report(page, report, f"#pass={schedule.index}")
    kernel = page.locator(".kernel-list li", has_text=re.compile(f"@{FUSED_MATMUL}$"))
    assert kernel.count() == 1, page.locator(".kernel-list li").all_text_contents()
    kernel.click()
    assert page.locator(".kernel-change").inner_text().startswith(f"scheduled @{FUSED_MATMUL}: i1 split 32")
    before, after = page.locator(".nest-pane .nest").all()[:2]
    assert before.locator(".nk-bound").count() == 0
    bound = after.locator(".nk-bound").all_text_contents()
    assert "for ax1_2 in 0..8 threadIdx.x" in bound and "for ax2_2 in 0..16 threadIdx.y" in bound
    allocs = after.locator(".nk-alloc").all_text_contents()
    assert "alloc reshape5_reindex_pad_shared float32[1, 32, 64] shared" in allocs
    # Indented by nesting: the thread loop sits deeper than the block loop around it.
    depth = {t: after.locator(".nl", has_text=t).first.evaluate("e => parseFloat(e.style.paddingLeft)")
             for t in ("blockIdx.x", "threadIdx.x")}
    assert depth["threadIdx.x"] > depth["blockIdx.x"]
    after.locator(".nk-bound", has_text="threadIdx.x").first.scroll_into_view_if_needed()  # for the screenshot


def test_split_host_device_shows_the_device_kernel_and_the_search_finds_it(page: Any, report: Path,
                                                                          tmp_path_factory: Any) -> None:
    [split] = report_trace(load_trace(cuda_llama(tmp_path_factory).path), "SplitHostDevice").passes
    open_report(page, report, f"#pass={split.record.index}")
    page.locator(".kernel-list li", has_text=re.compile(f"@{FUSED_MATMUL}$")).click()
    assert f"device kernel @{FUSED_MATMUL}_kernel launched with grid (1, 1) and block (8, 16)" in \
        page.locator(".kernel-change").inner_text()
    titles = page.locator(".nest-pane .nest h4").all_text_contents()
    assert titles == ["loop nest before", "loop nest after", f"after: device kernel @{FUSED_MATMUL}_kernel"]
    device = page.locator(".nest-pane .nest").nth(2)
    assert "launch threadIdx.x in 0..8" in device.locator(".nk-launch").all_text_contents()
    page.fill(".search", f"{FUSED_MATMUL}_kernel")
    assert re.match(r"[1-9]\d* match", page.inner_text(".results p"))
