"""The JSON Schema of the RelayViz format, generated from the kind tables.

The schema checks structure only; references (range, kinds, cycles) are checked by
:func:`relayviz_instrument.format.loading`. ``make schema`` regenerates the shipped file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import orjson

from .document import FORMAT, VERSION
from .kinds import KIND_LIST, FieldKind

__all__ = ["json_schema", "write_schema", "SCHEMA_PATH"]

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "relayviz.schema.json"

_SCHEMA_ID = "https://github.com/relayviz/relayviz_instrument/schema/relayviz.schema.json"


def json_schema() -> Dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the current version, generated from the kind tables.

    The schema checks structure only; references (range, kinds, cycles) are checked by
    :func:`validate`. The shipped ``schema/relayviz.schema.json`` equals this value.
    """
    defs: Dict[str, Any] = {
        "nodeId": {"type": "integer", "minimum": 0},
        "nodeIds": {"type": "array", "items": {"$ref": "#/$defs/nodeId"}},
        "dim": {"oneOf": [{"type": "integer", "minimum": -1}, {"type": "string"}]},
        "shape": {"type": "array", "items": {"$ref": "#/$defs/dim"}},
        "scalar": {"oneOf": [{"type": "number"}, {"type": "boolean"},
                             {"enum": ["nan", "inf", "-inf"]}]},
        "type": {
            "type": "object",
            "oneOf": [
                {"required": ["dtype", "shape"], "not": {"required": ["kind"]},
                 "properties": {"dtype": {"type": "string"}, "shape": {"$ref": "#/$defs/shape"}}},
                {"required": ["kind", "fields"], "properties": {
                    "kind": {"const": "tuple"},
                    "fields": {"type": "array", "items": {"$ref": "#/$defs/type"}}}},
                {"required": ["kind", "params", "ret"], "properties": {
                    "kind": {"const": "func"},
                    "params": {"type": "array", "items": {"$ref": "#/$defs/type"}},
                    "ret": {"$ref": "#/$defs/type"},
                    "type_params": {"type": "array", "items": {"type": "string"}}}},
                {"required": ["kind", "name"], "properties": {
                    "kind": {"const": "adt"}, "name": {"type": "string"},
                    "args": {"type": "array", "items": {"$ref": "#/$defs/type"}}}},
                {"required": ["kind", "name"], "properties": {
                    "kind": {"const": "typevar"}, "name": {"type": "string"}}},
                {"required": ["kind", "value"], "properties": {
                    "kind": {"const": "ref"}, "value": {"$ref": "#/$defs/type"}}},
                {"required": ["kind", "dtype"], "properties": {
                    "kind": {"enum": ["tensor", "prim"]}, "dtype": {"type": "string"}}},
                {"required": ["kind"], "properties": {
                    "kind": {"const": "shape"}, "values": {"$ref": "#/$defs/shape"},
                    "ndim": {"type": "integer"}}},
                {"required": ["kind"], "properties": {
                    "kind": {"const": "callable"}, "ret": {"$ref": "#/$defs/type"}}},
                {"required": ["kind"], "properties": {"kind": {"enum": ["object", "string"]}}},
                {"required": ["kind"], "properties": {"kind": {"enum": ["incomplete", "other"]}}},
            ],
        },
        "value": {"oneOf": [
            {"$ref": "#/$defs/scalar"},
            {"type": "object", "required": ["array_shape", "array_value"], "properties": {
                "array_shape": {"$ref": "#/$defs/shape"},
                "array_value": {"type": "array", "items": {"$ref": "#/$defs/scalar"}}}},
            {"type": "object", "required": ["array_shape", "digest"],
             "not": {"required": ["array_value"]}, "properties": {
                "array_shape": {"$ref": "#/$defs/shape"}, "digest": {"type": "string"}}},
        ]},
        "graphNode": {"type": "object", "properties": {
            "node": {"$ref": "#/$defs/nodeId"}, "name": {"type": "string"},
            "storage_id": {"type": "array", "items": {"type": "integer"}},
            "device_index": {"type": "array", "items": {"type": "integer"}},
            "shape": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/shape"}, {"type": "null"}]}},
            "control_deps": {"$ref": "#/$defs/nodeIds"}, "attrs": {"type": "object"}}},
        "signature": {"type": "array", "items": {
            "type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "dtype": {"type": "string"},
                "shape": {"$ref": "#/$defs/shape"}}}},
    }
    field_schema = {
        FieldKind.REF: {"$ref": "#/$defs/nodeId"},
        FieldKind.REFS: {"$ref": "#/$defs/nodeIds"},
        FieldKind.REF_MAP: {"type": "object", "additionalProperties": {"$ref": "#/$defs/nodeId"}},
        FieldKind.STR: {"type": "string"},
        FieldKind.INT: {"type": "integer"},
        FieldKind.BOOL: {"type": "boolean"},
        FieldKind.TYPE: {"$ref": "#/$defs/type"},
        FieldKind.SHAPE: {"$ref": "#/$defs/shape"},
        FieldKind.ATTRS: {"type": "object"},
        FieldKind.VALUE: {"$ref": "#/$defs/value"},
        FieldKind.STRS: {"type": "array", "items": {"type": "string"}},
        FieldKind.SIGNATURE: {"$ref": "#/$defs/signature"},
        FieldKind.TYPES: {"type": "array", "items": {"$ref": "#/$defs/type"}},
        FieldKind.DIM: {"type": ["number", "string", "boolean"]},
        FieldKind.GRAPH: {"$ref": "#/$defs/graphNode"},
        FieldKind.ANY: {},
    }
    branches = []
    for spec in KIND_LIST:
        defs[spec.name] = {
            "type": "object",
            "description": spec.summary + f" (since {spec.since[0]}.{spec.since[1]})",
            "required": ["node_kind"] + [f.name for f in spec.fields if f.required],
            "properties": {"node_kind": {"const": spec.name},
                           **{f.name: field_schema[f.kind] for f in spec.fields}},
        }
        branches.append({"if": {"properties": {"node_kind": {"const": spec.name}}},
                         "then": {"$ref": f"#/$defs/{spec.name}"}})
    defs["node"] = {"type": "object", "required": ["node_kind"],
                    "properties": {"node_kind": {"type": "string"}}, "allOf": branches}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": _SCHEMA_ID,
        "title": f"RelayViz document {VERSION[0]}.{VERSION[1]}",
        "type": "object",
        "required": ["format", "version", "nodes"],
        "properties": {
            "format": {"const": FORMAT},
            "version": {"type": "array", "prefixItems": [{"const": VERSION[0]}, {"type": "integer"}],
                        "minItems": 2, "maxItems": 2},
            "ir": {"type": "string"},
            "nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            "functions": {"type": "object", "additionalProperties": {"$ref": "#/$defs/nodeId"}},
            "root": {"$ref": "#/$defs/nodeId"},
            "type_definitions": {"type": "object"},
        },
        "$defs": defs,
    }


def write_schema(path: Path = SCHEMA_PATH) -> None:
    """Regenerate the shipped schema file (``python -m relayviz_instrument.format``)."""
    path.write_bytes(orjson.dumps(json_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    write_schema()
