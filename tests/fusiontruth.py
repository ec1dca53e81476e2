"""What FuseOps takes into each primitive function, read from the IR itself: the truth of the
Relax provenance test and benchmark (``benchmarks/provenance_accuracy.py``).

The passes the zero pipeline runs up to FuseOps are run again on a copy of the input module.
LegalizeOps keeps each binding's variable and turns its high-level call into a ``call_tir`` of
a PrimFunc, so the variables name which operator each PrimFunc computes; FuseOps' primitive
functions hold those ``call_tir`` calls and are called from one place or several (one per
layer); FuseTIR gives the fused PrimFunc the function's name.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Set, Tuple

import tvm
from tvm import relax

from relayviz_instrument.demo.relax_models import relax_host_target
from relayviz_instrument.serialize.reflection import dict_attrs_items

__all__ = ["fused_truth", "fused_functions"]


def _bindings(mod: Any) -> Dict[Tuple[str, str], Any]:
    """Every binding of the module's Relax functions, by (function, variable name)."""
    out: Dict[Tuple[str, str], Any] = {}
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function) and isinstance(func.body, relax.SeqExpr):
            for block in func.body.blocks:
                for binding in block.bindings:
                    out[(gv.name_hint, _name(binding.var))] = binding.value
    return out


def _name(var: Any) -> str:
    name = getattr(var, "name_hint", None)  # TVM 0.2x calls it ``name``
    return str(var.name if name is None else name)


def _call_tir_kernel(expr: Any) -> Any:
    if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.call_tir":
        return expr.args[0].name_hint
    return None


def _visit(func: Any) -> List[Any]:
    """Every expression of a Relax function's body, in post order."""
    out: List[Any] = []
    relax.analysis.post_order_visit(func.body, out.append)
    return out


def fused_functions(mod: Any) -> Tuple[Dict[str, List[str]], Counter, Dict[str, str]]:
    """What FuseOps makes of ``mod`` in the zero pipeline: each primitive function with the
    PrimFuncs its ``call_tir`` calls run, and how often the other functions call each; and
    which operator of ``mod`` each of those PrimFuncs computes."""
    T = relax.transform
    with tvm.target.Target(relax_host_target()):
        legalized = T.LegalizeOps()(mod)
        fused = T.FuseOps()(T.FoldConstant()(T.AnnotateTIROpPattern()(legalized)))
    calls: Counter = Counter()
    primitive: Dict[str, List[str]] = {}
    for gv, func in fused.functions.items():
        if not isinstance(func, relax.Function):
            continue
        exprs = _visit(func)
        if dict(dict_attrs_items(func.attrs)).get("Primitive"):
            primitive[gv.name_hint] = [k for k in map(_call_tir_kernel, exprs) if k is not None]
        else:
            calls.update(e.op.name_hint for e in exprs
                         if isinstance(e, relax.Call) and isinstance(e.op, relax.GlobalVar))
    return primitive, calls, _operators(mod, legalized)


def _operators(mod: Any, legalized: Any) -> Dict[str, str]:
    """Which operator of ``mod`` each PrimFunc of LegalizeOps computes: the call its binding held."""
    before = _bindings(mod)
    operator: Dict[str, Set[str]] = {}
    for key, value in _bindings(legalized).items():
        kernel = _call_tir_kernel(value)
        old = before.get(key)
        if kernel is not None and isinstance(old, relax.Call) and isinstance(old.op, tvm.ir.Op):
            operator.setdefault(kernel, set()).add(old.op.name)
    assert all(len(ops) == 1 for ops in operator.values()), operator
    return {kernel: ops.pop() for kernel, ops in operator.items()}


def fused_truth(mod: Any) -> Dict[str, Counter]:
    """For each primitive function FuseOps makes of ``mod`` in the zero pipeline, the input
    module's operators it stands for: the operator of each ``call_tir`` it holds, once per
    call of the function."""
    primitive, calls, operator = fused_functions(mod)
    return {name: Counter({op: n * calls[name] for op, n in Counter(operator[k] for k in kernels).items()})
            for name, kernels in primitive.items()}
