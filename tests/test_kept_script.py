"""A kept module's TVMScript is code from whoever wrote the trace: before the parser evaluates
it, it is checked to hold only what TVMScript printing writes (capture/script_allowlist.py).
Real scripts of Relax and TIR modules read back; a script with anything else is refused in
one line, and nothing in it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import orjson
import pytest
import tvm
from tvm import relax

from relayviz_instrument.capture.kept_module import TVMSCRIPT, keep_module, load_kept_module
from relayviz_instrument.errors import RelayVizTraceError
from relayviz_instrument.demo.relax_models import relax_workload


def _kept(mod: Any) -> Dict[str, Any]:
    form, data = keep_module(mod)
    assert form == TVMSCRIPT
    doc: Dict[str, Any] = orjson.loads(data)
    return doc


@pytest.fixture(scope="module")
def scripts() -> List[Dict[str, Any]]:
    """Relax as written, after LegalizeOps (PrimFuncs with blocks and loops), and after the
    zero pipeline (fused functions, FuseTIR's PrimFuncs, constants kept as metadata)."""
    mlp = relax_workload("mlp")
    legalized = relax.transform.LegalizeOps()(mlp)
    shapes = [(128, 64), (128,), (10, 128), (10,)]  # the MLP's fc1 and fc2 weights and biases, in order
    weights = {param: tvm.runtime.tensor(np.full(shape, 0.5, dtype="float32")) if hasattr(tvm.runtime, "tensor")
               else tvm.nd.array(np.full(shape, 0.5, dtype="float32"))
               for param, shape in zip(list(mlp["forward"].params)[1:], shapes)}
    bound = relax.transform.BindParams("forward", weights)(mlp)  # the weights become constants
    with tvm.transform.PassContext(opt_level=3):
        fused = relax.get_pipeline("zero")(bound)
    return [_kept(mlp), _kept(legalized), _kept(bound), _kept(fused)]


def test_real_scripts_read_back_exactly(scripts) -> None:
    assert any(doc["constants"] for doc in scripts) and any("T.prim_func" in doc["script"] for doc in scripts)
    for doc in scripts:
        module, exact = load_kept_module(TVMSCRIPT, orjson.dumps(doc), "kept")
        assert exact is True and isinstance(module, tvm.IRModule)


def _inside_first_function(script: str, statement: str) -> str:
    lines = script.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def ")) + 1
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    return "\n".join(lines[:at] + [indent + statement] + lines[at:])


@pytest.mark.parametrize("statement, named", [
    ('pwn = open("{marker}", "w")', "the name open"),
    ('pwn = __import__("pathlib").Path("{marker}").touch()', "the name __import__"),
    ('pwn = R.const.__globals__["__builtins__"]["open"]("{marker}", "w")', "the attribute __globals__"),
    ('pwn = (lambda: open("{marker}", "w"))()', "Lambda"),
    ('pwn = [open("{marker}", "w") for _ in range(1)]', "ListComp"),
    ('import os', "an import of os"),
    ('from pathlib import Path', "an import from pathlib"),
])
def test_a_script_with_what_printing_never_writes_is_refused_and_does_not_run(
        scripts, tmp_path: Path, statement: str, named: str) -> None:
    marker = tmp_path / "ran"
    doc = dict(scripts[0])
    doc["script"] = _inside_first_function(doc["script"], statement.format(marker=marker))
    with pytest.raises(RelayVizTraceError) as refused:
        load_kept_module(TVMSCRIPT, orjson.dumps(doc), "trace/modules/x.json.zst")
    message = str(refused.value)
    assert message.startswith("trace/modules/x.json.zst: the kept input module's TVMScript holds line ")
    assert named in message and "\n" not in message
    assert not marker.exists()
