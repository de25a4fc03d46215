"""An option that takes one value, given twice, is refused (exit 2, one line naming it).

Click keeps the last value of a repeated option silently: ``--out a --out b`` wrote to ``b``,
``--rules mine --rules default`` judged by the shipped rules only, and a wrapper script's
``--state-dir`` was replaced by the operator's. Options declared ``multiple`` (lists) and
counts are given as often as one likes, a flag repeated as written too (``-q -q``); every
other option once, and a flag never both ways (``--x --no-x``). The command line is walked
as Click's parser reads it (``--name=value``, ``-ovalue``, ``-qv``, ``--`` ends the options),
through the groups down to the command that runs, before any of it runs.
"""

from __future__ import annotations

import click


def _options(cmd: click.Command) -> dict[str, click.Option]:
    return {name: p for p in cmd.params if isinstance(p, click.Option) for name in (*p.opts, *p.secondary_opts)}


def _takes(p: click.Option) -> int:
    """How many arguments after the option are its value."""
    return 0 if p.is_flag or p.count else p.nargs


def _once(p: click.Option) -> bool:
    return not (p.multiple or p.count or p.name == "help")


def refuse_repeats(ctx: click.Context, cmd: click.Command | None, args: list[str]) -> None:
    """Raise click.UsageError for an option of ``cmd`` (or of a command below it) that takes one
    value and is given more than once in ``args`` (what follows ``cmd``'s name)."""
    while cmd is not None:
        rest = _walk(cmd, args)
        if not isinstance(cmd, click.Group) or rest is None:
            return
        cmd, args = cmd.get_command(ctx, rest[0]), rest[1:]


def _walk(cmd: click.Command, args: list[str]) -> list[str] | None:
    """Check ``cmd``'s own options in ``args``; for a group, the arguments from its
    subcommand's name on (None when there is none)."""
    opts = _options(cmd)
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if tok == "--":
            return None
        if not tok.startswith("-") or tok == "-":
            if isinstance(cmd, click.Group):
                return args[i - 1:]
            continue
        if tok.startswith("--"):
            name, eq, _ = tok.partition("=")
            given = [(name, 0 if eq else None)]
        else:  # '-o VALUE', '-oVALUE', '-qv' (flags together, the last may take the rest as its value)
            given = []
            for k, ch in enumerate(tok[1:], start=1):
                p = opts.get("-" + ch)
                given.append(("-" + ch, 0 if p is not None and _takes(p) and k < len(tok) - 1 else None))
                if p is None or _takes(p):
                    break
        for name, value_after in given:
            p = opts.get(name)
            if p is None:
                break  # Click says what is wrong with an option it does not know
            if _once(p) and p.name in seen and not (p.is_flag and seen[p.name] == name):  # '-q -q' says one thing
                if p.is_flag:
                    raise click.UsageError(f"options {seen[p.name]} and {name} both given: they contradict; "
                                           "give one")
                also = "" if seen[p.name] == name else f" (as {seen[p.name]} and {name})"
                raise click.UsageError(f"option {name} given twice{also}: it takes one value, and the "
                                       "second would replace the first silently; give it once")
            seen[str(p.name)] = name
            i += _takes(p) if value_after is None else 0
    return None
