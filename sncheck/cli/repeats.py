"""An option that takes one value, given twice, is refused (exit 2, one line naming it); so is an
argument that is not UTF-8 text (:func:`refuse_undecodable`).

Click keeps the last value of a repeated option silently: ``--out a --out b`` wrote to ``b``,
``--rules mine --rules default`` judged by the shipped rules only, and a wrapper script's
``--state-dir`` was replaced by the operator's. Options declared ``multiple`` (lists) and
counts are given as often as one likes, a flag too (``-q -q``, ``-q --quiet``); every other
option once. The command line is read by Click's own parser (its ``order``: one entry per
occurrence), through the groups down to the command that runs, before any of it runs.
"""

from __future__ import annotations

from collections import Counter

import click


def _once(p: click.Parameter) -> bool:
    # A flag said twice says one thing ('-q -q', '-q --quiet'): sncheck has no two-way flag
    # ('--x/--no-x'), whose two senses at once would contradict.
    return isinstance(p, click.Option) and not (p.multiple or p.count or p.is_flag or p.name == "help")


def refuse_repeats(ctx: click.Context | None, cmd: click.Command | None, args: list[str]) -> None:
    """Raise click.UsageError for an option of ``cmd`` (or of a command below it) that takes one
    value and is given more than once in ``args`` (what follows ``cmd``'s name)."""
    if ctx is not None and ctx.resilient_parsing:
        return  # shell completion: Click completes what it can, it refuses nothing
    while cmd is not None:
        sub = click.Context(cmd, parent=ctx, info_name=cmd.name, resilient_parsing=True)
        try:
            _, rest, order = cmd.make_parser(sub).parse_args(list(args))
        except click.UsageError:
            return  # an unknown option, a missing value: Click says so when it parses for real
        given = Counter(p for p in order if _once(p))
        for p in (p for p, n in given.items() if n > 1):
            _refuse(p)
        if not isinstance(cmd, click.Group) or not rest:
            return
        ctx, cmd, args = sub, cmd.get_command(sub, rest[0]), rest[1:]


def _refuse(p: click.Parameter) -> None:
    """``p``, an option taking one value, was given twice."""
    assert isinstance(p, click.Option)
    raise click.UsageError(f"option {'/'.join(p.opts)} given twice: it takes one value, and the second would "
                           "replace the first silently; give it once")


def refuse_undecodable(args: list[str]) -> None:
    """Raise click.UsageError for an argument holding a byte that is not UTF-8 (Python hands it on
    as a lone surrogate, ``\\udcff`` for 0xff: a file name from a Latin-1 locale, a mangled paste).
    sncheck records its names and paths in results.json, the state store and the reports, all
    UTF-8: ``--out`` or ``isolate --rule`` of such a byte ended in an internal error, exit 3, half
    written (hostile round 21, H21-07). Refused before anything runs, the argument shown escaped."""
    for arg in args:
        bad = next((ord(c) for c in arg if 0xD800 <= ord(c) <= 0xDFFF), None)
        if bad is None:
            continue
        try:  # the bytes as they were given, each that is not UTF-8 as \xNN
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte makes (a '\ud800' some wrapper wrote)
            shown = arg.encode("utf-8", "backslashreplace").decode("utf-8")
        what = f"the byte 0x{bad - 0xDC00:02x}" if 0xDC80 <= bad <= 0xDCFF else f"the lone surrogate U+{bad:04X}"
        raise click.UsageError(f"argument '{shown}' is not UTF-8 text ({what}): sncheck reads every name, path "
                               "and value as UTF-8")
