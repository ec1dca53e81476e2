"""A rich renderable for one node's history: a tree back to the input module's nodes."""

from __future__ import annotations

from typing import Dict, Hashable, Iterable, List, Set

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text
from rich.tree import Tree

from ..analysis.chain import NodeEvent, NodeKey
from ..analysis.provenance import Provenance
from ..names import printable
from .hunk_tree import field_changes_text

__all__ = ["HistoryTree"]

#: Origins listed under a creation before "… and N more".
ORIGINS_SHOWN = 5
#: Origins whose own history is expanded, over the whole tree; later ones are listed only.
EXPANDED = 40

_EVENT_STYLE = {"created": "green", "changed": "yellow", "rewired": "blue", "removed": "red"}


def _counts(prov: Provenance, keys: Iterable[NodeKey]) -> str:
    counts: Dict[str, int] = {}
    for key in keys:
        name = prov.info(key).name
        counts[name] = counts.get(name, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(printable(name) if n == 1 else f"{printable(name)}×{n}" for name, n in ordered)


class HistoryTree:
    """Node ``key``'s history as a tree: what each step did to it, newest first, and under the
    step that created it the nodes it came from, each with its own history, down to the input
    module. A first line counts the input module's nodes it stems from; for a node of an
    earlier snapshot, a second one the last snapshot's nodes that stem from it.

    Origins are listed ``origins_shown`` at a time; the histories of at most ``expanded`` of
    them are unfolded, and a node met twice is unfolded once.
    """

    def __init__(self, prov: Provenance, key: NodeKey, *, origins_shown: int = ORIGINS_SHOWN,
                 expanded: int = EXPANDED) -> None:
        self.prov = prov
        self.key = key
        self.origins_shown = origins_shown
        self.expanded = expanded

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        prov, key = self.prov, self.key
        history = prov.history(key)
        head = self._node_text(key)
        head.append(f"  {prov.where(key[0])}", style="dim")
        tree = Tree(head, guide_style="dim")
        roots = [(0, r) for r in history.roots]
        line = Text("stems from ", style="bold")
        if roots == [prov.first(key)]:
            line.append("itself: it is in the input module")
        else:
            line.append(f"{len(roots)} node{'s' if len(roots) != 1 else ''} of the input module")
            if roots:
                line.append(": " + _counts(prov, roots), style="dim")
        tree.add(line)
        if key[0] < prov.last:
            self._ends(tree, key)
        budget = [self.expanded]
        self._events(tree, key, forward=True, seen=set(), budget=budget)
        yield tree

    def _ends(self, tree: Tree, key: NodeKey) -> None:
        """What a node of an earlier snapshot became in the last one: the nodes that stem
        from it (the kernels that compute it, after lowering)."""
        prov = self.prov
        ends = [(prov.last, i) for i in prov.descendants(key)]
        line = Text("becomes ", style="bold")
        if not ends:
            line.append("nothing of the last snapshot: what it computed is gone")
            tree.add(line)
            return
        # Calls first: a kernel says what became of an operator better than its parameters.
        ends.sort(key=lambda k: (prov.info(k).kind != "Call", k[1]))
        line.append(f"{len(ends)} node{'s' if len(ends) != 1 else ''} of the last snapshot", style="bold")
        line.append(": " + _counts(prov, ends), style="dim")
        branch = tree.add(line)
        for end in ends[: self.origins_shown]:
            branch.add(self._node_text(end))
        if len(ends) > self.origins_shown:
            branch.add(Text(f"… and {len(ends) - self.origins_shown} more", style="dim"))

    def _node_text(self, key: NodeKey) -> Text:
        info = self.prov.info(key)
        text = Text()
        text.append(printable(info.name), style="bold")
        if info.detail:
            text.append(" " + printable(info.detail))
        if info.type:
            text.append("  " + printable(info.type), style="dim")
        text.append(f"  node {key[1]}", style="cyan")
        return text

    def _events(self, branch: Tree, key: NodeKey, *, forward: bool, seen: Set[Hashable], budget: List[int]) -> None:
        """Add what happened to ``key``, newest first; only up to its position unless ``forward``."""
        history = self.prov.history(key)
        events = [e for e in history.events if forward or e.node[0] <= key[0] and e.kind != "removed"]
        for event in reversed(events):
            node = branch.add(self._event_text(event))
            if event.kind == "created":
                self._origins(node, event, seen, budget)
        if history.lineage[0][0] == 0:
            branch.add(Text(f"in the input module as node {history.lineage[0][1]}", style="dim"))

    def _event_text(self, event: NodeEvent) -> Text:
        text = Text()
        text.append(event.kind, style=_EVENT_STYLE[event.kind])
        text.append(" by ")
        text.append(printable(event.step.name), style="bold")
        if event.step.index is not None:
            text.append(f" #{event.step.index}", style="dim")
        if event.step.after_nested:
            text.append(" (after its nested passes)", style="dim")
        if event.kind == "changed" and event.fields:
            text.append("  ")
            text.append_text(field_changes_text(event.fields))
        elif event.hunk is not None and event.kind != "rewired":
            text.append("  ")
            text.append(event.hunk.kind, style="dim")
            text.append(": " + printable(event.hunk.label))
        if event.kind == "created":
            if event.origins:
                text.append(f"  from {len(event.origins)} node{'s' if len(event.origins) != 1 else ''}:",
                            style="dim")
            else:
                text.append("  from no former node", style="dim")
        elif event.kind == "removed" and event.successors:
            text.append(f"  replaced by {_counts(self.prov, event.successors)}", style="dim")
        return text

    def _origins(self, branch: Tree, event: NodeEvent, seen: Set[Hashable], budget: List[int]) -> None:
        prov = self.prov
        # Nodes created by one hunk share its origins: list them once.
        hunk = ("hunk", event.step.position, event.hunk)
        if hunk in seen:
            branch.add(Text("the nodes listed above", style="dim"))
            return
        seen.add(hunk)
        # Calls first: they say what a node was made from better than its constants.
        origins = sorted(event.origins, key=lambda k: (prov.info(k).kind != "Call", k[1]))
        for origin in origins[: self.origins_shown]:
            node = branch.add(self._node_text(origin))
            start = prov.first(origin)
            if start in seen:
                node.add(Text("history shown above", style="dim"))
            elif budget[0] <= 0:
                node.add(Text("…", style="dim"))
            else:
                seen.add(start)
                budget[0] -= 1
                self._events(node, origin, forward=False, seen=seen, budget=budget)
        rest = origins[self.origins_shown:]
        if rest:
            branch.add(Text(f"… and {len(rest)} more: {_counts(prov, rest)}", style="dim"))

