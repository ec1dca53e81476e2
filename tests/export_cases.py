"""What the exporter tests draw, made once per test session and shared by the test modules:
traces of a few real passes on models of ``tvm.relay.testing``, and what TVM itself says the
modules after each pass hold (operators, primitive functions, expressions), computed without
relayviz_instrument so the tests compare the exports with an independent account."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Tuple

import orjson

#: The passes traced, in order: each changes the module in a different way (removes batch_norm,
#: changes conv2d layouts and inserts layout_transform, wraps operators into primitive functions).
PASSES = ("SimplifyInference", "ConvertLayout", "FuseOps")


@dataclass(frozen=True)
class ModuleFacts:
    """What TVM reports about a Relay module, walked with relay.analysis.post_order_visit."""

    ops: Counter          # operator name -> calls
    primitive: int        # primitive functions
    exprs: int            # expressions other than Op and Function nodes (what a drawing draws)
    params_in_functions: int


def module_facts(mod: Any) -> ModuleFacts:
    import tvm
    from tvm import relay

    ops: Counter = Counter()
    counts = {"primitive": 0, "exprs": 0, "params": 0}
    seen = set()

    def visit(node: Any) -> None:
        if isinstance(node, tvm.ir.Op):
            return
        if isinstance(node, relay.Function):
            if node.attrs is not None and "Primitive" in node.attrs and int(node.attrs["Primitive"]) == 1:
                counts["primitive"] += 1
                counts["params"] += len(node.params)
            return
        if isinstance(node, relay.Call) and isinstance(node.op, tvm.ir.Op):
            ops[node.op.name] += 1
        counts["exprs"] += 1

    def once(node: Any) -> None:
        if node not in seen:
            seen.add(node)
            visit(node)

    relay.analysis.post_order_visit(mod["main"], once)
    return ModuleFacts(ops, counts["primitive"], counts["exprs"], counts["params"])


@dataclass(frozen=True)
class PassTrace:
    """A trace directory of :data:`PASSES` run on a model, and TVM's facts after each pass."""

    path: Path
    before: ModuleFacts
    after: Dict[str, ModuleFacts]


def _passes() -> List[Any]:
    from tvm import relay

    return [relay.transform.SimplifyInference(),
            relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]}),
            relay.transform.FuseOps(fuse_opt_level=2)]


@functools.lru_cache(maxsize=None)
def pass_trace(base: Path, model: str) -> PassTrace:
    """:data:`PASSES` on ``model`` (a name of relayviz_instrument.demo.relay_models), traced into ``base``."""
    import tvm
    from tvm import relay

    from relayviz_instrument import RelayVizTrace
    from relayviz_instrument.demo.relay_models import workload

    mod, _ = workload(model)
    mod = relay.transform.InferType()(mod)
    path = base / f"{model}-passes"
    trace = RelayVizTrace(path)
    with tvm.transform.PassContext(opt_level=3, instruments=[trace]):
        tvm.transform.Sequential(_passes())(mod)
    after = {}
    with tvm.transform.PassContext(opt_level=3):  # a prefix as a Sequential: it runs required passes too
        for k, name in enumerate(PASSES):
            after[name] = module_facts(relay.transform.InferType()(tvm.transform.Sequential(_passes()[:k + 1])(mod)))
    return PassTrace(path, module_facts(mod), after)


@functools.lru_cache(maxsize=None)
def snapshot(base: Path, model: str) -> Tuple[Path, ModuleFacts]:
    """A RelayViz snapshot file of ``model`` (type-checked) and TVM's facts about it."""
    from tvm import relay

    from relayviz_instrument import dumps
    from relayviz_instrument.demo.relay_models import workload

    mod, _ = workload(model)
    mod = relay.transform.InferType()(mod)
    path = base / f"{model}.json"
    path.write_bytes(dumps(mod))
    return path, module_facts(mod)


def read_json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())
