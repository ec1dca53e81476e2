"""Sphinx configuration of the user manual (``make docs``; warnings are errors there).

The pages are Markdown, read by MyST; the API reference (api.rst) is autodoc over the public API,
whose docstrings are written in reStructuredText. The command reference is made at build time
from the ``relayviz`` argument parser (cli_reference.py), so it cannot drift from the code.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout's package, whatever is installed
sys.path.insert(0, str(HERE))

from relayviz_instrument import __version__  # noqa: E402  # after the checkout is put on sys.path

project = "relayviz_instrument"
author = "the relayviz_instrument authors"
copyright = "the relayviz_instrument authors, Apache-2.0"
version = release = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "cli_reference"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# the pages link to each other's headings (`tracing.md#relayviz-run`)
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

html_theme = "furo"
html_title = f"relayviz_instrument {release}"
html_static_path: list = []

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}

# `...` inside the JSON examples of the format pages is for the reader, not a JSON lexer.
suppress_warnings = ["myst.header", "misc.highlighting_failure"]
