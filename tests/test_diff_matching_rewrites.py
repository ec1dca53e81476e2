"""The operator rewrite phase of the matcher (diff/matching/rewrites.py): a call a pass turned
into a call of another operator of the same role is paired with it, one for one, however many
alike blocks the program repeats."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from matchstates import paired, run_until, state
from relayviz_instrument.diff.matching.rewrites import pair_rewrites, role, same_role

X86 = "llvm -mtriple=x86_64-linux-gnu -mcpu=core-avx2"


def alike_blocks(blocks: int) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """``blocks`` alike conv2d+relu blocks in a row (weights bound), before and after
    AlterOpLayout for AVX2, as RelayViz documents."""
    import numpy as np
    import tvm
    from tvm import relay

    from relayviz_instrument import to_relayviz

    x = relay.var("x", shape=(1, 16, 16, 16))
    y = x
    rng = np.random.default_rng(0)
    for _ in range(blocks):
        w = relay.const(rng.standard_normal((16, 16, 3, 3)).astype("float32"))
        y = relay.nn.relu(relay.nn.conv2d(y, w, padding=(1, 1), channels=16, kernel_size=(3, 3)))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    t = relay.transform
    with tvm.transform.PassContext(opt_level=3), tvm.target.Target(X86):
        before = t.InferType()(mod)
        after = t.InferType()(t.AlterOpLayout()(before))
    return to_relayviz(before), to_relayviz(after)


def calls(doc: Dict[str, Any], op: str) -> List[int]:
    nodes = doc["nodes"]
    return [i for i, n in enumerate(nodes)
            if n["node_kind"] == "Call" and nodes[n["op"]].get("name") == op]


def test_pair_rewrites_pairs_each_convolution_with_its_blocked_form() -> None:
    a, b = alike_blocks(6)
    st = state(a, b)
    run_until(st, "pair_rewrites")
    made = paired(st)
    convs, blocked = calls(a, "nn.conv2d"), calls(b, "nn.contrib_conv2d_NCHWc")
    assert len(convs) == len(blocked) == 6
    assert not made & {(x, y) for x in convs for y in blocked}  # no other phase pairs them
    pair_rewrites(st)
    assert paired(st) - made == set(zip(convs, blocked))


def test_roles_of_operators() -> None:
    assert role("nn.contrib_conv2d_NCHWc") == "conv2d_NCHWc" and role("qnn.conv2d") == "conv2d"
    assert role("nn.contrib_depthwise_conv2d_NCHWc") == "conv2d_NCHWc"
    assert same_role("nn.conv2d", "nn.contrib_conv2d_NCHWc") and same_role("nn.dense", "nn.contrib_dense_pack")
    assert same_role("qnn.conv2d", "nn.conv2d")
    assert not same_role("nn.conv2d", "nn.conv2d") and not same_role("nn.conv2d", "nn.dense")
    assert not same_role("nn.relu", "nn.conv2d_transpose")
