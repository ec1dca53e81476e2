"""The HTML page of a report: the viewer's script and style and the report's data, inlined
into one file that opens from disk with no network.

The page may show a trace from anyone, so it carries a Content-Security-Policy that lets run
only its own script and style (by their SHA-256), loads nothing from anywhere (no network,
no file beside it), forbids inline event handlers, and has the browser refuse any HTML built
from strings (``require-trusted-types-for 'script'``: the viewer builds DOM nodes and sets no
``innerHTML``). The data is a JSON data block, which no policy runs.
"""

from __future__ import annotations

import base64
import hashlib
import html
from pathlib import Path
from typing import Any, Mapping

import orjson

from ..errors import RelayVizError

__all__ = ["render_page", "content_security_policy", "ASSETS"]

#: The viewer built from ``web/`` (``make web``): ``viewer.js`` and ``viewer.css``.
ASSETS = Path(__file__).with_name("assets")


def _asset(name: str) -> str:
    path = ASSETS / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RelayVizError(f"{path}: the HTML viewer is missing ({exc.strerror or exc}); "
                            "reinstall relayviz_instrument, or run `make web` in a source checkout") from None


def content_security_policy(script: str, style: str) -> str:
    """The page's policy for its one inline ``script`` and one inline ``style`` (their text)."""
    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"

    return (f"default-src 'none'; script-src {digest(script)}; style-src {digest(style)}; img-src data:; "
            "base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'")


def render_page(data: Mapping[str, Any]) -> bytes:
    """The page showing ``data`` (from :func:`~relayviz_instrument.html_report.payload.report_data`).

    The data is embedded as JSON in a ``<script type="application/json">`` element, with every
    ``<`` written ``\\u003c`` so that no text from the trace can close the element; the
    page's policy (:func:`content_security_policy`) runs nothing but the viewer.
    """
    payload = orjson.dumps(data).replace(b"<", b"\\u003c")
    title = html.escape(f"relayviz: {data['trace']['name']}")
    style = f"\n{_asset('viewer.css')}"
    script = f"\n{_asset('viewer.js')}"
    policy = html.escape(content_security_policy(script, style))
    head = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n<title>{title}</title>\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<link rel="icon" href="data:,">\n'
            f'<style>{style}</style>\n</head>\n<body>\n<div id="app"></div>\n'
            '<script id="relayviz-data" type="application/json">')
    tail = f'</script>\n<script>{script}</script>\n</body>\n</html>\n'
    return head.encode("utf-8") + payload + tail.encode("utf-8")
