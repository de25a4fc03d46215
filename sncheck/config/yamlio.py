"""Safe YAML loading that remembers line numbers, so errors can name ``file:line``.

Every mapping comes back as a :class:`LineDict`: a plain dict that also knows the
line of each key. Reading stays ``yaml.safe_load``-safe: the loader subclasses
``SafeLoader`` and only changes how mappings are built.

Bounds, checked before any Python object is built: a file over :data:`MAX_FILE_BYTES`
is refused unread (:func:`sncheck.config.fileio.read_input`, the one reader), and a document whose node graph, with every alias expanded, holds
more than :data:`MAX_NODES` nodes is refused (a 500-byte "billion laughs" alias bomb
is counted in microseconds, never expanded). Recursive aliases are refused too.
"""

from __future__ import annotations

import datetime
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from sncheck.errors import ConfigError
from sncheck.config.fileio import LIMITS, read_input

MAX_FILE_BYTES = LIMITS["yaml"]  # an input YAML file (inventories of 10^5 hosts are ~5 MB)
MAX_NODES = 1_000_000      # YAML nodes of one document, every alias expanded
MAX_ALIASES = 10_000       # alias uses (``*name``) in one document
MAX_DEPTH = 64             # nesting of mappings and lists (real files nest 4-5 deep)


class LineDict(dict):
    """A dict from YAML that records the 1-based line of itself and of each key."""

    line: int = 0
    key_lines: dict[str, int]
    # a whole-number key as written where YAML reads another number from it (``0x0d``, ``013``
    # octal, ``1_3``, ``+13``, ``1:05`` base 60): what its value is shown as -> the text
    key_texts: dict[str, str] = {}  # noqa: RUF012 -- read-only default; a mapping with such keys gets its own

    def line_of(self, key: object) -> int:  # a key as YAML read it: text, a number, a bool
        return self.key_lines.get(str(key), self.line)  # kept by its text (str of what YAML read)


class _LineLoader(yaml.SafeLoader):
    def get_single_node(self):  # noqa: ANN201 - PyYAML's signature
        node = super().get_single_node()
        if node is not None:
            _check_graph(node, self.aliases_seen)
        return node

    def compose_node(self, parent, index):  # noqa: ANN001, ANN201 - PyYAML's signature
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_DEPTH} levels deep (the cap)",
                    self.peek_event().start_mark)
            return self._compose_counted(parent, index)
        finally:
            self.depth -= 1

    depth = 0

    def fetch_flow_collection_start(self, TokenClass):  # noqa: ANN001, ANN201, N803 - PyYAML's
        # The scanner's work per token grows with the flow level: stop deep '[[[[...' early.
        if self.flow_level >= MAX_DEPTH:
            raise yaml.scanner.ScannerError(None, None, f"nested more than {MAX_DEPTH} levels deep (the cap)",
                                            self.get_mark())
        return super().fetch_flow_collection_start(TokenClass)

    def _compose_counted(self, parent, index):  # noqa: ANN001, ANN201
        if self.check_event(yaml.AliasEvent):
            self.aliases_seen = getattr(self, "aliases_seen", 0) + 1
            if self.aliases_seen > MAX_ALIASES:
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"more than {MAX_ALIASES} aliases (the cap)", event.start_mark)
        return super().compose_node(parent, index)

    aliases_seen = 0


def _check_graph(root: yaml.Node, aliases: int) -> None:
    """Refuse recursive aliases, and documents that expand past MAX_NODES nodes.

    Nodes an alias shares are counted once per use, from memoised subtree sizes, so the
    count costs O(distinct nodes) however large the expansion would be.
    """
    if not aliases:
        return  # without aliases the graph is a tree as big as the file
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            total = 1
            for child in _children(node):
                total += size[id(child)]
                if total > MAX_NODES:
                    raise yaml.composer.ComposerError(
                        None, None, f"the document expands to more than {MAX_NODES} nodes through "
                        f"its aliases (the cap); write the values out or drop the aliases",
                        node.start_mark)
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            raise yaml.composer.ComposerError(None, None, "recursive alias", node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            ck = id(child)
            if ck in on_path:
                raise yaml.composer.ComposerError(None, None, "recursive alias", child.start_mark)
            if ck not in size:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


# A whole number YAML 1.1 reads as another number than its digits say: hex, octal (``0o17``
# and a leading 0: ``022`` is 18), binary, base 60 (``1:05`` is 65). Where sncheck reads a
# number it is an identifier or a count (a port, a card count, a fault's port, an Xid): the
# value is refused at its line, never read as another number; quoted it stays text. ``+13``
# and ``1_000`` read the number their digits say and stay numbers. A mapping key keeps its
# text instead (LineDict.key_texts: the kernel table's refusal names it).
_OTHER_BASE = re.compile(r"[-+]?0[xXoObB0-9_]|.*:")
_BASE = (("0x", "hexadecimal"), ("0o", "octal"), ("0b", "binary"))


def written_otherwise(text: str) -> str | None:
    """Why YAML reads another number than ``text``'s digits say (None when it does not)."""
    if not _OTHER_BASE.match(text):
        return None
    bare = text.lstrip("+-").lower()
    if ":" in bare:
        return "base 60"
    return next((why for prefix, why in _BASE if bare.startswith(prefix)), "octal: a leading 0")


class WrittenNumber(yaml.constructor.ConstructorError):
    """A number YAML reads otherwise than written (not malformed YAML: said in its own words)."""


class TooManyDigits(yaml.constructor.ConstructorError):
    """A whole number longer than Python turns into an int (``sys.get_int_max_str_digits()``,
    4300): int() raised ValueError out of the loader, an internal error with a traceback
    (hostile round 23, H23-01). No count, port, id or bound sncheck reads has a tenth as many."""


def _whole(loader: _LineLoader, node: yaml.ScalarNode, base: Any) -> Any:
    try:
        return base(loader, node)
    except ValueError as e:  # only int() of too many digits raises it: YAML matched the text as a number
        digits = sum(c.isdecimal() for c in str(node.value))
        raise TooManyDigits(None, None, f"a number of {digits} digits: more than "
                            f"{sys.get_int_max_str_digits()}, the most a number may have", node.start_mark) from e


def _number(loader: _LineLoader, node: yaml.ScalarNode, base: Any) -> Any:
    value = _whole(loader, node, base)
    why = written_otherwise(str(node.value))
    if why is not None and (base is _INT or why == "base 60"):  # 00.5 is 0.5: a float's 0 is no base
        raise WrittenNumber(None, None, f"{node.value} is read by YAML as the number {value:g} ({why}); "
                            "write the number in decimal, or quote it to keep the text", node.start_mark)
    return value


_INT, _FLOAT = yaml.SafeLoader.construct_yaml_int, yaml.SafeLoader.construct_yaml_float


def _int(loader: _LineLoader, node: yaml.ScalarNode) -> Any:
    return _number(loader, node, _INT)


def _float(loader: _LineLoader, node: yaml.ScalarNode) -> Any:
    return _number(loader, node, _FLOAT)


_LineLoader.add_constructor("tag:yaml.org,2002:int", _int)
_LineLoader.add_constructor("tag:yaml.org,2002:float", _float)


def _key(loader: _LineLoader, node: yaml.Node) -> Any:
    """A mapping key: a number written otherwise is read as YAML reads it (its text kept by
    the caller in key_texts), not refused here."""
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:int":
        return _whole(loader, node, _INT)
    return loader.construct_object(node, deep=True)


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineDict:
    # A merge key's (``<<: *base``) pairs come first and the mapping's own keys override
    # them, as YAML says; a key written twice in the mapping itself is refused.
    own_pairs = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
    loader.flatten_mapping(node)
    merged = len(node.value) - own_pairs
    own: set = set()
    texts: dict[str, str] = {}  # keys whose written text is not the number YAML read (0x0d, 013)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for i, (key_node, value_node) in enumerate(node.value):
        key = _key(loader, key_node)
        try:
            hash(key)
        except TypeError as e:
            raise yaml.constructor.ConstructorError(
                None, None, "found an unhashable key", key_node.start_mark
            ) from e
        if i >= merged:
            if key in own:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            own.add(key)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[str(key)] = key_node.start_mark.line + 1
        if isinstance(key, int) and not isinstance(key, bool) and isinstance(key_node, yaml.ScalarNode) \
                and key_node.value != str(key):
            texts[str(key)] = str(key_node.value)  # one dict, filled in place (a copy per key was quadratic)
    if texts:
        out.key_texts = texts
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _construct_str(loader: _LineLoader, node: yaml.ScalarNode) -> str:
    """A string is valid Unicode: a ``"\\ud800"`` escape (a lone surrogate) is refused at
    its line, before it can break results.json or a terminal."""
    value = loader.construct_scalar(node)
    if not is_unicode(value):
        raise yaml.constructor.ConstructorError(None, None, "a string holds a lone surrogate "
                                                "(\\ud800-\\udfff escape): not valid Unicode", node.start_mark)
    return value


def is_unicode(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_LineLoader.add_constructor("tag:yaml.org,2002:str", _construct_str)


class Source:
    """A YAML document plus its name, used to format ``file:line`` in errors."""

    def __init__(self, name: str, data: Any) -> None:
        self.name = name
        self.data = data

    def where(self, node: Any = None, key: object = None) -> str:
        if isinstance(node, LineDict):
            return f"{self.name}:{node.line_of(key) if key is not None else node.line}"
        return self.name

    def error(self, message: str, node: Any = None, key: object = None) -> ConfigError:
        return ConfigError(message, self.where(node, key))


def load_text(text: str, name: str) -> Source:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - _LineLoader subclasses SafeLoader
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{name}:{mark.line + 1}" if mark else name
        problem = e.problem or e.context or "invalid YAML"
        raise ConfigError(problem if isinstance(e, (WrittenNumber, TooManyDigits)) else f"malformed YAML: {problem}",
                          where) from e
    except yaml.YAMLError as e:
        raise ConfigError(f"malformed YAML: {e}", name) from e
    except RecursionError as e:  # thousands of nested brackets
        raise ConfigError("malformed YAML: nested too deeply", name) from e
    return Source(name, data)


def decode_text(data: bytes, name: str, what: str = "file") -> str:
    """UTF-8 text, or a ConfigError naming the file (binary files have NUL bytes)."""
    if b"\0" in data:
        raise ConfigError(f"{what} is binary (it has NUL bytes), not text", name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{what} is not UTF-8 text (byte {e.start})", name) from e


def load_file(path: str | Path) -> Source:
    p = Path(path)
    return load_text(decode_text(read_input(p, "yaml"), str(p)), str(p))


def _n(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _range(lo: float | None, hi: float | None, lo_open: bool = False, hi_open: bool = False) -> str:
    """The bounds of a number as an error says them: " from 1 to 8", " above 0 and below 1"."""
    if lo is not None and hi is not None and hi_open:
        return f" {'above' if lo_open else 'from'} {_n(lo)} and below {_n(hi)}"
    if lo is not None and hi is not None:
        return f" {'above' if lo_open else 'from'} {_n(lo)} {'up ' if lo_open else ''}to {_n(hi)}"
    if lo is not None:
        return f" {'above' if lo_open else 'of at least'} {_n(lo)}"
    if hi is not None:
        return f" {'below' if hi_open else 'of at most'} {_n(hi)}"
    return ""


# A key an error may quote: a name (letters, digits and ``. _ - [ ] , / @ +``, at most 64
# characters), as every key a schema declares and every host, rule or tier name is. A key of any
# other text is no name, most often a line of a file that is no YAML input at all (/etc/shadow
# given as a playbook is a mapping whose keys are its lines, a root password hash among them):
# said by its length, never quoted (hostile round 22, H22-01).
_NAME_KEY = re.compile(r"[A-Za-z0-9_.\-\[\],/@+]{1,64}")


def shown_key(key: object) -> str:
    """A mapping key for an error: quoted when it is a name (or a number, a boolean), else said
    by its length only."""
    if not isinstance(key, str) or _NAME_KEY.fullmatch(key):
        return repr(key)
    return f"of {len(key)} characters (not shown: no name)"


def key_part(key: object) -> str:
    """A key as a part of an error's path (``ssh.port``): itself when it is a name, else its length."""
    return str(key) if not isinstance(key, str) or _NAME_KEY.fullmatch(key) else f"<a key of {len(key)} characters>"


def described(value: Any) -> str:
    """A whole document that is no mapping, said without its content: a file given where a YAML
    input was meant (a private key, a .netrc, a .env) is text, and quoting it would print a
    secret into the terminal and the CI log."""
    if isinstance(value, str):
        return f"text of {len(value)} characters (not shown: is it the right file?)"
    if value is None:
        return "nothing (the file is empty, or comments only)"
    if isinstance(value, (list, dict)):
        return _show(value)
    kind = ("true or false" if isinstance(value, bool) else "a number" if isinstance(value, (int, float))
            else "a date" if isinstance(value, (datetime.date, datetime.datetime)) else "a value")
    return f"{kind} (not shown: is it the right file?)"


def _show(value: Any, limit: int = 60) -> str:
    """A value for an error message: short, one line, its type when it is a container."""
    if isinstance(value, (list, dict)):
        return f"a {'list' if isinstance(value, list) else 'mapping'}"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
