"""Whether a pass changed its module (capture/equality.py), on real modules: structural equality,
answered at once for the same function objects, and by the functions alone where the module's
attributes cannot be compared (late in relay.build)."""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest
import tvm

from conftest import needs_relax, needs_torch
from relayviz_instrument.capture.equality import _identical, _same_attrs, _same_functions, structurally_equal
from relayviz_instrument.demo.relax_models import relax_workload
from relayviz_instrument.serialize.reflection import dict_attrs_items


def _rebuilt(mod: tvm.IRModule, functions: Any = None) -> tvm.IRModule:
    """A new module object around ``functions`` (default: ``mod``'s own function objects), with
    ``mod``'s type definitions and its very attribute objects."""
    types = getattr(mod, "type_definitions", None)
    functions = mod.functions if functions is None else functions
    out = tvm.IRModule(functions, types) if types is not None else tvm.IRModule(functions)
    for key, value in dict_attrs_items(mod.attrs) if mod.attrs is not None else []:
        out = out.with_attr(key, value)
    return out


# -- any TVM with Relax --------------------------------------------------------------------------

@needs_relax
def test_the_same_functions_in_a_new_module_are_equal_at_once() -> None:
    mod = relax_workload("mlp")
    again = _rebuilt(mod)
    assert not again.same_as(mod)
    assert _same_attrs(mod, again) and _same_functions(mod, again)
    assert structurally_equal(mod, again) is True


def test_the_same_functions_under_new_global_vars_of_the_same_names_are_the_same_functions() -> None:
    tir = tvm.tirx if hasattr(tvm, "tirx") else tvm.tir
    x = tir.Var("x", "int64")
    f, g = tir.PrimFunc([x], tir.Evaluate(x + 1)), tir.PrimFunc([x], tir.Evaluate(x + 2))
    mod = tvm.IRModule({"f": f, "g": g})
    renamed = tvm.IRModule({"f": f, "g": g})  # new GlobalVar objects, the same names and functions
    assert not any(a.same_as(b) for a in mod.get_global_vars() for b in renamed.get_global_vars())
    assert _same_functions(mod, renamed) and _same_functions(renamed, mod)
    swapped = tvm.IRModule({"f": g, "g": f})  # the same function objects under the other names
    assert not _same_functions(mod, swapped)
    shared = _rebuilt(mod)  # the same GlobalVars: answered by address alone
    assert _same_functions(mod, shared)
    replaced = _rebuilt(mod, {gvar: (g if str(gvar.name_hint) == "f" else func)
                              for gvar, func in mod.functions.items()})
    assert not _same_functions(mod, replaced)


@needs_relax
def test_an_equal_program_made_again_is_equal_and_a_rewrite_is_not() -> None:
    from tvm import relax

    mod, twin = relax_workload("mlp"), relax_workload("mlp")  # two exports of one nn.Module: equal, not the same
    assert not _same_functions(mod, twin)
    assert structurally_equal(mod, twin) is True
    assert structurally_equal(mod, relax.transform.LegalizeOps()(mod)) is False


def test_identical_is_by_object_for_tvm_objects_and_by_type_and_value_for_the_rest() -> None:
    main = tvm.ir.GlobalVar("main")
    assert _identical(main, main) and not _identical(main, tvm.ir.GlobalVar("main"))
    assert _identical(1, 1) and _identical("llvm", "llvm")
    assert not _identical(1, True) and not _identical(1, 1.0) and not _identical(1, 2)


# -- Relay: late in relay.build, and type definitions ---------------------------------------------

class _LateModules(tvm.instrument.PassInstrument):
    """Keeps the first module a pass receives after relay.build attached ``main_func_info``."""

    def __init__(self) -> None:
        super().__init__()
        self.found: List[Tuple[str, Any]] = []

    def run_before_pass(self, mod: Any, info: Any) -> None:
        if not self.found and mod.attrs is not None and "main_func_info" in mod.attrs.keys():  # noqa: SIM118 (a DictAttrs answers neither `in` nor iteration)
            self.found.append((str(info.name), mod))


@pytest.fixture(scope="module")
def late_module() -> Any:
    """A module as a pass late in relay.build of the MLP receives it: it carries a FunctionInfo
    (``main_func_info``), on which TVM's structural_equal raises."""
    import tvm.relay.testing
    from tvm import relay

    mod, params = tvm.relay.testing.mlp.get_workload(batch_size=1)
    late = _LateModules()
    with tvm.transform.PassContext(opt_level=3, instruments=[late]):
        relay.build(mod, target="llvm -mtriple=x86_64-linux-gnu", params=params)
    assert late.found
    return late.found[0][1]


def test_tvm_cannot_compare_a_late_module_but_the_same_functions_and_attributes_are_equal(late_module) -> None:
    copy = tvm.ir.load_json(tvm.ir.save_json(late_module))
    with pytest.raises(TypeError):
        tvm.ir.structural_equal(late_module, copy)
    assert structurally_equal(late_module, _rebuilt(late_module)) is True


def test_attributes_that_are_other_objects_make_modules_not_comparable(late_module) -> None:
    copy = tvm.ir.load_json(tvm.ir.save_json(late_module))  # equal attributes, but new objects
    assert not _same_attrs(late_module, copy)
    assert structurally_equal(late_module, copy) is None


def test_with_the_same_attributes_the_functions_alone_are_compared(late_module) -> None:
    from tvm import relay

    main = late_module.get_global_var("main")
    equal_copy = tvm.ir.load_json(tvm.ir.save_json(late_module["main"]))
    with_copy = _rebuilt(late_module, {main: equal_copy})
    assert not _same_functions(late_module, with_copy)
    assert structurally_equal(late_module, with_copy) is True
    body = late_module["main"]
    negated = relay.Function(body.params, relay.negative(body.body), body.ret_type, body.type_params, body.attrs)
    assert structurally_equal(late_module, _rebuilt(late_module, {main: negated})) is False


def test_type_definitions_count_in_equality() -> None:
    from tvm import relay

    with_prelude = tvm.IRModule()
    relay.prelude.Prelude(with_prelude)
    assert len(with_prelude.type_definitions) > 0
    assert structurally_equal(with_prelude, _rebuilt(with_prelude)) is True
    without_types = tvm.IRModule(with_prelude.functions)
    assert not _same_functions(with_prelude, without_types)
    assert structurally_equal(with_prelude, without_types) is False


@needs_relax
def test_a_module_found_equal_takes_its_dialect_from_the_module_it_equals() -> None:
    """The output of a pass that changed nothing is the next pass's input: its dialect is the
    equal module's, and its functions are not read for it (they are, once the change test asks)."""
    from relayviz_instrument.capture.equality import ModuleReader

    mod = relax_workload("mlp")
    again = _rebuilt(mod)
    reader = ModuleReader()
    known = reader.facts(mod)
    assert known.ir == "relax"
    facts = reader.facts(again)
    reader.alias(facts, known)
    assert facts.ir == "relax" and facts._pairs is None
    assert reader.facts(again) is facts  # kept, with its dialect, for the next pass
    assert reader.equal(known, facts) is True and facts._pairs is not None
    # Facts whose dialect was never read have none to give: ``other``'s is read itself.
    other = reader.facts(_rebuilt(mod))
    reader.alias(other, ModuleReader().facts(mod))
    assert other._ir is None and other.ir == "relax"


@needs_relax
def test_the_facts_of_a_module_used_again_and_again_stay_read() -> None:
    """A pass run again and again on one input: each run's output is a new module, and the
    input's facts, used by every run, are not pushed out by them and read again."""
    from relayviz_instrument.capture.equality import ModuleReader

    mod = relax_workload("mlp")
    reader = ModuleReader(keep=2)
    first = reader.facts(mod)
    for _ in range(3):
        reader.facts(_rebuilt(mod))  # one run's output
        assert reader.facts(mod) is first  # the next run's input
    assert reader.facts(_rebuilt(mod)) is not first


# -- function by function, against TVM's module comparison ------------------------------------------

@tvm.instrument.pass_instrument
class _AgreesWithTVM:
    """At each pass event that changed the module object but kept its GlobalVars (where the
    change test compares function by function), checks the change test against TVM's module
    comparison, there and then: Relay passes go on to change modules in place."""

    def __init__(self) -> None:
        self.counts = {True: 0, False: 0}
        self.disagree: List[str] = []
        self._inputs: List[Any] = []

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self._inputs.append(mod)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        from relayviz_instrument.capture.equality import _STRUCTURAL_EQUAL, _TVM_ERRORS

        before = self._inputs.pop()
        gvars = {g.name_hint: g for g in before.get_global_vars()}
        after_gvars = mod.get_global_vars()
        if mod.same_as(before) or len(gvars) < 2 or len(after_gvars) != len(gvars) or not all(
                g.same_as(gvars.get(g.name_hint)) for g in after_gvars):
            return
        try:
            truth = bool(_STRUCTURAL_EQUAL(before, mod))
        except _TVM_ERRORS:
            return  # TVM cannot compare these (an attribute without structural equality)
        self.counts[truth] += 1
        if structurally_equal(before, mod) is not truth:
            self.disagree.append(f"{info.name}: TVM says {truth}")


@needs_relax
@pytest.mark.parametrize("workload", ["relax_llama", pytest.param("torch_resnet18", marks=needs_torch)])
def test_function_by_function_the_change_test_agrees_with_tvm_through_a_relax_compile(workload, request) -> None:
    # A pass that rewrites one function leaves the others the same objects: those are not
    # walked again (TVM's module comparison walks them all).
    from relayviz_instrument.capture import compile_relax
    from relayviz_instrument.demo.relax_models import relax_host_target

    check = _AgreesWithTVM()
    with tvm.transform.PassContext(opt_level=3, instruments=[check]):
        compile_relax(request.getfixturevalue(workload), target=relax_host_target())
    assert not check.disagree and check.counts[True] >= 3 and check.counts[False] >= 10, (check.disagree, check.counts)


def test_a_relay_module_is_compared_whole_as_tvm_does_through_relay_build(mlp) -> None:
    # Relay modules are not compared function by function: type inference's temporary @_tmp
    # shares main's parameters, and TVM's module comparison (which maps variables across
    # functions) finds the modules of two InferType events different where each function
    # alone is equal.
    from tvm import relay

    mod, params = mlp
    check = _AgreesWithTVM()
    with tvm.transform.PassContext(opt_level=3, instruments=[check]):
        relay.build(mod, target="llvm", params=params)
    assert not check.disagree and sum(check.counts.values()) >= 5, (check.disagree, check.counts)
