"""How right provenance is, on models whose truth is known by construction: precision and recall
of the source calls ``relayviz history`` gives, per model and pass kind.

* **lowering** (``relay.build``): each kernel of the built graph against the call of the
  primitive function it was lowered from and the calls that function holds, in the snapshot
  LowerTensorExpr started from (the k-th kernel of the graph is the k-th such call of ``main``
  in data-flow order; its name, derived from the function's operators, is checked too).
* **layout** (``relay.optimize`` for AVX2): each ``nn.contrib_conv2d_NCHWc`` (or depthwise
  one) of the last snapshot against the one input ``nn.conv2d`` it was rewritten from (the
  k-th of each).
* **fusion** (Relax, ``tvm.compile`` through the zero pipeline): each fused PrimFunc of the
  last snapshot against the operators FuseOps took into its function, once per call site
  (``tests/fusiontruth.py`` reads them from the IR: the passes up to FuseOps run again on a
  copy); a found operator is right up to as many calls of it as the truth holds.

A found source is right when it is in the true set; precision is right / found, recall right /
true, summed over every kernel or convolution of the model. Nothing is asserted (the tests
``test_provenance_lowering.py`` and ``test_provenance_layout.py`` check every one on ResNet-18,
``test_provenance_densenet.py`` on DenseNet-121 with its parameters unbound and no names).

Each Relay model runs twice: as built, and without variable names (``names: none``): the weights
bound into the function as constants, as ``relay.build(params=...)`` itself does, and the input
given an empty name, so that no name is left for the diff to pair by. The Relax models (their
weights bound as constants already) run as built. Each leg runs where its TVM is installed.

    python benchmarks/provenance_accuracy.py [--models resnet18 densenet121 ...] [--names kept none]
        [--relax-models llama resnet18]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, List, Set, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

AVX2 = "llvm -mtriple=x86_64-linux-gnu -mcpu=core-avx2"
PREFIX = "tvmgen_default_fused_"


def _calls(graph: Any, ids: Iterable[int], op: str = "") -> Set[int]:
    return {i for i in ids
            if graph.kind[graph.rank_of[i]] == "Call" and (not op or graph.op_name(graph.rank_of[i]) == op)}


def lowering_pairs(prov: Any) -> List[Tuple[Set[int], Set[int]]]:
    """``(found, true)`` source calls of every kernel, in the snapshot lowering started from."""
    [record] = [r for r in prov.trace.records if r.name == "LowerTensorExpr"]
    start = prov.span(record.index)[0]
    graph, last = prov.graph(start), prov.graph(prov.last)
    fused = []
    for r in sorted(range(graph.size), key=graph.position.__getitem__):
        if graph.kind[r] == "Call" and graph.kind[graph.refs[r][0]] == "Function":
            body = sorted((t for t in graph.scope(graph.refs[r][0]) if graph.kind[t] == "Call"),
                          key=graph.position.__getitem__)
            name = "_".join(str(graph.op_name(t)).replace(".", "_") for t in body)
            fused.append(({graph.doc_id[t] for t in [r, *body]}, name))
    kernels = [r for r in sorted(range(last.size), key=last.position.__getitem__)
               if (last.op_name(r) or "").startswith(PREFIX)]
    if len(kernels) != len(fused):
        raise SystemExit(f"{len(kernels)} kernels but {len(fused)} calls of primitive functions")
    out = []
    for k, (true, name) in zip(kernels, fused):
        if re.sub(r"_\d+$", "", str(last.op_name(k))[len(PREFIX):]) != name:
            raise SystemExit(f"kernel {last.op_name(k)} is not the function {name}: the truth's order is off")
        out.append((_calls(graph, prov.roots((prov.last, last.doc_id[k]), at=start)), true))
    return out


def layout_pairs(prov: Any) -> List[Tuple[Set[int], Set[int]]]:
    """``(found, true)`` input convolutions of every blocked convolution of the last snapshot."""
    first, last = prov.graph(0), prov.graph(prov.last)

    def ordered(graph: Any, *ops: str) -> List[int]:
        return [graph.doc_id[r] for r in sorted(range(graph.size), key=graph.position.__getitem__)
                if graph.op_name(r) in ops]

    convs = ordered(first, "nn.conv2d")
    blocked = ordered(last, "nn.contrib_conv2d_NCHWc", "nn.contrib_depthwise_conv2d_NCHWc")
    if len(convs) != len(blocked):
        raise SystemExit(f"{len(convs)} conv2d but {len(blocked)} NCHWc convolutions")
    return [(_calls(first, prov.roots((prov.last, b)), "nn.conv2d"), {c}) for c, b in zip(convs, blocked)]


def nameless(mod: Any, params: Any) -> Any:
    """``mod`` with its weights bound in as constants and every remaining parameter of ``main``
    named ``""``: a module with no variable names left."""
    import tvm
    from tvm import relay

    func = relay.build_module.bind_params_by_name(mod["main"], params)
    fresh = {v: relay.var("", type_annotation=v.type_annotation) for v in func.params}
    body = relay.bind(func.body, fresh)
    return relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([fresh[v] for v in func.params], body, func.ret_type, func.type_params, func.attrs)))


def fusion_pairs(prov: Any, mod: Any) -> List[Tuple[Set[Any], Set[Any]]]:
    """``(found, true)`` operators of every fused PrimFunc of the last Relax module (the snapshot
    before the executable tvm.compile built), each as a set of ``(operator, k)`` for its first,
    second... call, so that sets meet as the counts do."""
    from fusiontruth import fused_truth

    built = [s.position for s in prov.steps if s.record is not None and s.record.name == "VMCodeGen"]
    at = built[0] if built else prov.last
    truth, graph, last = fused_truth(mod), prov.graph(0), prov.document(at)

    def counted(counts: Counter) -> Set[Any]:
        return {(op, k) for op, n in counts.items() for k in range(n)}

    out = []
    for name, i in sorted(last["functions"].items()):
        if name in truth and last["nodes"][i]["node_kind"] == "PrimFunc":
            found = Counter(graph.op_name(graph.rank_of[r]) for r in prov.roots((at, i))
                            if graph.kind[graph.rank_of[r]] == "Call" and graph.op_name(graph.rank_of[r]) is not None)
            out.append((counted(found), counted(truth[name])))
    if len(out) != len(truth):
        raise SystemExit(f"{len(out)} fused PrimFuncs in the last snapshot but {len(truth)} primitive functions")
    return out


def score(pairs: List[Tuple[Set[Any], Set[Any]]]) -> Tuple[float, float, int]:
    right = sum(len(found & true) for found, true in pairs)
    found = sum(len(f) for f, _ in pairs)
    true = sum(len(t) for _, t in pairs)
    return right / found if found else 1.0, right / true if true else 1.0, len(pairs)


def main() -> None:
    relay = importlib.util.find_spec("tvm.relay") is not None
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["resnet18", "resnet50"] if relay else [],
                        help="models of relayviz_instrument.demo.relay_models (densenet121 takes minutes)")
    parser.add_argument("--names", nargs="+", choices=["kept", "none"], default=["kept", "none"],
                        help="variable names as the model has them, and none")
    parser.add_argument("--relax-models", nargs="*", default=[] if relay else ["llama", "resnet18"],
                        help="models of relayviz_instrument.demo.relax_models, compiled with tvm.compile")
    args = parser.parse_args()
    print(f"{'model':14s} {'names':5s} {'pass kind':10s} {'nodes':>6s} {'precision':>9s} {'recall':>9s}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.models:
            relay_models(args.models, args.names, Path(tmp))
        if args.relax_models:
            relax_models(args.relax_models, Path(tmp))


def relay_models(models: List[str], names_options: List[str], tmp: Path) -> None:
    """Score lowering and layout on each Relay model, with and without variable names."""
    import tvm
    from tvm import relay

    from relayviz_instrument import RelayVizTrace
    from relayviz_instrument.analysis.provenance import provenance
    from relayviz_instrument.capture import trace_build
    from relayviz_instrument.demo.relay_models import workload
    from relayviz_instrument.store import load_trace

    for name in models:
        for names in names_options:
            def model() -> Tuple[Any, Any]:
                mod, params = workload(name)
                return (mod, params) if names == "kept" else (nameless(mod, params), None)

            mod, params = model()
            built = tmp / f"{name}-{names}-build"
            trace_build(mod, params=params, target="llvm", opt_level=3, out_dir=built)
            mod, params = model()
            optimized = tmp / f"{name}-{names}-optimize"
            with tvm.transform.PassContext(opt_level=3, instruments=[RelayVizTrace(optimized)]):
                relay.optimize(mod, target=AVX2, params=params)
            for kind, path, pairs in (("lowering", built, lowering_pairs), ("layout", optimized, layout_pairs)):
                precision, recall, n = score(pairs(provenance(load_trace(path))))
                print(f"{name:14s} {names:5s} {kind:10s} {n:6d} {precision:9.4f} {recall:9.4f}", flush=True)


def relax_models(models: List[str], tmp: Path) -> None:
    """Score fusion on each Relax model compiled through the zero pipeline."""
    from relayviz_instrument.analysis.provenance import provenance
    from relayviz_instrument.capture import trace_compile
    from relayviz_instrument.demo.relax_models import relax_host_target, relax_workload
    from relayviz_instrument.store import load_trace

    for name in models:
        mod = relax_workload(name)
        path = tmp / f"{name}-relax"
        trace_compile(mod, target=relax_host_target(), out_dir=path)
        precision, recall, n = score(fusion_pairs(provenance(load_trace(path)), mod))
        print(f"{'relax-' + name:14s} {'kept':5s} {'fusion':10s} {n:6d} {precision:9.4f} {recall:9.4f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
