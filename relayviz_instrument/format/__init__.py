"""The RelayViz document: the only place that knows its shape; every other stage imports it.

The format is the one specified in the RelayViz proposal (version 1.0): a root object
``{"format": "relayviz", "version": [1, 0], "nodes": [...]}`` whose nodes refer to each
other by their index in ``nodes``. Version 1.1 adds node kinds and optional fields for the
rest of Relay (and for PrimFuncs and graph executor JSON); it never changes what a 1.0 field
means, so a 1.0 reader still understands a 1.1 document. ``docs/format.md`` documents every
node kind. Its modules::

    kinds.py      the kind tables, reference groups and the one walker over references
    document.py   the Document type, format tag, version, building and encoding a root object
    irs.py        the IR vocabulary: the names of the ``ir`` of documents and pass records
    loading.py    load / loads / validate: one line naming file, node and field
    schema.py     the JSON Schema, generated from the kind tables
"""

from __future__ import annotations

from .document import (FORMAT, SMALL_TENSOR_ELEMENTS, VERSION, Document, Node, digest_bytes, digest_parts, encode,
                       new_document)
from .kinds import (CALLABLE_KINDS, EXPR_KINDS, FUNCTION_KINDS, INFERRED_TYPE_KINDS, NODE_KINDS, PATTERN_KINDS,
                    Field, FieldKind, NodeKind, labelled_references, moved_run, reference_field_names,
                    references, renumbered, topological_order)
from .schema import SCHEMA_PATH, json_schema
from .loading import ValidationReport, load, loads, validate

__all__ = [
    "FORMAT",
    "VERSION",
    "Document",
    "Node",
    "NODE_KINDS",
    "EXPR_KINDS",
    "CALLABLE_KINDS",
    "PATTERN_KINDS",
    "FUNCTION_KINDS",
    "INFERRED_TYPE_KINDS",
    "SMALL_TENSOR_ELEMENTS",
    "Field",
    "FieldKind",
    "NodeKind",
    "ValidationReport",
    "new_document",
    "digest_bytes",
    "digest_parts",
    "references",
    "renumbered",
    "moved_run",
    "reference_field_names",
    "labelled_references",
    "topological_order",
    "encode",
    "load",
    "loads",
    "validate",
    "json_schema",
    "SCHEMA_PATH",
]
