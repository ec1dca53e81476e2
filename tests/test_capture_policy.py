"""The snapshot policy on real Relay modules, without a PassContext: when the previous snapshot
stands for a module, and when a new one is taken. The policy works on module states (what a
module holds, read by ``equality.ModuleFacts``); ``state(mod)`` reads one, as the instrument does
at each callback."""

from __future__ import annotations

from typing import Any, List

import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from relayviz_instrument.capture.equality import ModuleFacts
from relayviz_instrument.capture.policy import Snapshot, SnapshotPolicy, has_untyped
from relayviz_instrument.serialize.relay import RelaySerializer
from relayviz_instrument.store import MemoryStore


class Taker:
    """Serializes and stores modules as the instrument does, counting how often it is asked."""

    def __init__(self) -> None:
        self.serializer = RelaySerializer()
        self.store = MemoryStore()
        self.taken: List[Any] = []

    def __call__(self, state: ModuleFacts) -> Snapshot:
        self.taken.append(state.mod)
        doc = self.serializer.module(state.mod)
        return Snapshot(state, self.store.put(doc), doc)


def state(mod: Any) -> ModuleFacts:
    """What ``mod`` holds now."""
    return ModuleFacts(mod)


def _equal(a: ModuleFacts, b: ModuleFacts) -> bool:
    """TVM's comparison of what two states hold (modules made around their held functions: the
    module objects may hold something else by now)."""
    def held(facts: ModuleFacts) -> Any:
        return tvm.IRModule(facts.held.functions, facts.held.types)

    return bool(tvm.ir.structural_equal(held(a), held(b)))


class Asked(List[Any]):
    """``structural_equal`` as the policy's comparison, keeping every pair it was asked about."""

    def __call__(self, a: ModuleFacts, b: ModuleFacts) -> bool:
        self.append((a, b))
        return _equal(a, b)


@pytest.fixture
def typed_mlp() -> Any:
    mod, _ = tvm.relay.testing.mlp.get_workload(batch_size=1)
    return relay.transform.InferType()(mod)


def test_the_same_module_is_never_serialized_twice(typed_mlp) -> None:
    take = Taker()
    policy = SnapshotPolicy(take, _equal)
    before = policy.before(state(typed_mlp))
    after, changed = policy.after(before, state(typed_mlp))
    assert after is before and changed is False
    assert policy.before(state(typed_mlp)) is before and len(take.taken) == 1


def test_a_structurally_equal_copy_reuses_the_snapshot(typed_mlp) -> None:
    take = Taker()
    policy = SnapshotPolicy(take, _equal)
    before = policy.before(state(typed_mlp))
    copy = tvm.IRModule.from_expr(typed_mlp["main"])  # a new object, the same program
    assert not copy.same_as(typed_mlp)
    after, changed = policy.after(before, state(relay.transform.InferType()(copy)))
    assert changed is False and after.ref == before.ref and len(take.taken) == 1


def test_a_rewrite_is_a_new_snapshot_and_a_change(typed_mlp) -> None:
    take = Taker()
    policy = SnapshotPolicy(take, _equal)
    before = policy.before(state(typed_mlp))
    fused = relay.transform.FuseOps(2)(typed_mlp)
    after, changed = policy.after(before, state(fused))
    assert changed is True and after.ref != before.ref and len(take.taken) == 2
    assert policy.last is after and policy.before(state(fused)) is after  # the next pass receives it


def test_types_filled_in_by_inference_are_a_change_although_the_modules_are_equal() -> None:
    x = relay.var("x", shape=(1, 8), dtype="float32")
    w = relay.var("w", shape=(4, 8), dtype="float32")
    body = relay.nn.relu(relay.nn.dense(x, w))
    untyped = tvm.IRModule.from_expr(relay.Function([x, w], body, ret_type=relay.TensorType((1, 4), "float32")))
    take = Taker()
    policy = SnapshotPolicy(take, _equal)
    before = policy.before(state(untyped))
    assert before.untyped and has_untyped(before.doc)
    typed = relay.transform.InferType()(untyped)
    assert tvm.ir.structural_equal(untyped, typed)  # equal to TVM: types are not compared
    after, changed = policy.after(before, state(typed))
    assert changed is True and not after.untyped and after.ref != before.ref


def test_when_tvm_cannot_compare_the_snapshots_decide(typed_mlp) -> None:
    take = Taker()
    policy = SnapshotPolicy(take, lambda a, b: None)
    before = policy.before(state(typed_mlp))
    after, changed = policy.after(before, state(tvm.IRModule.from_expr(typed_mlp["main"])))
    assert changed is False and after.ref == before.ref and len(take.taken) == 2
    after, changed = policy.after(before, state(relay.transform.FuseOps(2)(typed_mlp)))
    assert changed is True


def test_a_sequential_returns_what_its_last_inner_pass_made(typed_mlp) -> None:
    take = Taker()
    policy = SnapshotPolicy(take, _equal)
    outer = policy.before(state(typed_mlp))  # the Sequential begins
    inner = policy.before(state(typed_mlp))  # its first pass begins on the same module
    fused = relay.transform.FuseOps(2)(typed_mlp)
    inner_after, _ = policy.after(inner, state(fused))
    outer_after, changed = policy.after(outer, state(fused))  # the Sequential ends with the same object
    assert outer_after is inner_after and changed is True and len(take.taken) == 2


def test_forget_drops_the_ir_objects(typed_mlp) -> None:
    policy = SnapshotPolicy(Taker(), _equal)
    policy.before(state(typed_mlp))
    policy.forget()
    assert policy.last is None


def test_a_sequential_ending_on_a_module_found_equal_before_is_not_compared_again(typed_mlp) -> None:
    """A Sequential whose inner pass returned an equal module: the Sequential's result is that
    module, known equal to the Sequential's input through the inner event, so no third walk."""
    take, asked = Taker(), Asked()
    policy = SnapshotPolicy(take, asked)
    outer = policy.before(state(typed_mlp))  # the Sequential begins
    inner = policy.before(state(typed_mlp))  # its inner pass receives the same module
    again = relay.transform.InferType()(typed_mlp)  # new function objects, the same program
    inner_after, inner_changed = policy.after(inner, state(again))
    assert inner_changed is False and len(asked) == 1
    outer_after, outer_changed = policy.after(outer, state(again))  # the Sequential returns the inner result
    assert outer_after is inner_after and outer_changed is False
    assert len(asked) == 1 and len(take.taken) == 1
    # A rewrite inside is still a change of the Sequential, whatever it returns.
    fused = relay.transform.FuseOps(2)(again)
    inner2 = policy.before(state(again))
    policy.after(inner2, state(fused))
    assert policy.after(outer_after, state(fused))[1] is True


def test_a_pass_run_again_on_one_input_finds_it_without_a_comparison(typed_mlp) -> None:
    """TVM's tests and fixed-point loops run a pass again and again on one module: each run's
    input is found among the recent module states, and only its output is compared."""
    take, asked = Taker(), Asked()
    policy = SnapshotPolicy(take, asked)
    first = policy.before(state(typed_mlp))
    for run in range(6):  # more runs than the recent modules kept: the input stays among them
        before = policy.before(state(typed_mlp))
        assert before.ref == first.ref and before.mod.same_as(typed_mlp)
        after, changed = policy.after(before, state(relay.transform.FoldConstant()(typed_mlp)))
        assert changed is False and after.ref == first.ref
        assert len(asked) == run + 1  # the output only
    assert len(take.taken) == 1


def test_relay_type_inference_edits_its_input_in_place_which_is_compared_again(typed_mlp) -> None:
    """TVM 0.16's InferType puts newly typed functions into the module it is given as well as
    into the one it returns: run again on that module, the input is another state each time
    (compared, found equal, never serialized again), where trusting the module object would
    take it for the state the last snapshot was read of."""
    take, asked = Taker(), Asked()
    policy = SnapshotPolicy(take, asked)
    first = policy.before(state(typed_mlp))
    for _ in range(3):
        before = policy.before(state(typed_mlp))
        assert before.ref == first.ref
        held = before.state.held.functions
        after, changed = policy.after(before, state(relay.transform.InferType()(typed_mlp)))
        assert changed is False and after.ref == first.ref
        assert not held.same_as(typed_mlp.functions)  # the input was edited in place
    assert len(asked) == 1 + 2 * 2  # the first output; then each run's input and output
    assert len(take.taken) == 1


# -- a module edited in place: another state of the same object ------------------------------------

def _doubled(mod: Any) -> Any:
    """``main`` with its result doubled: a real rewrite of the function."""
    main = mod["main"]
    return relay.Function(main.params, relay.multiply(main.body, relay.const(2.0)), main.ret_type)


def test_a_pass_that_edits_its_input_in_place_and_returns_it_changed_the_module(typed_mlp) -> None:
    """``mod[gv] = f; return mod``: the same module object, holding another function. Holding the
    map of functions the input state was read from makes the edit give the module a new map."""
    take = Taker()
    policy = SnapshotPolicy(take, _equal)
    before = policy.before(state(typed_mlp))
    typed_mlp[typed_mlp.get_global_var("main")] = _doubled(typed_mlp)  # the pass's edit
    after, changed = policy.after(before, state(typed_mlp))
    assert changed is True and after.ref != before.ref and len(take.taken) == 2
    assert "multiply" in str(after.doc) and "multiply" not in str(before.doc)
    # The input's snapshot still stands for what the module held then, not what it holds now.
    assert not before.state.current() and after.state.current()
    assert policy.before(state(typed_mlp)) is after  # the next pass receives the edited module


def test_an_edit_in_place_between_two_passes_is_a_new_snapshot(typed_mlp) -> None:
    """Code between passes that edits the module the last pass returned: the next pass's input
    is not the last snapshot, though it is the same module object."""
    take = Taker()
    policy = SnapshotPolicy(take, _equal)
    before = policy.before(state(typed_mlp))
    after, changed = policy.after(before, state(typed_mlp))
    assert changed is False
    typed_mlp[typed_mlp.get_global_var("main")] = _doubled(typed_mlp)  # the code between passes
    following = policy.before(state(typed_mlp))
    assert following is not after and following.ref != after.ref and len(take.taken) == 2


def test_a_module_edited_in_place_to_hold_the_same_functions_again_is_no_change(typed_mlp) -> None:
    """``mod[gv] = mod[gv]``: a new map holding the very same function: the same program."""
    take, asked = Taker(), Asked()
    policy = SnapshotPolicy(take, asked)
    before = policy.before(state(typed_mlp))
    gv = typed_mlp.get_global_var("main")
    typed_mlp[gv] = typed_mlp[gv]
    after, changed = policy.after(before, state(typed_mlp))
    assert changed is False and after.ref == before.ref and len(take.taken) == 1
