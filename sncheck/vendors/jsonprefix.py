"""What a cut JSON document still says: every whole value printed before the cut.

A tool's ``--json`` output cut short (a paste, a full disk, a killed job) does not load, yet
every record printed before the cut is whole and true. :func:`load` returns the document
when it loads, else the document built from its whole parts: open lists and objects closed
where the text ends, the member or element the cut went through left out (a number at the
very end is left out too: ``12`` may have been ``123``). The caller says the document was cut
(exit 1) and reports the values it kept: bad input loses nothing.
"""

from __future__ import annotations

import json
import json.decoder
import re
from typing import Any

# a key given twice: one home (config's JSON reader refuses it in every input file too), named here for the views
from sncheck.config.jsonio import KeyGivenTwice as KeyGivenTwice
from sncheck.config.jsonio import once as once
# a number no tool measures (1e999, NaN, Infinity): one home too, refused naming its field in every JSON view
from sncheck.config.jsonio import NotFinite as NotFinite
from sncheck.config.jsonio import all_finite as all_finite

MAX_DEPTH = 256  # deeper nesting is no tool's output (and would exhaust the stack)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WS = re.compile(r"\s*")
_WORD = re.compile(r"[a-z]+")


class _Cut(Exception):
    """The text ended inside a value."""


def refused(where: str, why: KeyGivenTwice | str) -> str:
    """The one wording of a record refused for :class:`KeyGivenTwice` at ``where`` ('line 8'),
    in every JSON view's errors and the watcher's notes."""
    return f"{where}: not one JSON record: {why}"


def loads(text: str) -> Any:
    """``json.loads`` of a whole document whose every object gives each key once
    (:class:`KeyGivenTwice` names one given twice) and whose every number is finite
    (:class:`NotFinite` names the field of a 1e999 or NaN): what every JSON view reads a document with."""
    return all_finite(json.loads(text, object_pairs_hook=once))


def load(text: str) -> tuple[Any, bool]:
    """(the value, whole?) of the JSON document ``text`` starts with; ValueError when it is not
    JSON at all (not even a cut document), or nests deeper than :data:`MAX_DEPTH`; :class:`NotFinite`
    when a number it kept is not finite."""
    try:
        return loads(text), True
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    except json.JSONDecodeError as e:
        error = f"not JSON: {e.msg} at line {e.lineno}"
    reader = _Reader(text)
    try:
        reader.value(0)
        raise ValueError(error)  # a whole value and more after it, or a broken one: not a cut
    except _Cut:
        value = reader.partial
    if value is _NOTHING:
        raise ValueError("a JSON document cut before its first value")
    return all_finite(value), False


_NOTHING = object()


# For a stream of documents (``raw_decode``, Inspector's records): each object's keys given once too
DECODER = json.JSONDecoder(object_pairs_hook=once)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0
        self.end = len(text.rstrip())  # where the text's last value ends (computed once: linear)

    def skip(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]  # \s* always matches
        if self.pos >= len(self.text):
            raise _Cut

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError("JSON nested too deep")
        self.skip()
        c = self.text[self.pos]
        if c in "[{":
            return self.container(depth)
        if c == '"':
            return self.string()
        if m := _NUMBER.match(self.text, self.pos):
            if m.end() >= self.end:
                raise _Cut  # a number at the very end may have been longer
            self.pos = m.end()
            word = m.group()
            return float(word) if any(c in word for c in ".eE") else int(word)
        for word, v in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return v
        if word_prefix := _WORD.match(self.text, self.pos):
            if word_prefix.end() >= len(self.text) and any(
                    w.startswith(word_prefix.group()) for w in ("true", "false", "null")):
                raise _Cut
        raise ValueError(f"not JSON at offset {self.pos}")

    def string(self) -> str:
        try:
            s, end = json.decoder.scanstring(self.text, self.pos + 1)  # type: ignore[attr-defined]  # untyped in typeshed
        except json.JSONDecodeError:
            if '"' not in self.text[self.pos + 1:]:
                raise _Cut from None
            raise ValueError(f"bad JSON string at offset {self.pos}") from None
        self.pos = end
        return s

    def container(self, depth: int) -> Any:
        is_list = self.text[self.pos] == "["
        out: Any = [] if is_list else {}
        self.pos += 1
        key: str | None = None
        in_value = False  # the cut went through a member's value (a container's keeps its whole part)
        try:
            while True:
                self.skip()
                c = self.text[self.pos]
                if c == ("]" if is_list else "}"):
                    self.pos += 1
                    return out
                if c == ",":
                    self.pos += 1
                    self.skip()
                if not is_list:
                    if self.text[self.pos] != '"':
                        raise ValueError(f"not JSON at offset {self.pos}")
                    key = self.string()
                    if key in out:
                        raise KeyGivenTwice(key)
                    self.skip()
                    if self.text[self.pos] != ":":
                        raise ValueError(f"not JSON at offset {self.pos}")
                    self.pos += 1
                self.partial = _NOTHING
                in_value = True
                item = self.value(depth + 1)
                in_value = False
                if is_list:
                    out.append(item)
                else:
                    out[key] = item
        except _Cut:
            if in_value and self.partial is not _NOTHING:
                if is_list:
                    out.append(self.partial)
                else:
                    out[key] = self.partial
            self.partial = out
            raise

    partial: Any = _NOTHING  # what a container cut inside holds, handed up to its parent
