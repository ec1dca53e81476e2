"""The syrupy extension behind ``relayviz_snapshot``: syrupy's roles, filled in for RelayViz.

- serializer: :func:`~relayviz_instrument.regression.codec.encode_snapshot` (a trace, a module,
  a function or a built graph to the snapshot file);
- storage: syrupy's single-file storage, one file per assertion under ``snapshots/`` next
  to the test module (or under the ``relayviz_snapshot_dir`` ini option), written atomically;
- comparator: the files' bytes, without the TVM and Python versions of the header (with
  ``--snapshot-update`` those count too, so that updating records the versions);
- reporter: :func:`~relayviz_instrument.regression.explain.explain`, the first divergent pass
  and its node-level diff instead of a diff of text lines.

syrupy does the rest: ``--snapshot-update`` writes new and changed snapshots and deletes
unused ones, nothing is written without it, unused snapshots are reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Type

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .._files import atomic_write_bytes
from ..errors import RelayVizUsageError
from .codec import SnapshotOptions, encode_snapshot, pinned_part
from .explain import explain, version_note

if TYPE_CHECKING:
    from syrupy.data import SnapshotCollection
    from syrupy.location import PyTestLocation

__all__ = ["RelayVizSnapshotExtension", "RelayVizSnapshotAssertion", "extension_class", "assertion_for",
           "SNAPSHOT_DIR", "FILE_EXTENSION"]

#: The folder next to a test module that holds its snapshots (syrupy's default is __snapshots__).
SNAPSHOT_DIR = "snapshots"
FILE_EXTENSION = "relayviz.txt"
#: The ini option that puts every module's snapshots under one folder instead.
INI_DIR = "relayviz_snapshot_dir"


class RelayVizSnapshotExtension(SingleFileSnapshotExtension):
    """One snapshot file per assertion: ``snapshots/<test module>/<test name>.relayviz.txt``."""

    file_extension = FILE_EXTENSION
    _write_mode = WriteMode.BINARY
    #: What the snapshot leaves out (set per assertion by :func:`extension_class`).
    options = SnapshotOptions()
    #: Whether pytest runs with --snapshot-update (the header's versions then count).
    update = False

    def serialize(self, data: Any, *, exclude: Any = None, include: Any = None, matcher: Any = None) -> bytes:
        if include is not None or exclude is not None:
            raise RelayVizUsageError("relayviz_snapshot does not take syrupy's include/exclude filters: "
                                     "call relayviz_snapshot(constants=..., names=..., passes=..., exclude=...)")
        return encode_snapshot(data, self.options)

    def matches(self, *, serialized_data: Any, snapshot_data: Any) -> bool:
        if self.update:
            return bytes(serialized_data) == bytes(snapshot_data)
        return pinned_part(bytes(serialized_data)) == pinned_part(bytes(snapshot_data))

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        yield from explain(snapshot_data or b"", serialized_data or b"")

    @classmethod
    def dirname(cls, *, test_location: "PyTestLocation") -> str:
        config = getattr(test_location.item, "config", None)
        root = _configured_root(config)
        if root is None:
            root = Path(test_location.filepath).parent / SNAPSHOT_DIR
        return str(root / test_location.basename)

    @classmethod
    def write_snapshot_collection(cls, *, snapshot_collection: "SnapshotCollection",
                                  name_order: Optional[Dict[str, int]] = None) -> None:
        data = next(iter(snapshot_collection)).data
        if not isinstance(data, bytes):  # as syrupy's own writer refuses it
            raise TypeError(f"can't write {type(data).__name__} snapshot data; expected bytes")
        atomic_write_bytes(snapshot_collection.location, data)


def _configured_root(config: Optional[pytest.Config]) -> Optional[Path]:
    """The folder the ``relayviz_snapshot_dir`` ini option names, relative to the ini file."""
    if config is None:
        return None
    try:
        value: str = config.getini(INI_DIR)  # addini() without a type: a string
    except ValueError:  # the plugin that declares the option is not loaded
        return None
    if not value:
        return None
    base = config.inipath.parent if config.inipath else config.rootpath
    return (Path(base) / value).resolve()


def extension_class(options: SnapshotOptions, update: bool) -> Type[RelayVizSnapshotExtension]:
    """The extension class for ``options`` (syrupy makes extensions from classes)."""
    if options == SnapshotOptions() and not update:
        return RelayVizSnapshotExtension
    # Named as the base class, so that syrupy's report can import it back by name.
    return type(RelayVizSnapshotExtension.__name__, (RelayVizSnapshotExtension,),
                {"options": options, "update": update, "__module__": __name__,
                 "__qualname__": RelayVizSnapshotExtension.__qualname__})


@dataclass(eq=False, order=False, repr=False)
class RelayVizSnapshotAssertion(SnapshotAssertion):
    """``assert relayviz_snapshot == value``, and ``relayviz_snapshot(...)`` for options."""

    # The call takes RelayViz's options in place of syrupy's (diff, matcher, include, ...), which
    # this snapshot does not support: a deliberate narrowing of the base class's signature.
    def __call__(self, *, constants: str = "digests",  # type: ignore[override]  # narrower on purpose
                 names: bool = True, passes: Optional[str] = None, exclude: Optional[str] = None,
                 name: Optional[str] = None) -> "RelayVizSnapshotAssertion":
        """The next assertion leaves out what the options say (see
        :class:`~relayviz_instrument.regression.SnapshotOptions`); ``name`` names its file."""
        options = SnapshotOptions(constants, names, passes, exclude)
        super().__call__(extension_class=extension_class(options, self.update_snapshots), name=name)
        return self

    def __eq__(self, other: Any) -> bool:
        self._compared = other  # what the reversed-operands check of the plugin looks for
        matched = super().__eq__(other)
        result = self.executions.get(self.num_executions - 1)
        recalled = None if result is None else result.recalled_data
        asserted = None if result is None else result.asserted_data
        if matched and isinstance(recalled, bytes) and isinstance(asserted, bytes) and recalled and asserted:
            note = version_note(recalled, asserted)
            if note:
                from .plugin import NOTES

                config = self.session.pytest_session.config
                config.stash.setdefault(NOTES, []).append(f"{self.test_location.nodeid}: {note}")
        return matched

    __hash__ = SnapshotAssertion.__hash__

    def __repr__(self) -> str:  # syrupy's shows the whole file: pytest prints it for the fixture argument
        done = self.executions.get(self.num_executions - 1)
        location = done.snapshot_location if done is not None else self.extension.get_location(
            test_location=self.test_location, index=self.index)
        return f"relayviz_snapshot({location})"


def assertion_for(request: pytest.FixtureRequest) -> RelayVizSnapshotAssertion:
    """The ``relayviz_snapshot`` of one test, made from syrupy's own ``snapshot`` fixture."""
    base: SnapshotAssertion = request.getfixturevalue("snapshot")
    return RelayVizSnapshotAssertion(
        session=base.session, test_location=base.test_location, update_snapshots=base.update_snapshots,
        update_new_snapshots_only=base.update_new_snapshots_only,
        extension_class=extension_class(SnapshotOptions(), base.update_snapshots))
