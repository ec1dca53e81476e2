"""The trace directory: atomic, content-addressed snapshots and a manifest that survives crashes."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

from relayviz_instrument.errors import RelayVizFormatError, RelayVizTraceError
from relayviz_instrument.format import encode, new_document
from relayviz_instrument.store import (MANIFEST, TRACE_FORMAT, DirectoryStore, MemoryStore, PassRecord, TraceSink,
                                       load_trace, new_trace_dir, snapshot_ref)


def _doc(name: str = "x"):
    return new_document([{"node_kind": "Var", "name": name, "dtype": "float32", "shape": [2]}],
                        ir="relay", root=0)


def _write(tmp_path: Path, lines):
    (tmp_path / "snapshots").mkdir(parents=True, exist_ok=True)
    (tmp_path / MANIFEST).write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


HEADER = {"type": "header", "trace_format": TRACE_FORMAT}


def test_snapshots_are_content_addressed_compressed_and_stored_once(tmp_path):
    writer = DirectoryStore(tmp_path / "t")
    ref_a = writer.put(_doc("a"))
    assert writer.put(_doc("a")) == ref_a
    ref_b = writer.put(_doc("b"))
    assert ref_a != ref_b
    assert ref_a == snapshot_ref(encode(_doc("a")))
    files = sorted(p.name for p in (tmp_path / "t" / "snapshots").iterdir())
    assert files == sorted([f"{ref_a}.json.zst", f"{ref_b}.json.zst"])  # no temporary files left behind
    assert (tmp_path / "t" / "snapshots" / f"{ref_a}.json.zst").read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert writer.get(ref_a) == _doc("a")
    writer.close()


def test_a_trace_is_written_without_fsync_and_read_back_whole(tmp_path, monkeypatch):
    import os

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    writer = DirectoryStore(tmp_path / "t")
    refs = [writer.put(_doc(name)) for name in "abc"]
    writer.append({"type": "header"})
    assert synced == []  # an fsync per snapshot cost more than serializing a small module
    writer.close()
    assert synced == []  # nor one per trace: 6 ms, more than a small compilation
    assert (tmp_path / "t" / MANIFEST).read_bytes() == b'{"type":"header"}\n'
    assert [writer.get(ref) for ref in refs] == [_doc(name) for name in "abc"]


def test_memory_store_gives_the_same_refs(tmp_path):
    memory = MemoryStore()
    writer = DirectoryStore(tmp_path / "t")
    assert memory.put(_doc("a")) == writer.put(_doc("a"))
    assert memory.get(memory.put(_doc("a"))) == _doc("a")
    with pytest.raises(RelayVizTraceError, match="no snapshot"):
        memory.get("0" * 32)


def test_the_sink_holds_the_last_module_document_it_stored_of_each_dialect(tmp_path):
    sink = TraceSink(DirectoryStore(tmp_path / "t"), {})
    first, relax, last = _doc("a"), new_document([{"node_kind": "Var", "name": "b"}], ir="relax", root=0), _doc("c")
    tir = new_document([{"node_kind": "Var", "name": "t"}], ir="tir", root=0)
    refs = [sink.put(doc) for doc in (first, relax, last, tir)]
    assert sink.held(refs[0]) is None  # a later relay document replaced it
    assert sink.held(refs[1]) is relax and sink.held(refs[2]) is last  # the objects stored, not copies
    assert sink.held(refs[3]) is None  # TIR modules are not kept
    assert sink.get(refs[0]) == first and sink.get(refs[3]) == tir  # what is not held is read from the store
    sink.close(complete=True, problems=[], events=0, instrument_ms=0.0)


def test_manifest_lines_are_on_disk_before_close(tmp_path):
    writer = TraceSink(DirectoryStore(tmp_path / "t"), {})
    writer.begin(PassRecord(index=0, name="P"))
    lines = (tmp_path / "t" / MANIFEST).read_bytes().splitlines()
    assert [orjson.loads(line)["type"] for line in lines] == ["header", "begin"]
    trace = load_trace(tmp_path / "t")
    assert not trace.complete
    assert trace.records[0].name == "P" and "process stopped" in trace.records[0].error
    writer.close(complete=True, problems=[], events=1, instrument_ms=0.0)


def test_a_non_empty_directory_is_refused(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "other.txt").write_text("someone else's file")
    with pytest.raises(RelayVizTraceError, match="not empty"):
        DirectoryStore(tmp_path / "t")


def test_new_trace_dirs_are_distinct_even_when_made_at_once(tmp_path):
    made = []
    threads = [threading.Thread(target=lambda: made.append(new_trace_dir(tmp_path / "base"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 8 and all(p.is_dir() and not any(p.iterdir()) for p in made)


def test_a_snapshot_reference_cannot_escape_the_snapshot_folder(tmp_path):
    _write(tmp_path, [HEADER, {"type": "close"}])
    (tmp_path / "secret.json").write_bytes(encode(_doc()))
    trace = load_trace(tmp_path)
    for ref in ["../secret", "..%2fsecret", "/etc/passwd", "", "ABC", "a/b"]:
        with pytest.raises(RelayVizTraceError, match="not a snapshot reference"):
            trace.snapshot(ref)


def test_missing_and_corrupt_snapshots(tmp_path):
    _write(tmp_path, [HEADER, {"type": "close"}])
    trace = load_trace(tmp_path)
    with pytest.raises(RelayVizTraceError, match="missing"):
        trace.snapshot("ab" * 16)
    (tmp_path / "snapshots" / ("cd" * 16 + ".json")).write_bytes(b'{"format": "relayviz"')
    with pytest.raises(RelayVizTraceError, match="cdcd.json: the snapshot does not match its digest"):
        trace.snapshot("cd" * 16)
    data = b'{"format": "relayviz"'  # named by its own digest: read, and refused as the JSON it is
    (tmp_path / "snapshots" / (snapshot_ref(data) + ".json")).write_bytes(data)
    with pytest.raises(RelayVizFormatError, match="invalid JSON"):
        trace.snapshot(snapshot_ref(data))


def test_load_trace_rejects_what_is_not_a_trace(tmp_path):
    with pytest.raises(RelayVizTraceError, match="does not exist"):
        load_trace(tmp_path / "nowhere")
    with pytest.raises(RelayVizTraceError, match="has no manifest.jsonl"):
        load_trace(tmp_path)
    _write(tmp_path, [{"type": "header", "trace_format": "relayviz-trace/99"}])
    with pytest.raises(RelayVizTraceError, match="upgrade relayviz_instrument"):
        load_trace(tmp_path)


def test_a_corrupt_line_in_the_middle_is_an_error_but_a_cut_last_line_is_a_crash(tmp_path):
    begin = {"type": "begin", "index": 0, "name": "A", "depth": 1}
    end = {"type": "end", "index": 0, "duration_ms": 1.5, "changed": False}
    manifest = tmp_path / MANIFEST
    _write(tmp_path, [HEADER, begin, end])
    manifest.write_bytes(manifest.read_bytes() + b'{"type": "begin", "ind')
    trace = load_trace(tmp_path)
    assert [r.name for r in trace.records] == ["A"] and trace.records[0].duration_ms == 1.5
    assert not trace.complete and any("cut short" in p for p in trace.problems)
    _write(tmp_path, [HEADER, begin])
    manifest.write_bytes(manifest.read_bytes() + b"garbage\n" + orjson.dumps(end) + b"\n")
    with pytest.raises(RelayVizTraceError, match=r"manifest.jsonl:3: not a manifest record"):
        load_trace(tmp_path)


def test_a_depth_deeper_than_the_events_begun_is_corrupt(tmp_path):
    # Found by the fuzzer: a depth of 2**40 made `show` indent a name by 2**41 spaces.
    _write(tmp_path, [HEADER, {"type": "begin", "index": 0, "name": "A", "depth": 2}])
    with pytest.raises(RelayVizTraceError, match=r"manifest.jsonl:2: field 'depth': 2 is deeper than the 0 events"):
        load_trace(tmp_path)
    _write(tmp_path, [HEADER, {"type": "begin", "index": 0, "name": "A", "depth": 1},
                      {"type": "begin", "index": 1, "name": "B", "depth": 2, "parent": 0}])
    assert [r.depth for r in load_trace(tmp_path).records] == [1, 2]


def test_an_end_without_a_begin_is_corrupt(tmp_path):
    _write(tmp_path, [HEADER, {"type": "end", "index": 4}])
    with pytest.raises(RelayVizTraceError, match="never began"):
        load_trace(tmp_path)


def test_the_sink_writes_each_line_once_in_order_and_late_events_after_the_close(tmp_path):
    sink = TraceSink(DirectoryStore(tmp_path / "t"), {"options": {}})
    first, late = PassRecord(index=0, name="A"), PassRecord(index=1, name="GraphExecutorCodegen", ir="graph_executor")
    sink.begin(first)
    with pytest.raises(RelayVizTraceError, match="began twice"):
        sink.begin(first)
    sink.end(first)
    with pytest.raises(RelayVizTraceError, match="ended twice"):
        sink.end(first)
    sink.close(complete=True, problems=[], events=1, instrument_ms=1.0)
    sink.close(complete=False, problems=["ignored"], events=1, instrument_ms=2.0)  # once only
    sink.add_after_close(late)
    lines = [orjson.loads(line) for line in (tmp_path / "t" / MANIFEST).read_bytes().splitlines()]
    assert [line["type"] for line in lines] == ["header", "begin", "end", "close", "begin", "end"]
    trace = load_trace(tmp_path / "t")
    assert trace.complete and [r.name for r in trace.records] == ["A", "GraphExecutorCodegen"]


def test_a_directory_claimed_by_another_writer_is_refused(tmp_path):
    first = DirectoryStore(tmp_path / "t")
    with pytest.raises(RelayVizTraceError, match="not empty|another trace"):
        DirectoryStore(tmp_path / "t")
    first.close()


def test_two_writers_racing_for_one_directory_never_share_it(tmp_path):
    outcomes = []

    def claim():
        try:
            outcomes.append(DirectoryStore(tmp_path / "t"))
        except RelayVizTraceError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(isinstance(o, DirectoryStore) for o in outcomes) == 1
    assert all("not empty" in str(o) or "another trace" in str(o) for o in outcomes if isinstance(o, Exception))


def test_traces_of_format_1_with_plain_snapshots_are_still_read(tmp_path):
    old_header = {"type": "header", "trace_format": "relayviz-trace/1"}
    ref = snapshot_ref(encode(_doc("a")))
    _write(tmp_path, [old_header, {"type": "begin", "index": 0, "name": "A", "before": ref},
                      {"type": "end", "index": 0, "after": ref, "changed": False, "summary": {"added": 1}},
                      {"type": "close"}])
    (tmp_path / "snapshots" / f"{ref}.json").write_bytes(encode(_doc("a")))
    trace = load_trace(tmp_path)
    assert trace.complete and trace.snapshot(ref) == _doc("a")
