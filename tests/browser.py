"""Headless Chromium for the HTML report's browser tests and benchmark.

Playwright (from PyPI) drives Debian's ``/usr/bin/chromium`` (``make setup`` installs it);
Playwright's own browser download is never used. The flags keep Chromium off the network,
which this machine closes: without them it keeps trying to reach Google's services.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any, Iterator, List

#: Where the Chromium the tests drive lives (``RELAYVIZ_CHROMIUM`` overrides it).
CHROMIUM = os.environ.get("RELAYVIZ_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: The window the report is looked at in.
VIEWPORT = {"width": 1600, "height": 1000}


def missing() -> str:
    """Why the browser cannot run here, or ``""``."""
    try:
        import playwright  # noqa: F401  # only whether it imports
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (make setup installs Debian's chromium)"
    return ""


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A fresh headless Chromium (its own empty profile) as a Playwright browser context."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="relayviz-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport=VIEWPORT)
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def watch_errors(page: Any) -> List[str]:
    """A list that fills with the page's JavaScript errors and console errors."""
    errors: List[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def open_report(page: Any, path: Any, fragment: str = "") -> None:
    """Open a report file and wait until the viewer has drawn its first pass."""
    page.goto("about:blank")  # a new fragment of the page already open would not reload it
    page.goto(f"file://{os.fspath(path)}{fragment}")
    page.wait_for_selector('body[data-ready="1"]', timeout=60_000)
