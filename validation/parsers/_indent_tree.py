"""Build a tree from indented `key: value` lines (amd-smi text views, nvidia-smi -q).

The tree is a private intermediate: parsers walk it and return their own frozen records.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Node:
    """One `key: value` line (value None for a section header) and the lines indented under it."""

    key: str
    value: str | None
    line_no: int
    line: str
    indent: int
    children: list[Node] = field(default_factory=list)

    def child(self, key: str) -> Node | None:
        """The first direct child named `key` (case-sensitive), or None."""
        for node in self.children:
            if node.key == key:
                return node
        return None

    def get(self, *path: str) -> str | None:
        """The value at `path` below this node, or None when any step is missing."""
        node: Node | None = self
        for key in path:
            node = node.child(key) if node is not None else None
        return node.value if node is not None else None


def build(entries: list[tuple[int, str, int, str, str | None]]) -> list[Node]:
    """Nest (line_no, line, indent, key, value) entries by indentation; returns the top-level nodes."""
    roots: list[Node] = []
    stack: list[Node] = []
    for line_no, line, indent, key, value in entries:
        node = Node(key=key, value=value, line_no=line_no, line=line, indent=indent)
        while stack and stack[-1].indent >= indent:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots
