"""What a kept module's TVMScript may hold before it is read back.

``tvm.script.from_source`` evaluates the Python expressions of the script it parses, so a
module kept in someone else's trace is code from someone else. Before it is parsed, the script
is checked against what TVMScript printing writes: imports from ``tvm`` (``from tvm.script
import ir as I``), classes and functions with decorators, assignments, ``for``/``with``/``if``
blocks, calls, subscripts, operators and literals. Anything else is refused: other imports,
lambdas, comprehensions, ``try``/``raise``/``global``/``del``, f-strings, names starting with
an underscore (``__import__``, ``__class__``) and calls of Python builtins other than a few
printing uses (``range``). The check is a pass over the syntax tree: it runs nothing.
"""

from __future__ import annotations

import ast
from typing import AbstractSet, FrozenSet, Optional, Set, Tuple, Type

__all__ = ["script_refusal"]

#: The syntax TVMScript printing writes (contexts, operators and comparisons included below).
_ALLOWED: Tuple[Type[ast.AST], ...] = (
    ast.Module, ast.Import, ast.ImportFrom, ast.alias, ast.ClassDef, ast.FunctionDef, ast.arguments, ast.arg,
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass, ast.If, ast.For, ast.While, ast.With,
    ast.withitem, ast.Assert, ast.Call, ast.keyword, ast.Attribute, ast.Name, ast.Subscript, ast.Slice, ast.Tuple,
    ast.List, ast.Dict, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Starred,
    ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
)
#: The modules a script may import from (``tvm.script``, ``tvm.script.relax``, ...).
_IMPORTABLE = "tvm"
#: Python builtins TVMScript printing calls or names.
_BUILTINS: FrozenSet[str] = frozenset({"range", "True", "False", "None", "int", "float", "bool", "str", "tuple",
                                       "list", "len", "min", "max", "abs"})


def script_refusal(script: str, provided: AbstractSet[str]) -> Optional[str]:
    """Why ``script`` is not read back (``line N: ...``), or None when it holds only what
    TVMScript printing writes. ``provided``: the names the reader gives the parser (``I``,
    ``R``, ``T``, ``TypeVar``, ``metadata``, ...)."""
    try:
        tree = ast.parse(script)
    except SyntaxError as exc:
        return f"line {exc.lineno}: not Python ({exc.msg})"
    defined = _defined_names(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        where = f"line {line}: " if line is not None else ""
        if not isinstance(node, _ALLOWED):
            return f"{where}{type(node).__name__} (which TVMScript printing never writes)"
        if isinstance(node, ast.Import) and not all(_from_tvm(a.name) for a in node.names):
            return f"{where}an import of {', '.join(a.name for a in node.names)} (only tvm is read)"
        if isinstance(node, ast.ImportFrom) and (node.level or not _from_tvm(node.module or "")):
            return f"{where}an import from {node.module or '.'} (only tvm is read)"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return f"{where}the attribute {node.attr}"
        if isinstance(node, ast.Name) and (node.id.startswith("_") or (
                isinstance(node.ctx, ast.Load) and node.id not in defined | _BUILTINS | provided)):
            return f"{where}the name {node.id}"
    return None


def _from_tvm(module: str) -> bool:
    return module == _IMPORTABLE or module.startswith(_IMPORTABLE + ".")


def _defined_names(tree: ast.AST) -> Set[str]:
    """The names the script binds itself: functions, classes, parameters, assignment, loop
    and ``with`` targets, import aliases."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names
