"""Safe YAML loading that remembers line numbers, so errors can name ``file:line``.

Every mapping comes back as a :class:`LineDict`: a plain dict that also knows the
line of each key. Reading stays ``yaml.safe_load``-safe: the loader subclasses
``SafeLoader`` and only changes how mappings are built.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Iterable

import yaml

from .errors import ConfigError


class LineDict(dict):
    """A dict from YAML that records the 1-based line of itself and of each key."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError as e:
            raise yaml.constructor.ConstructorError(
                None, None, "found an unhashable key", key_node.start_mark
            ) from e
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[str(key)] = key_node.start_mark.line + 1
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class Source:
    """A YAML document plus its name, used to format ``file:line`` in errors."""

    def __init__(self, name: str, data: Any) -> None:
        self.name = name
        self.data = data

    def where(self, node: Any = None, key: str | None = None) -> str:
        if isinstance(node, LineDict):
            return f"{self.name}:{node.line_of(key) if key else node.line}"
        return self.name

    def error(self, message: str, node: Any = None, key: str | None = None) -> ConfigError:
        return ConfigError(message, self.where(node, key))


def load_text(text: str, name: str) -> Source:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - _LineLoader subclasses SafeLoader
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{name}:{mark.line + 1}" if mark else name
        problem = e.problem or e.context or "invalid YAML"
        raise ConfigError(f"malformed YAML: {problem}", where) from e
    except yaml.YAMLError as e:
        raise ConfigError(f"malformed YAML: {e}", name) from e
    return Source(name, data)


def load_file(path: str | Path) -> Source:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise ConfigError("file not found", str(p)) from e
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read file: {e}", str(p)) from e
    return load_text(text, str(p))


def check_keys(src: Source, node: Any, allowed: Iterable[str], what: str,
               required: Iterable[str] = ()) -> LineDict:
    """Check ``node`` is a mapping with only ``allowed`` keys and all ``required`` ones."""
    if not isinstance(node, dict):
        raise src.error(f"{what} must be a mapping, got {type(node).__name__}", node)
    allowed = list(allowed)
    for key in node:
        if key not in allowed:
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            tip = f"; did you mean {hint[0]!r}?" if hint else f"; allowed: {', '.join(allowed)}"
            raise src.error(f"unknown key {key!r} in {what}{tip}", node, str(key))
    for key in required:
        if key not in node:
            raise src.error(f"{what} is missing required key {key!r}", node)
    return node  # type: ignore[return-value]
