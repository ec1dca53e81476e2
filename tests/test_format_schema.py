"""The type grammar is written twice, as checks in format/validate.py and as JSON Schema in
format/schema.py: both must accept and reject the same type objects."""

from __future__ import annotations

import json
from typing import Any, Dict

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from relayviz_instrument import format as fmt
from relayviz_instrument.errors import RelayVizFormatError

_SCHEMA = jsonschema.Draft202012Validator(json.loads(fmt.SCHEMA_PATH.read_bytes()))

dims = st.one_of(st.integers(min_value=-3, max_value=8), st.sampled_from(["?", "n", "batch"]),
                 st.floats(allow_nan=False, max_value=4.0, min_value=-1.0), st.none(), st.booleans())
shapes = st.one_of(st.lists(dims, max_size=3), st.just("NCHW"), st.none())
names = st.one_of(st.sampled_from(["List", "a", ""]), st.integers(0, 2), st.none())


def _maybe(draw: Any, entry: Dict[str, Any], key: str, value: Any) -> None:
    """Usually set ``key`` (and sometimes leave it out, which must be an error for a required key)."""
    if draw(st.integers(0, 9)) > 0:
        entry[key] = value


@st.composite
def type_objects(draw: Any, depth: int = 0) -> Any:
    """Type objects of every kind, well-formed or broken in one of the ways a file can be."""
    inner = st.deferred(lambda: type_objects(depth=depth + 1)) if depth < 2 else st.just({"kind": "other"})
    kind = draw(st.sampled_from(["tensor", "tuple", "func", "adt", "typevar", "ref", "incomplete", "other",
                                 "tensor_kind", "unknown", "not_an_object"]))
    if kind == "not_an_object":
        return draw(st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)))
    out: Dict[str, Any] = {}
    if kind == "tensor":
        _maybe(draw, out, "dtype", draw(st.one_of(st.sampled_from(["float32", "int8"]), st.integers(0, 3))))
        _maybe(draw, out, "shape", draw(shapes))
    elif kind == "tensor_kind":
        out.update({"kind": "tensor", "dtype": "float32", "shape": [1]})
    elif kind == "unknown":
        out["kind"] = draw(st.sampled_from(["tensors", "", "Tuple"]))
    else:
        out["kind"] = kind
        if kind == "tuple":
            _maybe(draw, out, "fields", draw(st.one_of(st.lists(inner, max_size=2), inner)))
        elif kind == "func":
            _maybe(draw, out, "params", draw(st.one_of(st.lists(inner, max_size=2), inner)))
            _maybe(draw, out, "ret", draw(inner))
        elif kind == "adt":
            _maybe(draw, out, "name", draw(names))
            if draw(st.booleans()):
                out["args"] = draw(st.one_of(st.lists(inner, max_size=2), inner))
        elif kind == "typevar":
            _maybe(draw, out, "name", draw(names))
        elif kind == "ref":
            _maybe(draw, out, "value", draw(inner))
    return out


@given(type_objects())
def test_the_validator_and_the_schema_agree_on_every_type_object(ty: Any) -> None:
    doc = {"format": "relayviz", "version": [1, 1],
           "nodes": [{"node_kind": "Var", "name": "x", "type": ty}]}
    try:
        fmt.validate(doc)
        validator_accepts = True
    except RelayVizFormatError:
        validator_accepts = False
    assert validator_accepts == _SCHEMA.is_valid(doc), (ty, validator_accepts)
