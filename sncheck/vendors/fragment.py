"""A document pasted from its middle: what says so, and where it starts.

A reader who pastes part of an ``nvidia-smi -q -x`` or ``amd-smi --json`` document (an issue's
continued turn, a page that scrolled) leaves out its head: the root element, the opening
brace. Its values then belong to no GPU the output names, so the view refuses it with one line
saying where the fragment starts (exit 1), never reads it as a whole output nor as no output.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"<(/?)([A-Za-z_][\w.:-]*)[^<>]*?(/?)>")
_KEY_LINE = re.compile(r'^\s*"([^"\n]*)"\s*:')
_CLOSE_LINE = re.compile(r"^\s*[}\]]\s*,?\s*$")


def xml_fragment(text: str, document: str) -> str | None:
    """The refusal of XML text whose root is not there: the elements it starts inside (each
    closed with no opening before it, innermost first), or None when it holds no element."""
    open_tags: list[str] = []
    outside: list[str] = []
    seen = False
    for m in _TAG.finditer(text):
        seen = True
        closing, name, empty = m.group(1), m.group(2), m.group(3)
        if empty:
            continue
        if not closing:
            open_tags.append(name)
        elif open_tags and open_tags[-1] == name:
            open_tags.pop()
        elif not open_tags:
            outside.append(name)
    if not seen:
        return None
    if not outside:
        return f"a fragment of XML without its root element: not a whole {document} document"
    where = f"<{outside[0]}>" + "".join(f" in <{name}>" for name in outside[1:3])
    return f"a fragment starting inside {where}: not a whole {document} document"


def json_fragment(before: str, document: str) -> str | None:
    """The refusal of JSON text whose opening is not there: ``before`` (the text before its first
    brace or bracket) holds a member's key or a closing brace, so the text starts inside an
    object; None when it holds neither."""
    for line in before.splitlines():
        if m := _KEY_LINE.match(line):
            return (f'a fragment starting inside an object (at its member "{m.group(1)}"): '
                    f"not a whole {document} document")
        if _CLOSE_LINE.match(line):
            return f"a fragment starting inside an object (a close before any open): not a whole {document} document"
    return None
