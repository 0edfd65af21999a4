"""Bounds on the YAML a config file may be: an experiment file is data someone sent, and a few
lines of nested anchors (`&a [*a, *a, ...]`, the "billion laughs") expand to more nodes than memory
holds. PyYAML composes aliases as shared references, cheaply; OmegaConf then copies every
reference, and the run hung with no output (killed after minutes).

`BoundedLoader` counts what a document expands to right after PyYAML composes it, before anything
is copied: past `MAX_NODES` nodes (or `MAX_BYTES` of text, or an alias inside itself) it fails in
one line naming the file. geoeval's shipped configs expand to at most ~120 nodes; the bound
leaves room for lists of thousands of values. `search_path.register` makes every YAML file Hydra and OmegaConf load
in this process go through it (`private_api.bound_omegaconf_yaml`).
"""

from __future__ import annotations

from typing import Any

import yaml

#: the most nodes (mappings, sequences, scalars) a document may expand to, aliases counted as copies:
#: the largest shipped config expands to ~120; OmegaConf takes ~0.5 ms a node (10 s at the bound)
MAX_NODES = 20_000
#: the most characters a config file may hold
MAX_BYTES = 4_000_000


class YamlTooLarge(yaml.YAMLError):
    """A config file past the bounds: its message is the one line to show."""


def expanded_nodes(root: yaml.Node, limit: int) -> int:
    """How many nodes `root` stands for once every alias is copied, counted once per distinct node
    (so the count itself stays linear in the document); stops counting past `limit`. Raises
    `YamlTooLarge` for an alias to a node that contains it (a recursive document)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            sizes[key] = min(size, limit + 1)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YamlTooLarge("an alias refers to a node that contains it (a recursive document)")
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise YamlTooLarge("an alias refers to a node that contains it (a recursive document)")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_document(node: yaml.Node | None, name: str) -> None:
    """Raise `YamlTooLarge` naming `name` when `node` (a composed document) expands past `MAX_NODES`."""
    if node is None:
        return
    try:
        size = expanded_nodes(node, MAX_NODES)
    except YamlTooLarge as error:
        raise YamlTooLarge(f"{name}: {error}: refused before it is expanded") from None
    if size > MAX_NODES:
        raise YamlTooLarge(
            f"{name}: its anchors and aliases expand to more than {MAX_NODES:,} nodes (a YAML bomb?): "
            "refused before it is expanded"
        )


def bounded(loader: type) -> type:
    """A subclass of the PyYAML loader class `loader` whose documents are checked (`check_document`)
    once composed, before they are constructed, and whose input is at most `MAX_BYTES` long."""

    class BoundedLoader(loader):
        def __init__(self, stream: Any) -> None:
            text = stream if isinstance(stream, (str, bytes)) else None
            if text is None and hasattr(stream, "read"):
                name = getattr(stream, "name", "<file>")
                text = stream.read(MAX_BYTES + 1)
                if len(text) > MAX_BYTES:
                    raise YamlTooLarge(f"{name}: longer than {MAX_BYTES:,} characters: not read as a config")
                stream = text if isinstance(text, str) else bytes(text)
                super().__init__(stream)
                self.name = name
                return
            if text is not None and len(text) > MAX_BYTES:
                raise YamlTooLarge(f"a config text longer than {MAX_BYTES:,} characters: not read as a config")
            super().__init__(stream)

        def compose_document(self) -> Any:
            name = str(getattr(self, "name", "<config>"))
            try:
                node = super().compose_document()
            except RecursionError:  # PyYAML composes nested nodes recursively
                raise YamlTooLarge(f"{name}: nested too deep to be a config") from None
            check_document(node, name)
            return node

    BoundedLoader.__name__ = BoundedLoader.__qualname__ = f"Bounded{loader.__name__}"
    return BoundedLoader
