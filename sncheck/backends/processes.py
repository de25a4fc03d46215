"""The local backend's processes: rendezvous ports, one worker process per rank (forked by
a server that imports torch once, or started with ``python -m``), and the rows file rank 0
appends to, read as it grows. :mod:`sncheck.backends.local` drives them."""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

from sncheck.errors import HarnessError
from sncheck.rows import JsonLines

_PORT_LOCK = threading.Lock()
_PORTS_HELD: set[int] = set()
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class PortInUse(Exception):
    """Rank 0 could not bind the rendezvous port (someone took it after we chose it)."""


# --------------------------------------------------------------------------- ports

def reserve_port() -> int:
    """A free TCP port on 127.0.0.1, never one this process has handed out and not released."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with _PORT_LOCK:
            if port not in _PORTS_HELD:
                _PORTS_HELD.add(port)
                return port
    raise HarnessError("local backend: found no free TCP port on 127.0.0.1")


def port_taken(text: str) -> bool:
    """Whether a rank's output says its rendezvous port was taken before it could bind it
    (torch's TCPStore: ``EADDRINUSE``, "address already in use", errno 98): a port chosen
    free by the launcher can be taken by any other socket in the seconds before rank 0 binds it."""
    low = text.lower()
    return any(s in low for s in ("address already in use", "eaddrinuse", "errno 98"))


def release_port(port: int) -> None:
    with _PORT_LOCK:
        _PORTS_HELD.discard(port)


# --------------------------------------------------------------------------- workers

class Worker:
    """One rank's process, started in its own session so its whole group can be killed."""

    def __init__(self, rank: int, card: str, log_path: Path) -> None:
        self.rank, self.card, self.log_path = rank, card, log_path
        self.pid: int | None = None

    def exitcode(self) -> int | None:
        raise NotImplementedError

    def _reap(self, timeout: float) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        if self.pid is None or self.exitcode() is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            # not (yet) a group leader: it has not reached setsid; kill the process itself
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def wait(self, timeout: float) -> None:
        self._reap(timeout)

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        tail = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        return " | ".join(tail[-lines:])


class ServedWorker(Worker):
    def __init__(self, rank: int, card: str, log_path: Path, server: "ForkServer", pid: int) -> None:
        super().__init__(rank, card, log_path)
        self.server, self.pid, self.served = server, pid, pid

    def exitcode(self) -> int | None:
        return self.server.exitcode(self.served)

    def _reap(self, timeout: float) -> None:
        self.server.wait(self.served, timeout)


class SubprocessWorker(Worker):
    def __init__(self, rank: int, card: str, log_path: Path, argv: list[str], env: dict) -> None:
        super().__init__(rank, card, log_path)
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid

    def exitcode(self) -> int | None:
        return self.proc.poll()

    def _reap(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


def package_env() -> dict[str, str]:
    """This environment with our sncheck first on PYTHONPATH, installed or not."""
    path = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


class ForkServer:
    """Parent side of the probe's fork server (``python -m sncheck.worker.torchdist --serve``).

    Importing torch takes seconds; N ranks importing it at once on a small machine take
    N times that. The server imports it once and forks a rank per request. Unlike
    multiprocessing's forkserver it does not re-run the caller's ``__main__`` in each
    child. One server per process, shared by all backends; a reader thread collects
    its replies (started pids, exit codes).
    """

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sncheck.worker.lifeline", "--serve"],  # dies with us
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=package_env(), start_new_session=True)
        if self.proc.stdin is None or self.proc.stdout is None:  # asked for as PIPE: Popen always makes them
            raise HarnessError("local backend: the worker fork server started without its pipes")
        self._requests: IO[bytes] = self.proc.stdin
        self._replies: IO[bytes] = self.proc.stdout
        self._cond = threading.Condition()
        self._started: dict[int, int] = {}  # request id -> pid
        self._codes: dict[int, int] = {}    # pid -> exit code
        self._next_id = 0
        self.alive = True
        threading.Thread(target=self._read, name="sncheck-forkserver", daemon=True).start()

    def _read(self) -> None:
        for line in self._replies:
            msg = json.loads(line)
            with self._cond:
                if "code" in msg:
                    self._codes[msg["pid"]] = msg["code"]
                else:
                    self._codes.pop(msg["pid"], None)  # a reused pid's old exit
                    self._started[msg["id"]] = msg["pid"]
                self._cond.notify_all()
        with self._cond:
            self.alive = False
            self._cond.notify_all()

    def fork(self, job: Path, out: Path, env: dict[str, str], log: Path, timeout: float) -> int:
        with self._cond:
            rid, self._next_id = self._next_id, self._next_id + 1
            req = {"id": rid, "job": str(job), "out": str(out), "env": env, "log": str(log)}
            try:
                self._requests.write((json.dumps(req) + "\n").encode())
                self._requests.flush()
            except OSError:
                self.alive = False
            self._cond.wait_for(lambda: rid in self._started or not self.alive, timeout)
            if rid in self._started:
                return self._started.pop(rid)
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip().splitlines()[-3:]
        raise HarnessError("local backend: the worker fork server "
                           + ("exited" if not self.alive else f"did not answer in {timeout:.0f} s")
                           + (f": {' | '.join(tail)}" if tail else ""))

    def exitcode(self, pid: int) -> int | None:
        with self._cond:
            if pid in self._codes or self.alive:
                return self._codes.get(pid)
        # the server is gone (it kills its ranks when it goes): alive means orphaned
        return None if pid_alive(pid) else 255

    def wait(self, pid: int, timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: pid in self._codes or not self.alive, timeout)

    def stop(self) -> None:
        try:
            self._requests.close()  # end of requests: the server kills its ranks and exits
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


_SERVER: ForkServer | None = None
_SERVER_LOCK = threading.Lock()


def fork_server() -> ForkServer:
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None or not _SERVER.alive:
            if _SERVER is None:
                atexit.register(stop_fork_server)
            _SERVER = ForkServer()
        return _SERVER


def running_fork_server() -> ForkServer | None:
    """The fork server when one is up (its pid is sncheck's own CPU), else None."""
    return _SERVER if _SERVER is not None and _SERVER.alive else None


def stop_fork_server() -> None:
    with _SERVER_LOCK:
        if _SERVER is not None:
            _SERVER.stop()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def exit_cause(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def loopback_ifname() -> str | None:
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((n for n in ("lo", "lo0") if n in names), None)


# --------------------------------------------------------------------------- tail

class RowTail:
    """New complete lines of a file that another process appends to (:class:`JsonLines`).

    The file may be on a directory others write (the Slurm backend's shared directory, where
    every node's tasks write): each look opens what is there without blocking and without
    following a link, refuses anything but a regular file (a FIFO planted before rank 0 made the
    file blocked the look for ever; a link to /dev/zero read without end, one to another file
    read its lines as rows; hostile round 25, H25-08), and reads at most :data:`LOOK_BYTES` (the
    rest on the next look)."""

    LOOK_BYTES = 64 << 20

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.split = path, 0, JsonLines()

    def lines(self) -> list[dict | str]:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return []
        except OSError as e:  # ELOOP: a symbolic link where the rows file must be
            raise HarnessError(f"{self.path}: the rows file cannot be read as one: {e.strerror or e} "
                               "(a link or other non-file planted where the job writes its rows)") from e
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise HarnessError(f"{self.path}: the rows file is no regular file (a FIFO, device or socket "
                                   "planted where the job writes its rows)")
            f.seek(self.offset)
            data = f.read(self.LOOK_BYTES)
        self.offset += len(data)
        return self.split.feed(data)
