"""serialize.reflection: TVM objects read the way the installed TVM allows, on both TVM generations.

Every expectation is TVM's own answer (``getattr``, ``list()``, the object's own text) or the
IR as written here; the fast paths must give what the slow ones give.
"""

from __future__ import annotations

import pytest
import tvm

from relayviz_instrument.serialize.reflection import (ARRAY, INT_IMM, TIR_VAR, classes, dict_attrs_items, field,
                                                      items, map_items, masked_text, object_fields, object_key,
                                                      optional_field, type_key)

#: TVM 0.2x (apache-tvm) calls TIR ``tvm.tirx``.
NEW_TVM = hasattr(tvm, "tirx")
TIR = tvm.tirx if NEW_TVM else tvm.tir


def test_a_field_is_the_object_getattr_reaches() -> None:
    n, m = TIR.Var("n", "int64"), TIR.Var("m", "int64")
    expr = n * 2 - m
    assert object_key(field(expr, "a")) == object_key(expr.a)
    assert object_key(field(expr, "b")) == object_key(m)
    assert int(field(field(expr, "a"), "b").value) == 2


def test_items_are_the_elements_list_gives_in_order() -> None:
    n, m = TIR.Var("n", "int64"), TIR.Var("m", "int64")
    array = tvm.runtime.convert([n, m, n])
    assert isinstance(array, ARRAY)
    assert [object_key(x) for x in items(array)] == [object_key(x) for x in list(array)]
    assert [object_key(x) for x in items(array)] == [object_key(n), object_key(m), object_key(n)]
    assert items(tvm.runtime.convert([])) == []
    assert items((1, 2)) == [1, 2]  # a Python sequence passes through


@pytest.mark.skipif(not NEW_TVM, reason="tvm-ffi (TVM 0.2x) only: older TVMs have no per-call setting")
def test_arrays_are_read_through_handles_of_our_own_that_keep_the_gil() -> None:
    import tvm_ffi

    from relayviz_instrument.serialize import reflection

    # Our handles keep Python's lock through the call (taking it back costs more than the read)...
    assert reflection._ARRAY_ITEM.release_gil is False and reflection._ARRAY_SIZE.release_gil is False
    # ...and tvm-ffi's own functions, which TVM and the user's code call, are left as they were.
    assert reflection._ARRAY_ITEM is not tvm_ffi._ffi_api.ArrayGetItem
    assert tvm_ffi._ffi_api.ArrayGetItem.release_gil is True and tvm_ffi._ffi_api.ArraySize.release_gil is True
    n = TIR.Var("n", "int64")
    assert [object_key(x) for x in items(tvm.runtime.convert([n, n]))] == [object_key(n)] * 2


def test_map_items_are_the_pairs_items_gives_in_order() -> None:
    x = TIR.Var("x", "int64")
    funcs = {f"f{i}": TIR.PrimFunc([x], TIR.Evaluate(x + i)) for i in range(3)}
    mod = tvm.IRModule(funcs)
    pairs = map_items(mod.functions)
    assert [(object_key(k), object_key(v)) for k, v in pairs] == [
        (object_key(k), object_key(v)) for k, v in mod.functions.items()]
    assert sorted(str(k.name_hint) for k, _ in pairs) == ["f0", "f1", "f2"]
    assert map_items(tvm.IRModule({}).functions) == []


def test_an_optional_field_is_none_where_the_class_lacks_it_and_the_field_where_it_has_it() -> None:
    n = TIR.Var("n", "int64")
    expr = n + 1
    for _ in range(2):  # the second read goes the way the first found
        assert optional_field(expr, "no_such_field") is None
        assert object_key(optional_field(expr, "a")) == object_key(n)
        assert optional_field(n, "name") == getattr(n, "name", None)


def test_object_key_is_identity_not_structure() -> None:
    one, other_one = TIR.const(1, "int64"), TIR.const(1, "int64")
    assert str(one) == str(other_one) and not one.same_as(other_one)
    assert object_key(one) != object_key(other_one)
    assert object_key(one) == object_key(one)
    n = TIR.Var("n", "int64")
    expr = n + 1
    assert object_key(expr.a) == object_key(n)  # another Python wrapper of the same object


def test_type_keys_are_tvms_names_for_the_classes() -> None:
    n = TIR.Var("n", "int64")
    # TVM 0.2x registers TIR arithmetic under "prim." and the variable under "ir.".
    assert type_key(n - 1) == ("prim.Sub" if NEW_TVM else "tir.Sub")
    assert type_key(n) == ("ir.Var" if NEW_TVM else "tir.Var")


def test_object_fields_list_the_reflected_fields_base_class_first() -> None:
    relax = pytest.importorskip("tvm.relax")
    sinfo = relax.TensorStructInfo if hasattr(relax, "TensorStructInfo") else relax.TensorType
    x = relax.Var("x", sinfo([1, 3, 8, 8], "float32"))
    w = relax.Var("w", sinfo([4, 3, 3, 3], "float32"))
    attrs = relax.op.nn.conv2d(x, w, padding=1).attrs
    assert object_fields(attrs) == ["strides", "padding", "dilation", "groups", "data_layout", "kernel_layout",
                                    "out_layout", "out_dtype"]
    if hasattr(attrs, "keys"):  # TVM 0.16's own list of the fields
        assert object_fields(attrs) == [str(k) for k in attrs.keys()]  # noqa: SIM118 -- a TVM Attrs, not a dict
    fields = object_fields(TIR.Var("n", "int64") - 1)
    assert {"a", "b", "span"} <= set(fields) and fields.index("a") < fields.index("b")


def test_dict_attrs_items_are_every_entry_by_name() -> None:
    func = TIR.PrimFunc([], TIR.Evaluate(0)).with_attr("zeta", 3).with_attr("alpha", "text").with_attr("mid", 1.5)
    entries = dict_attrs_items(func.attrs)
    assert [name for name, _ in entries] == ["alpha", "mid", "zeta"]
    assert [str(value) if name == "alpha" else float(getattr(value, "value", value)) for name, value in entries] == [
        "text", 1.5, 3.0]


def test_classes_are_those_this_tvm_has() -> None:
    assert classes("ir.Op", "ir.NoSuchClass", "no_such_module.Op") == (tvm.ir.Op,)
    assert classes() == ()
    assert isinstance(TIR.const(2, "int32"), INT_IMM)
    assert isinstance(TIR.Var("n", "int64"), TIR_VAR)
    assert not isinstance(TIR.const(2, "int32"), TIR_VAR)


def test_masked_text_hides_addresses_and_keeps_the_rest() -> None:
    text = "Target(id=55d1837c0800, kind='llvm') at 0x7f3a2b1c9e40, small 0x1f"
    assert masked_text(text) == "Target(id=0x?, kind='llvm') at 0x?, small 0x1f"
    n = TIR.Var("n", "int64")
    assert masked_text(n + 1) == str(n + 1)  # nothing to mask: TVM's own text
