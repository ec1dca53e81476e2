"""The RelayViz document as a whole: its type, its format tag and version, building a root
object, and encoding it to bytes (deterministically, with orjson)."""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Mapping, Optional, Tuple, TypedDict, cast

import orjson

__all__ = ["FORMAT", "VERSION", "SMALL_TENSOR_ELEMENTS", "Document", "Node", "new_document", "encode",
           "digest_bytes", "digest_parts"]

#: One node: a JSON object whose ``node_kind`` says which fields it holds (see kinds.py).
Node = Dict[str, Any]


class _DocumentRoot(TypedDict):
    format: str
    version: List[int]
    nodes: List[Node]


class Document(_DocumentRoot, total=False):
    """A RelayViz document: the root object of ``docs/format.md``, as :func:`new_document`
    builds it and :func:`~relayviz_instrument.format.load` returns it once validated. The 1.0
    fields are always there; the others only where they apply. A document of a newer 1.x may
    hold root fields this version does not name: they are kept, not typed."""

    ir: str
    functions: Dict[str, int]
    root: int
    type_definitions: Dict[str, Any]
    #: The module's attributes (Relay modules that have any).
    attrs: Dict[str, Any]

FORMAT = "relayviz"
#: The version this package writes. Readers accept any 1.x; unknown kinds of a newer 1.x are kept.
VERSION: Tuple[int, int] = (1, 2)

#: Tensor constants with at most this many elements carry their values (``array_value``);
#: larger ones carry their shape and a content digest, unless full values are asked for.
SMALL_TENSOR_ELEMENTS = 16


def digest_bytes(data: bytes) -> str:
    """A content digest as the format writes it: ``sha256:`` and 32 hex digits (128 bits)."""
    return digest_parts(data)


def digest_parts(*parts: Any) -> str:
    """The content digest (see :func:`digest_bytes`) of the parts joined, without joining
    them: each part is a bytes-like object (a C-contiguous NumPy array hashes its memory,
    what ``tobytes()`` would copy)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return "sha256:" + digest.hexdigest()[:32]


def new_document(nodes: List[Node], *, ir: str, functions: Optional[Dict[str, int]] = None,
                 root: Optional[int] = None, type_definitions: Optional[Dict[str, Any]] = None,
                 attrs: Optional[Dict[str, Any]] = None) -> Document:
    """Wrap ``nodes`` in a root object of the current version.

    ``ir`` names the dialect the nodes come from (see :mod:`~relayviz_instrument.format.irs`);
    the other root fields are left out when None.
    """
    optional = {"functions": functions, "root": root, "type_definitions": type_definitions, "attrs": attrs}
    doc: Dict[str, Any] = {"format": FORMAT, "version": list(VERSION), "ir": ir}
    doc.update({k: v for k, v in optional.items() if v is not None})
    doc["nodes"] = nodes
    # Built as a dict, then typed: the order of the keys is part of the bytes (and the digest)
    # a document encodes to, and the nodes go last, which a Document literal (it must hold
    # every required key from the start) cannot do.
    return cast(Document, doc)


def encode(doc: Mapping[str, Any], *, indent: bool = False) -> bytes:
    """Encode a document with orjson. Deterministic: the same document gives the same bytes."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(doc, option=option | orjson.OPT_APPEND_NEWLINE)
