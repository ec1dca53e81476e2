"""What a trace reads of a pass's ``PassInfo``: its name, opt_level and required passes, read
once per PassInfo.

A pass in a loop or a Sequential run again hands TVM's callbacks the same (immutable) PassInfo
for every event, so its fields are read once and kept by the PassInfo's address. TVM makes the
TIR passes anew for each function, and ``relay.build`` all of them anew for each build: the
cache keeps the last :data:`PASS_INFOS_KEPT`, enough for every pass of a pipeline, so that a
trace of a whole process does not hold every PassInfo it saw.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from ..serialize.reflection import field, object_key

__all__ = ["PassFacts", "PassInfos", "PASS_INFOS_KEPT"]

#: How many PassInfos a trace keeps read.
PASS_INFOS_KEPT = 256

#: A pass's name, opt_level and required passes.
PassFacts = Tuple[str, int, Tuple[str, ...]]


class PassInfos:
    """The PassInfos a trace read last, by address, each with its :data:`PassFacts`."""

    def __init__(self) -> None:
        self._read: Dict[int, Tuple[Any, PassFacts]] = {}

    def __len__(self) -> int:
        return len(self._read)

    def facts(self, info: Any) -> PassFacts:
        """``info``'s name, opt_level and required passes (read once per PassInfo kept)."""
        key = object_key(info)
        known = self._read.get(key)
        if known is None:
            required = field(info, "required")
            known = (info, (str(field(info, "name")), int(field(info, "opt_level")),
                            tuple(str(required[i]) for i in range(len(required)))))
            if len(self._read) >= PASS_INFOS_KEPT:  # passes made anew per function or per build
                del self._read[next(iter(self._read))]  # the oldest, and its PassInfo
            self._read[key] = known  # holds the PassInfo: its address is not reused meanwhile
        return known[1]

    def forget(self) -> None:
        """Drop every PassInfo held (when recording stops)."""
        self._read = {}
