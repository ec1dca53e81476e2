"""The compilations a trace holds moved to :mod:`relayviz_instrument.store.builds`, below both
capture and analysis; this name is kept only until ``views/overview.py`` (renamed in another
change) imports ``Build`` and ``RECORD_GRAPH_FIX`` from there. Nothing is computed here."""

from __future__ import annotations

from ..store.builds import RECORD_GRAPH_FIX, Build, best_build_for, records_by_index, split_builds

__all__ = ["Build", "split_builds", "records_by_index", "best_build_for", "RECORD_GRAPH_FIX"]
