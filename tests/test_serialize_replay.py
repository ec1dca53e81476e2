"""A snapshot that copies what the last one wrote for the same IR objects (serialize/walk.py,
"replay") writes exactly what walking them writes, on modules of real compilations and on the
cases where copying would go wrong: a function its module now names otherwise, an object
written already before the copy, a copy referring to a node the new document lacks.

Each document is compared byte for byte with the document a serializer that never replays
writes for the same module after the same history (the caches alike, only the walk differs),
and with the document of a serializer that never saw another module (no cache warm at all).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import orjson
import pytest
import tvm
from tvm import te

from conftest import needs_torch
from relayviz_instrument.serialize import module_ir, serializer_for

#: The TIR namespace of this TVM (``tvm.tirx`` from 0.2x, ``tvm.tir`` before).
TIR = getattr(tvm, "tirx", None) or tvm.tir


def _walking(ir: str, tir_bodies: bool) -> Any:
    serializer = serializer_for(ir, tir_bodies=tir_bodies)
    serializer._writer.replay = False  # the same serializer, its walks never copied
    return serializer


def _compare(modules: List[Tuple[str, Any]], tir_bodies: bool) -> Tuple[int, int]:
    """Serialize ``modules`` in order both ways; assert the documents equal; (nodes, replayed)."""
    replaying = {ir: serializer_for(ir, tir_bodies=tir_bodies) for ir in ("relax", "tir")}
    walking = {ir: _walking(ir, tir_bodies) for ir in ("relax", "tir")}
    nodes = replayed = 0
    for i, (ir, mod) in enumerate(modules):
        copied, walked = replaying[ir].module(mod), walking[ir].module(mod)
        assert orjson.dumps(copied) == orjson.dumps(walked), f"module {i} ({ir}) differs"
        nodes += len(walked["nodes"])
        replayed += replaying[ir]._writer.last_replayed
        assert walking[ir]._writer.last_replayed == 0
    return nodes, replayed


def _compiled_modules(mod: Any, target: Any = None, pipeline: Any = "zero") -> List[Tuple[str, Any]]:
    """Every Relax and TIR module the passes of compiling ``mod`` received or returned, in order
    (``pipeline`` and ``tvm.compile`` for ``target``, by default the zero pipeline for this
    machine's CPU; the zero pipeline alone on TVMs without ``tvm.compile``)."""
    from tvm import relax

    from relayviz_instrument.capture import compile_relax
    from relayviz_instrument.demo.relax_models import relax_host_target

    seen: List[Tuple[str, Any]] = []

    class Grab(tvm.instrument.PassInstrument):
        def run_before_pass(self, mod: Any, info: Any) -> None:
            ir = module_ir(mod)
            if ir in ("relax", "tir") and not (seen and seen[-1][1].same_as(mod)):
                seen.append((ir, mod))

        def run_after_pass(self, mod: Any, info: Any) -> None:
            self.run_before_pass(mod, info)

    with tvm.transform.PassContext(opt_level=3, instruments=[Grab()]):
        if hasattr(tvm, "compile"):
            compile_relax(mod, target=target or relax_host_target(), pipeline=pipeline)
        else:
            relax.get_pipeline("zero")(mod)
    return seen


@pytest.fixture(scope="module")
def llama_modules() -> List[Tuple[str, Any]]:
    pytest.importorskip("tvm.relax", reason="needs a TVM with Relax")
    from relayviz_instrument.demo.relax_models import relax_workload

    return _compiled_modules(relax_workload("llama"))


@pytest.mark.parametrize("tir_bodies", [False, True], ids=["functions", "statements"])
def test_every_snapshot_of_a_llama_compile_replays_to_what_a_walk_writes(llama_modules, tir_bodies):
    assert len(llama_modules) > 30
    nodes, replayed = _compare(llama_modules, tir_bodies)
    # Most of a module outlives a pass: the copies are most of the work, not a rare case.
    assert replayed > nodes * 0.3, (replayed, nodes)


@pytest.fixture(scope="module")
def resnet_modules() -> List[Tuple[str, Any]]:
    from relayviz_instrument.demo.relax_models import relax_workload

    return _compiled_modules(relax_workload("resnet18"))


@needs_torch
def test_every_snapshot_of_a_torch_resnet_compile_replays_to_what_a_walk_writes(resnet_modules):
    nodes, replayed = _compare(resnet_modules, tir_bodies=False)
    assert replayed > nodes * 0.3, (replayed, nodes)


@pytest.fixture(scope="module")
def cuda_decoder_modules(cuda_decoder: Any) -> List[Tuple[str, Any]]:
    """The modules of the MLC-LLM-shaped decoder's CUDA compile: tvm.compile's CUDA pipeline,
    dlight's schedules, the host/device split (its PrimFuncs bound to threads, then kernels)."""
    from relayviz_instrument.demo.cuda import cuda_target

    return _compiled_modules(cuda_decoder.clone(), target=cuda_target(), pipeline=None)


@pytest.fixture(params=["loops", "set-operations"])
def replay_path(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a replay tests, records and keeps a segment's identities: a loop for small
    segments, set operations from ``Walk.MANY`` nodes on (each forced for every segment)."""
    from relayviz_instrument.serialize.cache import GenerationalCache
    from relayviz_instrument.serialize.walk import Walk

    many = 10 ** 9 if request.param == "loops" else 1
    monkeypatch.setattr(Walk, "MANY", many)
    monkeypatch.setattr(GenerationalCache, "MANY", many)
    return str(request.param)


@pytest.mark.parametrize("tir_bodies", [False, True], ids=["functions", "statements"])
def test_every_snapshot_of_a_cuda_decoder_compile_replays_to_what_a_walk_writes(cuda_decoder_modules, tir_bodies):
    assert sum(ir == "tir" for ir, _ in cuda_decoder_modules) > 20
    nodes, replayed = _compare(cuda_decoder_modules, tir_bodies)
    assert replayed > nodes * 0.3, (replayed, nodes)


def _remembering_writes_what_a_fresh_serializer_writes(modules: List[Tuple[str, Any]]) -> None:
    """Each module's document, statement by statement, from serializers that served every module
    before it (what they read is cached by object: expressions, buffers, regions, iteration
    variables) equals the document of a serializer that never saw another module."""
    remembering = {ir: serializer_for(ir, tir_bodies=True) for ir in ("relax", "tir")}
    for i, (ir, mod) in enumerate(modules):
        fresh = serializer_for(ir, tir_bodies=True).module(mod)
        assert orjson.dumps(remembering[ir].module(mod)) == orjson.dumps(fresh), f"module {i} ({ir}) differs"


def test_every_snapshot_of_a_llama_compile_is_what_a_fresh_serializer_writes(llama_modules):
    _remembering_writes_what_a_fresh_serializer_writes(llama_modules)


@needs_torch
def test_every_snapshot_of_a_torch_resnet_compile_is_what_a_fresh_serializer_writes(resnet_modules):
    assert sum(ir == "tir" for ir, _ in resnet_modules) > 20  # the TIR pipeline's modules, blocks to lowered
    _remembering_writes_what_a_fresh_serializer_writes(resnet_modules)


# -- the cases where a copy must not be made ------------------------------------------------

def _primfunc(name: str, *, arithmetic: bool = True) -> Any:
    """A small PrimFunc; without ``arithmetic`` a copy, whose body has no shared node (no
    operator, no constant): objects alone."""
    a = te.placeholder((4, 8), name="A")
    b = te.compute((4, 8), (lambda i, j: a[i, j] * 2.0 + 1.0) if arithmetic else (lambda i, j: a[i, j]), name=name)
    return te.create_prim_func([a, b])


def _documents(modules: List[Dict[str, Any]]) -> List[Tuple[bytes, bytes, int]]:
    """Each module's document from one replaying serializer and from a fresh one."""
    replaying = serializer_for("tir", tir_bodies=True)
    out = []
    for functions in modules:
        mod = tvm.IRModule(functions)
        copied = replaying.module(mod)
        out.append((orjson.dumps(copied), orjson.dumps(serializer_for("tir", tir_bodies=True).module(mod)),
                    replaying._writer.last_replayed))
    return out


def test_a_function_its_module_names_otherwise_is_written_under_its_new_name(replay_path):
    func = _primfunc("B")
    (first, first_fresh, _), (second, second_fresh, _) = _documents([{"f": func}, {"g": func}])
    assert first == first_fresh and second == second_fresh
    names = [n["name"] for n in orjson.loads(second)["nodes"] if n["node_kind"] == "PrimFunc"]
    assert names == ["g"]


def test_the_same_function_again_is_copied_whole(replay_path):
    func = _primfunc("B")
    (_, _, _), (second, second_fresh, replayed) = _documents([{"f": func}, {"f": func}])
    assert second == second_fresh
    assert replayed == len(orjson.loads(second)["nodes"])


@pytest.mark.parametrize("arithmetic", [True, False], ids=["shared-nodes", "objects-only"])
def test_a_statement_written_already_by_another_function_is_referred_to_not_copied(arithmetic, replay_path):
    func = _primfunc("B", arithmetic=arithmetic)
    twice = func.with_body(TIR.SeqStmt([func.body, func.body]))
    # Second module: "a" (walked first) holds func's body, so func's copy under "b" would write
    # it a second time; a walk refers to the nodes "a" wrote.
    (_, _, _), (second, second_fresh, _) = _documents([{"b": func}, {"a": twice, "b": func}])
    assert second == second_fresh
    doc = orjson.loads(second)
    primfuncs = {n["name"]: n for n in doc["nodes"] if n["node_kind"] == "PrimFunc"}
    assert primfuncs["b"]["body"] == doc["nodes"][primfuncs["a"]["body"]]["seq"][0]


def test_a_copy_that_refers_to_a_node_the_new_document_lacks_is_walked(replay_path):
    func = _primfunc("B")
    other = func.with_attr("global_symbol", "other")  # another PrimFunc, the same body object
    # First: "a" writes the body, "other" refers to it. Second: "other" alone, whose copy would
    # refer to the body's nodes outside its segment: the body is written anew.
    (_, _, _), (second, second_fresh, _) = _documents([{"a": func, "other": other}, {"other": other}])
    assert second == second_fresh
    doc = orjson.loads(second)
    assert [n["name"] for n in doc["nodes"] if n["node_kind"] == "PrimFunc"] == ["other"]
    assert doc["nodes"][doc["functions"]["other"]]["body"] < doc["functions"]["other"]


def test_kept_bindings_of_a_rebuilt_function_are_copied_and_one_written_already_is_referred_to(replay_path):
    # A pass rebuilds "f" around the bindings it kept, with a new one first that computes what
    # the first kept binding computes (the same Call object): the kept bindings were written one
    # after another, a run, but the new binding writes that Call before the run comes, so the
    # run is copied binding by binding: the first refers to the Call written already.
    from tvm import relax
    from tvm.script import relax as R

    ty = R.Tensor((4,), "float32")
    x = relax.Var("x", ty)
    calls = [relax.op.add(x, x), relax.op.multiply(x, x)]
    kept = [relax.VarBinding(relax.Var(f"v{i}", ty), call) for i, call in enumerate(calls)]

    def module(bindings: List[Any]) -> Any:
        body = relax.SeqExpr([relax.BindingBlock(bindings)], bindings[-1].var)
        return tvm.IRModule({"f": relax.Function([x], body, ty)})

    replaying = serializer_for("relax")
    replaying.module(module(kept))
    rebuilt = module([relax.VarBinding(relax.Var("w", ty), calls[0]), *kept])
    doc = replaying.module(rebuilt)
    assert orjson.dumps(doc) == orjson.dumps(serializer_for("relax").module(rebuilt))
    assert replaying._writer.last_replayed > 0  # the second kept binding: copied
    bindings = [n for n in doc["nodes"] if n["node_kind"] == "VarBinding"]
    assert len(bindings) == 3 and bindings[0]["value"] == bindings[1]["value"]  # one Call node, twice
