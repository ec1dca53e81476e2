"""What a serializer remembers between snapshots: values by TVM object identity, for two snapshots.

IR nodes are immutable and passes share the parts they do not rewrite, so most objects of one
snapshot reappear in the next one; what was read from them is kept and not read again.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, List, Optional, Tuple, TypeVar

from .reflection import object_key

__all__ = ["GenerationalCache"]

V = TypeVar("V")


class GenerationalCache(Generic[V]):
    """A cache keyed by TVM object identity that lives for two snapshots.

    IR nodes are immutable and passes share the parts they do not rewrite, so most objects
    of one snapshot reappear in the next one. Entries are keyed by the object's address and
    hold the object itself, so an address cannot be reused while its entry lives; entries not
    used by the current snapshot are dropped when the next one starts (:meth:`rotate`), which
    bounds the memory held to what the latest module holds anyway.
    """

    #: From this many keys, :meth:`keep` moves entries with set operations, not a loop.
    MANY = 32

    def __init__(self) -> None:
        self._current: Dict[int, Tuple[Any, Any, V]] = {}
        self._previous: Dict[int, Tuple[Any, Any, V]] = {}

    def get(self, obj: Any, compute: Callable[[Any], V], key: Optional[int] = None, stamp: Any = None) -> V:
        """The value for ``obj``, computed by ``compute(obj)`` on a miss (``key``: its object_key).

        ``stamp`` is an object the value also depends on that can change while ``obj`` stays
        the same object (a Relay expression's ``checked_type_``, which type inference sets in
        place): an entry made with another stamp is computed again.
        """
        if key is None:
            key = object_key(obj)
        hit = self._current.get(key)
        if hit is None or not _same(hit[1], stamp):
            hit = self._previous.pop(key, None)
            if hit is None or not _same(hit[1], stamp):
                hit = (obj, stamp, compute(obj))
            self._current[key] = hit
        return hit[2]

    def find(self, key: int) -> Optional[V]:
        """The value stored under ``key`` (an object_key) for this snapshot or the previous
        one (then kept for this one too), or None."""
        hit = self._current.get(key)
        if hit is None:
            hit = self._previous.pop(key, None)
            if hit is None:
                return None
            self._current[key] = hit
        return hit[2]

    def store(self, key: int, obj: Any, value: V) -> None:
        """Remember ``value`` for ``obj`` (whose object_key is ``key``) in this snapshot."""
        self._current[key] = (obj, None, value)

    def keep(self, keys: List[Any]) -> None:
        """Count the entries under ``keys`` as used by this snapshot (objects a walk copied
        from the last document without reading them): they live on for the next one. What
        :meth:`find` does for each key, in a few calls over all of them (a walk keeps
        thousands of small runs of keys per snapshot)."""
        previous, current = self._previous, self._current
        if len(keys) < self.MANY:  # a loop costs less than making sets
            for key in keys:
                if key not in current:
                    hit = previous.pop(key, None)
                    if hit is not None:
                        current[key] = hit
            return
        moving = previous.keys() & keys
        if not moving:
            return
        if not current.keys().isdisjoint(moving):  # an entry of this snapshot stands (find returns it)
            moving = {key for key in moving if key not in current}
        current.update(zip(moving, map(previous.pop, moving)))

    def rotate(self) -> None:
        """Start a new snapshot: keep only what the snapshot just finished used."""
        self._previous = self._current
        self._current = {}

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)


def _same(a: Any, b: Any) -> bool:
    # Entries hold their stamp, so its address cannot be reused while the entry lives.
    return a is b or (a is not None and b is not None and object_key(a) == object_key(b))
