"""The HTML page of a report: the viewer's script and style and the report's data, inlined
into one file that opens from disk with no network."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Mapping

import orjson

from ..errors import RelayVizError

__all__ = ["render_page", "ASSETS"]

#: The viewer built from ``web/`` (``make web``): ``viewer.js`` and ``viewer.css``.
ASSETS = Path(__file__).with_name("assets")


def _asset(name: str) -> str:
    path = ASSETS / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RelayVizError(f"{path}: the HTML viewer is missing ({exc.strerror or exc}); "
                            "reinstall relayviz_instrument, or run `make web` in a source checkout") from None


def render_page(data: Mapping[str, Any]) -> bytes:
    """The page showing ``data`` (from :func:`~relayviz_instrument.html_report.payload.report_data`).

    The data is embedded as JSON in a ``<script type="application/json">`` element, with every
    ``<`` written ``\\u003c`` so that no text from the trace can close the element.
    """
    payload = orjson.dumps(data).replace(b"<", b"\\u003c")
    title = html.escape(f"relayviz: {data['trace']['name']}")
    head = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<link rel="icon" href="data:,">\n'
            f'<style>\n{_asset("viewer.css")}</style>\n</head>\n<body>\n<div id="app"></div>\n'
            '<script id="relayviz-data" type="application/json">')
    tail = f'</script>\n<script>\n{_asset("viewer.js")}</script>\n</body>\n</html>\n'
    return head.encode("utf-8") + payload + tail.encode("utf-8")
