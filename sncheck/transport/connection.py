"""One SSH connection to one host (paramiko), and the runner for its commands."""

from __future__ import annotations

import fcntl
import logging
import os
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import paramiko

from sncheck.config.fileio import check_input
from sncheck.transport import knownhosts
from sncheck.transport.agent import BoundedAgent
from sncheck.errors import AuthError, ConfigError, ConnectError, HostKeyError, TransportError
from sncheck.transport.command import build_command
from sncheck.transport.result import MAX_OUTPUT_BYTES, Result
from sncheck.transport.sshconfig import HostSpec

log = logging.getLogger("sncheck.transport")


# The remote login shell prints its own PID first, on stderr, then runs the
# command. sshd starts every session with setsid(), so that PID is also the
# process group and session id of everything the command starts: on a timeout
# the whole tree can be killed from a second channel (closing our channel alone
# would leave e.g. a `sleep` running on the host). The line is removed from stderr.
_PGID_LINE = re.compile(rb"__SNCHECK_PGID__=(\d+)\n")
# stdin from /dev/null (a command that reads it does not hang), not an EOF sent on the channel:
# paramiko's shutdown_write builds the EOF under the channel's lock and sends it after, so when
# the command ended at once its transport thread could answer the server's CLOSE first; OpenSSH
# then gets an EOF for a channel it freed and drops the whole connection ("ieof packet referred
# to nonexistent channel"), every other read of the host with it (18 trays under load: one lost).
_WRAPPER = "printf '__SNCHECK_PGID__=%s\\n' \"$$\" >&2; exec </dev/null; "
_MARK_SEARCH_LIMIT = 64 * 1024

# TERM the process group and the session, give them a moment, then KILL.
# Zombies (a host whose init does not reap) count as gone. Without ps, KILL at once.
_KILL_SCRIPT = (
    "pg={pg}; kill -TERM -$pg 2>/dev/null; pkill -TERM -s $pg 2>/dev/null; i=0; "
    "while [ $i -lt {ticks} ] && ps -o stat= -s $pg 2>/dev/null | grep -qv '^ *Z'; "
    "do sleep 0.1; i=$((i+1)); done; "
    "kill -KILL -$pg 2>/dev/null; pkill -KILL -s $pg 2>/dev/null; exit 0"
)
KILL_GRACE = 2.0  # seconds between TERM and KILL
_AFTER_KILL_DRAIN = 2.0  # seconds to collect output after the kill
_KNOWN_HOSTS_LOCK = threading.Lock()


class _Transient(Exception):
    """A connect failure worth another try (refused, timed out, no route, handshake cut)."""


class Connection:
    """A lazily opened SSH connection to one host.

    ``run()`` opens it on first use; ``close()`` may be called any number of
    times, and a closed connection reopens on the next ``run()``. A non-zero
    exit is returned as data in a :class:`Result`; failures to reach or log in
    to the host raise :class:`ConnectError`, :class:`AuthError` or
    :class:`HostKeyError`.

    Host keys are checked against ``known_hosts`` (default ``~/.ssh/known_hosts``).
    An unknown key is refused unless ``accept_new_host_keys`` is true, in which
    case it is recorded there (OpenSSH's ``accept-new``); a changed key is always
    refused. Only connect failures are retried, ``retries`` times, after
    ``backoff``, ``2*backoff``, ... seconds. ``connect_timeout`` bounds each of
    TCP connect, SSH handshake and authentication.

    Keys come from ``spec.identity_files``, the ssh-agent (``allow_agent``) and,
    when no identity file is given (``look_for_keys=None``), ``~/.ssh/id_*``.
    """

    def __init__(
        self,
        spec: HostSpec,
        *,
        connect_timeout: float = 10.0,
        known_hosts: str | os.PathLike[str] | None = None,
        accept_new_host_keys: bool = False,
        password: str | None = None,
        retries: int = 2,
        backoff: float = 0.5,
        allow_agent: bool = True,
        look_for_keys: bool | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.spec = spec
        self.connect_timeout = connect_timeout
        self.known_hosts = Path(known_hosts or "~/.ssh/known_hosts").expanduser()
        self.accept_new_host_keys = accept_new_host_keys
        self.retries = retries
        self.backoff = backoff
        self.allow_agent = allow_agent
        self.look_for_keys = (not spec.identity_files) if look_for_keys is None else look_for_keys
        self.__password = password  # never logged, never in repr or messages
        self._client: paramiko.SSHClient | None = None
        self._jump: Connection | None = None
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return self.spec.name

    @property
    def is_open(self) -> bool:
        t = self._client.get_transport() if self._client else None
        return bool(t and t.is_active())

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<Connection {self.host} {self.spec} {state}>"

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- connecting --------------------------------------------------------
    def open(self) -> None:
        """Connect now (``run()`` does this on first use). Idempotent."""
        self._transport()

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            jump, self._jump = self._jump, None
        if client is not None:
            client.close()
        if jump is not None:
            jump.close()

    def _transport(self) -> paramiko.Transport:
        with self._lock:
            if self._client is not None:
                t = self._client.get_transport()
                if t is not None and t.is_active():
                    return t
                self._client.close()  # the connection dropped since last use: reconnect
                self._client = None
            try:
                self._client = self._connect_with_retries()
            except BaseException:
                if self._jump is not None:
                    self._jump.close()
                    self._jump = None
                raise
            t = self._client.get_transport()
            assert t is not None
            return t

    def _connect_with_retries(self) -> paramiko.SSHClient:
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._connect_once()
            except _Transient as e:
                last = e
                if attempt < attempts:
                    delay = self.backoff * 2 ** (attempt - 1)
                    log.warning(
                        "%s: connect attempt %d/%d failed: %s; retrying in %.2gs",
                        self.host,
                        attempt,
                        attempts,
                        e,
                        delay,
                    )
                    time.sleep(delay)
        tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
        raise ConnectError(self.host, f"{last} (gave up after {tries})") from last.__cause__

    def _connect_once(self) -> paramiko.SSHClient:
        spec = self.spec
        sock = self._open_socket()
        client = paramiko.SSHClient()
        if self.allow_agent:  # paramiko's own Agent reads the agent without a timeout (transport/agent.py)
            client._agent = BoundedAgent(self.connect_timeout)  # type: ignore[attr-defined]  # noqa: SLF001 -- the agent SSHClient._auth uses when set
        keys = self._identity_files()
        try:
            # read as OpenSSH reads it: marker lines (@cert-authority, @revoked) are no host's key
            known = knownhosts.load_all(self.known_hosts)  # then the system's; a FIFO or a device refused
        except (OSError, paramiko.SSHException, ValueError, ConfigError) as e:
            sock.close()
            raise HostKeyError(self.host, f"cannot read known_hosts: {e}") from e
        # paramiko is given no host keys: it asks the policy for every key, after the key
        # exchange and before any authentication, and the policy judges it as OpenSSH does
        # (knownhosts.check: host patterns, negation, hashed names, @revoked)
        client.set_missing_host_key_policy(
            _KnownHostsPolicy(spec, self.known_hosts, self.accept_new_host_keys, known)
        )
        try:
            client.connect(
                spec.hostname,
                spec.port,
                username=spec.user or None,
                password=self.__password,
                key_filename=keys or None,  # type: ignore[arg-type]  # paramiko takes a list; its stub says str
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout,
                allow_agent=self.allow_agent,
                look_for_keys=self.look_for_keys,
                sock=sock,
                transport_factory=_ordered_transport(known, knownhosts.key_name(spec.hostname, spec.port)),
            )
        except TransportError:  # raised by our host key policy
            _discard(client, sock)
            raise
        except paramiko.AuthenticationException as e:
            _discard(client, sock)
            raise AuthError(self.host, self._auth_message(e, keys)) from e
        except (paramiko.SSHException, EOFError, OSError) as e:
            # Once the host key is known the failure came from authentication
            # (e.g. "no authentication methods available"): retrying won't help.
            handshake_done = _handshake_done(client)
            _discard(client, sock)
            if handshake_done:
                raise AuthError(self.host, self._auth_message(e, keys)) from e
            raise _Transient(f"SSH handshake with {_where(spec)} failed: {e or type(e).__name__}") from e
        except BaseException:
            _discard(client, sock)
            raise
        t = client.get_transport()
        if t is not None:
            t.set_keepalive(30)
        log.debug("%s: connected to %s", self.host, spec)
        return client

    def _open_socket(self) -> socket.socket | paramiko.Channel:
        if self.spec.proxy_jump is not None:
            return self._jump_channel(self.spec.proxy_jump)
        where = _where(self.spec)
        try:
            sock = socket.create_connection(
                (self.spec.hostname, self.spec.port), timeout=self.connect_timeout
            )
        except socket.gaierror as e:  # a wrong name does not fix itself: no retry
            raise ConnectError(self.host, f"cannot resolve {self.spec.hostname!r}: {e.strerror}") from e
        except TimeoutError as e:
            raise _Transient(f"timed out after {self.connect_timeout:g}s connecting to {where}") from e
        except ConnectionRefusedError as e:
            raise _Transient(f"connection refused by {where} (is sshd running there?)") from e
        except OSError as e:
            raise _Transient(f"cannot connect to {where}: {e.strerror or e}") from e
        # Many small request/reply packets: without this, Nagle and delayed ACKs
        # add ~40 ms to every channel open.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _jump_channel(self, jump_spec: HostSpec) -> paramiko.Channel:
        if self._jump is None:
            self._jump = Connection(
                jump_spec,
                connect_timeout=self.connect_timeout,
                known_hosts=self.known_hosts,
                accept_new_host_keys=self.accept_new_host_keys,
                retries=self.retries,
                backoff=self.backoff,
                allow_agent=self.allow_agent,
            )
        try:
            transport = self._jump._transport()  # retried on its own; no second layer of retries  # noqa: SLF001 -- the jump host is a Connection too
        except TransportError as e:
            raise type(e)(self.host, f"via jump host {jump_spec.name}: {e.message}") from e
        where = _where(self.spec)
        try:
            return transport.open_channel(
                "direct-tcpip",
                (self.spec.hostname, self.spec.port),
                ("127.0.0.1", 0),
                timeout=self.connect_timeout,
            )
        except paramiko.ChannelException as e:
            raise _Transient(f"jump host {jump_spec.name} could not connect to {where}: {e.text}") from e
        except (paramiko.SSHException, EOFError, OSError) as e:
            raise _Transient(f"jump host {jump_spec.name} could not open a tunnel to {where}: {e}") from e

    def _identity_files(self) -> list[str]:
        found = []
        for path in self.spec.identity_files:
            if os.path.exists(path):
                check_input(path, "ssh config")  # a FIFO or a device as a key: refused, not read
                found.append(path)
            else:
                log.warning("%s: identity file %s does not exist", self.host, path)
        return found

    def _auth_message(self, e: BaseException, keys: Sequence[str]) -> str:
        tried = ", ".join(keys) if keys else "no identity file"
        if self.allow_agent and os.environ.get("SSH_AUTH_SOCK"):
            tried += ", ssh-agent"
        if self.look_for_keys:
            tried += ", ~/.ssh/id_*"
        if self.__password is not None:
            tried += ", a password"
        return (
            f"authentication as {self.spec.user!r} failed ({e or type(e).__name__}); tried {tried}. "
            "Check the user name and that the public key is in the host's authorized_keys"
        )

    # -- running -----------------------------------------------------------
    def run(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_output: int | None = MAX_OUTPUT_BYTES,
    ) -> Result:
        """Run ``argv`` (quoted by :func:`build_command`) and wait for it.

        With ``timeout`` (seconds), a command still running then is killed on
        the host with its whole process group, and the Result has
        ``timed_out=True``, ``exit_code=None`` and the output printed so far.
        A command that prints more than ``max_output`` bytes is killed likewise,
        its output kept up to there (``cut_at``; ``exit_code=None``).
        Raises ConnectError if the connection cannot be made or drops.
        """
        command = build_command(argv, env=env, cwd=cwd)
        transport = self._transport()
        try:
            chan = transport.open_session(timeout=self.connect_timeout)
        except (paramiko.SSHException, EOFError, OSError) as e:
            raise ConnectError(self.host, f"cannot open a session on {_where(self.spec)}: {e}") from e
        log.debug("%s: run %s", self.host, command)
        return _Runner(self.host, transport, chan, command, timeout, max_output).run()


class _Runner:
    """Start one command on a channel, read both streams, wait, and kill on timeout."""

    def __init__(
        self,
        host: str,
        transport: paramiko.Transport,
        chan: paramiko.Channel,
        command: str,
        timeout: float | None,
        max_output: int | None = MAX_OUTPUT_BYTES,
    ) -> None:
        self.host = host
        self.transport = transport
        self.chan = chan
        self.command = command
        self.timeout = timeout
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.max_output = max_output
        self.cut_at: int | None = None  # set once the output passed max_output
        self.pgid: int | None = None
        self._mark: tuple[int, int] | None = None  # where our pid line sits in stderr
        # poll, not select: no 1024-descriptor limit when hundreds of hosts are open.
        # The channel's fileno() is a pipe woken by data on either stream or by close.
        self.poller = select.poll()
        self.poller.register(chan.fileno(), select.POLLIN)

    def run(self) -> Result:
        chan = self.chan
        start = time.monotonic()
        deadline = start + self.timeout if self.timeout is not None else None
        try:
            chan.exec_command(_WRAPPER + self.command)
            timed_out = not self._wait(deadline)
            if timed_out or self.cut_at is not None:
                self._kill()
                self._wait(time.monotonic() + _AFTER_KILL_DRAIN)
                timed_out = timed_out and self.cut_at is None
            elif not chan.eof_received:  # closed without EOF: the connection dropped
                raise ConnectError(self.host, f"connection lost while running {self.command!r}")
        except (paramiko.SSHException, EOFError, OSError) as e:
            raise ConnectError(self.host, f"connection failed while running {self.command!r}: {e}") from e
        finally:
            self._close()
        cut = self.cut_at is not None
        status = chan.exit_status if chan.exit_status_ready() and not timed_out and not cut else -1
        return Result(
            host=self.host,
            command=self.command,
            stdout=self.stdout.decode("utf-8", "replace"),
            stderr=self._clean_stderr().decode("utf-8", "replace"),
            exit_code=None if status == -1 else status,
            duration=time.monotonic() - start,
            timed_out=timed_out,
            cut_at=self.cut_at,
        )

    def _close(self) -> None:
        """Close the channel; a connection that died meanwhile cannot take the CLOSE message.

        paramiko sends CLOSE on a channel it has not yet seen closed, and that send raises
        EOFError or OSError once the peer is gone: the run's own outcome (its Result, or the
        ConnectError saying the connection dropped) must not be replaced by that.
        """
        try:
            self.chan.close()
        except (paramiko.SSHException, EOFError, OSError) as e:
            log.debug("%s: closing the channel of %r failed: %s", self.host, self.command, e)

    def _wait(self, deadline: float | None) -> bool:
        """Read until the command has exited and its output ended; False at the deadline."""
        chan = self.chan
        while True:
            self._drain()
            ended = chan.eof_received and not chan.recv_ready() and not chan.recv_stderr_ready()
            if chan.closed or (ended and chan.exit_status_ready()) or self.cut_at is not None:
                self._drain()
                return True
            wait = 1.0
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    return False
                wait = min(wait, 1.0)
            if ended:  # output is over (the pipe stays readable), only the exit status is missing
                chan.status_event.wait(wait)
            else:
                self.poller.poll(wait * 1000)

    def _drain(self) -> None:
        # Both streams share one flow-control window: reading only one of them
        # could stall the other, so always take whatever either has.
        while self.chan.recv_ready():
            self._keep(self.stdout, self.chan.recv(65536))
        while self.chan.recv_stderr_ready():
            self._keep(self.stderr, self.chan.recv_stderr(65536))
        if self._mark is None:
            # Usually the very first bytes; a noisy shell startup file may come first.
            m = _PGID_LINE.search(self.stderr, 0, _MARK_SEARCH_LIMIT)
            if m:
                self.pgid = int(m.group(1))
                self._mark = m.span()

    def _keep(self, stream: bytearray, data: bytes) -> None:
        """``data`` added to ``stream`` up to ``max_output`` bytes of both streams; what is past
        it is read (the channel's window must move) and dropped, and ``cut_at`` set."""
        if self.max_output is None:
            stream += data
            return
        room = self.max_output - len(self.stdout) - len(self.stderr)
        if len(data) > room:
            if self.cut_at is None:
                self.cut_at = self.max_output
            data = data[:max(room, 0)]
        stream += data

    def _clean_stderr(self) -> bytes:
        if self._mark is None:
            return bytes(self.stderr)
        start, end = self._mark
        return bytes(self.stderr[:start] + self.stderr[end:])

    def _kill(self) -> None:
        if self.pgid is None:  # the shell has not even started: give it a moment
            end = time.monotonic() + 2.0
            while self.pgid is None and time.monotonic() < end and not self.chan.closed:
                self.poller.poll(100)
                self._drain()
        if self.pgid is None:
            log.warning(
                "%s: command timed out before it reported its pid; cannot kill it: %s",
                self.host,
                self.command,
            )
            return
        script = _KILL_SCRIPT.format(pg=self.pgid, ticks=int(KILL_GRACE * 10))
        try:
            killer = self.transport.open_session(timeout=5.0)
            try:
                killer.exec_command(script)
                killer.status_event.wait(KILL_GRACE + 5.0)
            finally:
                killer.close()
        except (paramiko.SSHException, EOFError, OSError) as e:
            log.warning("%s: could not kill timed-out command %s: %s", self.host, self.command, e)
            return
        why = "timed out" if self.cut_at is None else f"printed more than {self.cut_at:,} bytes"
        log.info("%s: killed a command that %s (process group %d): %s", self.host, why, self.pgid, self.command)


class _KnownHostsPolicy(paramiko.MissingHostKeyPolicy):
    """Judge every host key as OpenSSH does (:func:`knownhosts.check`): a listed key is taken, a
    changed or @revoked one refused whatever the flags, a new one refused, or recorded
    first-come under ``accept_new`` (OpenSSH ``accept-new``). paramiko holds no host keys of its
    own here, so it asks for every key, before any authentication (reviews16 #3: a revoked key
    that a plain line also listed was refused only after the host had received the login)."""

    def __init__(self, spec: HostSpec, known_hosts: Path, accept_new: bool,
                 known: knownhosts.KnownHosts | None = None) -> None:
        self.spec = spec
        self.known_hosts = known_hosts
        self.accept_new = accept_new
        self.known = known or knownhosts.KnownHosts()

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:  # noqa: ARG002 -- paramiko's MissingHostKeyPolicy interface
        found = knownhosts.check(self.known, self.spec.hostname, self.spec.port, key)
        if found.status == "ok":
            return
        _refuse_known(self.spec, self.known_hosts, found, key)  # changed, revoked: never recorded
        if not self.accept_new:
            raise HostKeyError(
                self.spec.name,
                f"unknown host key for {found.name} ({key.get_name()} {key.fingerprint}): not in "
                f"{self.known_hosts} nor {' '.join(knownhosts.SYSTEM_FILES) or 'a system file'}. Check the fingerprint and add it (ssh-keyscan -p {self.spec.port} "
                f"{self.spec.hostname} >> {self.known_hosts}), or pass --accept-new-host-keys "
                "to record keys of hosts seen for the first time",
            )
        if _record_host_key(self.spec, self.known_hosts, key):
            log.warning("%s: recorded new host key for %s (%s %s) in %s", self.spec.name, found.name,
                        key.get_name(), key.fingerprint, self.known_hosts)


def _ordered_transport(known: knownhosts.KnownHosts, name: str) -> Callable[..., paramiko.Transport]:
    """A Transport that asks first for the host key types known_hosts lists for ``name``
    (:func:`knownhosts.key_order`; paramiko did so from its own HostKeys, which it is not given)."""
    def make(sock: Any, /, **kwargs: Any) -> paramiko.Transport:
        transport = paramiko.Transport(sock, **kwargs)
        options = transport.get_security_options()
        options.key_types = knownhosts.key_order(known, name, list(options.key_types))
        return transport
    return make


def _record_host_key(spec: HostSpec, path: Path, key: paramiko.PKey) -> bool:
    """Append the host's key to known_hosts, unless a racing writer already did (False then)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Threads of one fan-out and other sncheck processes may append at once.
    with _KNOWN_HOSTS_LOCK, open(path, "ab+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        found = knownhosts.check(knownhosts.load(path), spec.hostname, spec.port, key)
        if found.status == "ok":
            return False
        _refuse_known(spec, path, found, key)  # another key written for it meanwhile: changed
        size = f.seek(0, os.SEEK_END)
        if size:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                f.write(b"\n")
        f.write(f"{found.name} {key.get_name()} {key.get_base64()}\n".encode())
    return True


def _refuse_known(spec: HostSpec, known_hosts: Path, found: knownhosts.Found, key: paramiko.PKey) -> None:
    """A HostKeyError naming the line for a key that is @revoked or CHANGED; else nothing."""
    offered = f"{key.get_name()} {key.fingerprint}"
    if found.status == "revoked":
        raise HostKeyError(spec.name, f"host key for {found.name} ({offered}) is marked @revoked in "
                                      f"{found.revoked_path or known_hosts}:{found.revoked_line}: it is never accepted")
    if found.status != "changed" or found.line is None:
        return
    line = found.line
    known_hosts = Path(line.path or known_hosts)  # the file that lists it: the user's or the system's
    if line.patterns.startswith("|") or line.patterns.lower() == found.name.lower():
        fix = f"remove the old key (ssh-keygen -R '{found.name}' -f {known_hosts})"
    else:  # a pattern or a list: ssh-keygen -R would drop the line for every host it names
        fix = f"correct line {line.number}, whose host field '{line.patterns}' names other hosts too,"
    raise HostKeyError(spec.name, (
        f"host key for {found.name} has CHANGED: {known_hosts}:{line.number} lists {line.key.get_name()} "
        f"{line.key.fingerprint} for it, the host offered {offered}. Someone may be intercepting the "
        f"connection, or the host was reinstalled. If the change is expected, {fix} and connect again. "
        "A changed key is never accepted automatically"
    ))


def _discard(client: paramiko.SSHClient, sock: socket.socket | paramiko.Channel) -> None:
    client.close()
    sock.close()


def _handshake_done(client: paramiko.SSHClient) -> bool:
    t = client.get_transport()
    return t is not None and t.host_key is not None


def _where(spec: HostSpec) -> str:
    return f"{spec.hostname}:{spec.port}"
