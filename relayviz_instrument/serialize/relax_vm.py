"""What ``tvm.compile`` built from a Relax module: the Relax VM ``Executable``'s instructions as a
RelayViz document.

The executable's public Python API prints its code two ways: ``as_text()`` (one instruction per
line, grouped by VM function) and ``as_python()`` (the same as ``ExecBuilder`` calls, whose
function headers say how many inputs each VM function takes). Both are read here, never the
binary.

Each VM function becomes a ``Function`` whose parameters are its input registers (``Var``
``0``, ``1``, ...: shown ``%0``, ``%1``); each ``call`` instruction becomes a ``Call`` of an
``Op`` named for the function it calls, reading the instructions that last wrote its argument
registers. A call of a compiled
kernel or an external packed function (anything but a VM function and the VM's own
``vm.builtin.*`` helpers) carries ``attrs.kernel``; a call of another VM function
``attrs.function``. Kernels write their results into tensors passed as arguments (destination
passing): an argument register last written by ``vm.builtin.alloc_tensor`` is written by the
kernel that receives it, so later readers read the kernel. ``vm.builtin.null_value`` only
frees a register and is left out. ``If`` and ``goto`` are ``vm.if`` / ``vm.goto`` calls; a
register both branches of an ``If`` write is read from both (see :class:`_Registers`). The
function's result is what its ``ret`` reads.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ..errors import RelayVizSerializeError
from ..format import Document, new_document
from ..format.irs import VM_BUILTIN_PREFIX, VM_EXECUTABLE

__all__ = ["from_relax_executable", "is_relax_executable"]

#: The call that frees a register (``KillAfterLastUse``): no value anyone reads.
_FREE = "vm.builtin.null_value"
#: The call that makes a tensor a kernel then writes into.
_ALLOC_TENSOR = "vm.builtin.alloc_tensor"

_VM_FUNCTION = re.compile(r"^@(?P<name>\S+):$")
_DECLARED = re.compile(r"^@(?P<name>\S+) .*;$")
_CALL = re.compile(r"^call\s+(?P<callee>\S+)\s+in:\s*(?P<args>.*?)\s*dst:\s*(?P<dst>\S+)$")
_REGISTER = re.compile(r"^%(\d+)$")
_INPUTS = re.compile(r'ib\.function\("(?P<name>[^"]+)", num_inputs=(?P<count>\d+)')


def is_relax_executable(built: Any) -> bool:
    """Whether ``built`` is what ``tvm.compile`` / ``relax.build`` returns for a Relax module (it
    prints its instructions with ``as_text()``); Relay's VM ``Executable`` has ``bytecode`` instead."""
    return not hasattr(built, "bytecode") and callable(getattr(built, "as_text", None)) and callable(
        getattr(built, "as_python", None))


def from_relax_executable(exe: Any) -> Document:
    """The document of a Relax VM ``Executable`` (what ``tvm.compile`` returns for a Relax module)."""
    try:
        text, python = str(exe.as_text()), str(exe.as_python())
    except Exception as exc:  # not a Relax VM executable after all
        raise RelayVizSerializeError(f"cannot read the Relax VM executable's instructions: {exc}") from None
    inputs = {m.group("name"): int(m.group("count")) for m in _INPUTS.finditer(python)}
    blocks = _functions(text)
    vm_functions = {name for name, _ in blocks}
    nodes: List[Dict[str, Any]] = []
    ops: Dict[str, int] = {}
    functions: Dict[str, int] = {}

    def op(name: str) -> int:
        if name not in ops:
            ops[name] = len(nodes)
            nodes.append({"node_kind": "Op", "name": name})
        return ops[name]

    for name, lines in blocks:
        registers = _Registers()
        fresh: Set[int] = set()  # registers holding a tensor allocated and not yet written
        param_ids = []
        for i in range(inputs.get(name, 0)):
            registers.write(i, len(nodes))
            param_ids.append(len(nodes))
            nodes.append({"node_kind": "Var", "name": str(i)})  # shown as %0, as as_text() names it
        result: List[int] = []
        for index, line in enumerate(lines):
            registers.reach(index)
            opcode, _, rest = line.partition(" ")
            if opcode == "ret":
                result = registers.read([_register(rest.strip())])
                continue
            call = _CALL.match(line)
            if call is None:  # If / goto: control flow, reading the condition register if any
                fields = [a.strip(",") for a in rest.split()]
                control = op(f"vm.{opcode.lower()}")  # (an Op is added before the Call that uses it)
                nodes.append({"node_kind": "Call", "op": control, "args": registers.read(map(_register, fields)),
                              "attrs": {"text": line}})
                if opcode == "If":
                    registers.branch()
                elif opcode == "goto" and fields and fields[-1].lstrip("-").isdigit():
                    registers.goto(index + int(fields[-1]))
                continue
            callee, dst = call.group("callee"), _register(call.group("dst"))
            if callee == _FREE:  # frees a register: its value is read no more
                fresh.discard(dst if dst is not None else -1)
                continue
            reads = [_register(a.strip()) for a in call.group("args").split(",")]
            attrs: Dict[str, Any] = {"text": line}
            if callee in vm_functions:
                attrs["function"] = callee
            elif not callee.startswith(VM_BUILTIN_PREFIX):
                attrs["kernel"] = callee
            called = op(callee)
            nid = len(nodes)
            nodes.append({"node_kind": "Call", "op": called, "args": registers.read(reads), "attrs": attrs})
            if "kernel" in attrs:
                for r in [r for r in reads if r in fresh]:
                    fresh.discard(r)
                    registers.write(r, nid)
            if dst is not None:
                registers.write(dst, nid)
                if callee == _ALLOC_TENSOR:
                    fresh.add(dst)
                else:
                    fresh.discard(dst)
        if len(result) > 1:  # a value each branch of an If wrote: returned is whichever ran
            nodes.append({"node_kind": "Call", "op": op("vm.ret"), "args": result, "attrs": {}})
            result = [len(nodes) - 1]
        body = result[0] if result else (len(nodes) - 1 if len(nodes) > len(param_ids) else None)
        if body is None:
            body = len(nodes)
            nodes.append({"node_kind": "Tuple", "fields": []})
        functions[name] = len(nodes)
        nodes.append({"node_kind": "Function", "params": param_ids, "body": body})
    return new_document(nodes, ir=VM_EXECUTABLE, functions=functions)


class _Registers:
    """The instructions that last wrote each register of a VM function, as its instructions are
    read in order. After an ``If``, the then-branch runs up to its ``goto`` and the else-branch
    from there to the ``goto``'s target: a register both branches write has both writers until
    the next write after the branches meet, so what reads it reads whichever ran."""

    def __init__(self) -> None:
        self._writers: Dict[int, List[int]] = {}
        #: Open If-branches, innermost last: (registers the then-branch wrote, those the else-branch
        #: wrote, the index where both meet: None while in the then-branch).
        self._branches: List[Tuple[Set[int], Set[int], List[Optional[int]]]] = []

    def read(self, registers: Iterable[Optional[int]]) -> List[int]:
        """The writers of ``registers`` (None: not a register), in order (a register read twice
        is an argument twice, as in ``multiply(%0, %0)``)."""
        return [w for r in registers if r is not None for w in self._writers.get(r, [])]

    def write(self, register: int, writer: int) -> None:
        """``writer`` wrote ``register``."""
        for then, _, meet in self._branches:
            if meet[0] is None:
                then.add(register)
        if self._branches and self._branches[-1][2][0] is not None:
            then, otherwise, _ = self._branches[-1]
            if register in then and register not in otherwise:
                otherwise.add(register)
                self._writers[register] = self._writers.get(register, []) + [writer]
                return
            if register in then:
                self._writers[register] = self._writers[register][:-1] + [writer]
                return
        self._writers[register] = [writer]

    def branch(self) -> None:
        """An ``If``: its then-branch starts."""
        self._branches.append((set(), set(), [None]))

    def goto(self, target: int) -> None:
        """The then-branch ends in a ``goto`` to ``target``: the else-branch runs until there."""
        if self._branches and self._branches[-1][2][0] is None:
            self._branches[-1][2][0] = target

    def reach(self, index: int) -> None:
        """Instruction ``index`` is next: the branches that meet at or before it are closed."""
        while self._branches and self._branches[-1][2][0] is not None and self._branches[-1][2][0] <= index:
            self._branches.pop()


def _register(arg: str) -> Optional[int]:
    """The number of a register argument (``%3``); None for ``%vm``, ``%void``, immediates
    (``i2``), constants (``c[4]``) and function references (``f[name]``)."""
    found = _REGISTER.match(arg)
    return int(found.group(1)) if found else None


def _functions(text: str) -> List[Tuple[str, List[str]]]:
    """``(name, instruction texts)`` of each VM function in ``as_text()``; packed and TIR
    functions are only declared there (``@name packed_func;``) and have no instructions."""
    out: List[Tuple[str, List[str]]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        header = _VM_FUNCTION.match(line)
        if header is not None:
            out.append((header.group("name"), []))
            inside = True
        elif _DECLARED.match(line) is not None:
            inside = False
        elif inside:
            out[-1][1].append(line)
    return out
