"""``relayviz report``: not written yet."""

from __future__ import annotations

import argparse


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Placeholder until the command lands."""
