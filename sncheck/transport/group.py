"""Run one function on many hosts at once; one bad host never stops the others."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sncheck.errors import TransportError
from sncheck.transport.command import build_command
from sncheck.transport.connection import Connection
from sncheck.transport.result import Result
from sncheck.transport.sshconfig import HostSpec

log = logging.getLogger("sncheck.transport")


class HostTaskError(TransportError):
    """Something unexpected went wrong for one host during a fan-out (a bug, not the network).

    The original exception is kept as ``__cause__``.
    """


class GroupResult(dict[str, Result | TransportError]):
    """Host name -> its Result, or the TransportError that stopped it, in input order."""

    @property
    def succeeded(self) -> dict[str, Result]:
        """Hosts whose command ran and exited 0 in time."""
        return {h: r for h, r in self.items() if isinstance(r, Result) and r.ok}

    @property
    def failed(self) -> dict[str, Result | TransportError]:
        """Every other host: errors, non-zero exits and timeouts."""
        return {h: r for h, r in self.items() if not (isinstance(r, Result) and r.ok)}

    @property
    def errors(self) -> dict[str, TransportError]:
        """Hosts that could not run the command at all (unreachable, auth, host key, ...)."""
        return {h: r for h, r in self.items() if isinstance(r, TransportError)}


def fan_out(
    targets: Iterable[HostSpec | Connection],
    fn: Callable[[Connection], Result],
    forks: int = 32,
    **conn_opts: Any,
) -> GroupResult:
    """Call ``fn(connection)`` for every target, at most ``forks`` at a time.

    A HostSpec gets a new Connection (built with ``conn_opts``) that is closed
    afterwards; a Connection passed in is used as is and left open for reuse.
    """
    if forks < 1:
        raise ValueError("forks must be >= 1")
    items = list(targets)
    names = [t.host if isinstance(t, Connection) else t.name for t in items]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"hosts given more than once: {', '.join(duplicates)}")
    if not items:
        return GroupResult()

    live: list[Connection] = []

    def one(target: HostSpec | Connection) -> Result | TransportError:
        if isinstance(target, Connection):
            live.append(target)
            return _guarded(target, fn)
        with Connection(target, **conn_opts) as conn:
            live.append(conn)
            return _guarded(conn, fn)

    pool = ThreadPoolExecutor(max_workers=min(forks, len(items)), thread_name_prefix="sncheck-ssh")
    try:
        outcomes = list(pool.map(one, items))
    except BaseException:
        # A stop (SIGTERM, Ctrl-C): cancel what has not started and close the connections
        # in use, so their commands end now rather than at their timeout; never wait.
        pool.shutdown(wait=False, cancel_futures=True)
        for conn in list(live):
            conn.close()
        raise
    pool.shutdown()
    return GroupResult(zip(names, outcomes, strict=True))


def run_on_all(
    specs: Iterable[HostSpec | Connection],
    argv: Sequence[str],
    timeout: float | None = None,
    forks: int = 32,
    **conn_opts: Any,
) -> GroupResult:
    """Run ``argv`` on every host; see :func:`fan_out`."""
    argv = list(argv) if not isinstance(argv, str) else argv
    build_command(argv)  # a bad argv is the caller's bug: raise it here, not once per host
    return fan_out(specs, lambda c: c.run(argv, timeout=timeout), forks=forks, **conn_opts)


def _guarded(conn: Connection, fn: Callable[[Connection], Result]) -> Result | TransportError:
    try:
        return fn(conn)
    except TransportError as e:
        return e
    except Exception as e:  # one host's bug must not stop the fleet; kept with its traceback
        log.error("%s: unexpected %s during fan-out", conn.host, type(e).__name__, exc_info=True)
        err = HostTaskError(conn.host, f"unexpected {type(e).__name__}: {e}")
        err.__cause__ = e
        return err
