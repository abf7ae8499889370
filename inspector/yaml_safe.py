"""YAML for files the user hands us: ``safe_load`` plus a ceiling on what aliases expand to.

``safe_load`` builds no objects from tags, but a few lines of nested aliases (a "billion
laughs" file) expand into gigabytes once the value is copied or written out, as a trace's
record of the config is. Real configs are a few thousand nodes at most.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_NODES = 1_000_000


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document holds with every alias expanded (shared nodes counted each time)."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()  # a recursive alias (&a [*a]) is counted once, not followed forever
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes or (not done and id(node) in visiting):
            continue
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            sizes[id(node)] = 1
            continue
        if done:
            sizes[id(node)] = min(1 + sum(sizes.get(id(c), 1) for c in children), MAX_NODES + 1)
        else:
            visiting.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def load(text: str) -> Any:
    """``yaml.safe_load(text)``, refusing documents whose aliases expand past ``MAX_NODES`` nodes."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if _expanded_size(root) > MAX_NODES:
            raise yaml.YAMLError(f"the aliases (*name) expand to more than {MAX_NODES:,} values: refused, "
                                 "as an alias bomb would be")
        return loader.construct_document(root)
    finally:
        loader.dispose()
