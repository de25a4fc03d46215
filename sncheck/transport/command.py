"""Build the one shell command line a remote host runs.

The remote side always parses a string with its login shell, so every argument
is quoted here, and nothing else in sncheck glues a command line together.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def build_command(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> str:
    """Quote ``argv`` into a shell command, optionally with environment and directory.

    >>> build_command(["printf", "%s", "a b; c"])
    "printf %s 'a b; c'"
    >>> build_command(["ls"], env={"LC_ALL": "C"}, cwd="/tmp/x y")
    "cd -- '/tmp/x y' && env LC_ALL=C ls"
    """
    if isinstance(argv, (str, bytes)):
        raise TypeError("argv must be a list of arguments, not a string (it would be split by the shell)")
    args = list(argv)
    if not args:
        raise ValueError("argv is empty")
    for arg in args:
        _check_word(arg, "argument")
    # An unquoted NAME=VALUE first word is an assignment to the shell and to
    # env(1), not a command name, so refuse it rather than run something else.
    if "=" in args[0]:
        raise ValueError(f"command name {args[0]!r} contains '='")
    words = [shlex.quote(a) for a in args]
    if env:
        assignments = []
        for name, value in env.items():
            _check_word(name, "environment variable name")
            _check_word(value, f"value of {name}")
            if not _ENV_NAME.match(name):
                raise ValueError(f"invalid environment variable name {name!r}")
            assignments.append(shlex.quote(f"{name}={value}"))
        words = ["env", *assignments, *words]
    command = " ".join(words)
    if cwd is not None:
        _check_word(cwd, "cwd")
        command = f"cd -- {shlex.quote(cwd)} && {command}"
    return command


def _check_word(value: object, what: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {type(value).__name__}: {value!r}")
    if "\0" in value:
        raise ValueError(f"{what} contains a NUL byte: {value!r}")
