"""Real OpenSSH servers on loopback addresses, for tests ("mocked hosts": real SSH, fake tools).

Each host gets its own address 127.0.1.N, a free port, a temporary directory
with its sshd_config, host key, log and pid file, and a ``bin`` directory that
``SetEnv PATH=...`` puts first on the PATH of every session, so a fake
``nvidia-smi`` placed there with :func:`install_fake_tool` is what the host runs.

    with SshdCluster(3, tmp_path) as cluster:
        conn = cluster.connection("node1")       # a sncheck Connection
        install_fake_tool(cluster["node2"], "nvidia-smi", "#!/bin/sh\\necho fake\\n")
        cluster["node3"].kill()                   # the host goes down mid-test

Not a conftest: fixtures and test modules import it. The pytest fixture
``sshd_cluster`` in ``tests/conftest.py`` wraps it and always stops the servers.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sncheck.transport import Connection, HostSpec, resolve_host

SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
SETPRIV = shutil.which("setpriv")  # util-linux
START_TIMEOUT = 10.0


def sshd_unavailable_reason() -> str | None:
    """Why real-sshd tests cannot run here, or None when they can."""
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} not found (install openssh-server)"
    if not os.access(SSH_KEYGEN, os.X_OK):
        return "ssh-keygen not found (install openssh-client)"
    if os.geteuid() == 0:
        try:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        except OSError as e:
            return f"cannot create /run/sshd: {e}"
    return None


@dataclass
class SshdHost:
    """One running sshd.

    ``kill()`` takes the host down, its live sessions too; ``restart()`` brings it back.
    """

    name: str
    address: str
    port: int
    user: str
    directory: Path
    client_key: Path
    host_key_pub: str = ""  # "ssh-ed25519 AAAA... name", the public host key line
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def bin_dir(self) -> Path:
        return self.directory / "bin"

    @property
    def config_path(self) -> Path:
        return self.directory / "sshd_config"

    @property
    def log_path(self) -> Path:
        return self.directory / "sshd.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    @property
    def known_hosts_line(self) -> str:
        key_type, key_b64 = self.host_key_pub.split()[:2]
        return f"{known_hosts_name(self.address, self.port)} {key_type} {key_b64}"

    def spec(self) -> HostSpec:
        return HostSpec(self.name, self.address, self.port, self.user, (str(self.client_key),))

    def start(self) -> None:
        if self.pid is not None:
            return
        self.launch()
        _wait_listening(self)

    def launch(self) -> None:
        """Start sshd without waiting for it to listen (a cluster starts all, then waits)."""
        argv = [SSHD, "-D", "-f", str(self.config_path), "-E", str(self.log_path)]
        self.proc = subprocess.Popen(
            _with_parent_death_signal(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill(self, tree: dict[int, list[int]] | None = None) -> None:
        """Stop the server and every session it serves, like a host that went down.
        ``tree`` (parent pid -> children, read after this sshd was frozen): a cluster
        stopping all its hosts reads /proc once."""
        if self.proc is None:
            return
        # Freeze the listener first so that it forks no new session while we
        # collect its descendants (once it is dead they are re-parented away).
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGSTOP)
        for pid in [self.proc.pid, *descendants(self.proc.pid, tree)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=5)
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def regenerate_host_key(self) -> None:
        """Give the host a new host key (a reinstalled host), restarting sshd if it ran."""
        running = self.pid is not None
        self.kill()
        key = self.directory / "ssh_host_ed25519_key"
        for p in (key, key.with_suffix(".pub")):
            p.unlink(missing_ok=True)
        self.host_key_pub = _keygen(key, self.name)
        if running:
            self.start()


def known_hosts_name(address: str, port: int) -> str:
    """How OpenSSH (and paramiko) name a host in known_hosts."""
    return address if port == 22 else f"[{address}]:{port}"


def install_fake_tool(host: SshdHost, name: str, script_text: str) -> Path:
    """Put an executable ``name`` first on ``host``'s remote PATH."""
    path = host.bin_dir / name
    path.write_text(script_text)
    path.chmod(0o755)
    return path


class SshdCluster:
    """``n`` sshd servers on 127.0.1.1, 127.0.1.2, ... with a shared client key.

    Also writes ``known_hosts`` (every host key), ``ssh_config`` (``Host <name>``
    blocks with HostName, Port, User and IdentityFile) and ``client_key``.
    Use as a context manager, or call ``start()`` and ``stop()``; ``stop()`` is
    idempotent and kills every sshd even when some fail.
    """

    def __init__(self, n: int, tmp_path: Path, names: Sequence[str] | None = None) -> None:
        reason = sshd_unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        names = list(names) if names is not None else [f"node{i + 1}" for i in range(n)]
        if len(names) != n or len(set(names)) != n:
            raise ValueError(f"need {n} distinct names, got {names!r}")
        if n > 254 * 254:
            raise ValueError("too many hosts")
        self.root = Path(tmp_path) / "sshd-cluster"
        self.root.mkdir(parents=True, exist_ok=True)
        self.client_key = self.root / "client_key"
        self.known_hosts = self.root / "known_hosts"
        self.ssh_config = self.root / "ssh_config"
        self.user = getpass.getuser()
        self.hosts: dict[str, SshdHost] = {}
        for i, name in enumerate(names):
            address = f"127.0.{1 + i // 254}.{1 + i % 254}"
            self.hosts[name] = SshdHost(name, address, 0, self.user, self.root / name, self.client_key)

    # -- lifecycle -------------------------------------------------------
    def start(self) -> SshdCluster:
        try:
            if not self.client_key.exists():
                _keygen(self.client_key, "sncheck-test-client")
            _prepare_all(list(self.hosts.values()))
            _start_all_on_free_ports(list(self.hosts.values()))
            self.write_known_hosts()
            self.write_ssh_config()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        errors = []
        for host in self.hosts.values():  # freeze every listener, then read /proc once
            if host.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(host.proc.pid, signal.SIGSTOP)
        tree = process_tree()
        for host in self.hosts.values():
            try:
                host.kill(tree)
            except Exception as e:  # keep stopping the others; report at the end
                errors.append(f"{host.name}: {e!r}")
        if errors:
            raise RuntimeError("could not stop sshd: " + "; ".join(errors))

    def __enter__(self) -> SshdCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- access ----------------------------------------------------------
    def __getitem__(self, name: str) -> SshdHost:
        return self.hosts[name]

    def __iter__(self) -> Iterator[SshdHost]:
        return iter(self.hosts.values())

    def __len__(self) -> int:
        return len(self.hosts)

    @property
    def names(self) -> list[str]:
        return list(self.hosts)

    def specs(self) -> list[HostSpec]:
        return [h.spec() for h in self]

    def resolve(self, name: str, **overrides: Any) -> HostSpec:
        """Resolve ``name`` through this cluster's ssh_config, as the inventory would."""
        return resolve_host(name, overrides, config=self.ssh_config)

    def connection(self, name: str, **options: Any) -> Connection:
        """A Connection to ``name`` that trusts this cluster's known_hosts."""
        options.setdefault("known_hosts", self.known_hosts)
        options.setdefault("connect_timeout", 5.0)
        return Connection(self.hosts[name].spec(), **options)

    def write_known_hosts(self) -> Path:
        self.known_hosts.write_text("".join(h.known_hosts_line + "\n" for h in self))
        return self.known_hosts

    def write_ssh_config(self) -> Path:
        blocks = [
            f"Host {h.name}\n  HostName {h.address}\n  Port {h.port}\n  User {h.user}\n"
            f"  IdentityFile {h.client_key}\n  UserKnownHostsFile {self.known_hosts}\n"
            for h in self
        ]
        self.ssh_config.write_text("\n".join(blocks))
        return self.ssh_config


# -- internals -------------------------------------------------------------


def _keygen(path: Path, comment: str) -> str:
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    return path.with_suffix(".pub").read_text().strip()


def _prepare_all(hosts: Sequence[SshdHost]) -> None:
    """Directories and host keys; the missing keys are made by ssh-keygens run at once."""
    making = []
    for host in hosts:
        host.directory.mkdir(parents=True, exist_ok=True)
        host.bin_dir.mkdir(exist_ok=True)
        key = host.directory / "ssh_host_ed25519_key"
        if not key.exists():
            argv = [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", host.name, "-f", str(key)]
            making.append((argv, subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                  stderr=subprocess.PIPE)))
    for argv, proc in making:
        out, err = proc.communicate()
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, argv, out, err)
    for host in hosts:
        host.host_key_pub = (host.directory / "ssh_host_ed25519_key.pub").read_text().strip()


def _write_config(host: SshdHost, authorized_keys: Path) -> None:
    path = f"{host.bin_dir}:/usr/local/bin:/usr/bin:/bin"
    # SHLVL=1: Debian's bash sources ~/.bashrc for commands run by sshd when it
    # is the top-level shell. A developer's .bashrc (pyenv, cargo, ...) would put
    # its own directories before the fake tools and cost ~100 ms per command.
    host.config_path.write_text(
        f"""\
ListenAddress {host.address}:{host.port}
HostKey {host.directory / "ssh_host_ed25519_key"}
PidFile {host.directory / "sshd.pid"}
AuthorizedKeysFile {authorized_keys}
UsePAM no
StrictModes no
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AllowTcpForwarding yes
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
MaxStartups 200
MaxSessions 50
LogLevel VERBOSE
SetEnv PATH={path} SNCHECK_TEST_HOST={host.name} SHLVL=1
"""
    )


def _start_all_on_free_ports(hosts: Sequence[SshdHost], tries: int = 5) -> None:
    # Every sshd is started, then each is waited for: 128 hosts start in about the time
    # of one. The free port is found by binding port 0 and letting go: another process
    # may take it in between, so a host whose sshd cannot bind tries again with a new one.
    pending = [h for h in hosts if h.pid is None]
    for attempt in range(tries):
        for host in pending:
            host.port = _free_port(host.address)
            _write_config(host, host.client_key.with_suffix(".pub"))
            host.launch()
        failed = []
        for host in pending:
            try:
                _wait_listening(host)
            except RuntimeError:
                if attempt == tries - 1:
                    raise
                failed.append(host)
        pending = failed
        if not pending:
            return


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _wait_listening(host: SshdHost) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert host.proc is not None
        if host.proc.poll() is not None:
            log = host.log_path.read_text(errors="replace") if host.log_path.exists() else ""
            host.proc = None
            raise RuntimeError(f"sshd for {host.name} exited at start:\n{log[-2000:]}")
        with socket.socket() as s:
            s.settimeout(0.5)
            try:
                s.connect((host.address, host.port))
                if s.recv(4).startswith(b"SSH-"):
                    return
            except OSError:
                pass
        time.sleep(0.01)
    host.kill()
    raise RuntimeError(f"sshd for {host.name} did not accept connections within {START_TIMEOUT}s")


def descendants(root: int, tree: dict[int, list[int]] | None = None) -> list[int]:
    """All processes below ``root`` (sshd's per-connection children sit in their own sessions)."""
    children = process_tree() if tree is None else tree
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def process_tree() -> dict[int, list[int]]:
    """Parent pid -> its children's pids, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _with_parent_death_signal(argv: list[str]) -> list[str]:
    # If the test process dies hard (SIGKILL), take sshd with it rather than
    # leave it listening. PR_SET_PDEATHSIG fires when the *thread* that started
    # sshd exits, hence only when starting from the main thread.
    if SETPRIV and threading.current_thread() is threading.main_thread():
        return [SETPRIV, "--pdeathsig", "TERM", "--", *argv]
    return argv
