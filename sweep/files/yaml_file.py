"""Reading a YAML file someone else may have written: bounded in size, no duplicate keys, no alias bombs.

`yaml.safe_load` refuses Python tags but accepts three things that hurt a sweep: a file of any
size, a repeated key (the last one silently wins: a second `objective:` block changes the budget),
and anchors that expand exponentially ("billion laughs": 1.8 KB that pydantic would walk as 10^9
values). Every spec, promotion, target and cluster file goes through `read_yaml`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from train_entry.config import shown

MAX_YAML_BYTES = 1 << 20
"""1 MiB: the default spec is 2 KB; a larger file is a mistake or an attack, not a spec."""
MAX_NODES = 100_000
"""Values a document may hold once its aliases are expanded: a 25-point grid is a few hundred."""
MAX_WRITTEN_NODES = 10_000
"""Values a document may write out (aliases counted once), counted while it is read: the largest shipped spec holds
about 250, and SafeLoader, in pure Python, took 45 s (under load) over a 1 MiB flow list of 500,000 values and 17 s
over 100,000 keys before anything could be refused."""
MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlFileError(ValueError):
    """A YAML file that cannot be read as a config; the message names the file and the problem."""


class _TooManyNodes(Exception):
    """A document writing out more than MAX_WRITTEN_NODES values, found at `line` (1-based)."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated within one mapping (merge keys `<<` may still override), and stops
    composing at the MAX_WRITTEN_NODES+1st value."""

    written_nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self.written_nodes += 1
        if self.written_nodes > MAX_WRITTEN_NODES:
            raise _TooManyNodes(self.peek_event().start_mark.line + 1)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: SafeLoader's own error names it
                continue
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {shown(key)} (first at line {first.start_mark.line + 1}); "
                    "a repeated key would silently replace the first one",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path, *, kind: str) -> Any:
    """The document in `path`; YamlFileError naming the file for anything unreadable, oversized,
    malformed, with a duplicate key or with aliases expanding beyond MAX_NODES values."""
    try:
        if not path.is_file():
            raise YamlFileError(f"{path}: {kind} file not found" if not path.exists() else f"{path}: not a file")
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise YamlFileError(f"{path}: {size:,} bytes; a {kind} file may hold at most {MAX_YAML_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise YamlFileError(f"{path}: cannot read {kind}: {exc}") from None
    loader = _StrictLoader(text)
    loader.name = str(path)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded = _expanded_size(node)
        if expanded > MAX_NODES:
            raise YamlFileError(
                f"{path}: its aliases expand to more than {MAX_NODES:,} values; write the values out instead"
            )
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        context = f"{exc.context}: " if exc.context else ""
        raise YamlFileError(f"{path}: not valid YAML{where}: {context}{exc.problem}") from None
    except yaml.YAMLError as exc:
        raise YamlFileError(f"{path}: not valid YAML: {shown(str(exc))}") from None
    except RecursionError:
        raise YamlFileError(f"{path}: nested too deeply to be a {kind}") from None
    except _TooManyNodes as exc:
        raise YamlFileError(
            f"{path}: more than {MAX_WRITTEN_NODES:,} values (the next at line {exc.line}); a {kind} file holds a few "
            "hundred"
        ) from None
    finally:
        loader.dispose()


def _expanded_size(root: Node) -> int:
    """Values in the document with every alias expanded, counted without expanding them (memoised
    per node); a recursive alias counts as unbounded."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node)
        if children_done:
            in_progress.discard(key)
            sizes[key] = min(1 + sum(sizes[id(child)] for child in children), MAX_NODES + 1)
            continue
        if key in in_progress:  # reached again while its own children are open: a cycle
            return MAX_NODES + 1
        in_progress.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in in_progress:
                return MAX_NODES + 1
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []
