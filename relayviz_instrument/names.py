"""How long names are shown when they do not fit: one rule for every table."""

from __future__ import annotations

__all__ = ["shorten"]


def shorten(name: str, room: int) -> str:
    """``name`` in at most ``room`` characters: its start, ``…``, and its end, which is what
    tells names apart (``tvmgen_default_fused_nn_conv2d_add_nn_relu_1``, ``FoldScaleAxis``)."""
    if len(name) <= room:
        return name
    if room < 4:
        return name[:room]
    head = max(1, (room - 1) // 3)
    return name[:head] + "…" + name[len(name) - (room - 1 - head):]
