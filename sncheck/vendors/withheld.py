"""What an error may show of a file no view recognised: its line numbers, never its text.

``sncheck parse VIEW FILE`` reads whatever file it is given. A view quotes a line of its
input where the quote helps (``npu-smi printed 'Permission denied'``), and that is right once
the text is the tool's output: a run's fact command ran the tool, and a file the view read
records from is that tool's. A file the view recognised nothing in (the view raised
:class:`sncheck.errors.ParseError`, whose contract is "the text holds nothing I recognise")
may be any file of the machine: ``sncheck parse npu-smi /etc/shadow`` quoted root's hash, and
amd-smi, iblinkinfo, ibnetdiscover and nvidia-smi's CSV view the same (parse30). So the
rule, for every view, held here at the front (``parsers.parse_text`` and the CLI's refusal of
a text a parser could not take):

- an error about a file no view recognised names the file and the line (``line 3``) and
  never its text: every quoted stretch of the message that the text holds, and every whole
  line of it the message holds, is replaced by its line's number in the file;
- once a view recognised the text (it returned its records), its errors may quote the text,
  bounded (each view cuts its quotes: 60 to 200 characters) and escaped (``repr``; the CLI's
  ``shown`` escapes what is left for one terminal line).

A view that reads no record and no line of its tool's own (an error line the tool prints)
raises ParseError rather than return an empty listing whose errors quote every line
(iblinkinfo, ibnetdiscover, ``--query-gpu`` CSV did).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

# a Python repr of a string, as views quote a line ('...' or "..." with backslash escapes)
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_SHORTEST = 4  # a quote shorter than this is a word of the grammar ('-', 'N/A'), not a line's content
_CUT = ("...", "…")  # a view's own cut of a long quote


def _unquoted(quote: str) -> str:
    try:
        text = ast.literal_eval(quote)
    except (ValueError, SyntaxError):
        text = quote[1:-1]
    text = str(text).strip()
    for mark in _CUT:
        text = text.removesuffix(mark).removeprefix(mark)
    return text.strip()


def withheld(message: str, text: str, line: Callable[[int], int] = lambda k: k) -> str:
    """``message`` with the text of ``text`` it shows replaced by the line it is on (``line 3``:
    ``line`` numbers the text's line K as the file does). A quote of the grammar (``'GPU: n'``)
    that the text does not hold stays."""
    rows = [(k, row.strip()) for k, row in enumerate(text.splitlines(), 1) if row.strip()]

    def where(part: str) -> str | None:
        if len(part) < _SHORTEST:
            return None
        return next((f"line {line(k)}" for k, row in rows if part in row), None)

    def quote(m: re.Match[str]) -> str:
        return where(_unquoted(m.group())) or m.group()

    out = _QUOTED.sub(quote, message)
    for k, row in sorted(rows, key=lambda r: -len(r[1])):  # a whole line shown unquoted
        if len(row) >= _SHORTEST * 2 and row in out:
            out = out.replace(row, f"line {line(k)}")
    return out
