"""The front door and the manual stay whole: every code block of README.md, CONTRIBUTING.md and
docs/ is of a kind the example runner (conftest.py, Sybil) runs or a kind that is not code, the
README lists every command, and the API reference names every public name."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import List, Tuple

import relayviz_instrument
import relayviz_instrument.errors as relayviz_errors
from relayviz_instrument.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Run as examples: python in the page's namespace (or written to a file), sh command by command.
RUN = {"python", "sh"}
#: Not code: output, synopses with placeholders, JSON shown as a shape, diagrams; and MyST directives.
NOT_RUN = {"text", "json", ""}
_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([^\s`]*)", re.M)


def _fences(text: str) -> List[Tuple[int, str]]:
    """(line, language) of each opening fence."""
    found, open_fence = [], None
    for match in _FENCE.finditer(text):
        if open_fence is None:
            open_fence = match.group(1)
            found.append((text.count("\n", 0, match.start()) + 1, match.group(2)))
        elif match.group(1).startswith(open_fence) and not match.group(2):
            open_fence = None
    return found


def test_every_code_block_is_run_or_is_not_code() -> None:
    unknown = [f"{page.relative_to(ROOT)}:{line} ```{language}" for page in PAGES
               for line, language in _fences(page.read_text())
               if language not in RUN | NOT_RUN and not language.startswith("{")]
    assert not unknown, f"a code block in a language the example runner does not run: {unknown}"


def test_the_example_runner_collects_every_python_and_sh_block() -> None:
    """Each python and sh block of a page (and each hidden set-up block) is one example of the
    runner's: a block its parsers missed would never run."""
    spec = importlib.util.spec_from_file_location("examples_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    for page in PAGES:
        text = page.read_text()
        expected = sum(1 for _, language in _fences(text) if language in RUN)
        expected += text.count("<!-- invisible-code-block: python")
        evaluators = [example.region.evaluator for example in runner.EXAMPLES.parse(page)]
        found = sum(1 for e in evaluators if isinstance(e, runner._PythonOrFile) or e is runner._evaluate_sh)
        assert found == expected, (page.name, found, expected)


def test_the_readme_is_the_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert "pip install relayviz_instrument" in readme
    assert "make demo" in readme and "make test" in readme
    assert re.search(r"!\[[^\]]*\]\(docs/images/[\w-]+\.(svg|png)\)", readme)
    for image in re.findall(r"\]\((docs/images/[^)]+)\)", readme):
        assert (ROOT / image).is_file(), image
    for command in COMMANDS:
        assert f"| `relayviz {command}` |" in readme, f"the README's table of commands lacks {command}"


def test_the_api_reference_names_every_public_name() -> None:
    reference = (ROOT / "docs" / "api.rst").read_text()
    errors = set(relayviz_errors.__all__) if ".. automodule:: relayviz_instrument.errors" in reference else set()
    missing = [name for name in relayviz_instrument.__all__ if name != "__version__" and name not in errors
               and not re.search(rf"\b{re.escape(name)}\b", reference)]
    assert not missing, f"public names the API reference (docs/api.rst) does not name: {missing}"
