"""GraphViz: a drawing as DOT (``--to dot``), or as SVG rendered by GraphViz's ``dot`` (``--to svg``).

The DOT text is built with the ``graphviz`` package (extra ``[dot]``), which quotes and
escapes; SVG comes from the ``dot`` program (Debian/Ubuntu: ``apt-get install graphviz``).
Operators are rounded boxes showing the operator, output dtype and shape; graph inputs are
yellow ellipses, function parameters white ellipses, constants notes, tuples dashed boxes,
calls of functions houses; functions are clusters. In a diff, fill colours carry the status
(:data:`~relayviz_instrument.export.drawing.STATUS_COLOURS`) and a legend counts them.

Every text from a document goes through :func:`~relayviz_instrument.names.printable` before
GraphViz's quoting: a control character in a name is written ``\\x1b``, never raw, so the DOT
text is safe to print and the SVG ``dot`` makes from it is XML (which refuses most control
characters); an SVG that still does not parse is refused, not written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, cast
from xml.parsers import expat

from .._files import atomic_write_bytes
from ..errors import RelayVizDependencyError, RelayVizExportError
from ..names import printable
from .base import ExportGraph, ExportOptions, OutputPath, graph_files, require
from .drawing import STATUS_COLOURS, STATUSES, Cluster, Drawing, DrawnNode
from .sizing import prepare

__all__ = ["DotExporter", "SvgExporter", "to_dot", "DOT_NODE_LIMIT"]

#: Above this many nodes a drawing is hard to read as one picture and ``dot``'s layout time grows
#: faster than the graph: the exporter warns and suggests ``--max-nodes``. Measured with
#: benchmarks/bench_export.py on 2 cores: Inception-v3 after FuseOps, 2,674 nodes, exports to SVG
#: in about 2.5 s; ResNet-50 (1,539 nodes) in about 1 s.
DOT_NODE_LIMIT = 3000

_SHAPES = {"op": "box", "input": "ellipse", "param": "ellipse", "const": "note", "tuple": "box",
           "call": "invhouse", "collapsed": "box3d", "other": "hexagon"}
_STYLES = {"op": "rounded,filled", "tuple": "rounded,dashed,filled", "collapsed": "filled"}
_FILLS = {"op": "#eceff1", "input": "#fff59d", "param": "#ffffff", "const": "#f5f5f5", "tuple": "#ffffff",
          "call": "#e0f2f1", "collapsed": "#e0e0e0", "other": "#f3e5f5"}
_CLUSTER_LINES = {"primitive": "#78909c", "composite": "#8e24aa", "global": "#1e88e5", "function": "#6d4c41"}
#: Field changes listed on a changed node; more are counted.
_CHANGES_SHOWN = 3


def to_dot(drawing: Drawing, *, legend: bool = True) -> str:
    """The DOT text of ``drawing`` (deterministic: the same drawing gives the same text)."""
    graphviz = require("graphviz", "dot", "--to dot")
    title = [drawing.name] + list(drawing.notes)
    dot = graphviz.Digraph(name=_id(drawing.name), graph_attr={
        "rankdir": "TB", "fontname": "Helvetica", "fontsize": "12", "labelloc": "t", "labeljust": "l",
        "label": _escaped_lines(title), "newrank": "true", "nodesep": "0.25", "ranksep": "0.35"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "margin": "0.08,0.03", "height": "0.3"},
        edge_attr={"color": "#546e7a", "arrowsize": "0.6"})
    children: Dict[Optional[str], List[Cluster]] = {}
    for cluster in drawing.clusters:
        children.setdefault(cluster.parent, []).append(cluster)
    members: Dict[Optional[str], List[DrawnNode]] = {}
    for node in drawing.nodes:
        members.setdefault(node.cluster, []).append(node)

    def fill(graph: Any, key: Optional[str]) -> None:
        for node in members.get(key, ()):
            graph.node(node.key, **_node_attrs(node, drawing.is_diff))
        for cluster in children.get(key, ()):
            with graph.subgraph(name=f"cluster_{cluster.key}") as sub:
                line = STATUS_COLOURS[cluster.status][1] if cluster.status else _CLUSTER_LINES[cluster.kind]
                back = _CLUSTER_BACKS.get(cluster.status, "#fafafa")
                sub.attr(label=_escaped_lines([cluster.label]), style="rounded,filled", color=line,
                         fillcolor=back, penwidth="2" if cluster.status not in ("", "unchanged") else "1",
                         fontsize="10", fontcolor="#37474f")
                fill(sub, cluster.key)

    fill(dot, None)
    for edge in drawing.edges:
        attrs: Dict[str, str] = {}
        if edge.status == "added":
            attrs = {"color": STATUS_COLOURS["added"][1], "penwidth": "1.6"}
        elif edge.status == "removed":
            attrs = {"color": STATUS_COLOURS["removed"][1], "style": "dashed", "penwidth": "1.6"}
        dot.edge(edge.src, edge.dst, **attrs)
    if legend and drawing.is_diff:
        _legend(dot, drawing)
    return cast(str, dot.source)  # graphviz is untyped: Digraph.source is its DOT text


_CLUSTER_BACKS = {"added": "#f1f8e9", "removed": "#ffebee", "changed": "#fff8e1"}


def _node_attrs(node: DrawnNode, is_diff: bool) -> Dict[str, str]:
    lines = [node.label] + ([node.type] if node.type else [])
    if node.role == "collapsed" and node.count > 1 and not node.label[0].isdigit():
        lines.append(f"{node.count} nodes")
    lines += [f"~ {c}" for c in node.changes[:_CHANGES_SHOWN]]
    if len(node.changes) > _CHANGES_SHOWN:
        lines.append(f"~ {len(node.changes) - _CHANGES_SHOWN} more")
    attrs = {"label": _escaped_lines(lines), "shape": _SHAPES[node.role],
             "style": _STYLES.get(node.role, "filled"), "tooltip": _escaped_lines(_tooltip(node))}
    if is_diff:
        back, line = STATUS_COLOURS[node.status or "unchanged"]
        attrs.update(fillcolor=back, color=line)
        if node.status not in ("", "unchanged"):
            attrs["penwidth"] = "2"
        if node.status == "removed":
            attrs["style"] += ",dashed"
    else:
        attrs["fillcolor"] = _FILLS[node.role]
    if node.role == "input":
        attrs["penwidth"] = "2"
    return attrs


def _tooltip(node: DrawnNode) -> List[str]:
    head = node.kind if node.label.lower() == node.kind.lower() else f"{node.kind} {node.label}"
    return [head] + [f"{k} = {v}" for k, v in node.attrs]


def _lines(lines: Iterable[str]) -> str:
    """Lines for a DOT label, each centred (``\\n`` ends a line in DOT's escString)."""
    return "\\n".join(lines)


def _escaped_lines(lines: Iterable[str]) -> str:
    """Lines of text from a document as a DOT label: printable, then quoted for GraphViz."""
    import graphviz

    return _lines(graphviz.escape(printable(line)) for line in lines)


def _id(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "graph"


def _legend(dot: Any, drawing: Drawing) -> None:
    counts = drawing.status_counts()
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="diff", style="rounded", color="#b0bec5", fontsize="10", rank="same")
        previous = None
        for status in STATUSES:
            back, line = STATUS_COLOURS[status]
            key = f"legend_{status}"
            legend.node(key, label=f"{status}: {counts.get(status, 0)}", shape="box", style="rounded,filled"
                        + (",dashed" if status == "removed" else ""), fillcolor=back, color=line)
            if previous is not None:
                legend.edge(previous, key, style="invis")
            previous = key
        legend.node("legend_edges", shape="plaintext", label=_lines(
            ["green edge: added", "red dashed edge: removed"]))
        legend.edge(previous, "legend_edges", style="invis")


def render_svg(source: str, where: str) -> bytes:
    """SVG of the DOT text ``source``, laid out by GraphViz's ``dot`` program."""
    graphviz = require("graphviz", "dot", "--to svg")
    try:
        svg = graphviz.Source(source).pipe(format="svg", engine="dot")
    except graphviz.ExecutableNotFound:
        raise RelayVizDependencyError("--to svg needs GraphViz's dot program, which is not on PATH: install "
                                      "GraphViz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install "
                                      "graphviz)") from None
    except graphviz.CalledProcessError as exc:
        message = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        raise RelayVizExportError(f"{where}: dot could not lay out the graph: "
                                  f"{message[0] if message else exc}") from None
    try:  # expat reads it once, without building a tree: about 2% of dot's own time
        expat.ParserCreate().Parse(svg, True)
    except expat.ExpatError as exc:
        raise RelayVizExportError(f"{where}: dot wrote an SVG that is not valid XML ({exc}); nothing was "
                                  "written") from None
    return cast(bytes, svg)  # graphviz is untyped: pipe() without an encoding returns bytes


def _write(graphs: Sequence[ExportGraph], out: OutputPath, options: ExportOptions, *, fmt: str, suffix: str,
           render: Callable[[str, str], bytes]) -> List[Path]:
    require("graphviz", "dot", f"--to {fmt}")
    paths = graph_files(graphs, out, suffix)
    drawings = prepare(graphs, options, fmt=fmt, node_limit=DOT_NODE_LIMIT)
    for graph, drawing, path in zip(graphs, drawings, paths):
        atomic_write_bytes(path, render(to_dot(drawing, legend=options.legend), graph.source))
    return paths


class DotExporter:
    """``--to dot``: GraphViz DOT text, one file per graph (a directory of them for a trace)."""

    name = "dot"
    summary = "GraphViz DOT text (render it with dot -Tsvg / -Tpng)"
    extra = "dot"
    many = True
    node_limit: Optional[int] = DOT_NODE_LIMIT

    def write(self, graphs: Sequence[ExportGraph], out: OutputPath, *,
              params: Optional[Mapping[str, Any]] = None, options: ExportOptions = ExportOptions()) -> List[Path]:
        return _write(graphs, out, options, fmt=self.name, suffix=".dot", render=lambda text, _: text.encode())


class SvgExporter:
    """``--to svg``: the DOT drawing laid out by GraphViz's ``dot`` as SVG."""

    name = "svg"
    summary = "SVG drawn by GraphViz's dot (needs the dot program)"
    extra = "dot"
    many = True
    node_limit: Optional[int] = DOT_NODE_LIMIT

    def write(self, graphs: Sequence[ExportGraph], out: OutputPath, *,
              params: Optional[Mapping[str, Any]] = None, options: ExportOptions = ExportOptions()) -> List[Path]:
        return _write(graphs, out, options, fmt=self.name, suffix=".svg", render=render_svg)
