"""YAML for files the user hands us: ``safe_load`` plus ceilings on what a document may hold.

``safe_load`` builds no objects from tags, but a few lines of nested aliases (a "billion
laughs" file) expand into gigabytes once the value is copied or written out, as a trace's
record of the config is; an alias inside the value it names (``a: &a [*a]``) makes a value
that contains itself, which every copy and every JSON writer follows forever; deep nesting
exhausts the parser's stack; and ``.inf``/``.nan`` (or ``1e999``) pass every range check
and then break the first ``int()``. Real configs are a few thousand nodes, a few levels deep,
and finite, so each of these is refused with the line it is on.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

MAX_NODES = 1_000_000
MAX_DEPTH = 64
MAX_INT = 2**63  # SQLite's and JSON's whole numbers; a 400-digit number is no setting


def _line(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}"


def _scalar_problem(loader: yaml.SafeLoader, node: yaml.ScalarNode, path: str) -> str | None:
    where = f"{_line(node)}: {path}: " if path else f"{_line(node)}: "
    if node.tag == "tag:yaml.org,2002:float":
        value = loader.construct_yaml_float(node)
        if not math.isfinite(value):
            return f"{where}{node.value!r} is not a finite number"
    elif node.tag == "tag:yaml.org,2002:int":
        try:
            value = loader.construct_yaml_int(node)
        except ValueError:  # more digits than Python converts: certainly too large
            value = MAX_INT
        if abs(value) >= MAX_INT:
            return f"{where}the number {node.value[:20]!r}… is too large"
    return None


def _expanded_size(loader: yaml.SafeLoader, root: yaml.Node) -> int:
    """Nodes the document holds with every alias expanded (shared nodes counted each time).

    Raises ``yaml.YAMLError`` for a value that contains itself, nesting past ``MAX_DEPTH`` and
    numbers :func:`_scalar_problem` refuses.
    """
    sizes: dict[int, int] = {}
    visiting: set[int] = set()  # started and not finished: the ancestors of the node at hand
    stack: list[tuple[yaml.Node, bool, int, str]] = [(root, False, 0, "")]
    while stack:
        node, done, depth, path = stack.pop()
        if id(node) in sizes:
            continue
        if not done and id(node) in visiting:
            raise yaml.YAMLError(f"{_line(node)}: an alias (*name) refers to the value that contains it; a setting "
                                 "cannot contain itself")
        if depth > MAX_DEPTH:
            raise yaml.YAMLError(f"{_line(node)}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
            paths = [f"{path}[{k}]" for k in range(len(children))]
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
            paths = []
            for key, _ in node.value:
                name = f"{path}.{key.value}" if path else str(key.value)
                paths += [path, name]
        else:
            problem = _scalar_problem(loader, node, path) if isinstance(node, yaml.ScalarNode) else None
            if problem:
                raise yaml.YAMLError(problem)
            sizes[id(node)] = 1
            continue
        if done:
            sizes[id(node)] = min(1 + sum(sizes.get(id(c), 1) for c in children), MAX_NODES + 1)
        else:
            visiting.add(id(node))
            stack.append((node, True, depth, path))
            stack.extend((c, False, depth + 1, p) for c, p in zip(reversed(children), reversed(paths))
                         if id(c) not in sizes)  # reversed: the first problem in the file is the one said
    return sizes[id(root)]


def load(text: str) -> Any:
    """``yaml.safe_load(text)``, refusing alias bombs (more than ``MAX_NODES`` values once
    expanded), self-containing aliases, nesting past ``MAX_DEPTH`` and non-finite or huge numbers."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if _expanded_size(loader, root) > MAX_NODES:
            raise yaml.YAMLError(f"the aliases (*name) expand to more than {MAX_NODES:,} values: refused, "
                                 "as an alias bomb would be")
        return loader.construct_document(root)
    except RecursionError:
        raise yaml.YAMLError(f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()
