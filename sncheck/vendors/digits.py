"""Numbers in digits other than ASCII's: refused where a view reads them, kept in text.

Every tool sncheck reads prints its numbers with ``printf``/``std::format``/Python's ``str``:
ASCII digits. Python reads more: ``int``, ``float`` and ``re``'s ``\\d`` take any Unicode
decimal digit (``int('٤٢') == 42``), so an output whose digits were turned into another
script's (a localising terminal, a translating paste, a hostile file) read as whole, its
numbers as if printed. A process name, a hostname, a message may hold any character, though.

So each view's reading is held to its numbers, not to its text: where the text holds a
non-ASCII decimal digit (Unicode category Nd), the view reads it again with each such digit
turned into a letter (:data:`STAND_IN`, which no number reads and every name pattern takes),
and with each turned into the ASCII digit of its value. A digit that sat in text (a name, a
message) comes back the same, character for character; one the view read as a number or as
part of its structure (a row, a GPU index) reads otherwise with the letter, and one where the
view reads a number but could not read this one (a value left null, a line skipped) reads
otherwise with the ASCII digit: that field is refused, with the first line that changes the
reading.
A view that keeps a field as printed (a CSV cell, an address, '45 C') keeps the digits as text:
a kept string that is a number printed in such digits (and a unit) is refused too, with its line.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from sncheck.errors import ParseError

STAND_IN = "ǂ"  # U+01C2, a letter (\w, not \d, not numeric): int() and float() refuse it


@cache
def _foreign(ch: str) -> bool:
    return not ch.isascii() and unicodedata.category(ch) == "Nd"


def foreign_digits(text: str) -> bool:
    """Whether ``text`` holds a decimal digit other than ASCII's."""
    return not text.isascii() and any(_foreign(ch) for ch in text if not ch.isascii())


def stood_in(text: str, by: str | None = STAND_IN) -> str:
    """``text`` with each non-ASCII decimal digit turned into ``by`` (None: the ASCII digit of its value)."""
    if text.isascii():
        return text
    return "".join((by or str(unicodedata.digit(ch))) if not ch.isascii() and _foreign(ch) else ch for ch in text)


def _canon(value: Any, by: str | None) -> Any:
    """A reading with every string's foreign digits turned (keys too): what the same text read
    with its foreign digits turned gives, where those digits were text only."""
    if isinstance(value, str):
        return stood_in(value, by)
    if isinstance(value, dict):
        return {_canon(k, by): _canon(v, by) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canon(v, by) for v in value]
    return value


# a value that is a number as printed (with its sign, separators, unit; a reporter's masked '***' parts):
# '١٠.٠.٠.٢', '٤٥ C', '١٠.***.***.٢'
_NUMBER = re.compile(rf"[-+(]?{STAND_IN}+(?:[.:,/x%-](?:{STAND_IN}+|\*+))*\)?(?:\s?[A-Za-z%/]{{1,5}})?", re.ASCII)


def _numbers_kept(value: Any) -> Iterator[str]:
    """The strings of a reading that are numbers printed in foreign digits: a view that keeps
    a field as printed (a CSV cell, an address) reads the digits as the number they stand for."""
    if isinstance(value, str):
        if not value.isascii() and foreign_digits(value) and _NUMBER.fullmatch(stood_in(value).strip()):
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers_kept(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers_kept(v)


def refused(error: ParseError) -> list[str]:
    """A view's refusal as :func:`misread` compares readings: a text the view cannot read at
    all in its foreign digits may read in ASCII's (a row it knows by its numbers)."""
    return ["ParseError", error.message]


def _reads(parse: Callable[[str], Any], text: str, by: str | None) -> Any:
    try:
        return _canon(parse(text), by)
    except ParseError as e:
        return _canon(refused(e), by)
    except Exception as e:  # noqa: BLE001  (a view meets the stand-in where it read a number: ibv_devinfo's
        # 'port:\tǂ' compared as an int raised TypeError): the digits were read as a number, as a refusal says
        return _canon(["raised", type(e).__name__], by)


def misread(parse: Callable[[str], Any], text: str, read: Any) -> tuple[int, str] | None:
    """(line number from 1, the line) of the first line of ``text`` whose non-ASCII digits
    ``parse`` reads as a number or structure (``read``: its reading of ``text``), or None
    where they sit in text only (or there are none).

    The text is read again with those digits turned into :data:`STAND_IN` (a number read from
    them is gone) and into the ASCII digits of their value (a number the view could not read
    appears): where the digits are text, both read as ``read`` does, the digits turned. The
    line: lines are turned one prefix at a time (a bisection: a few more readings, only for a
    text holding such digits)."""
    if not foreign_digits(text):
        return None
    lines = text.split("\n")
    marked = [i for i, ln in enumerate(lines) if foreign_digits(ln)]

    def upto(k: int, by: str | None) -> str:  # the first k marked lines turned
        changed = set(marked[:k])
        return "\n".join(stood_in(ln, by) if i in changed else ln for i, ln in enumerate(lines))

    for by in (STAND_IN, None):
        want = _canon(read, by)
        if _reads(parse, upto(len(marked), by), by) == want:
            continue
        lo, hi = 0, len(marked)  # upto(lo) reads as the text does, upto(hi) does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _reads(parse, upto(mid, by), by) == want:
                lo = mid
            else:
                hi = mid
        at = marked[hi - 1]
        return at + 1, lines[at]
    kept = next(_numbers_kept(read), None)
    if kept is None:
        return None
    at = next((i for i in marked if kept in lines[i]), marked[0])
    return at + 1, lines[at]


def refusal(line: str) -> str:
    """The finding for a line whose foreign digits a view reads (its number put before it by the caller)."""
    shown = line.strip()
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return (f"{shown!r} holds digits other than ASCII's where the view reads a number: no tool prints "
            "them, the output was transformed (refused, not read)")
