"""The environment variables between ``relayviz bisect`` and the :class:`RelayVizBisect` in the
command it runs: the limit, where the run's trace goes, and passes never to skip. One home for
both sides; it imports neither TVM nor the use cases."""

from __future__ import annotations

import os
from typing import Dict, Optional, Sequence, Union

__all__ = ["LIMIT_ENV", "TRACE_ENV", "KEEP_ENV", "bisect_environment"]

LIMIT_ENV = "RELAYVIZ_BISECT_LIMIT"
TRACE_ENV = "RELAYVIZ_BISECT_TRACE"
KEEP_ENV = "RELAYVIZ_BISECT_KEEP"


def bisect_environment(limit: Optional[int], trace_dir: Union[str, "os.PathLike[str]"],
                       keep: Sequence[str] = ()) -> Dict[str, str]:
    """The variables that make a command's RelayVizBisect apply ``limit`` (None: no limit),
    record its trace in ``trace_dir`` and never skip the passes named in ``keep``."""
    return {LIMIT_ENV: "" if limit is None else str(limit), TRACE_ENV: os.fspath(trace_dir),
            KEEP_ENV: ",".join(sorted(keep))}
