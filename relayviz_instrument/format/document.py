"""The RelayViz document as a whole: its format tag and version, building a root object,
and encoding it to bytes (deterministically, with orjson)."""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Mapping, Tuple

import orjson

__all__ = ["FORMAT", "VERSION", "SMALL_TENSOR_ELEMENTS", "new_document", "encode", "digest_bytes", "digest_parts"]

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


def new_document(nodes: List[Dict[str, Any]], *, ir: str, **extensions: Any) -> Dict[str, Any]:
    """Wrap ``nodes`` in a root object of the current version.

    ``ir`` names the dialect the nodes come from (``"relay"``, ``"graph_executor"``, ...);
    ``extensions`` are further root fields (``functions``, ``root``, ``type_definitions``).
    """
    doc: Dict[str, Any] = {"format": FORMAT, "version": list(VERSION), "ir": ir}
    doc.update({k: v for k, v in extensions.items() if v is not None})
    doc["nodes"] = nodes
    return doc


def encode(doc: Mapping[str, Any], *, indent: bool = False) -> bytes:
    """Encode a document with orjson. Deterministic: the same document gives the same bytes."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(doc, option=option | orjson.OPT_APPEND_NEWLINE)
