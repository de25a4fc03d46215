"""The YAML inputs' schemas as pydantic models, and their errors as ``file:line: field: why``.

A model declares each key, its type and its bounds (:func:`integer`, :func:`number`,
:func:`text`, :func:`choice`); :func:`validate` checks a document loaded by
:mod:`sncheck.config.yamlio` against it and turns the first error into one
:class:`~sncheck.errors.ConfigError` naming the file, the line of the offending key (from
yamlio's line map), the field's path and why. Every model refuses keys it does not declare
(``extra="forbid"``, with a "did you mean" from its own fields) and explicit nulls where the
key has a default (``nullable`` lists the keys where null means "the default").

What a schema cannot say, because it needs the whole document (host names that must exist,
duplicates across items, hostlist expansion), the loaders check after it, with the same
``file:line`` from the raw document.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any, ClassVar, TypeVar

from annotated_types import GroupedMetadata
from pydantic import (AfterValidator, BeforeValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo,
                      WrapValidator, model_validator)
from pydantic_core import InitErrorDetails, PydanticCustomError

from sncheck.config.yamlio import LineDict, Source, _range, _show as _shown, described, key_part, shown_key
from sncheck.errors import ConfigError

M = TypeVar("M", bound=BaseModel)
MAX_STR = 4096  # characters of a name, path or message field
_TAG = "<"       # loc parts that are union tags, not keys (see :func:`by_type`)


class Schema(BaseModel):
    """A mapping of declared keys: strict types, no unknown key, no null unless ``nullable``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)

    what: ClassVar[str] = "mapping"                 # how errors name it: "unknown key 'x' in <what>"
    nullable: ClassVar[frozenset[str]] = frozenset()  # keys where null means "the default"
    # Keys refused with their reason (an old key that was accepted and never used).
    refused: ClassVar[dict[str, str]] = {}
    unknown: ClassVar[str] = "unknown key {key} in {what}"  # how an undeclared key is refused (key: shown_key's)

    @model_validator(mode="wrap")
    @classmethod
    def _keys(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        if not isinstance(data, dict):
            raise PydanticCustomError("sncheck", "{what} must be a mapping, got {got}",
                                      {"what": cls.what, "got": _show(data)})
        fields = {f.alias or name: f for name, f in cls.model_fields.items()}
        for key, value in data.items():
            if key in cls.refused:
                refuse_key(key, value, cls.refused[key])
            if key not in fields:
                allowed = list(fields)
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                tip = f"; did you mean {hint[0]!r}?" if hint else f"; allowed: {', '.join(allowed)}"
                refuse_key(key, value, cls.unknown.format(key=shown_key(key), what=cls.what) + tip)
            if value is None and key not in cls.nullable and not fields[key].is_required():
                refuse_key(key, value, "must not be null (leave the key out for its default)")
        return handler(data)


def refuse_key(key: Any, value: Any, message: str) -> None:
    """Refuse ``key`` of the mapping being validated, at the key's own line."""
    # pydantic keeps a key of text or a whole number as it is and turns any other into text (None is
    # 'None', True the number 1): such a key goes as its text, which refusal() finds among the keys
    at = key if isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool)) else str(key)
    raise ValidationError.from_exception_data("sncheck", [InitErrorDetails(
        type=PydanticCustomError("sncheck", "{m}", {"m": message}), loc=(at,), input=value)])


# -- declared field types: the bounds are pydantic's, the wording is sncheck's -------------

def _say(message: Callable[[str, Any], str], over: bool = False) -> WrapValidator:
    """Reword a refusal of the value itself (not of something inside it): ``message(type, value)``
    where ``type`` is pydantic's error type; ``over``: even one an inner type already worded
    (a union's members)."""
    def check(value: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(value)
        except ValidationError as e:
            own = next((err for err in e.errors() if all(_is_tag(p) for p in err["loc"])), None)
            if own is None or (own["type"] == "sncheck" and not over):
                raise
            raise PydanticCustomError("sncheck", "{m}", {"m": message(own["type"], value)}) from None
    return WrapValidator(check)


def _show(value: Any) -> str:
    """A value for an error message (yamlio's), an empty container said as such."""
    if isinstance(value, (list, dict)) and not value:
        return f"an empty {'list' if isinstance(value, list) else 'mapping'}"
    return _shown(value)


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and part.startswith(_TAG)


class _Said(GroupedMetadata):
    """Field metadata: pydantic's constraints, then the wording of a refusal."""

    over = False  # reword what an inner type already worded (Shape over a union)

    def __init__(self, *constraints: Any) -> None:
        self.constraints = constraints

    def __iter__(self) -> Iterator[Any]:
        yield from self.constraints
        yield _say(self.say, self.over)

    def say(self, kind: str, value: Any) -> str:
        raise NotImplementedError


class Int(_Said):
    """An integer within ``[lo, hi]`` (a boolean or a float is not one): ``Annotated[int, Int(1, 8)]``."""

    def __init__(self, lo: int | None = None, hi: int | None = None) -> None:
        super().__init__(Field(strict=True, ge=lo, le=hi))
        self.said = f"must be an integer{_range(lo, hi)}"

    def say(self, kind: str, value: Any) -> str:  # noqa: ARG002 -- _Said.say's interface: one wording, whatever pydantic's error kind
        return f"{self.said}, got {_show(value)}"


class Num(_Said):
    """A finite number within the bounds (``lo_open``: strictly above ``lo``): ``Annotated[float, Num(0)]``."""

    def __init__(self, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                 hi_open: bool = False, unit: str = "") -> None:
        super().__init__(Field(strict=True, gt=lo if lo_open else None, ge=None if lo_open else lo,
                               lt=hi if hi_open else None, le=None if hi_open else hi, allow_inf_nan=False))
        self.bounds = (f" of {unit}" if unit else "") + _range(lo, hi, lo_open, hi_open)

    def say(self, kind: str, value: Any) -> str:  # noqa: ARG002 -- _Said.say's interface: one wording, whatever pydantic's error kind
        finite = "finite " if isinstance(value, float) and not math.isfinite(value) else ""
        shown = f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else _show(value)
        return f"must be a {finite}number{self.bounds}, got {shown}"


class Text(_Said):
    """A non-empty string of at most MAX_STR characters, matching ``pattern`` when given:
    ``Annotated[str, Text()]``; ``why`` says what a mismatch breaks."""

    def __init__(self, pattern: re.Pattern[str] | None = None, why: str = "has characters that are not allowed",
                 max_length: int = MAX_STR) -> None:
        super().__init__(Field(strict=True, min_length=1, max_length=max_length,
                               pattern=pattern.pattern if pattern else None))
        self.why, self.max_length = why, max_length

    def say(self, kind: str, value: Any) -> str:
        if kind == "string_too_long":
            return f"is {len(value)} characters long (the cap is {self.max_length})"
        if kind == "string_pattern_mismatch":
            return f"{_show(value)} {self.why}"
        return f"must be a non-empty string, got {_show(value)}"


class Choice(_Said):
    """One of ``choices``: ``Annotated[str, Choice(("mpirun", "srun"))]``."""

    def __init__(self, choices: Iterable[str], message: str = "must be one of {choices}, got {got}") -> None:
        self.names, self.message = tuple(choices), message
        super().__init__(Field(strict=True), AfterValidator(self.check))

    def check(self, value: str) -> str:
        if value not in self.names:
            raise ValueError("not a choice")
        return value

    def say(self, kind: str, value: Any) -> str:  # noqa: ARG002 -- _Said.say's interface: one wording, whatever pydantic's error kind
        return self.message.format(choices=", ".join(self.names), got=_show(value))


class Flag(_Said):
    """true or false: ``Annotated[bool, Flag()]``."""

    def __init__(self) -> None:
        super().__init__(Field(strict=True))

    def say(self, kind: str, value: Any) -> str:  # noqa: ARG002 -- _Said.say's interface: one wording, whatever pydantic's error kind
        return f"must be true or false, got {_show(value)}"


class Shape(_Said):
    """Only the rewording: ``Annotated[list[X], Shape("a list of ...")]`` (items keep their own
    errors); ``over`` a union (``by_type``): every member's refusal of the value is said this way."""

    def __init__(self, what: str, over: bool = False) -> None:
        super().__init__()
        self.what, self.over = what, over

    def say(self, kind: str, value: Any) -> str:  # noqa: ARG002 -- _Said.say's interface: one wording, whatever pydantic's error kind
        return f"must be {self.what}, got {_show(value)}"


def _as_items(value: Any) -> Any:
    """A hostlist: one expression or a list of them; nothing (null, "") is no hosts."""
    if value is None or value == "":
        return []
    return [value] if isinstance(value, str) else value


HostItems = Annotated[list[Annotated[str, Field(strict=True)]], BeforeValidator(_as_items),
                      Shape("a hostlist expression (node[001-018]) or a list of them")]


def told(key: str, message: Callable[[str, Iterable[str]], str]) -> AfterValidator:
    """A string among the names the caller tells :func:`validate` in ``context[key]`` (the
    backends, the platforms: registries of layers above config)."""
    def check(value: str, info: ValidationInfo) -> str:
        known = (info.context or {}).get(key, ())
        if value not in known:
            raise PydanticCustomError("sncheck", "{m}", {"m": message(value, known)})
        return value
    return AfterValidator(check)


# -- validation -------------------------------------------------------------------------

Within = tuple[Any, str, "int | None"]  # a node, its path as errors name it, the line when it is no mapping


def validate(model: type[M], src: Source, data: Any, *, context: dict[str, Any] | None = None,
             at: tuple[Any, ...] = (), within: Within | None = None) -> M:
    """``model`` over ``data``, which is ``src.data`` or the node at path ``at`` inside it (or
    ``within[0]``, a node made from the document's, e.g. a rule merged onto its base); the first
    error is a ConfigError ``file:line: field: why``."""
    if data is src.data and not at and within is None and not isinstance(data, dict):
        # the whole file is no mapping: said by its kind, never quoted (hostile round 22, H22-01)
        what = getattr(model, "what", "document")
        raise ConfigError(f"(top level): {what} must be a mapping, got {described(data)}", src.name)
    try:
        return model.model_validate(data, context=context)
    except ValidationError as e:
        raise refusal(src, e.errors()[0], at, within) from None


def refusal(src: Source, err: Any, at: tuple[Any, ...] = (), within: Within | None = None) -> ConfigError:
    """One pydantic error as a ConfigError: the line of the deepest key of its path that the
    document has, the path as ``a.b[2].c``."""
    node, path, line = within if within is not None else (src.data, "", None)
    line = node.line if isinstance(node, LineDict) else line
    why = _why(err)
    for part in (*at, *err["loc"]):
        if isinstance(node, dict) and isinstance(part, str) and part not in node:
            # a key YAML read as null, a boolean or a float, which the path holds as its text (refuse_key)
            part = next((k for k in node if not isinstance(k, (str, int)) or isinstance(k, bool)
                         if str(k) == part), part)
        if isinstance(node, dict) and part in node:
            line = node.line_of(str(part)) if isinstance(node, LineDict) else line
            written = node.key_texts.get(str(part)) if isinstance(node, LineDict) else None
            if written is not None:  # a key written 013: said as written, and what YAML made of it
                why += f" (the key {written}, which YAML reads as the number {part}: quote it)"
            shown = written or key_part(part)  # a key that is no name: its length, not its text
            path += f".{shown}" if path else shown
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path += f"[{part}]"
            node = node[part]
            line = node.line if isinstance(node, LineDict) else line
        elif _is_tag(part) or part == "[key]":
            continue  # a union's tag or a dict key's own check: not in the document
        else:
            if err["type"] == "missing":
                path += f".{key_part(part)}" if path else key_part(part)
            break
    where = f"{src.name}:{line}" if line else src.name
    return ConfigError(f"{path or '(top level)'}: {why}", where)


def _why(err: Any) -> str:
    kind, value = err["type"], err.get("input")
    if kind == "sncheck":
        return str(err["msg"])
    if kind == "missing":
        return "required key missing"
    if kind == "value_error":  # a loader's own ValueError (a unit): its message says it all
        return str(err["msg"]).removeprefix("Value error, ")
    if kind in ("list_type", "tuple_type"):
        return f"must be a list, got {_show(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping, got {_show(value)}"
    if kind == "string_type":
        return f"must be a string, got {_show(value)}"
    return f"{err['msg']} (got {_show(value)})"


def by_type(**tags: type | tuple[type, ...]) -> Callable[[Any], str]:
    """A union's discriminator by the value's Python type (``<count>``: int, ``<list>``:
    list): pydantic validates only the matching member, so the error is about that one."""
    def pick(value: Any) -> str:
        for tag, kinds in tags.items():
            if isinstance(value, kinds) and not isinstance(value, bool):
                return f"{_TAG}{tag}>"
        return f"{_TAG}{next(reversed(tags))}>"
    return pick
