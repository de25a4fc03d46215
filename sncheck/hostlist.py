"""Slurm hostlist expressions: ``node[001-016]``, ``gpu[1-3,7]``, ``r[1-2]n[01-04]``, ``a,b[1-2]``."""

from __future__ import annotations

import re

_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {expr!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced '[' in hostlist {expr!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def _expand_range(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        item = item.strip()
        if re.fullmatch(r"\d+", item):
            out.append(item)
            continue
        m = re.fullmatch(r"(\d+)-(\d+)", item)
        if not m:
            raise ValueError(f"bad range {item!r} in hostlist {expr!r}")
        lo, hi = m.group(1), m.group(2)
        if int(hi) < int(lo):
            raise ValueError(f"range {item!r} runs backwards in hostlist {expr!r}")
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
    return out


def _expand_one(part: str, expr: str) -> list[str]:
    m = _BRACKET.search(part)
    if not m:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", part):
            raise ValueError(f"bad host name {part!r} in hostlist {expr!r}")
        return [part]
    head, tail = part[: m.start()], part[m.end():]
    return [h for v in _expand_range(m.group(1), expr) for h in _expand_one(head + v + tail, expr)]


def expand(expr: str | list) -> list[str]:
    """Expand a hostlist expression (or a YAML list of them) into host names, in order."""
    if isinstance(expr, list):
        return [h for e in expr for h in expand(str(e))]
    expr = str(expr).strip()
    if not expr:
        raise ValueError("empty hostlist")
    hosts: list[str] = []
    for part in _split_top(expr):
        if not part:
            raise ValueError(f"empty item in hostlist {expr!r}")
        hosts.extend(_expand_one(part, expr))
    return hosts
