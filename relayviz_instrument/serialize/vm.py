"""What ``relay.vm.compile`` built: a VM ``Executable``'s bytecode as a RelayViz document.

Each VM function becomes a ``Function`` whose parameters are its named arguments; each
instruction that computes a register becomes a ``Call`` of an ``Op`` named ``vm.<opcode>``
(``vm.invoke_packed`` carries the kernel it runs as ``attrs.kernel``), reading the
instructions that last wrote its input registers. ``invoke_packed`` writes its output
registers in place, so later readers of those registers read it. The function's result is
what its ``ret`` reads. The bytecode is read from the text TVM prints for it
(``Executable.bytecode``), one instruction per line.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..errors import RelayVizSerializeError
from ..format import Document, new_document

__all__ = ["from_vm_executable"]

_FUNCTION = re.compile(r"VM Function\[\d+\]: (?P<name>[^(]+)\((?P<params>[^)]*)\)")
_INSTRUCTION = re.compile(r"^\s*\d+:.*?#\s*(?P<text>\S.*)$")
_REGISTER = re.compile(r"\$(\d+)")
_PACKED = re.compile(r"PackedFunc\[(\d+)\]")
_VM_FUNC = re.compile(r"VMFunc\[(\d+)\]")
#: Instructions that only read their registers (no destination).
_NO_DESTINATION = frozenset({"ret", "if", "goto", "kill_register", "fatal"})


def from_vm_executable(exe: Any) -> Document:
    """The document of a ``tvm.runtime.vm.Executable`` (``relay.vm.compile``'s result)."""
    try:
        text, kernels, names = str(exe.bytecode), [str(k) for k in exe.primitive_ops], list(exe.globals)
    except Exception as exc:  # not an Executable after all
        raise RelayVizSerializeError(f"cannot read the VM executable's bytecode: {exc}") from None
    nodes: List[Dict[str, Any]] = []
    ops: Dict[Tuple[str, str], int] = {}
    functions: Dict[str, int] = {}

    def op(name: str, kernel: str = "") -> int:
        key = (name, kernel)
        if key not in ops:
            node: Dict[str, Any] = {"node_kind": "Op", "name": kernel or name}
            ops[key] = len(nodes)
            nodes.append(node)
        return ops[key]

    for name, params, lines in _functions(text):
        registers: Dict[int, int] = {}
        param_ids = []
        for i, param in enumerate(params):
            registers[i] = len(nodes)
            param_ids.append(len(nodes))
            nodes.append({"node_kind": "Var", "name": param})
        result: Optional[int] = None
        for line in lines:
            opcode, _, rest = line.partition(" ")
            regs = [int(r) for r in _REGISTER.findall(rest)]
            if opcode == "kill_register":
                continue
            if opcode == "ret":
                result = registers.get(regs[0]) if regs else None
                continue
            attrs: Dict[str, Any] = {"text": line}
            kernel = ""
            packed = _PACKED.search(rest)
            if opcode == "invoke_packed" and packed is not None and int(packed.group(1)) < len(kernels):
                kernel = kernels[int(packed.group(1))]
            called = _VM_FUNC.search(rest)
            if called is not None and int(called.group(1)) < len(names):
                attrs["function"] = names[int(called.group(1))]
            if opcode == "invoke_packed" and "out:" in rest:
                inputs = [int(r) for r in _REGISTER.findall(rest.split("out:")[0])]
                outputs = [int(r) for r in _REGISTER.findall(rest.split("out:")[1])]
                reads, writes = inputs + outputs, outputs
            elif opcode in _NO_DESTINATION or not regs:
                reads, writes = regs, []
            else:
                reads, writes = regs[1:], regs[:1]
            node = {"node_kind": "Call", "op": op(f"vm.{opcode}", kernel),
                    "args": [registers[r] for r in reads if r in registers], "attrs": attrs}
            nid = len(nodes)
            nodes.append(node)
            for r in writes:
                registers[r] = nid
        body = result if result is not None else (len(nodes) - 1 if len(nodes) > len(param_ids) else None)
        if body is None:
            body = len(nodes)
            nodes.append({"node_kind": "Tuple", "fields": []})
        functions[name] = len(nodes)
        nodes.append({"node_kind": "Function", "params": param_ids, "body": body})
    return new_document(nodes, ir="vm_executable", functions=functions)


def _functions(text: str) -> List[Tuple[str, List[str], List[str]]]:
    """``(name, parameter names, instruction texts)`` of each VM function in the bytecode text."""
    out: List[Tuple[str, List[str], List[str]]] = []
    for line in text.splitlines():
        header = _FUNCTION.match(line.strip())
        if header is not None:
            params = [p.strip() for p in header.group("params").split(",") if p.strip()]
            out.append((header.group("name").strip(), params, []))
            continue
        instruction = _INSTRUCTION.match(line)
        if instruction is not None and out and not instruction.group("text").startswith("inst("):
            out[-1][2].append(instruction.group("text").strip())
    return out
