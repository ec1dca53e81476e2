"""serialize.tir_text: TIR scalar expressions as short text, on both TVM generations.

The expressions are built with TVM's own operators; the expected text is written here by hand
(TVM's printer spells constants ``T.int64(2)``, which documents do not).
"""

from __future__ import annotations

import sys

import pytest
import tvm

from relayviz_instrument.serialize.cache import GenerationalCache
from relayviz_instrument.serialize.reflection import object_key
from relayviz_instrument.serialize.tir_text import dim_value, leaf_text, prim_dtype, prim_text

TIR = tvm.tirx if hasattr(tvm, "tirx") else tvm.tir


@pytest.fixture
def n() -> tvm.ir.PrimExpr:
    return TIR.Var("n", "int64")


@pytest.fixture
def m() -> tvm.ir.PrimExpr:
    return TIR.Var("m", "int64")


def test_parentheses_only_where_precedence_needs_them(n: tvm.ir.PrimExpr, m: tvm.ir.PrimExpr) -> None:
    assert prim_text((n + m) * 2 - (n - (m - 1))) == "(n + m) * 2 - (n - (m - 1))"
    assert prim_text(n * 2 + m * 3) == "n * 2 + m * 3"
    assert prim_text(n - m - 1) == "n - m - 1"  # left-associative: no parentheses
    assert prim_text(TIR.floordiv(n, 8)) == "n // 8"
    assert prim_text(TIR.floormod(n + 1, 8)) == "(n + 1) % 8"
    assert prim_text(TIR.floordiv(n, TIR.floordiv(m, 2))) == "n // (m // 2)"


def test_calls_comparisons_and_logic(n: tvm.ir.PrimExpr, m: tvm.ir.PrimExpr) -> None:
    assert prim_text(TIR.min(n, 4)) == "min(n, 4)"
    assert prim_text(TIR.max(n + 1, m)) == "max(n + 1, m)"
    assert prim_text(TIR.all(n < 4, n > 0)) == "n < 4 and n > 0"
    assert prim_text(TIR.Not(n < 4)) == "not (n < 4)"
    assert prim_text(TIR.Cast("int32", n)) == "int32(n)"
    assert prim_text(TIR.Select(n < m, n, m)) == "select(n < m, n, m)"


def test_constants_are_plain_numbers_and_booleans() -> None:
    assert prim_text(TIR.const(2, "int64")) == "2"
    assert prim_text(TIR.const(True, "bool")) == "True"
    assert prim_text(TIR.const(0.5, "float32")) == "0.5"
    string_imm = getattr(TIR, "StringImm", None) or tvm.ir.StringImm  # TVM 0.2x moved it to tvm.ir
    assert prim_text(string_imm("tag")) == "'tag'"


def test_a_buffer_load_names_its_buffer_and_indices() -> None:
    buffer = TIR.decl_buffer((4, 8), "float32", name="A")
    i = TIR.Var("i", "int32")
    assert prim_text(TIR.BufferLoad(buffer, [i, i * 2])) == "A[i, i * 2]"


def test_a_deep_expression_needs_no_recursion() -> None:
    i = TIR.Var("i", "int32")
    depth = 3 * sys.getrecursionlimit()
    expr = i
    for _ in range(depth):
        expr = expr + i
    assert prim_text(expr) == " + ".join(["i"] * (depth + 1))


def test_parentheses_stay_right_where_a_deep_expression_is_written_without_recursion() -> None:
    # Arithmetic is written by recursion down to a depth, then the rest without: the text must
    # not show where. A right-nested difference needs parentheses at every level.
    i = TIR.Var("i", "int32")
    depth = 3 * sys.getrecursionlimit()
    expr, expected = TIR.Sub(i, i), "i - i"
    for _ in range(depth):
        expr, expected = TIR.Sub(i, expr), f"i - ({expected})"
    texts: GenerationalCache[str] = GenerationalCache()
    assert prim_text(expr) == prim_text(expr, texts) == expected
    assert prim_text(TIR.Mul(expr, i), texts) == f"({expected}) * i"  # sub-expressions remembered: the same
    assert prim_text(TIR.min(expr, TIR.max(i, expr))) == f"min({expected}, max(i, {expected}))"


def test_the_text_cache_remembers_every_subexpression(n: tvm.ir.PrimExpr, m: tvm.ir.PrimExpr) -> None:
    texts: GenerationalCache[str] = GenerationalCache()
    inner = (n + m) * 2
    expr = inner - (n - 1)
    assert prim_text(expr, texts) == prim_text(expr) == "(n + m) * 2 - (n - 1)"
    # The parentheses around an operand are its parent's: a sub-expression reads the same anywhere.
    assert texts.find(object_key(inner)) == "(n + m) * 2"
    assert texts.find(object_key(inner.a)) == "n + m"
    assert prim_text(inner + 1, texts) == "(n + m) * 2 + 1"


def test_constants_and_variables_are_read_directly_not_remembered(n: tvm.ir.PrimExpr,
                                                                   m: tvm.ir.PrimExpr) -> None:
    texts: GenerationalCache[str] = GenerationalCache()
    seven, expr = TIR.const(7, "int64"), n * 7 + m
    assert prim_text(expr, texts) == "n * 7 + m"
    # A leaf's text is one read from TVM: keeping it would cost more than reading it again.
    assert [texts.find(object_key(leaf)) for leaf in (n, m, expr.a.b)] == [None, None, None]
    assert texts.find(object_key(expr.a)) == "n * 7"
    # leaf_text gives what dim_value gives, for leaves only.
    assert [leaf_text(x) for x in (seven, n)] == [7, "n"]
    if hasattr(TIR, "SizeVar"):  # TVM <= 0.19
        assert leaf_text(TIR.SizeVar("k", "int32")) == "k"
    assert [dim_value(x) for x in (seven, n)] == [7, "n"]
    assert leaf_text(n * 2) is None and leaf_text(TIR.const(1.5, "float32")) is None


def test_dimensions_are_ints_question_marks_or_text(n: tvm.ir.PrimExpr) -> None:
    assert dim_value(3) == 3
    assert dim_value(TIR.const(7, "int64")) == 7
    assert dim_value(n) == "n"
    assert dim_value(n * 2) == "n * 2"
    if hasattr(TIR, "Any"):  # Relay's dynamic dimension (TVM <= 0.19)
        assert dim_value(TIR.Any()) == "?"


def test_dtypes_of_variables_and_constants(n: tvm.ir.PrimExpr) -> None:
    assert prim_dtype(n) == "int64"
    assert prim_dtype(TIR.const(0.5, "float32")) == "float32"
    assert prim_dtype(TIR.const(True, "bool")) == "bool"


def test_dtypes_of_arithmetic_read_again_and_again_stay_right(n: tvm.ir.PrimExpr) -> None:
    # TVM 0.2x arithmetic has no dtype, only a type, and the type's text is remembered: asked
    # many times over, for several types, each expression still reads as its own.
    x = TIR.Var("x", "float32")
    for _ in range(3):
        assert prim_dtype(n + 1) == "int64"
        assert prim_dtype(x * 2.0) == "float32"
        assert prim_dtype(n < 4) == "bool"
        assert prim_dtype(TIR.Cast("int32", n)) == "int32"
        assert prim_dtype(TIR.const(1, "int32")) == "int32"


def test_zero_and_one_are_numbers_unless_the_constant_is_a_boolean() -> None:
    assert prim_text(TIR.const(1, "int32")) == "1"
    assert prim_text(TIR.const(0, "int64")) == "0"
    assert prim_text(TIR.const(False, "bool")) == "False"
    assert prim_text(TIR.Add(TIR.const(1, "int32"), TIR.const(0, "int32"))) == "1 + 0"

