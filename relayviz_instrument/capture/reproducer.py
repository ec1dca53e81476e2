"""The reproducer: what it takes to run one pass again without the script that ran it, written
while tracing and read back by ``relayviz replay`` (one home for both sides).

A record's ``replay`` field holds:

- ``module``: the pass's input module (stored in the trace's ``modules/`` folder by
  reference, checked against its digest when read), in the form ``module_form`` names
  (:mod:`.kept_module`): ``save_json`` (``tvm.ir.save_json``, for Relay; the form of every
  trace without ``module_form``) or ``tvmscript`` (the module's TVMScript with the tensors of
  its constants, for Relax and TIR, whose ``save_json`` crashes TVM 0.27). Every weight bound
  in the module is in it;
- ``context``: the PassContext the pass ran under: ``opt_level``, ``required_pass``,
  ``disabled_pass`` and ``config`` (each value in ``save_json`` form; the keys of values that
  are not saved, such as a Python pass in ``tir.add_lower_pass`` or, on TVM 0.2x, a value
  holding an IR object, are listed in ``config_not_saved``);
- ``target`` / ``target_host``: ``tvm.target.Target.current()`` when the pass began, as text
  ``tvm.target.Target`` parses back. ``relay.build`` makes its target current for the Relay
  passes; in the TIR lowering none is, and each PrimFunc carries its own ``target`` attribute
  (kept in the module). ``None`` when no target was current.

Running again needs the pass itself, which a trace knows only by name: it is made again from
TVM's constructors (``tvm.relay.transform``, ``tvm.relax.transform``, ``tvm.tir.transform``
or on TVM 0.2x ``tvm.tirx.transform`` and ``tvm.s_tir.transform``, ``tvm.transform``) or the
global functions TVM's pass registry resolves names with (``relay._transform.X``,
``transform.X``), with their default arguments. A pass defined in Python by the user's script
(``@tvm.transform.module_pass``) cannot be made from its name: ``pass_from`` names a
``module:attribute`` that makes it instead.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import tvm

from ..errors import RelayVizTraceError, RelayVizUsageError
from ..format.irs import RELAX, RELAY, TIR
from .kept_module import SAVE_JSON, keep_module, load_kept_module, plain_value, save_json_trusted

__all__ = ["replay_facts", "PreparedPass", "prepare_pass"]

#: Where a pass name is looked for, by the dialect of the module it ran on.
_CONSTRUCTORS = {
    RELAY: ("tvm.relay.transform", "tvm.transform"),
    RELAX: ("tvm.relax.transform", "tvm.transform"),
    TIR: ("tvm.tir.transform", "tvm.tirx.transform", "tvm.s_tir.transform", "tvm.transform"),
}
#: Prefixes of the global functions TVM's ``GetPass`` resolves a pass name with.
_GLOBAL_PREFIXES = ("relay._transform.", "transform.", "tir.transform.", "tirx.transform.", "s_tir.transform.",
                    "relax.transform.")


def replay_facts(mod: tvm.IRModule, ctx: Any, target: Any) -> Tuple[Dict[str, Any], bytes]:
    """``(facts, module_data)``: the PassContext ``ctx`` and ``target`` as JSON, with the form
    ``mod`` is kept in (``module_form``), and ``mod`` in that form. Called only when a module
    is kept (a pass raised, or ``keep_modules`` chose it), so tracing costs nothing otherwise.
    Raises :class:`RelayVizTraceError` when the module cannot be kept safely on this TVM."""
    config: Dict[str, str] = {}
    not_saved: List[str] = []
    trusted = save_json_trusted()
    for key, value in ctx.config.items():
        if not (trusted or plain_value(value)):  # save_json of an IR object crashes TVM 0.2x
            not_saved.append(str(key))
            continue
        try:
            config[str(key)] = tvm.ir.save_json(value)
        except Exception:  # a value TVM has no serializer for (a Python pass, a packed function)
            not_saved.append(str(key))
    context: Dict[str, Any] = {"opt_level": int(ctx.opt_level),
                               "required_pass": [str(p) for p in ctx.required_pass],
                               "disabled_pass": [str(p) for p in ctx.disabled_pass],
                               "config": dict(sorted(config.items()))}
    if not_saved:
        context["config_not_saved"] = sorted(not_saved)
    host = getattr(target, "host", None) if target is not None else None
    form, data = keep_module(mod)
    facts: Dict[str, Any] = {"context": context, "target": None if target is None else str(target),
                             "target_host": None if host is None else str(host)}
    if form != SAVE_JSON:  # traces without module_form hold save_json, as before there were two forms
        facts["module_form"] = form
    return facts, data


@dataclass
class PreparedPass:
    """A pass made again, its input module and its context, ready to :meth:`run`.

    ``made_by`` says how the pass was made (``tvm.relay.transform.FoldConstant()``);
    ``exact`` whether the module read back is structurally the one the pass was given (None
    when its form does not record that; ``save_json`` is exact).
    """

    made_by: str
    the_pass: Any
    module: tvm.IRModule
    context: Dict[str, Any]
    target: Optional[str]
    target_host: Optional[str]
    exact: Optional[bool] = None

    def run(self) -> tvm.IRModule:
        """Run the pass on the module under the recorded context and target; whatever the
        pass raises propagates unchanged."""
        context = self.context
        config = {key: tvm.ir.load_json(text) for key, text in context.get("config", {}).items()}
        with tvm.transform.PassContext(opt_level=context.get("opt_level", 2),
                                       required_pass=context.get("required_pass") or None,
                                       disabled_pass=context.get("disabled_pass") or None,
                                       config=config or None):
            if self.target is None:
                return self.the_pass(self.module)
            with tvm.target.Target(self.target, host=self.target_host):
                return self.the_pass(self.module)


def prepare_pass(name: str, ir: str, module_data: bytes, facts: Dict[str, Any], *, where: str,
                 pass_from: Optional[str] = None) -> PreparedPass:
    """Load a kept module (``module_data``, checked against its digest) and make pass ``name``
    (run on a module of dialect ``ir``) again.

    ``facts`` is a record's ``replay`` field; ``where`` names the trace and event in messages.
    Raises :class:`RelayVizUsageError` when the pass cannot be made from its name and
    :class:`RelayVizTraceError` when the kept module or context cannot be read.
    """
    context = facts.get("context")
    target = facts.get("target")
    host = facts.get("target_host")
    form = facts.get("module_form", SAVE_JSON)
    if not (isinstance(context, dict) and isinstance(context.get("config", {}), dict)
            and all(isinstance(v, str) for v in context.get("config", {}).values())
            and isinstance(target, (str, type(None))) and isinstance(host, (str, type(None)))
            and isinstance(form, str)):
        raise RelayVizTraceError(f"{where}: the recorded pass context is damaged; the trace is corrupt")
    module, exact = load_kept_module(form, module_data, where)
    made_by, the_pass = _made_from(pass_from, where) if pass_from else _made_by_name(name, ir, where)
    return PreparedPass(made_by, the_pass, module, context, target, host, exact)


def _made_by_name(name: str, ir: str, where: str) -> Tuple[str, Any]:
    """The pass named ``name``, made with its constructor's default arguments."""
    short = name.split(".", 1)[1] if name.startswith(("tir.", "tirx.", "s_tir.", "relax.", "relay.")) else name
    needs_arguments: List[str] = []
    for module_name in _CONSTRUCTORS.get(ir, _CONSTRUCTORS[RELAY]):
        try:
            namespace = importlib.import_module(module_name)
        except ImportError:
            continue
        factory = getattr(namespace, short, None)
        if not callable(factory):
            continue
        made = _call_without_arguments(factory)
        if made is None:
            needs_arguments.append(f"{module_name}.{short}{_signature(factory)}")
        elif _is_pass(made, name):
            return f"{module_name}.{short}()", made
    for prefix in _GLOBAL_PREFIXES:
        func = tvm.get_global_func(prefix + short, allow_missing=True)
        made = _call_without_arguments(func) if func is not None else None
        if made is not None and _is_pass(made, name):
            return f"the global function {prefix}{short}()", made
    if name == "sequential":
        why = "a Sequential is a list of passes the trace does not record; replay a pass inside it"
    elif needs_arguments:
        why = (f"its constructor takes arguments the trace does not record ({', '.join(needs_arguments)}); "
               "make it with --pass-from MODULE:FUNCTION")
    else:
        why = ("it is not one of TVM's passes: a pass defined in Python (@tvm.transform.module_pass, "
               "@relay.transform.function_pass) or registered by the script that ran it cannot be made "
               "from its name; put it in an importable module and pass --pass-from MODULE:NAME")
    raise RelayVizUsageError(f"{where}: cannot make the pass {name!r} again: {why}")


def _made_from(spec: str, where: str) -> Tuple[str, Any]:
    """The pass ``module:attribute`` names: a Pass, or a callable that returns one."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise RelayVizUsageError(f"--pass-from {spec!r}: expected MODULE:NAME (a module on the Python path and "
                                 "a pass, or a function returning one, in it)")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise RelayVizUsageError(f"--pass-from {spec!r}: {type(exc).__name__}: {exc}") from None
    made = found if isinstance(found, tvm.transform.Pass) else (
        _call_without_arguments(found) if callable(found) else None)
    if not isinstance(made, tvm.transform.Pass):
        raise RelayVizUsageError(f"--pass-from {spec!r}: neither a tvm.transform.Pass nor a function of no "
                                 f"arguments returning one ({where})")
    return spec, made


def _call_without_arguments(factory: Callable[..., Any]) -> Any:
    """``factory()``, or None when it needs arguments (or fails to make anything)."""
    try:
        return factory()
    except Exception:
        return None


def _is_pass(made: Any, name: str) -> bool:
    return isinstance(made, tvm.transform.Pass) and str(made.info.name) == name


def _signature(factory: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(factory))
    except (TypeError, ValueError):
        return "(...)"
