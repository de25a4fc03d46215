"""Slurm hostlist expressions: ``node[001-016]``, ``gpu[1-3,7]``, ``r[1-2]n[01-04]``, ``a,b[1-2]``.

Expansion is bounded: the number of hosts an expression names is counted from its
ranges *before* anything is expanded, and an expression over :data:`MAX_HOSTS` is
refused at once (``node[1-10000000]`` costs microseconds, not gigabytes).
"""

from __future__ import annotations

import re
from sncheck.errors import ConfigError

MAX_HOSTS = 100_000       # hosts one inventory may name (the largest real fleets are ~10^4)
MAX_EXPR_CHARS = 100_000  # characters of one hostlist expression
MAX_DIGITS = 12           # digits of one range bound

_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # never a leading '-': it would read as an option


def is_host_name(name: object) -> bool:
    """Whether ``name`` is one host's name as :func:`check_name` takes it."""
    try:
        check_name(name)
    except ConfigError:
        return False
    return True


class HostlistTooLarge(ValueError):
    """The expression names more hosts than :data:`MAX_HOSTS`."""


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in expr:
        if ch == "[":
            if depth:
                # Slurm's hostlist takes ranges inside a bracket, never another bracket: the
                # innermost was expanded first, 'h[1-2[3]]' read as h[1-23] (23 hosts, exit 0)
                raise ValueError(f"'[' inside a bracket in hostlist {quoted(expr)}: a bracket holds ranges "
                                 "(1-3,7), never another bracket")
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {quoted(expr)}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced '[' in hostlist {quoted(expr)}")
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def quoted(text: str, limit: int = 60) -> str:
    """``text`` as an error names it: quoted, a long one cut at ``limit`` characters with its
    length (a 10 KB name was a 10 KB error line)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _ranges(body: str, expr: str) -> list[tuple[int, int, int]]:
    """``1-3,7`` -> [(1, 3, width), (7, 7, width)], checked, nothing expanded."""
    out = []
    for item in body.split(","):
        item = item.strip()
        # ASCII digits only: Python's \d and int() read Arabic-Indic or full-width digits too, so
        # 'h[١-٣]' expanded to h1..h3, names the file never wrote (hostile round 18, H18-01)
        m = re.fullmatch(r"([0-9]{1,%d})(?:-([0-9]{1,%d}))?" % (MAX_DIGITS, MAX_DIGITS), item)
        if not m:
            ascii_only = " (a range's bounds are ASCII digits 0-9)" if any(
                c.isdecimal() and not c.isascii() for c in item) else ""
            raise ValueError(f"bad range {quoted(item)} in hostlist {quoted(expr)}{ascii_only}")
        lo_s, hi_s = m.group(1), m.group(2) or m.group(1)
        lo, hi = int(lo_s), int(hi_s)
        if hi < lo:
            raise ValueError(f"range {item!r} runs backwards in hostlist {quoted(expr)}")
        width = len(lo_s) if lo_s.startswith("0") and len(lo_s) > 1 else 0
        out.append((lo, hi, width))
    return out


def _count_one(part: str, expr: str) -> int:
    """How many names one comma-free part expands to (a product over its brackets)."""
    n = 1
    rest = part
    while True:
        m = _BRACKET.search(rest)
        if not m:
            break
        n *= sum(hi - lo + 1 for lo, hi, _ in _ranges(m.group(1), expr))
        if n > MAX_HOSTS:
            return n
        rest = rest[m.end():]
    return n


def _label_fault(name: str) -> str | None:
    """What is no DNS name in ``name``'s dot-separated labels (RFC 1123: 1 to 63 characters, no '-' at
    either end; one trailing dot, the root's, is a name's absolute form): a resolver cannot send
    ``h1..x`` or a 64-character label as a query, so the host would read 'unreachable' for a fault
    the inventory holds."""
    labels = name.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()  # 'h1.': the absolute form (inventory compares it as 'h1')
    for label in labels:
        if not label:
            return "an empty label ('..')"
        if len(label) > 63:
            return f"a label of {len(label)} characters (at most 63)"
        if label.startswith("-") or label.endswith("-"):
            return f"a label {'starting with' if label.startswith('-') else 'ending in'} '-'"
    return None


def _expand_one(part: str, expr: str) -> list[str]:
    m = _BRACKET.search(part)
    if not m:
        if not _NAME.fullmatch(part):
            raise ValueError(f"bad host name {quoted(part)} in hostlist {quoted(expr)}")
        if (why := _label_fault(part)) is not None:
            raise ValueError(f"bad host name {quoted(part)} in hostlist {quoted(expr)}: {why}, which DNS refuses")
        return [part]
    head, tail = part[: m.start()], part[m.end():]
    return [h for lo, hi, width in _ranges(m.group(1), expr) for i in range(lo, hi + 1)
            for h in _expand_one(head + str(i).zfill(width) + tail, expr)]


def check_name(name: object, what: str = "host name") -> str:
    """One host name, as a hostlist and a scheduler's argv take it: letters, digits, ``.``,
    ``_`` and ``-``, never a leading ``-`` (it would read as an option), ``=`` or a space
    (``n01 State=RESUME`` would be another argument). Raises :class:`ConfigError`."""

    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > 255:
        raise ConfigError(f"bad {what} {quoted(str(name))}: letters, digits, '.', '_' and '-' only, "
                          "not starting with '-', at most 255 characters")
    if (why := _label_fault(name)) is not None:
        raise ConfigError(f"bad {what} {quoted(name)}: {why}, which DNS refuses")
    return name


def count(expr: str | list) -> int:
    """How many host names ``expr`` expands to, without expanding it."""
    if isinstance(expr, list):
        return sum(count(e) for e in expr)
    return sum(_count_one(p, str(expr)) for p in _split_top(_check_expr(expr)))


def _check_expr(expr: object) -> str:
    if isinstance(expr, bool) or not isinstance(expr, (str, int)):
        raise ValueError(f"a hostlist item must be a string, got {type(expr).__name__}")
    expr = str(expr).strip()
    if not expr:
        raise ValueError("empty hostlist")
    if len(expr) > MAX_EXPR_CHARS:
        raise HostlistTooLarge(f"hostlist expression of {len(expr)} characters is over the cap "
                               f"of {MAX_EXPR_CHARS}")
    return expr


def expand(expr: str | list, limit: int = MAX_HOSTS) -> list[str]:
    """Expand a hostlist expression (or a YAML list of them) into host names, in order.

    Raises ``ValueError`` on a malformed expression and :class:`HostlistTooLarge` when it
    names more than ``limit`` hosts (counted before expanding).
    """
    items = expr if isinstance(expr, list) else [expr]
    if len(items) > limit:
        raise HostlistTooLarge(f"hostlist of {len(items)} items is over the cap of {limit} hosts")
    parts: list[tuple[str, str]] = []
    total = 0
    for item in items:
        text = _check_expr(item)
        for part in _split_top(text):
            if not part:
                raise ValueError(f"empty item in hostlist {quoted(text)}")
            total += _count_one(part, text)
            if total > limit:
                raise HostlistTooLarge(f"hostlist names more than {limit} hosts (the cap); "
                                       f"split the cluster into several inventories")
            parts.append((part, text))
    return [h for part, text in parts for h in _expand_one(part, text)]
