"""Relax programs for the tests, on either TVM generation, and TVM's own count of their nodes.

Programs come from sources no one here wrote the serializer for: TVMScript modules in
``relax_programs/`` (one file per TVMScript dialect: TVM 0.16 spells ``T.block`` and
``out_sinfo``, TVM 0.2x ``T.sblock`` and ``out_ty``), ``tvm.relax.frontend.nn`` and PyTorch
models (``relayviz_instrument.demo.relax_models``), and TVM's own pipelines run over them.

:func:`ir_census` counts the nodes of a module with TVM's visitors
(``relax.analysis.post_order_visit`` and a ``PyExprVisitor`` for bindings, blocks and the
variables they define), by object identity: the counts a document must show.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Set, Tuple

import tvm
from tvm import relax

PROGRAMS = Path(__file__).resolve().parent / "relax_programs"
#: TVM 0.2x (apache-tvm): TIR is ``tvm.tirx``, Relax has types instead of struct info.
NEW_TVM = hasattr(tvm, "tirx")

#: Relax classes -> the document kind that stands for them (``DataflowVar``: a Var with
#: ``"dataflow": true``; TVM 0.2x's scalar values are PrimValues).
KIND_OF_CLASS = {
    "Function": "Function", "Var": "Var", "DataflowVar": "DataflowVar", "Call": "Call",
    "Constant": "Const", "GenericConst": "Const", "Tuple": "Tuple", "TupleGetItem": "TupleGetItem", "If": "If",
    "SeqExpr": "SeqExpr", "BindingBlock": "BindingBlock", "DataflowBlock": "DataflowBlock",
    "VarBinding": "VarBinding", "MatchCast": "MatchCast", "ShapeExpr": "ShapeExpr", "PrimValue": "PrimValue",
    "IntImm": "PrimValue", "FloatImm": "PrimValue", "StringImm": "StringImm", "DataTypeImm": "DataTypeImm",
    "ExternFunc": "ExternFunc",
}


def load_program(name: str) -> Any:
    """The ``Module`` of ``relax_programs/<name>_tvm016.py`` or ``_tvm027.py``, for this TVM."""
    path = PROGRAMS / f"{name}_{'tvm027' if NEW_TVM else 'tvm016'}.py"
    module_name = f"relax_program_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # TVMScript reads the source of the module it parses
    spec.loader.exec_module(module)
    return module.Module


def tensor(shape: Any, dtype: str = "float32") -> Any:
    """The annotation of a tensor variable: struct info (TVM 0.16) or a type (TVM 0.2x)."""
    if hasattr(relax, "TensorStructInfo"):
        return relax.TensorStructInfo(shape, dtype)
    return relax.TensorType(shape, dtype)


def ident(obj: Any) -> int:
    """The identity (address) of a TVM object."""
    return obj.__chandle__() if hasattr(obj, "__chandle__") else obj.handle.value


def ir_census(mod: Any) -> Tuple[Counter, Dict[str, Set[str]]]:
    """Per document kind, the number of distinct Relax IR objects of ``mod``, and the names of
    its operators and globals (the document writes one Op node per operator and attributes,
    one GlobalVar node per name). Counted by TVM's own visitors, never by the serializer."""
    seen: Dict[int, Any] = {}

    def note(obj: Any) -> None:
        seen.setdefault(ident(obj), obj)

    @relax.expr_functor.visitor
    class Definitions(relax.PyExprVisitor):
        # Bindings, blocks and defined variables, which post_order_visit does not report.
        # (The overrides do not call the base class: TVM 0.2x's dispatches back to them.)
        def visit_var_binding_(self, binding: Any) -> None:
            note(binding)
            note(binding.var)
            self.visit_expr(binding.value)

        def visit_match_cast_(self, binding: Any) -> None:
            self.visit_var_binding_(binding)

        def visit_binding_block_(self, block: Any) -> None:
            note(block)
            for binding in block.bindings:
                self.visit_binding(binding)

        def visit_dataflow_block_(self, block: Any) -> None:
            self.visit_binding_block_(block)

        def visit_var_def_(self, var: Any) -> None:
            note(var)

        def visit_dataflow_var_def_(self, var: Any) -> None:
            note(var)

    primfuncs = 0
    for func in mod.functions.values():
        name = type(func).__name__
        if name == "PrimFunc":
            primfuncs += 1
        elif name == "Function":
            relax.analysis.post_order_visit(func, note)
            Definitions().visit_expr(func)
        elif name == "ExternFunc":
            note(func)

    # The visitors also reach what types hold (a tensor's shape, the dimensions in it); the
    # document writes those as ``type`` fields, not as nodes. A shape or a scalar is a node
    # where it is a value: in an expression's own fields (an argument, a binding's value, ...).
    values: Set[int] = set()
    for obj in seen.values():
        for field in ("args", "fields", "value", "body", "cond", "true_branch", "false_branch", "tuple_value", "op"):
            child = getattr(obj, field, None) if type(obj).__name__ in _EXPRESSIONS else None
            for item in (child if isinstance(child, (list, tuple)) or type(child).__name__ == "Array" else [child]):
                if item is not None and hasattr(item, "same_as"):
                    values.add(ident(item))
    defined = values | _defined_vars(seen)

    counts: Counter = Counter()
    names: Dict[str, Set[str]] = {"Op": set(), "GlobalVar": set()}
    for key, obj in seen.items():
        cls = type(obj).__name__
        if cls in ("ShapeExpr", "IntImm", "FloatImm") and key not in values:
            continue
        if cls == "Var" and key not in defined:
            continue  # a symbolic dimension inside a shape
        if cls == "Op":
            names["Op"].add(str(obj.name))
        elif cls == "GlobalVar":
            names["GlobalVar"].add(str(obj.name_hint))
        elif cls == "GenericConst" and not hasattr(obj.value, "shape"):
            counts["DataTypeImm" if type(obj.value).__name__ in ("dtype", "DataType") else cls] += 1
        else:
            counts[KIND_OF_CLASS.get(cls, cls)] += 1
    counts["PrimFunc"] = primfuncs
    return +counts, names


#: Expression classes whose fields hold expressions (where a shape or a scalar is a value).
_EXPRESSIONS = frozenset({"Call", "Tuple", "VarBinding", "MatchCast", "SeqExpr", "If", "TupleGetItem", "Function"})


def _defined_vars(seen: Dict[int, Any]) -> Set[int]:
    """Variables a function or a binding defines."""
    out: Set[int] = set()
    for obj in seen.values():
        cls = type(obj).__name__
        if cls == "Function":
            out.update(ident(p) for p in obj.params)
        elif cls in ("VarBinding", "MatchCast"):
            out.add(ident(obj.var))
    return out


def doc_census(doc: Dict[str, Any]) -> Tuple[Counter, Dict[str, Set[str]]]:
    """The same counts read from a document written without TIR bodies."""
    counts: Counter = Counter()
    names: Dict[str, Set[str]] = {"Op": set(), "GlobalVar": set()}
    for node in doc["nodes"]:
        kind = node["node_kind"]
        if kind in names:
            names[kind].add(node["name"])
        elif kind == "Var" and node.get("dataflow"):
            counts["DataflowVar"] += 1
        else:
            counts[kind] += 1
    return +counts, names


def build_pipeline() -> Any:
    """TVM's own Relax build pipeline for a CPU (what ``tvm.compile`` runs after the zero pipeline):
    VM lowering, memory planning, shape lowering."""
    if hasattr(relax, "get_default_pipeline"):
        return relax.get_default_pipeline(tvm.target.Target("llvm"))
    return relax.pipeline.default_build_pipeline()


def add_relu_module(shape: Any = (4, 64)) -> Any:
    """``relu(x + y)`` built with the BlockBuilder, through the zero pipeline: one fused
    PrimFunc with two blocks (``T_add``, ``compute``), each under a loop nest."""
    x, y = relax.Var("x", tensor(list(shape))), relax.Var("y", tensor(list(shape)))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            added = bb.emit(relax.op.add(x, y))
            out = bb.emit_output(relax.op.nn.relu(added))
        bb.emit_func_output(out)
    return relax.get_pipeline("zero")(bb.get())


def schedule(func: Any) -> Any:
    """A TIR schedule of ``func`` and its block getter (TVM 0.2x: s_tir, ``get_sblock``)."""
    sch = tvm.s_tir.Schedule(func) if NEW_TVM else tvm.tir.Schedule(func)
    return sch, (sch.get_sblock if NEW_TVM else sch.get_block)


def tir_census(func: Any) -> Counter:
    """TIR statements and loads of a PrimFunc's body by document kind, distinct objects,
    counted by TVM's own walk (``tir.stmt_functor.post_order_visit``; tvm-ffi's structural
    walk on TVM 0.2x)."""
    names = {"For": "For", "Block": "Block", "SBlock": "Block", "BlockRealize": "BlockRealize",
             "SBlockRealize": "BlockRealize", "BufferStore": "BufferStore", "BufferLoad": "BufferLoad",
             "TensorLoad": "BufferLoad", "SeqStmt": "SeqStmt", "IfThenElse": "IfThenElse", "Evaluate": "Evaluate",
             "LetStmt": "LetStmt", "Bind": "LetStmt", "AttrStmt": "AttrStmt", "AssertStmt": "AssertStmt",
             "Allocate": "Allocate", "AllocBuffer": "Allocate", "DeclBuffer": "Allocate"}
    seen: Dict[int, str] = {}

    def note(obj: Any) -> None:
        kind = names.get(type(obj).__name__)
        if kind is not None:
            seen[ident(obj)] = kind

    if NEW_TVM:
        import tvm_ffi

        tvm_ffi.structural_walk(func.body, note)
    else:
        tvm.tir.stmt_functor.post_order_visit(func.body, note)
    return Counter(seen.values())
