"""Errors to exit codes, in one place for every command (issue 27, part D).

The table is :class:`sncheck.model.ExitCode` (DESIGN.md's exit codes); every command is
wrapped in :func:`handle_errors`, and the group (``cli/main.py``) sends what escapes it,
unforeseen, to the crash line. A closed stdout (``sncheck status | head``) is the reader's
choice: it ends quietly, no message and no crash file, with exit 1 (Python's documented
convention for SIGPIPE; a gate that passed is never claimed for output no one read).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import re
import sys
from collections.abc import Iterator
from typing import IO, Any, Callable, NoReturn, TypeVar, cast

import click

from sncheck.errors import SncheckError, interrupt_cause
from sncheck.model import ExitCode

F = TypeVar("F", bound=Callable[..., Any])

# C0 and C1 controls, DEL, and the bidi marks, embeddings, overrides and isolates: a name from
# an input file that carries them moves the cursor, clears the screen, forges a line of its own
# ('sncheck: verdict pass') or reorders the rest of its line on the reader's terminal. U+2028 and
# U+2029 end a line for every reader that follows Unicode (Python's splitlines, JavaScript, log
# shippers): a name holding one is two lines of a log (hostile round 11, H11-13).
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")


def shown(text: str) -> str:
    """``text`` fit for one terminal line: every control or bidi character as its ``\\uXXXX``
    escape, so an input's name is printed as written and nothing else."""
    return _UNSHOWABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class Failure(click.ClickException):
    """A one-line error with a defined exit code (2 for user input, 3 for the harness)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = int(ExitCode(exit_code))  # refused unless it is one of the table's

    def show(self, file: IO[Any] | None = None) -> None:  # noqa: ARG002 -- click's ClickException.show: the message always goes to stderr
        click.echo(f"sncheck: error: {shown(self.format_message())}", err=True)


def closed_stdout() -> NoReturn:
    """The reader closed stdout: end now, quietly. stdout is pointed at /dev/null first so
    the interpreter's last flush does not print 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor behind stdout (a test's capture): nothing to flush
        pass
    sys.exit(ExitCode.FAIL)


def handle_errors(fn: F) -> F:
    """sncheck's exception tree to exit codes: its own errors by their ``exit_code``, Ctrl-C
    and running out of memory or disk as the harness (3), a closed stdout quietly."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SncheckError as e:
            raise Failure(str(e), e.exit_code) from e
        except KeyboardInterrupt as e:
            raise Failure(interrupt_cause(e), ExitCode.HARNESS) from e
        except MemoryError as e:
            raise Failure("out of memory", ExitCode.HARNESS) from e
        except BrokenPipeError:
            closed_stdout()
        except OSError as e:  # a disk full or a file gone while sncheck ran: not the input's fault
            where = f"{e.filename}: " if e.filename else f"{_unnamed_write(e)}: "
            # ... but a name longer than the file system takes (a component past NAME_MAX, a path past
            # PATH_MAX) is the name given: bad input, as 'no such directory' is (hostile round 21, H21-10)
            code = ExitCode.BAD_INPUT if e.errno == errno.ENAMETOOLONG else ExitCode.HARNESS
            raise Failure(f"{where}{e.strerror or e}", code) from e

    return cast(F, wrapper)  # functools.wraps keeps fn's signature


def _unnamed_write(e: OSError) -> str:
    """What an OSError without a file name failed to write: standard output where the stream it
    failed on is stdout's (``sncheck parse ... > /dev/full``: parse writes no file, and the line
    said "cannot write the run's files"; hostile round 22, H22-03), else one of the command's files."""
    if _on_stdout(e):
        with contextlib.suppress(OSError, ValueError):  # what stdout holds is lost: not flushed again at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return "cannot write to standard output"
    return "cannot write the command's files"


def _on_stdout(e: OSError) -> bool:
    """Whether the write that failed was to stdout: a stream of the frame that raised it
    (click.echo's ``file``) is on stdout's descriptor. OSError says no more: a full disk under a
    run's file and under a redirected stdout raise one error, ENOSPC, without a name."""
    try:
        out = sys.stdout.fileno()
    except (OSError, ValueError):  # no descriptor behind stdout (a test's capture)
        return False
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    for value in (tb.tb_frame.f_locals.values() if tb is not None else ()):
        with contextlib.suppress(OSError, ValueError):
            if isinstance(value, io.IOBase) and value.fileno() == out:
                return True
    return False


@contextlib.contextmanager
def stop_mapped(when: str = "") -> Iterator[None]:
    """A stop (Ctrl-C, SIGTERM, SIGHUP) outside a command's :func:`handle_errors` (Click reading
    the command line, a command's module loading, the top-level context closing) as a command's:
    one line, exit 3. Click's own catch made it a blank line, 'Aborted!' and exit 1 (round 15
    review), which a scheduler reads as a gate that failed."""
    try:
        yield
    except KeyboardInterrupt as e:
        raise Failure(interrupt_cause(e) + when, ExitCode.HARNESS) from e


def stopped(abort: BaseException) -> Failure | None:
    """The stop Click turned into an Abort in a window :func:`stop_mapped` does not cover, as one
    line and exit 3 (Click has printed a blank line before it); None for an Abort of another cause."""
    cause = abort.__cause__
    return Failure(interrupt_cause(cause), ExitCode.HARNESS) if isinstance(cause, KeyboardInterrupt) else None
