"""``relayviz export SNAPSHOT --to netron -o FILE.json [--params FILE]``: write a snapshot for other tools."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict

from rich.console import Console
from rich.markup import escape

from ..errors import RelayVizDependencyError, RelayVizFormatError
from ..export import EXPORT_FORMATS, write_netron
from ..serialize.graph_json import read_document


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser(
        "export", help="write a snapshot in another tool's format (netron: TVM graph JSON)",
        description="Write SNAPSHOT (a RelayViz document, or graph JSON) in another tool's format. "
                    "netron: graph executor JSON that Netron opens, with FILE.params beside FILE.json "
                    "when parameter values are known (from --params, or constants the snapshot "
                    "carries in full).")
    parser.add_argument("snapshot", metavar="SNAPSHOT", help="RelayViz document or graph JSON")
    parser.add_argument("--to", choices=EXPORT_FORMATS, required=True, help="the output format")
    parser.add_argument("-o", "--output", metavar="FILE.json", type=Path, required=True,
                        help="the file to write")
    parser.add_argument("--params", metavar="FILE", type=Path,
                        help="TVM .params file with values for the graph's parameters (needs TVM)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, console: Console) -> int:
    doc = read_document(args.snapshot)
    params = _load_params(args.params) if args.params is not None else None
    written = write_netron(doc, args.output, params=params)
    for path in written:
        console.print(f"wrote {escape(str(path))}", highlight=False, soft_wrap=True)
    return 0


def _load_params(path: Path) -> Dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RelayVizFormatError(f"cannot read the file: {exc.strerror or exc}", source=str(path),
                                  hint="check the path") from None
    try:
        import tvm
        import tvm.runtime
    except ImportError:
        raise RelayVizDependencyError("reading a .params file needs TVM: pip install apache-tvm "
                                      "(or a Relay build such as hhb-tvm)") from None
    try:
        return dict(tvm.runtime.load_param_dict(bytearray(data)))
    except tvm.TVMError as exc:
        message = str(exc).strip().splitlines()[-1]
        raise RelayVizFormatError(f"not a TVM parameter file: {message}", source=str(path),
                                  hint="write it with tvm.runtime.save_param_dict") from None
