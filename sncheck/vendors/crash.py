"""A view that raises on its input did not read it: a parse error, never a crash.

A view reads numbers with ``int``/``float`` and cells by index. An output holding what its tool
never prints (a number past Python's 4,300-digit ``int`` limit: ``ValueError``; ``int(float('inf'))``:
``OverflowError``; a row shorter than its header: ``IndexError``) raised that, not
:class:`ParseError`: in a run the exception left the fact reading, and over SSH the host's whole
read stopped ("host facts stopped by an unexpected error"), every other fact of the host lost with
that command's; ``sncheck parse`` said "cannot parse" at exit 2, where a view's bad output is exit 1
(review18 #5). :func:`read` is the one call of a view for both fronts (:func:`sncheck.vendors.parsers.
parse_text` and :func:`sncheck.vendors.facts.outcome`): such an exception is that output's parse
error, naming only the exception's kind and Python's words (the file's text is never quoted here).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from typing import Any

from sncheck.errors import ParseError

CRASHES = (ValueError, OverflowError, IndexError, KeyError, ZeroDivisionError, csv.Error, RecursionError)


def read(parse: Callable[..., Any], text: str, **hints: Any) -> Any:
    """``parse(text, **hints)``; an exception of :data:`CRASHES` raised as a :class:`ParseError`."""
    try:
        return parse(text, **hints) if hints else parse(text)
    except CRASHES as e:  # (a ParseError is none of them: it passes as raised)
        raise ParseError(f"holds what no output of its tool prints: {_said(e)}") from e


def _said(e: BaseException) -> str:
    """The exception's kind and its first words (Python's own: a number's digit count, an index),
    never the value that raised it: ``int('secret')`` names the text after a colon."""
    words = str(e).split(":", 1)[0].strip()[:80]
    return f"{type(e).__name__} ({words})" if words else type(e).__name__
