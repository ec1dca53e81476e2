"""The cases the first diff engine got wrong (issue 12), on real tvm.relay.testing models.

Each test states what the right account of a pass or an edit is, from what the pass or the
edit does, and checks the diff gives it: calls whose type changed are changed, a block
duplicated among blocks named alike is one inserted block, swapped arguments are one rewired
node, Let-bound variables stay with their Lets.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Dict, List, Tuple

import pytest
import tvm
import tvm.relay.testing
from tvm import relay

from diffgraphs import conv_bn_relu_chain, fold_constant_chain
from relayviz_instrument import to_relayviz
from relayviz_instrument.diff import DIFF_VERSION, GraphDiff, diff, index_document

X86 = "llvm -mtriple=x86_64-linux-gnu"


def op_name(doc: Dict[str, Any], nid: int) -> Any:
    node = doc["nodes"][nid]
    if node["node_kind"] != "Call":
        return node["node_kind"]
    callee = doc["nodes"][node["op"]]
    return callee.get("name") if callee["node_kind"] == "Op" else "Call"


def anonymous(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The document with every variable named alike, as anonymous frontends name them."""
    out = copy.deepcopy(doc)
    for node in out["nodes"]:
        if node["node_kind"] == "Var":
            node["name"] = "x"
    return out


@pytest.fixture(scope="module")
def alter_op_layout() -> Tuple[Dict[str, Any], Dict[str, Any], GraphDiff]:
    """ResNet-50 (parameters unbound) before and after AlterOpLayout for x86, as relay.optimize
    gets there, and their diff."""
    mod, _ = tvm.relay.testing.resnet.get_workload(num_layers=50, batch_size=1)
    t = relay.transform
    prepare = tvm.transform.Sequential([t.InferType(), t.SimplifyInference(), t.FoldConstant(), t.FoldScaleAxis(),
                                        t.CanonicalizeOps(), t.InferType()])
    with tvm.transform.PassContext(opt_level=3), tvm.target.Target(X86):
        before = prepare(mod)
        after = t.InferType()(t.AlterOpLayout()(before))
    a, b = to_relayviz(before), to_relayviz(after)
    return a, b, diff(a, b)


def rewritten(a: Dict[str, Any], b: Dict[str, Any], result: GraphDiff) -> List[Tuple[int, int]]:
    """The pairs of calls of two operators (one rewritten into the other), before id first."""
    return [(m.before, m.after) for m in result.changed if op_name(a, m.before) != op_name(b, m.after)]


@pytest.mark.slow
def test_alter_op_layout_changes_the_calls_whose_layout_changed(alter_op_layout) -> None:
    a, b, result = alter_op_layout
    removed = Counter(op_name(a, x) for x in result.removed if a["nodes"][x]["node_kind"] == "Call")
    added = Counter(op_name(b, y) for y in result.added if b["nodes"][y]["node_kind"] == "Call")
    # AlterOpLayout rewrites each convolution (and the dense) into its blocked form, one for
    # one, and adds layout_transform and expand_dims; the relu, add and multiply around them
    # stay, in NCHWc. Nothing is removed.
    assert not removed
    assert set(added) == {"layout_transform", "expand_dims"}
    pairs = Counter((op_name(a, x), op_name(b, y)) for x, y in rewritten(a, b, result))
    calls_a = Counter(op_name(a, x) for x in range(len(a["nodes"])))
    calls_b = Counter(op_name(b, y) for y in range(len(b["nodes"])))
    assert pairs == {("nn.conv2d", "nn.contrib_conv2d_NCHWc"): calls_a["nn.conv2d"],
                     ("nn.dense", "nn.contrib_dense_pack"): 1}
    assert calls_a["nn.conv2d"] == calls_b["nn.contrib_conv2d_NCHWc"] == 53
    # The operator counts still say what the pass did to them.
    assert result.op_delta["nn.conv2d"] == -53 and result.op_delta["nn.contrib_conv2d_NCHWc"] == 53
    assert result.op_delta["nn.dense"] == -1 and result.op_delta["nn.contrib_dense_pack"] == 1
    changed = Counter(op_name(a, m.before) for m in result.changed)
    assert changed["nn.relu"] == calls_a["nn.relu"] == 50  # every relu: NCHW -> NCHW16c
    assert changed["add"] >= 50 and changed["multiply"] >= 16
    assert all(any(c.field == "type" for c in m.fields) for m in result.changed
               if op_name(a, m.before) in ("nn.relu", "add", "multiply"))


def blocked(shape: List[int]) -> Tuple[int, ...]:
    """An NCHW[x]c shape as NCHW."""
    return (shape[0], shape[1] * shape[4], shape[2], shape[3]) if len(shape) == 5 else tuple(shape)


@pytest.mark.slow
def test_alter_op_layout_pairs_each_convolution_with_its_own(alter_op_layout) -> None:
    # One to one however many alike bottlenecks repeat: the k-th convolution in the order of
    # the document is paired with the k-th blocked one, of the same output shape once unblocked.
    a, b, result = alter_op_layout
    pairs = dict(rewritten(a, b, result))
    convs_a = [x for x in range(len(a["nodes"])) if op_name(a, x) == "nn.conv2d"]
    convs_b = [y for y in range(len(b["nodes"])) if op_name(b, y) == "nn.contrib_conv2d_NCHWc"]
    assert [pairs.get(x) for x in convs_a] == convs_b
    for x, y in zip(convs_a, convs_b):
        assert blocked(b["nodes"][y]["type"]["shape"]) == tuple(a["nodes"][x]["type"]["shape"])


@pytest.mark.slow
def test_alter_op_layout_hunks_hold_one_convolution_each(alter_op_layout) -> None:
    a, b, result = alter_op_layout
    pairs = dict(rewritten(a, b, result))
    holding = Counter()
    for hunk in result.hunks:
        convs = [x for x, _ in hunk.matched if x in pairs]
        assert len(convs) <= 1, hunk.label
        holding[len(convs)] += 1
        if hunk.kind == "rewired":  # a lone rewired node is not how a layout change reads
            pytest.fail(f"lone rewired hunk: {hunk.label}")
        if convs:  # the convolution rewritten, with the layout transforms put around it
            assert hunk.kind == "changed" and " → nn.contrib_" in hunk.label
            assert all(op_name(b, y) == "layout_transform" for y in hunk.added if b["nodes"][y]["node_kind"] == "Call")
    assert holding[1] == 54  # 53 convolutions and the dense


def resnet50_units(units: List[int]) -> Dict[str, Any]:
    from tvm.relay.testing import resnet

    net = resnet.resnet(units=units, num_stages=4, filter_list=[64, 256, 512, 1024, 2048], num_classes=10,
                        data_shape=(1, 3, 32, 32), bottle_neck=True, layout="NCHW", dtype="float32")
    return to_relayviz(relay.transform.InferType()(tvm.IRModule.from_expr(net)))


@pytest.fixture(scope="module")
def resnet50_bottlenecks() -> Dict[str, Dict[str, Any]]:
    """ResNet-50 (32x32), and with one bottleneck more (or less) in its second stage."""
    return {"base": resnet50_units([3, 4, 6, 3]), "more": resnet50_units([3, 5, 6, 3]),
            "less": resnet50_units([3, 3, 6, 3])}


@pytest.mark.slow
@pytest.mark.parametrize("names", ["named", "anonymous"])
@pytest.mark.parametrize("edit", ["more", "less"])
def test_a_bottleneck_repeated_or_deleted_is_one_block(resnet50_bottlenecks, names: str, edit: str) -> None:
    base, other = resnet50_bottlenecks["base"], resnet50_bottlenecks[edit]
    if names == "anonymous":
        base, other = anonymous(base), anonymous(other)
    before, after = (base, other) if edit == "more" else (other, base)
    result = diff(before, after)
    # A bottleneck: three conv2d, three batch_norm (and their TupleGetItem), three relu, an add,
    # and the fifteen parameters of its convolutions and norms: 28 nodes, all added.
    block = Counter({"nn.conv2d": 3, "nn.batch_norm": 3, "TupleGetItem": 3, "nn.relu": 3, "add": 1, "Var": 15})
    assert not result.removed and not result.changed
    assert Counter(op_name(after, y) for y in result.added if after["nodes"][y]["node_kind"] != "Op") == block
    assert [h.kind for h in result.hunks] == ["inserted"]
    # the block after it reads the new one (its first norm and its shortcut add); main's
    # parameter list has new entries
    assert len(result.rewired) <= 3


def residual_chain(repeats: List[int], first: str) -> Dict[str, Any]:
    """``first`` (relu or tanh) of the input, then blocks ``i`` of relu and a residual unit
    (conv2d, sigmoid, add of the unit's input), unit ``i`` repeated ``repeats[i]`` times with
    one weight: a repeated unit shares its weight with the original."""
    x = relay.var("data", shape=(1, 4, 8, 8))
    params = [x]
    y = relay.nn.relu(x) if first == "relu" else relay.tanh(x)
    for i, count in enumerate(repeats):
        w = relay.var(f"w{i}", shape=(4, 4, 3, 3))
        params.append(w)
        y = relay.nn.relu(y)
        for _ in range(count):
            y = relay.add(y, relay.sigmoid(relay.nn.conv2d(y, w, padding=(1, 1))))
    return to_relayviz(relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, y))))


@pytest.mark.parametrize("names", ["named", "anonymous"])
@pytest.mark.parametrize("first", ["relu", "tanh"])
def test_a_unit_repeated_with_its_weight_is_the_later_copy(names: str, first: str) -> None:
    """The copy of a unit reads the original's output, so the copy is what was added and the
    relu above it is the one node rewired (the other reading rewires the original's conv2d
    and add). With the first call replaced too (``tanh``), the chains differ below the unit:
    the block alignment must not take the run of units from its other end."""
    before, after = residual_chain([1, 1, 1, 1], "relu"), residual_chain([1, 2, 1, 1], first)
    if names == "anonymous":
        before, after = anonymous(before), anonymous(after)
    result = diff(before, after)
    calls = Counter(op_name(after, y) for y in result.added if after["nodes"][y]["node_kind"] == "Call")
    assert calls == Counter({"nn.conv2d": 1, "sigmoid": 1, "add": 1, **({"tanh": 1} if first == "tanh" else {})})
    added = set(result.added)
    conv = next(y for y in added if op_name(after, y) == "nn.conv2d")
    # the new unit is the later copy: it reads the original's add, which is paired
    assert op_name(after, after["nodes"][conv]["args"][0]) == "add" and after["nodes"][conv]["args"][0] not in added
    rewired = list(result.rewired)
    assert [op_name(before, m.before) for m in rewired] == ["nn.relu"] * (2 if first == "tanh" else 1)
    assert all(any(i in added for i in after["nodes"][m.after]["args"]) for m in rewired)
    assert not result.changed
    assert [op_name(before, x) for x in result.removed] == (["nn.relu"] if first == "tanh" else [])


@pytest.fixture(scope="module")
def lstm() -> Dict[str, Any]:
    """The LSTM of tvm.relay.testing: Let-bound variables all through."""
    return to_relayviz(tvm.relay.testing.lstm.get_workload(iterations=4, num_hidden=8)[0])


def two_variable_adds(doc: Dict[str, Any]) -> List[int]:
    nodes = doc["nodes"]
    return [i for i, n in enumerate(nodes) if op_name(doc, i) == "add"
            and all(nodes[x]["node_kind"] == "Var" for x in n["args"])]


@pytest.mark.parametrize("names", ["named", "anonymous"])
def test_swapped_arguments_are_one_rewired_node(lstm, names: str) -> None:
    adds = two_variable_adds(lstm)
    assert adds
    for target in adds:
        swapped = copy.deepcopy(lstm)
        swapped["nodes"][target]["args"].reverse()
        before, after = (anonymous(lstm), anonymous(swapped)) if names == "anonymous" else (lstm, swapped)
        result = diff(before, after)
        assert [(m.before, m.after) for m in result.rewired] == [(target, target)]
        assert not result.added and not result.removed and not result.changed
        assert [(h.kind, h.label) for h in result.hunks] == [("rewired", "add rewired")]


def test_let_bound_variables_pair_by_their_binding(lstm) -> None:
    """Every variable named alike: each Let-bound variable still pairs with the variable its
    Let's partner binds, also when the document is numbered otherwise."""
    before = anonymous(lstm)
    after = copy.deepcopy(before)
    after["nodes"][two_variable_adds(lstm)[0]]["args"].reverse()
    result = diff(before, after)
    lets = [i for i, n in enumerate(before["nodes"]) if n["node_kind"] == "Let"]
    assert lets
    for let in lets:
        mine, theirs = before["nodes"][let], after["nodes"][result.mapping[let]]
        assert result.mapping[mine["variable"]] == theirs["variable"]
        assert result.mapping[mine["value"]] == theirs["value"]


def test_simplify_inference_over_a_chain_replaces_each_batch_norm() -> None:
    before, after = conv_bn_relu_chain(40), conv_bn_relu_chain(40, simplified=True)
    result = diff(before, after)
    assert [h.kind for h in result.hunks] == ["replaced"] * 40
    for hunk in result.hunks:
        assert Counter(op_name(before, x) for x in hunk.removed) == {"nn.batch_norm": 1, "TupleGetItem": 1}
    # the relu after each norm stays, reading the expansion: 40 rewired relus
    assert Counter(op_name(before, m.before) for m in result.rewired) == {"nn.relu": 40}
    assert not result.changed


def test_fold_constant_replaces_each_product_of_constants() -> None:
    before, after = fold_constant_chain(60), fold_constant_chain(60, folded=True)
    result = diff(before, after)
    assert [(h.kind, h.label) for h in result.hunks] == [("replaced", "multiply+Const×2 → Const")] * 60
    assert Counter(op_name(before, m.before) for m in result.rewired) == {"add": 60}
    assert not result.changed  # no old constant is taken for a new one


def test_the_chain_documents_are_what_tvm_writes() -> None:
    """benchmarks/bench_diff.py times conv_bn_relu_chain: it is TVM's own output."""
    x = relay.var("data", shape=(1, 8, 8, 8))
    for i in range(3):
        w = relay.var(f"w{i}", shape=(8, 8, 3, 3))
        x = relay.nn.conv2d(x, w, padding=(1, 1), channels=8, kernel_size=(3, 3))
        stats = [relay.var(f"bn{i}_{n}", shape=(8,)) for n in ("gamma", "beta", "mean", "var")]
        x = relay.nn.relu(relay.nn.batch_norm(x, *stats)[0])
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(x), x)))
    simplified = relay.transform.InferType()(relay.transform.SimplifyInference()(mod))
    assert to_relayviz(mod) == conv_bn_relu_chain(3)
    assert to_relayviz(simplified) == conv_bn_relu_chain(3, simplified=True)


def test_an_indexed_document_gives_the_same_diff(lstm) -> None:
    after = copy.deepcopy(lstm)
    after["nodes"][two_variable_adds(lstm)[0]]["args"].reverse()
    plain = diff(lstm, after)
    indexed = index_document(after)
    assert diff(index_document(lstm), indexed).to_json() == plain.to_json()
    assert diff(indexed, lstm).to_json() == diff(after, lstm).to_json()  # one index, both sides
    assert isinstance(DIFF_VERSION, int) and DIFF_VERSION >= 2


def conv_chain(units: int, skip: Tuple[int, int] = (0, 0)) -> Dict[str, Any]:
    """``units`` times relu(conv2d) of the unit before, one weight each; with ``skip=(i, j)``,
    unit ``j`` reads unit ``i``'s output, and the units between are dead (their weights stay
    in the parameter list, as dead code elimination leaves them)."""
    x = relay.var("data", shape=(1, 4, 8, 8))
    weights = [relay.var(f"w{i}", shape=(4, 4, 3, 3)) for i in range(units)]
    outputs = [x]
    for i, w in enumerate(weights, 1):
        source = outputs[skip[0]] if i == skip[1] else outputs[-1]
        outputs.append(relay.nn.relu(relay.nn.conv2d(source, w, padding=(1, 1))))
    func = relay.Function([x] + weights, outputs[-1])
    return to_relayviz(relay.transform.InferType()(tvm.IRModule.from_expr(func)))


@pytest.mark.parametrize("names", ["named", "anonymous"])
def test_units_left_dead_in_a_run_of_alike_units_are_where_their_weights_are(names: str) -> None:
    """A rewire past two of eight alike units: the weights of all stay in the list, so which
    units are dead is told by where their weights are, not by the run (whose last units
    would otherwise read as the ones deleted)."""
    before, after = conv_chain(8), conv_chain(8, skip=(3, 6))
    if names == "anonymous":
        before, after = anonymous(before), anonymous(after)
    result = diff(before, after)
    params_a = before["nodes"][before["functions"]["main"]]["params"]
    params_b = after["nodes"][after["functions"]["main"]]["params"]
    assert [result.mapping.get(p) for p in params_a] == params_b
    assert not result.added and Counter(op_name(before, x) for x in result.removed) == {"nn.conv2d": 2, "nn.relu": 2}
    assert [op_name(before, m.before) for m in result.rewired] == ["nn.conv2d"]
