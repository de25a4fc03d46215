"""Run one function on many hosts at once; one bad host never stops the others."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
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


Command = tuple[tuple[str, ...], float, "dict[str, str] | None"]  # argv, timeout, extra environment


class Ahead:
    """A host's reads started at once, before anyone asks for them: one worker (one SSH
    channel) per group, the commands of a group one after the other (a group is one tool:
    once it times out, its later commands are not run, as the fact judge would skip them).

    Serially, a host whose every tool hangs cost one command_timeout per tool; started
    together they cost one in all. :meth:`take` hands a command's Result to whoever asks
    for it first (waiting for it if need be), once; a command not started ahead, or taken
    already, is None: the caller runs it itself. ``conn`` runs several channels at once
    (paramiko); groups stay fewer than sshd's MaxSessions (10)."""

    def __init__(self, conn: Connection, groups: Sequence[Sequence[Command]]) -> None:
        self.futures: dict[tuple[str, ...], Future[Result | None]] = {}
        work = []
        for group in groups:
            items = []
            for argv, timeout, env in group:
                key = tuple(argv)
                if key in self.futures:
                    continue
                self.futures[key] = Future()
                items.append((key, timeout, env, self.futures[key]))
            if items:
                work.append(items)
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(len(work), 8)),
                                        thread_name_prefix=f"sncheck-read-{conn.host}")
        for items in work:
            self._pool.submit(self._run_group, conn, items)

    @staticmethod
    def _run_group(conn: Connection, items: list[tuple[tuple[str, ...], float, dict[str, str] | None,
                                                          Future[Result | None]]]) -> None:
        stop = False
        for argv, timeout, env, fut in items:
            if stop:
                fut.set_result(None)  # its tool hung or its host went: not run ahead
                continue
            try:
                res = conn.run(list(argv), env=env, timeout=timeout)
            except BaseException as e:  # the connection failed: the one who asks sees why
                fut.set_exception(e)
                stop = True
                continue
            fut.set_result(res)
            stop = res.timed_out

    def take(self, argv: Sequence[str]) -> Result | None:
        fut = self.futures.pop(tuple(argv), None)
        return None if fut is None else fut.result()

    def close(self) -> None:
        """Stop waiting: what is still running ends at its timeout, on its own."""
        self._pool.shutdown(wait=False, cancel_futures=True)
