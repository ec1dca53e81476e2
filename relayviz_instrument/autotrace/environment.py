"""The environment variables that trace a process without editing it: what ``relayviz run``
sets for the command it runs, and what the startup hook (``startup/``) reads in that process
(:func:`relayviz_instrument.autotrace.start_from_environment`). One home for both sides; it
imports nothing.

(The variables between ``relayviz bisect`` and the RelayVizBisect of the command it runs are
``relayviz_instrument._bisect_env``'s: RelayVizBisect is capture's, which imports nothing of
this package.)
"""

from __future__ import annotations

__all__ = ["ENV_TRACE", "ENV_TIR", "ENV_PASSES", "ENV_QUIET"]

#: The trace directory of a process traced from its environment (``RELAYVIZ_TRACE=DIR python s.py``).
ENV_TRACE = "RELAYVIZ_TRACE"
#: ``1``: also snapshot TIR-only modules (``relayviz run --tir``).
ENV_TIR = "RELAYVIZ_TRACE_TIR"
#: A regular expression on pass names: only those are snapshotted (``relayviz run --passes``).
ENV_PASSES = "RELAYVIZ_TRACE_PASSES"
#: ``1``: print nothing at exit (``relayviz run`` prints the pass table itself).
ENV_QUIET = "RELAYVIZ_TRACE_QUIET"
