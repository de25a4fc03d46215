"""The command line's path options: every one is typed with one of these, so a FIFO, a
device or a socket named on the command line is refused (exit 2, naming it) before any
work, by the same checks as the one reader and writer (:mod:`sncheck.config.fileio`),
which check again when they read or write.

* :func:`input_file` (``--faults``, ``-i``, ``--rank-map``, ``parse FILE``, ...): a regular
  file, read through :func:`~sncheck.config.fileio.read_input` with its kind's limit.
* :func:`input_ref` (a playbook, ``--rules``, ``--baseline``): a shipped name, or a path that
  must be a regular file (or, where ``dirs``, a directory such as a run directory).
* :func:`output_file` (``golden record --out``, ``baseline make --out``, ...): absent, or a
  regular file (or a link, replaced, never followed) that is written over atomically.
* :func:`directory` (``--out`` of a run, ``--state-dir``, ``--templates``, ...): absent or a
  directory.

``tests/test_path_options.py`` walks every command's options and fails on a path option
typed with anything else.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import click

from sncheck.cli.errors import shown
from sncheck.config.fileio import LIMITS, check_input, check_output, kind_of
from sncheck.errors import ConfigError
from sncheck.store.layout import run_around
from sncheck.store.statedir import MARKS


class PathOption(click.Path):
    """A click.Path whose value is checked by :mod:`sncheck.config.fileio`'s rules."""

    role = "path"

    def __init__(self, kind: str | None = None, *, dirs: bool = False, files: bool = True) -> None:
        super().__init__(dir_okay=dirs, file_okay=files)
        if kind is not None and kind not in LIMITS:
            raise ValueError(f"unknown input kind {kind!r}")
        self.kind = kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = os.fspath(value)
        if not text:  # '--faults "$FAULTS"' with the variable unset: no faults, the shipped rules, runs/<id>
            self.fail("an empty path names no file (an unset variable?); give a path, or leave the option out",
                      param, ctx)
        try:
            if shown(text) != text:
                # a newline in a run directory's name splits 'results in DIR/results.json' over
                # two lines of the summary (and of every later listing that names the run)
                raise ConfigError("has a control or bidi character in its name; name a path without one",
                                  shown(text))
            self.check(text)
        except ConfigError as e:
            self.fail(str(e), param, ctx)
        return text

    def check(self, path: str) -> None:
        raise NotImplementedError


def _special(path: str) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else kind_of(mode)


class InputFile(PathOption):
    role = "input"

    def check(self, path: str) -> None:
        if os.path.isdir(path) and self.dir_okay:
            return
        check_input(path, self.kind or "yaml")


class InputRef(InputFile):
    """A shipped name or a path; only an existing path is checked (a name is not a path)."""

    role = "input-ref"

    def check(self, path: str) -> None:
        if os.path.lexists(path):
            super().check(path)


class OutputFile(PathOption):
    role = "output"

    def check(self, path: str) -> None:
        check_output(path)
        refuse_among_records(path)


def refuse_among_records(path: str) -> None:
    """A file output (``baseline make --out``, ``golden record --out``, ``fabric check --save``,
    ``inventory from-slurm --out``) is never written among a run's or the state store's own files:
    ``baseline make RUN --out RUN/results.json`` replaced the run's record with the baseline, exit 0,
    and ``--out STATE/state.db`` the fleet's isolation store (hostile round 23, H23-03)."""
    if (outer := run_around(Path(path))) is not None:
        raise ConfigError(f"is inside the run directory {outer}: a run's files are its own; write it beside the "
                          "run", path)
    parent = Path(os.path.realpath(Path(path).parent))
    if any(os.path.lexists(parent / mark) for mark in MARKS):
        raise ConfigError(f"is in the state directory {parent}: the store's files are its own; write it elsewhere",
                          path)


class Directory(PathOption):
    role = "directory"

    def check(self, path: str) -> None:
        what = _special(path)
        if what is not None:
            raise ConfigError(f"is {what}, not a directory", path)
        if os.path.exists(path) and not os.path.isdir(path):
            raise ConfigError("is a file, not a directory", path)


def input_file(kind: str, dirs: bool = False) -> InputFile:
    return InputFile(kind, dirs=dirs)


def input_ref(kind: str, dirs: bool = False) -> InputRef:
    return InputRef(kind, dirs=dirs)


def output_file() -> OutputFile:
    return OutputFile(None)


def directory() -> Directory:
    return Directory(None, dirs=True, files=False)


PATH_TYPES = (InputFile, InputRef, OutputFile, Directory)
