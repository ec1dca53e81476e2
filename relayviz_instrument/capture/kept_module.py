"""A pass's input module kept for ``relayviz replay``, in a form that cannot crash the process
that keeps it, and read back by replay. One home for both sides of the two forms:

- ``save_json``: ``tvm.ir.save_json`` text, TVM's own form, for Relay modules, and on a TVM
  before tvm-ffi (0.19 and older, where it is safe) for TIR modules and for Relax modules
  TVMScript cannot carry. It is exact: ``tvm.ir.load_json`` gives back an equal module;
- ``tvmscript``: for Relax modules, and for TIR modules on TVM 0.2x: the module's TVMScript
  (``mod.script()``), read back with ``tvm.script.from_source``, in a JSON object with the
  tensors of its constants (TVMScript refers to them as ``metadata["<type key>"][i]`` and
  writes their values only through ``save_json``), the TVM version and the module's
  structural hash, which the module read back is checked against: TVMScript does not carry
  every detail of every module (TVM 0.27 reads an indirect access's region extent back as
  another integer type; names it makes unique are not compared by the hash).

Why not ``save_json`` everywhere: with apache-tvm 0.27.0.post1 and apache-tvm-ffi 0.1.15
(the newest pip resolves apache-tvm's ``apache-tvm-ffi>=0.1.14`` to), ``save_json`` crashes
the process (SIGSEGV) on any object holding an ``ir.PrimType``: every IntImm, tensor shape
and TIR variable, so every Relax and TIR module. TVM registers ``ir.PrimType``'s
``__any_hash__`` as a function pointer returning ``int64_t``, the convention of tvm-ffi
0.1.14 it was built with; tvm-ffi 0.1.15 calls it as returning a ``TVMFFIAny`` and, reading
the hash as a type index, destroys a garbage object. ``save_json``'s node table hashes every
value it meets. On TVMs with tvm-ffi, ``save_json`` is used only on values known to hold no
IR object (:func:`plain_value`).
"""

from __future__ import annotations

import base64
import binascii
import inspect
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import orjson
import tvm

from ..errors import RelayVizTraceError
from ..format.irs import RELAX, RELAY
from ..serialize import module_ir
from ..serialize.reflection import object_key, type_key
from .script_allowlist import script_refusal

__all__ = ["SAVE_JSON", "TVMSCRIPT", "keep_module", "load_kept_module", "save_json_trusted", "plain_value",
           "structural_hash"]

#: The forms of a kept module (a record's ``replay.module_form``; traces without it hold ``save_json``).
SAVE_JSON, TVMSCRIPT = "save_json", "tvmscript"
#: A ``metadata["<type key>"][<index>]`` reference of TVMScript printed without its metadata.
_METADATA_REFERENCE = re.compile(r'metadata\["([^"\\]+)"\]\[(\d+)\]')
#: A function of the module, as TVMScript prints it (one level inside ``class Module:``).
_MODULE_FUNCTION = re.compile(r"^    def ([^\s(]+)\(", re.MULTILINE)


def _tvm_ffi() -> Any:
    try:
        import tvm_ffi
    except ImportError:
        return None
    return tvm_ffi


def save_json_trusted() -> bool:
    """Whether ``tvm.ir.save_json`` may be given IR objects: on TVMs before tvm-ffi (0.19
    and older), where it is TVM's own serializer; not on TVM 0.2x (see the module docstring)."""
    return _tvm_ffi() is None


def plain_value(value: Any) -> bool:
    """Whether ``value`` holds only booleans, numbers, strings and None, in lists and maps:
    what ``save_json`` writes without hashing an IR object."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    ffi = _tvm_ffi()
    if ffi is not None and isinstance(value, ffi.Map):
        return all(plain_value(k) and plain_value(v) for k, v in value.items())
    if ffi is not None and isinstance(value, ffi.Array):
        return all(plain_value(v) for v in value)
    return False


def structural_hash(mod: tvm.IRModule) -> str:
    """TVM's structural hash of ``mod`` (stable across processes), as 16 hex digits."""
    ffi = _tvm_ffi()
    found: Callable[..., int] = ffi.structural_hash if ffi is not None else tvm.ir.structural_hash
    return f"{found(mod) & 0xFFFFFFFFFFFFFFFF:016x}"


def keep_module(mod: tvm.IRModule) -> Tuple[str, bytes]:
    """``(form, data)``: ``mod`` in the form its dialect and this TVM keep it in.

    Raises :class:`RelayVizTraceError` when no form can carry it here (a Relax or TIR module
    whose TVMScript refers to metadata other than its constants, on a TVM whose ``save_json``
    is not trusted).
    """
    ir = module_ir(mod)
    if ir == RELAY or (ir != RELAX and save_json_trusted()):
        return SAVE_JSON, tvm.ir.save_json(mod).encode()
    try:
        return TVMSCRIPT, _tvmscript_document(mod)
    except RelayVizTraceError:
        if not save_json_trusted():
            raise
    return SAVE_JSON, tvm.ir.save_json(mod).encode()


def _tvmscript_document(mod: tvm.IRModule) -> bytes:
    """The JSON object of the ``tvmscript`` form: ``{"form", "tvm", "structural_hash",
    "script", "metadata_key", "constants"}`` (each constant ``{"dtype", "shape", "data"}``,
    its bytes in base64)."""
    script = mod.script(show_meta=False)
    references = {(key, int(index)) for key, index in _METADATA_REFERENCE.findall(script)}
    keys = sorted({key for key, _ in references})
    constants = _constants_as_printed(mod, script) if references else []
    if keys and (len(keys) > 1 or len(constants) != len(references)
                 or any(type_key(c) != keys[0] for c in constants)
                 or references != {(keys[0], i) for i in range(len(constants))}):
        raise RelayVizTraceError(f"its TVMScript refers to metadata other than its constants ({', '.join(keys)}); "
                                 "TVMScript cannot carry the module")
    tensors = []
    for constant in constants:
        array = _tensor_of(constant).numpy()
        tensors.append({"dtype": str(array.dtype), "shape": list(array.shape),
                        "data": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")})
    return orjson.dumps({"form": TVMSCRIPT, "tvm": str(getattr(tvm, "__version__", "unknown")),
                         "structural_hash": structural_hash(mod), "script": script,
                         "metadata_key": keys[0] if keys else None, "constants": tensors})


def _constants_as_printed(mod: tvm.IRModule, script: str) -> List[Any]:
    """The module's tensor constants in the order TVMScript numbers them: by first
    appearance, function by function as printed, each function's expressions in order."""
    from tvm import relax

    found: List[Any] = []
    seen = set()

    def visit(expr: Any) -> None:
        if _tensor_of(expr) is not None:
            key = object_key(expr)
            if key not in seen:
                seen.add(key)
                found.append(expr)

    functions = {str(gvar.name_hint): func for gvar, func in mod.functions.items()}
    for name in _MODULE_FUNCTION.findall(script):
        func = functions.get(name)
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return found


#: The type keys of Relax constants: TVM 0.19 and older, TVM 0.2x (shared with the other dialects).
_CONSTANT_KEYS = frozenset({"relax.expr.Constant", "ir.GenericConst"})


def _tensor_of(expr: Any) -> Any:
    """The tensor of a Relax constant TVMScript prints as metadata (not a scalar, which it
    prints inline as ``R.const``), else None."""
    if type_key(expr) not in _CONSTANT_KEYS:
        return None
    data = getattr(expr, "data", None)
    if data is None:
        data = getattr(expr, "value", None)  # TVM 0.2x: a GenericConst holds a tensor, a dtype, ...
    shape = getattr(data, "shape", None)
    return data if shape is not None and len(shape) > 0 and hasattr(data, "numpy") else None


def load_kept_module(form: str, data: bytes, where: str) -> Tuple[tvm.IRModule, Optional[bool]]:
    """``(module, exact)``: a kept module read back, and whether it is structurally the
    module that was kept (None when the form does not record it; ``save_json`` is exact).

    ``data`` must have been checked against its digest (``tvm.ir.load_json`` crashes the
    process on damaged JSON). Reading TVMScript back evaluates the Python expressions in it,
    as the TVMScript parser does, so the script is first checked to hold only what TVMScript
    printing writes (capture/script_allowlist.py); replay traces you trust. Raises
    :class:`RelayVizTraceError` when the module cannot be read back (``where`` names it).
    """
    if form == SAVE_JSON:
        try:
            module = tvm.ir.load_json(data.decode("utf-8"))
        except Exception as exc:
            raise RelayVizTraceError(f"{where}: the kept input module cannot be loaded by this TVM "
                                     f"({type(exc).__name__}: {_last_line(exc)}); was the trace written by "
                                     "another TVM version?") from None
        exact = None
    elif form == TVMSCRIPT:
        module, recorded = _from_tvmscript(data, where)
        exact = structural_hash(module) == recorded
    else:
        raise RelayVizTraceError(f"{where}: the kept input module is in an unknown form {form!r}; "
                                 "was the trace written by a newer relayviz_instrument?")
    if not isinstance(module, tvm.IRModule):
        raise RelayVizTraceError(f"{where}: the kept input module is a {type(module).__name__}, not an IRModule")
    return module, exact


def _from_tvmscript(data: bytes, where: str) -> Tuple[Any, str]:
    """The module a ``tvmscript`` document holds, and the structural hash recorded with it."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RelayVizTraceError(f"{where}: the kept input module is not JSON ({exc}); the trace is corrupt") from None
    if not (isinstance(doc, dict) and doc.get("form") == TVMSCRIPT and isinstance(doc.get("script"), str)
            and isinstance(doc.get("structural_hash"), str) and isinstance(doc.get("constants"), list)
            and isinstance(doc.get("metadata_key"), (str, type(None)))):
        raise RelayVizTraceError(f"{where}: the kept input module lacks its TVMScript, constants or hash; "
                                 "the trace is corrupt")
    variables = _parser_globals()
    refused = script_refusal(doc["script"], set(variables) | {"metadata"})
    if refused is not None:  # the parser evaluates the script's Python: nothing TVMScript never writes
        raise RelayVizTraceError(f"{where}: the kept input module's TVMScript holds {refused}; it is not "
                                 "read back (a kept module is code: replay only traces you trust)")
    constants = [_constant(item, i, where) for i, item in enumerate(doc["constants"])]
    if doc["metadata_key"] is not None:
        variables["metadata"] = {doc["metadata_key"]: constants}
    parse: Callable[..., Any] = tvm.script.from_source
    options = {"check_well_formed": False} if "check_well_formed" in inspect.signature(parse).parameters else {}
    try:  # the input of a pass that raised need not be well formed
        module = parse(doc["script"], extra_vars=variables, **options)
    except Exception as exc:
        raise RelayVizTraceError(f"{where}: the kept input module's TVMScript cannot be read by this TVM "
                                 f"{tvm.__version__} ({type(exc).__name__}: {_last_line(exc)}); it was written "
                                 f"by TVM {doc.get('tvm')}") from None
    return module, doc["structural_hash"]


def _constant(item: Any, index: int, where: str) -> Any:
    """Constant ``index`` of a ``tvmscript`` document, as the Relax constant it was."""
    from tvm import relax

    array = _array(item) if isinstance(item, dict) else None
    if array is None:
        raise RelayVizTraceError(f"{where}: constant {index} of the kept input module is damaged (its dtype, "
                                 "shape or data); the trace is corrupt")
    tensor = tvm.runtime.tensor(array) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(array)
    return relax.const(tensor)


def _array(item: Dict[str, Any]) -> "Optional[np.ndarray[Any, np.dtype[Any]]]":
    """The array ``{"dtype", "shape", "data"}`` describes, or None if it does not describe one."""
    shape, data = item.get("shape"), item.get("data")
    if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2 ** 40
                                            for d in shape) and isinstance(data, str)):
        return None
    dtype = _numpy_dtype(item.get("dtype"))
    try:
        raw = base64.b64decode(data, validate=True)
    except (ValueError, binascii.Error):
        return None
    if dtype is None or len(raw) != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        return None
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _numpy_dtype(name: Any) -> "Optional[np.dtype[Any]]":
    """numpy's dtype named ``name``, or None. bfloat16 and the float8 types are ml_dtypes',
    which TVM imports for them (they are found only where TVM loaded it)."""
    if not isinstance(name, str):
        return None
    try:
        return np.dtype(name)
    except TypeError:
        pass
    found = getattr(sys.modules.get("ml_dtypes"), name, None)
    return np.dtype(found) if isinstance(found, type) else None


def _parser_globals() -> Dict[str, Any]:
    """The names TVMScript is read with (``I``, ``R``, ``T``, ...), as ``from_source`` has them."""
    from tvm.script.parser.core import entry

    return dict(entry._default_globals())


def _last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__
