"""What ``tvm.compile`` built, recorded: the Relax VM ``Executable`` of the Llama-shaped decoder
becomes the trace's last snapshot (a ``VMCodeGen`` event), every kernel it calls a ``Call``
naming it, and the operator table counts each kernel by what it computes through the VM
lowering. What the executable calls is read from TVM itself: its ``as_python()`` listing and
the functions its compiled library implements. Both legs: ``relax.build`` on TVM 0.16."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

from relayviz_instrument import format as fmt
from relayviz_instrument import load_trace, report_trace
from relayviz_instrument.capture import trace_compile
from relayviz_instrument.demo.relax_models import relax_host_target
from diskfull import DISK_FULL_ONCE_THE_CONTEXT_CLOSED

pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")

ROOT = Path(__file__).resolve().parent.parent
_EMITTED = re.compile(r'ib\.emit_call\("([^"]+)"')


def kernels_called(exe: Any) -> Dict[str, int]:
    """Calls of each function the executable's compiled library implements, counted in its
    ``as_python()`` listing: the kernels it runs, as TVM lists them."""
    calls = Counter(_EMITTED.findall(exe.as_python()))
    module = exe.mod
    libraries = list(module.imports if hasattr(module, "imports") else module.imported_modules)  # TVM 0.2x / 0.16
    assert libraries, "the executable imports no compiled library"

    def compiled(name: str) -> bool:
        for library in libraries:
            try:
                if library.get_function(name, query_imports=False) is not None:
                    return True
            except AttributeError:  # "Module has no function"
                pass
        return False

    return {name: count for name, count in sorted(calls.items()) if compiled(name)}


@pytest.fixture(scope="module")
def llama_compiled(relax_llama: Any, tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Any, Any]:
    path = tmp_path_factory.mktemp("vm_record") / "trace"
    built, trace = trace_compile(relax_llama, target=relax_host_target(), out_dir=path)
    return path, built, trace


def _built_document(path: Path) -> Tuple[Any, Dict[str, Any]]:
    trace = load_trace(path)
    record = trace.records[-1]
    assert record.after is not None
    return record, trace.snapshot(record.after)


def test_every_kernel_the_executable_calls_is_a_call_naming_it(llama_compiled) -> None:
    path, built, trace = llama_compiled
    expected = kernels_called(built)
    assert len(expected) >= 10 and any(name.startswith("fused_") for name in expected)
    record, doc = _built_document(path)
    assert (record.name, record.ir) == ("VMCodeGen", "vm_executable")
    # Its input is the last Relax module of the compilation: what the executable was built from.
    last_module = [r for r in trace.records if r.ir == "relax" and r.after is not None][-1]
    assert record.before == last_module.after
    nodes = doc["nodes"]
    calls = [n for n in nodes if n["node_kind"] == "Call" and "kernel" in n["attrs"]]
    assert Counter(n["attrs"]["kernel"] for n in calls) == expected
    assert all(nodes[n["op"]]["name"] == n["attrs"]["kernel"] for n in calls)
    # Registers are followed through the kernels that write them in place: every kernel after the
    # first (the embedding's take) computes from its result.
    first = nodes.index(calls[0])

    def reads_first(node: Dict[str, Any]) -> bool:
        todo, seen = list(node["args"]), set()
        while todo:
            i = todo.pop()
            if i == first:
                return True
            if i not in seen:
                seen.add(i)
                todo.extend(nodes[i].get("args", []))
        return False

    assert calls[0]["attrs"]["kernel"] == "take" and all(reads_first(n) for n in calls[1:])
    # The function returns what its last kernel computed.
    (forward,) = [name for name in doc["functions"]]
    body = nodes[nodes[doc["functions"][forward]]["body"]]
    last = [name for name in _EMITTED.findall(built.as_python()) if name in expected][-1]
    assert body["attrs"].get("kernel") == last
    fmt.validate(doc)


def test_recording_the_executable_again_adds_nothing_and_warns_nothing(llama_compiled) -> None:
    # Before: record_graph of what tvm.compile returned gave a RelayVizWarning and recorded nothing.
    path, built, trace = llama_compiled
    count = len(trace.records)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = trace.record_graph(built)
    assert not caught and again is trace.records[-1] and len(trace.records) == count
    assert trace.complete and load_trace(path).complete


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_show_lists_the_built_snapshot(llama_compiled) -> None:
    path, _, trace = llama_compiled
    record = trace.records[-1]
    rows = [line for line in _cli("show", str(path)).splitlines() if "VMCodeGen" in line]
    assert len(rows) == 1 and re.search(rf"^{record.index}\s+VMCodeGen\s+1\s+—\s+yes\s+"
                                        rf"{record.nodes_before} -> {record.nodes_after}\b", rows[0].strip()), rows
    assert "VMCodeGen" in _cli("report", str(path), "--pass", "^VMCodeGen$")


SCRIPT = textwrap.dedent("""\
    import json, re, sys
    from collections import Counter
    import tvm
    from tvm import relax
    sys.path.insert(0, sys.argv[2])
    from test_relax_vm_record import kernels_called
    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

    mod = relax.get_pipeline("zero")(relax_workload("mlp"))
    exe = (getattr(tvm, "compile", None) or relax.build)(mod, target=relax_host_target())  # relax.build: TVM 0.16
    with open(sys.argv[1], "w") as out:
        json.dump(kernels_called(exe), out)
    print("compiled")
""")


def test_relayviz_run_records_what_tvm_compile_returned(tmp_path: Path) -> None:
    script = tmp_path / "compile.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYVIZ_TRACE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    truth = tmp_path / "kernels.json"
    done = subprocess.run([sys.executable, "-m", "relayviz_instrument", "run", "-o", str(tmp_path / "T"), "--",
                           sys.executable, str(script), str(truth), str(ROOT / "tests")],
                          cwd=tmp_path, env=env, capture_output=True, timeout=600)
    assert done.returncode == 0 and done.stdout == b"compiled\n", done.stderr.decode()[-3000:]
    trace = load_trace(tmp_path / "T")
    assert trace.complete, trace.problems
    record = trace.records[-1]
    assert (record.name, record.ir) == ("VMCodeGen", "vm_executable")
    assert record.after is not None
    doc = trace.snapshot(record.after)
    kernels = Counter(n["attrs"]["kernel"] for n in doc["nodes"] if n["node_kind"] == "Call" and "kernel" in n["attrs"])
    assert kernels == json.loads(truth.read_text()) and kernels


def test_the_operator_table_counts_each_kernel_through_the_vm_lowering(llama_compiled) -> None:
    # Before: CallTIRRewrite turns each relax.call_tir into a direct call of its PrimFunc, and the
    # table read every kernel the executable runs as "+4 -4 net 0" (its last + and - in the VM
    # lowering); the kernels it runs were not counted at all.
    path, built, _ = llama_compiled
    expected = kernels_called(built)
    (build,) = report_trace(load_trace(path)).builds
    rows = {row["operator"]: row for row in build.operators_json()}
    for op, row in rows.items():  # whatever a row calls a kernel's calls, its net is what the executable runs
        if op.rsplit("@", 1)[-1] in expected:
            assert row["net"] == expected[op.rsplit("@", 1)[-1]], row
    for kernel, count in expected.items():
        row = rows[f"kernel @{kernel}"]
        assert row["net"] == count, row
        assert not {"CallTIRRewrite", "VMCodeGen"} & set(row["passes"]), row
    # Kernels the executable does not run (fused into others, or made VM builtins) end at 0.
    gone = [op for op, row in rows.items() if op.startswith("kernel @") and op[len("kernel @"):] not in expected]
    assert gone and all(rows[op]["net"] == 0 for op in gone)
    # The executable's calls are not counted twice: no row is a bare kernel name.
    assert not set(expected) & set(rows)


def test_calls_of_vm_functions_and_both_branches_of_an_if_are_read(tmp_path: Path) -> None:
    from tvm.script import ir as I
    from tvm.script import relax as R

    @I.ir_module
    class Branches:
        @R.function
        def helper(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            return R.add(x, x)

        @R.function
        def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((4,), "float32"):
            cls = Branches
            if c:
                y = cls.helper(x)
            else:
                y = R.multiply(x, x)
            return y

    built, trace = trace_compile(Branches, target=relax_host_target(), pipeline=None, out_dir=tmp_path / "t")
    assert trace.complete, trace.problems
    _, doc = _built_document(tmp_path / "t")
    nodes, functions = doc["nodes"], doc["functions"]
    assert set(functions) == {"helper", "main"}
    calls = [n for n in nodes if n["node_kind"] == "Call"]
    assert Counter(n["attrs"]["kernel"] for n in calls if "kernel" in n["attrs"]) == kernels_called(built)
    (helper_call,) = [i for i, n in enumerate(nodes) if n["node_kind"] == "Call" and n["attrs"].get("function")]
    assert nodes[helper_call]["attrs"]["function"] == "helper"
    (multiply,) = [i for i, n in enumerate(nodes)
                   if n["node_kind"] == "Call" and n["attrs"].get("kernel") == "multiply"]
    main = nodes[functions["main"]]
    # What main returns is either branch's y: it reads both the helper's result and the multiply.
    seen, todo = set(), [main["body"]]
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(nodes[i].get("args", []))
    assert {helper_call, multiply} <= seen
    assert nodes[multiply]["args"][:2] == [main["params"][0]] * 2  # multiply(x, x)
    fmt.validate(doc)


def test_the_html_report_draws_each_kernel_call_by_its_kernel(llama_compiled) -> None:
    from relayviz_instrument.diff.graph import CanonicalGraph
    from relayviz_instrument.html_report.graphs import snapshot_graph

    path, built, _ = llama_compiled
    _, doc = _built_document(path)
    graph = snapshot_graph(CanonicalGraph(doc))["nodes"]
    drawn = Counter(graph[i]["n"] for i, n in enumerate(doc["nodes"])
                    if n["node_kind"] == "Call" and "kernel" in n["attrs"] and "h" not in graph[i])
    assert drawn == kernels_called(built)


_DISK_FULL_AFTER_THE_PASSES = """
import json, resource, signal, sys, warnings
import tvm
from tvm import relax
from relayviz_instrument import RelayVizTrace, TraceIncompleteWarning
from relayviz_instrument.capture import compile_relax, trace_compile
from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload

out_dir, entry = sys.argv[1], sys.argv[2]
mod = relax_workload("mlp")
""" + DISK_FULL_ONCE_THE_CONTEXT_CLOSED + """with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if entry == "trace_compile":
        exe, trace = trace_compile(mod, target=relax_host_target(), out_dir=out_dir)
    else:
        trace = RelayVizTrace(out_dir)
        with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
            exe = compile_relax(mod, target=relax_host_target())
        trace.record_graph(exe)
print(json.dumps({"warnings": [str(w.message) for w in caught if w.category is TraceIncompleteWarning],
                  "code": exe.as_text(), "complete": trace.complete}))
"""


@pytest.mark.parametrize("entry", ["record_graph", "trace_compile"])
def test_a_disk_full_when_the_executable_is_recorded_returns_it_with_one_warning(entry, tmp_path: Path) -> None:
    from relayviz_instrument.capture import compile_relax
    from relayviz_instrument.demo.relax_models import relax_workload

    script = tmp_path / "child.py"
    script.write_text(_DISK_FULL_AFTER_THE_PASSES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "t"), entry], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert len(result["warnings"]) == 1 and "File too large" in result["warnings"][0], result["warnings"]
    assert result["complete"] is False
    # What the user got is what the same compile gives untraced.
    assert result["code"] == compile_relax(relax_workload("mlp"), target=relax_host_target()).as_text()
    # What was flushed before the disk filled reads back whole: every pass, and no executable.
    trace = load_trace(tmp_path / "t")
    assert trace.records and "VMCodeGen" not in {r.name for r in trace.records}


def test_history_of_a_kernel_by_name_follows_each_call_of_the_executable_to_its_own_operator(
        llama_compiled, relax_llama: Any, capsys: Any) -> None:
    # Before: the executable's calls had no name; `relayviz history TRACE rms_norm` found none.
    from relayviz_instrument.analysis.provenance import provenance
    from relayviz_instrument.cli import main

    path, built, _ = llama_compiled
    prov = provenance(load_trace(path))
    found = prov.find(prov.last, node="rms_norm")
    assert len(found) == kernels_called(built)["rms_norm"] == relax_llama.script().count("R.nn.rms_norm(")
    graph = prov.graph(0)
    roots = [[r for r in prov.roots((prov.last, call)) if graph.op_name(graph.rank_of[r]) == "relax.nn.rms_norm"]
             for call in found]
    assert all(len(r) == 1 for r in roots) and len({r[0] for r in roots}) == len(found)  # each its own layer's
    assert main(["history", str(path), "rms_norm"]) == 0
    assert capsys.readouterr().out.count("relax.nn.rms_norm") >= len(found)


def test_the_executable_follows_its_last_module_without_the_trace_reading_that_snapshot_back(tmp_path) -> None:
    # The trace holds the document of the module it snapshotted last: recording what was built
    # reads no snapshot file back (here none is left to read), and says the same.
    import tvm

    from relayviz_instrument import RelayVizTrace
    from relayviz_instrument.capture import compile_relax
    from relayviz_instrument.demo.relax_models import relax_workload

    trace = RelayVizTrace(tmp_path / "t")
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        built = compile_relax(relax_workload("mlp"), target=relax_host_target())
    last = [r for r in trace.records if r.ir == "relax" and r.after is not None][-1]
    for snapshot in (tmp_path / "t" / "snapshots").iterdir():
        snapshot.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        record = trace.record_graph(built)
    assert record is not None and record.name == "VMCodeGen"
    assert record.before == last.after and record.nodes_before == last.nodes_after
    assert trace.complete and not trace.problems
