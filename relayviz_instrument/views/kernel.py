"""``kernel_history``: one kernel's loop nest after every pass that changed it, and where it
came from — the use case behind ``relayviz kernel``."""

from __future__ import annotations

from typing import Any, Dict, Optional

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ..analysis.kernel_story import KernelStory, kernel_story
from ..analysis.reading import TraceReading
from ..analysis.schedule_changes import device_kernel
from ..names import printable
from ..store import TraceLike
from .kernel_text import kernel_change_text
from .kernel_text import LoopNestView, wrapped

__all__ = ["KernelHistory", "kernel_history"]


class KernelHistory:
    """A kernel's story (:class:`~relayviz_instrument.analysis.kernel_story.KernelStory`) for
    the terminal: a head (the kernel, its host or device kernels, the operators it stems from,
    its launch), then each step, oldest first: the pass, what it changed, and the loop nest
    after it (``brief``: the change only)."""

    def __init__(self, story: KernelStory, *, brief: bool = False) -> None:
        self.story = story
        self.brief = brief

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        story = self.story
        head = Text()
        head.append("kernel ", style="bold")
        head.append(printable(f"@{story.name}"), style="bold")
        if story.host is not None:
            head.append(printable(f"  device kernel of @{story.host}"), style="dim")
        elif story.devices:
            head.append(printable("  split into device kernel " + ", ".join(f"@{d}" for d in story.devices)),
                        style="dim")
        yield head
        if story.operators:
            line = Text("stems from ", style="bold")
            line.append(printable(", ".join(op if n == 1 else f"{op}×{n}" for op, n in story.operators)))
            line.append(" of the input module", style="dim")
            yield line
        last = story.steps[-1]
        if last.nest.launch():
            yield Text(printable(device_kernel(last.nest).text()), style="dim")
        for step in story.steps:
            yield Text()
            title = Text()
            if step.record is None:
                title.append("(no recorded pass)", style="dim")
            else:
                title.append(printable(step.record.name), style="bold")
                title.append(f" #{step.record.index}", style="dim")
            title.append("  ")
            if step.change is None:
                title.append("made", style="bold green")
                title.append(printable(f" @{step.kernel}"))
            else:
                title.append_text(kernel_change_text(step.change))
            yield from wrapped(title, console, options.max_width)
            if not self.brief:
                yield LoopNestView(step.nest, indent=1)

    def to_json(self) -> Dict[str, Any]:
        return self.story.to_json()


def kernel_history(trace: TraceLike, name: str, *, brief: bool = False,
                   reading: Optional[TraceReading] = None) -> KernelHistory:
    """The story of the kernel ``name`` in ``trace`` (see
    :func:`~relayviz_instrument.analysis.kernel_story.kernel_story`), ready to print."""
    return KernelHistory(kernel_story(trace, name, reading=reading), brief=brief)
