"""serialize.cache: what a serializer remembers, by object identity, for two snapshots.

The objects are real TVM objects; what is counted is how often the cache asks for a value.
"""

from __future__ import annotations

from typing import Any, List

import tvm

from relayviz_instrument.serialize.cache import GenerationalCache
from relayviz_instrument.serialize.reflection import object_key

TIR = tvm.tirx if hasattr(tvm, "tirx") else tvm.tir


class Counted:
    """A compute function that says what it computed."""

    def __init__(self) -> None:
        self.seen: List[str] = []

    def __call__(self, obj: Any) -> str:
        self.seen.append(str(obj))
        return f"text of {obj}"


def test_a_value_is_computed_once_per_object_not_per_equal_object() -> None:
    cache: GenerationalCache[str] = GenerationalCache()
    compute = Counted()
    n = TIR.Var("n", "int64")
    one, other_one = TIR.const(1, "int64"), TIR.const(1, "int64")
    assert cache.get(n, compute) == "text of n"
    assert cache.get(n, compute, object_key(n)) == "text of n"
    cache.get(one, compute)
    cache.get(other_one, compute)  # equal, but another object
    assert compute.seen == [str(n), str(one), str(other_one)]
    assert len(cache) == 3


def test_entries_live_while_each_snapshot_uses_them() -> None:
    cache: GenerationalCache[str] = GenerationalCache()
    compute = Counted()
    kept, dropped = TIR.Var("kept", "int64"), TIR.Var("dropped", "int64")
    cache.get(kept, compute)
    cache.get(dropped, compute)
    cache.rotate()
    cache.get(kept, compute)  # used again in the next snapshot: carried over
    assert len(cache) == 2  # 'dropped' is still there, from the previous snapshot
    cache.rotate()
    assert len(cache) == 1  # ... and gone once a snapshot did not use it
    cache.get(kept, compute)
    cache.get(dropped, compute)
    assert compute.seen == ["kept", "dropped", "dropped"]


def test_another_stamp_computes_the_value_again() -> None:
    cache: GenerationalCache[str] = GenerationalCache()
    compute = Counted()
    n = TIR.Var("n", "int64")
    first, second = TIR.Var("t", "int32"), TIR.Var("t", "int32")
    cache.get(n, compute, stamp=first)
    cache.get(n, compute, stamp=first)
    cache.get(n, compute, stamp=second)  # the same name, another object: another value
    cache.rotate()
    cache.get(n, compute, stamp=second)
    cache.get(n, compute, stamp=None)
    assert compute.seen == ["n", "n", "n"]


def test_find_and_store_share_the_entries_of_get() -> None:
    cache: GenerationalCache[str] = GenerationalCache()
    n, m = TIR.Var("n", "int64"), TIR.Var("m", "int64")
    assert cache.find(object_key(n)) is None
    cache.store(object_key(n), n, "stored")
    assert cache.get(n, Counted()) == "stored"
    cache.rotate()
    assert cache.find(object_key(n)) == "stored"  # found in the previous snapshot, kept for this one
    cache.rotate()
    assert cache.find(object_key(n)) == "stored"
    assert cache.find(object_key(m)) is None
