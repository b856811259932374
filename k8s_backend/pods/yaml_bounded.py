"""Reading a YAML file a user names (pod and PodGroup templates) within bounds, so hostile input is refused.

PyYAML's safe loader builds no arbitrary objects, but it expands aliases: a 368-byte "billion laughs"
file of nested aliases is a tree of ~10^6 nodes once serialised (6 levels cost 9.7 s and 192 MiB per
pod; at 7 levels no pod was ever created). Both bounds are stated here and in the error messages.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_ALIASES = 50
"""The most YAML aliases (``*name``) one file may use: Spark's own loader (SnakeYAML's
``maxAliasesForCollections``) refuses more too."""

MAX_BYTES = 1_572_864
"""The largest file read (1.5 MiB): the API server stores no object larger than that, so a bigger
template could never become a pod or a PodGroup."""


class YamlLimitError(ValueError):
    """The file is beyond one of the bounds (the message says which, and what to do)."""


class _TooManyAliases(yaml.YAMLError):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses more than :data:`MAX_ALIASES` aliases."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _TooManyAliases(f"more than {MAX_ALIASES} aliases")
        return super().compose_node(parent, index)


def load_bounded_yaml(text: str) -> Any:
    """One YAML document, refusing more than :data:`MAX_ALIASES` aliases (:class:`YamlLimitError`);
    other problems raise :class:`yaml.YAMLError`."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    except _TooManyAliases:
        raise YamlLimitError(
            f"it uses more than {MAX_ALIASES} YAML aliases (*name), the most accepted: nested aliases "
            "expand exponentially; write the repeated parts out"
        ) from None
    finally:
        loader.dispose()


def read_bounded_yaml(path: str) -> Any:
    """Read and parse the file at ``path`` within both bounds. Raises OSError (unreadable),
    :class:`YamlLimitError` (beyond a bound), :class:`yaml.YAMLError` or UnicodeDecodeError."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlLimitError(
            f"it is larger than {MAX_BYTES} bytes (1.5 MiB), the most accepted: the API server stores no "
            "larger object"
        )
    return load_bounded_yaml(data.decode("utf-8"))
