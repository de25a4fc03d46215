"""One small exception tree. The CLI maps these to exit codes in one place."""

from __future__ import annotations

import signal


class SncheckError(Exception):
    """Base of every error sncheck raises on purpose."""

    exit_code = 3


class ConfigError(SncheckError):
    """A user's input is wrong: inventory, fault plan, playbook, rules, options.

    ``where`` is ``file:line`` when known, so the message points at the fix.
    """

    exit_code = 2

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class ParseError(SncheckError):
    """A tool printed something a parser could not read."""

    exit_code = 1

    def __init__(self, message: str, tool: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.tool = tool
        self.line = line

    def __str__(self) -> str:
        parts = [p for p in (self.tool, f"line {self.line}" if self.line else None) if p]
        return f"{': '.join(parts)}: {self.message}" if parts else self.message


class CapBlocked(SncheckError):
    """The safety cap refused a batch of isolations: nothing was applied.

    Exit 1, like a gate that failed, from ``sncheck isolate`` and from a run's
    ``--state-dir`` actions alike.
    """

    exit_code = 1


class HarnessError(SncheckError):
    """sncheck itself could not run (no backend, workers died, interrupted)."""

    exit_code = 3


class TransportError(SncheckError):
    """Base for SSH transport failures; each names the host."""

    exit_code = 3

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.message = message


class ConnectError(TransportError):
    """The host could not be reached (refused, timed out, no route)."""


class AuthError(TransportError):
    """The host refused our credentials."""


class HostKeyError(TransportError):
    """The host key is unknown (and not accepted) or has changed."""

# A command past its timeout is not an exception: it is a Result with timed_out=True and
# the partial output (a non-zero exit is data too).


class Interrupted(KeyboardInterrupt):
    """A stop request: Ctrl-C, or SIGTERM/SIGHUP turned into the same thing
    (:func:`sncheck.run.safety.install_signal_handlers`)."""

    def __init__(self, signame: str = "Ctrl-C") -> None:
        super().__init__(signame)
        self.signame = signame

    def __str__(self) -> str:
        return self.signame


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals taken as a stop request: SIGTERM and SIGHUP, less one this process was
    started ignoring (``nohup``, a daemon or a scheduler that ignores SIGHUP): an inherited
    SIG_IGN is the starter's word that a hangup must not stop it (reviews15 #6: under nohup a
    hangup stopped every command, exit 3)."""
    return tuple(s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) is not signal.SIG_IGN)


def interrupt_cause(e: BaseException) -> str:
    """Words for a cut-short layer: ``interrupted (SIGTERM)``, ``interrupted (Ctrl-C)``."""
    name = e.signame if isinstance(e, Interrupted) else "Ctrl-C"
    return f"interrupted ({name})"
