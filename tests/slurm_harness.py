"""A real Slurm cluster on loopback, for tests: munged, one slurmctld and N ``slurmd -N nodeK``.

Everything lives in one temporary directory: the munge key and socket, ``slurm.conf``
(``SLURM_CONF`` points the client commands at it), ``gres.conf``, ``topology.conf``,
the controller's state, and per node (``%n``) a spool directory, pid file and log.
Every daemon binds a free port on 127.0.0.1 (each slurmd its own ``Port=``), never a
fixed one. No cgroups: ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``.

    with SlurmCluster(tmp_path, nodes=4) as cluster:
        cluster.run(["srun", "-N4", "hostname"])          # SLURM_CONF set for you
        cluster.node_state("node3")                        # "idle", "drained", ...
        cluster.kill_node("node2")                         # slurmd and its steps go away

Not a conftest: ``tests/conftest.py`` wraps it in the session fixture ``slurm_cluster``
and always stops the daemons by pid. :func:`slurm_unavailable_reason` says why the
cluster cannot start here (no packages, not root), and tests are skipped with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sshd_harness import _with_parent_death_signal, descendants

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
CLIENTS = ("sinfo", "scontrol", "srun")
START_TIMEOUT = 60.0


def slurm_unavailable_reason() -> str | None:
    """Why a loopback Slurm cluster cannot start here, or None when it can."""
    for exe in (MUNGED, SLURMCTLD, SLURMD):
        if not os.access(exe, os.X_OK):
            return f"{exe} not found (scripts/setup.sh installs slurmctld, slurmd, slurm-client, munge)"
    for tool in CLIENTS:
        if shutil.which(tool) is None:
            return f"{tool} not on PATH (install slurm-client)"
    if os.geteuid() != 0:
        return "slurmd must run as root to start job steps and health checks"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SlurmCluster:
    """``nodes`` slurmd daemons named node1..nodeN, ``cards`` GPUs (GRES, no device files) each.

    ``switches`` groups nodes under leaf switches in topology.conf (tree topology);
    ``health_check`` sets ``HealthCheckProgram`` (run every ``health_interval`` s): a path,
    or a script text (starting ``#!``) written to ``<root>/healthcheck.sh`` with ``{root}``
    and ``{conf}`` filled in. slurmd runs it with only ``SLURMD_NODENAME`` in its
    environment, so the script sets PATH itself (``bin_dir(node)`` holds per-node fake tools).
    ``node_env`` adds environment variables per node's slurmd.
    """

    def __init__(
        self,
        tmp_path: Path,
        nodes: int = 4,
        cards: int = 4,
        switches: Mapping[str, Sequence[str]] | None = None,
        health_check: str | None = None,
        health_interval: int = 5,
        node_env: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        reason = slurm_unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        self.root = Path(tmp_path) / "slurm-cluster"
        self.names = [f"node{i + 1}" for i in range(nodes)]
        self.cards = cards
        half = (nodes + 1) // 2
        self.switches = dict(switches) if switches is not None else {
            "leaf0": self.names[:half], "leaf1": self.names[half:]}
        self.health_check = health_check
        self.health_interval = health_interval
        self.node_env = {k: dict(v) for k, v in (node_env or {}).items()}
        self.hostname = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.socket"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}

    # -- environment -------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """os.environ plus SLURM_CONF: what a client command (sinfo, srun) needs."""
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf)
        for key in [k for k in env if k.startswith(("SLURM_JOB", "SLURM_STEP", "SLURM_NODE", "SLURM_PROCID"))]:
            del env[key]  # never inherit a surrounding job's identity
        return env

    def bin_dir(self, name: str) -> Path:
        """A directory for node ``name``'s fake tools (a health-check script puts it on PATH)."""
        d = self.root / "bin" / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def run(self, argv: Sequence[str], timeout: float = 60.0, check: bool = False,
            **kw: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=kw.pop("env", self.env), capture_output=True, text=True,  # type: ignore[arg-type]
                              timeout=timeout, check=check, stdin=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> SlurmCluster:
        try:
            self._prepare()
            self._start_munge()
            self._start_ctld()
            for name in self.names:
                self._start_slurmd(name)
            # A health check may drain a node as soon as its slurmd starts.
            self.wait_idle(states=("idle", "drained", "draining") if self.health_check else ("idle",))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        errors = []
        # Steps first (slurmstepd detaches from slurmd), then slurmd, the controller, munge.
        for name in self.names:
            for pid in self._stepd_pids(name):
                for p in [pid, *descendants(pid)]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p, signal.SIGKILL)
        for key in [*(n for n in self.names if n in self.procs), "slurmctld", "munged"]:
            proc = self.procs.pop(key, None)
            if proc is None:
                continue
            try:
                _kill_tree(proc)
            except Exception as e:  # keep stopping the others; report at the end
                errors.append(f"{key}: {e!r}")
        if errors:
            raise RuntimeError("could not stop Slurm: " + "; ".join(errors))

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def kill_node(self, name: str) -> None:
        """Take the node down hard: its slurmd and every step it runs (slurmstepd + tasks)."""
        proc = self.procs.pop(name, None)
        if proc is not None:
            _kill_tree(proc)
        for pid in self._stepd_pids(name):
            for p in [pid, *descendants(pid)]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)

    def restart_node(self, name: str) -> None:
        self.kill_node(name)
        self._start_slurmd(name)

    # -- queries -----------------------------------------------------------
    def node_state(self, name: str) -> str:
        """sinfo's long state of one node, lower case, without the trailing flags (* ~ #)."""
        out = self.run(["sinfo", "-h", "-N", "-n", name, "-o", "%T"], check=True).stdout.split()
        return out[0].rstrip("*~#!%$@^-").lower() if out else ""

    def node_reason(self, name: str) -> str:
        out = self.run(["sinfo", "-h", "-N", "-n", name, "-o", "%E"], check=True).stdout.strip()
        return "" if out in ("none", "(null)") else out.splitlines()[0] if out else ""

    def wait_idle(self, names: Sequence[str] | None = None, timeout: float = START_TIMEOUT,
                  states: Sequence[str] = ("idle",)) -> None:
        names = list(names or self.names)
        want = tuple(states)
        deadline = time.monotonic() + timeout
        seen: dict[str, str] = {}
        while time.monotonic() < deadline:
            self._check_alive()
            res = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=15)
            if res.returncode == 0:
                seen = dict(line.split()[:2] for line in res.stdout.splitlines() if len(line.split()) >= 2)
                if all(seen.get(n, "").rstrip("*~#") in want for n in names):
                    return
                if any(seen.get(n, "").startswith("inval") for n in names):
                    break  # a configuration the controller refuses: waiting will not help
            time.sleep(0.3)
        raise RuntimeError(f"Slurm nodes not idle within {timeout:.0f}s: {seen}\n{self.logs_tail()}")

    def wait_state(self, name: str, want: Sequence[str], timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = self.node_state(name)
            if state in want:
                return state
            time.sleep(0.3)
        raise AssertionError(f"{name} stayed {state!r}, wanted one of {list(want)}")

    def logs_tail(self, chars: int = 1500) -> str:
        out = []
        for log in sorted(self.root.glob("*.log")):
            out.append(f"--- {log.name}\n{log.read_text(errors='replace')[-chars:]}")
        return "\n".join(out)

    # -- internals ---------------------------------------------------------
    def _prepare(self) -> None:
        for d in ("munge", "state", *(f"spool/{n}" for n in self.names)):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o700)
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o400)
        self.ports = {"slurmctld": free_port(), **{n: free_port() for n in self.names}}
        self._write_conf()

    def _write_conf(self) -> None:
        r = self.root
        if self.health_check and self.health_check.startswith("#!"):
            script = r / "healthcheck.sh"
            script.write_text(self.health_check.format(root=r, conf=self.conf))
            script.chmod(0o755)
            self.health_check = str(script)
        nodes = "\n".join(
            f"NodeName={n} NodeHostname={self.hostname} NodeAddr=127.0.0.1 Port={self.ports[n]} "
            f"CPUs=4 RealMemory=1000 "
            f"{f'Gres=gpu:{self.cards} ' if self.cards else ''}State=UNKNOWN" for n in self.names)
        health = (f"HealthCheckProgram={self.health_check}\nHealthCheckInterval={self.health_interval}\n"
                  "HealthCheckNodeState=ANY\n" if self.health_check else "")
        self.conf.write_text(f"""\
ClusterName=sncheck-test
SlurmctldHost={self.hostname}(127.0.0.1)
SlurmctldPort={self.ports['slurmctld']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool' / '%n'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'spool' / '%n.pid'}
SlurmctldLogFile={r / 'slurmctld.log'}
SlurmdLogFile={r / 'slurmd-%n.log'}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
TopologyPlugin=topology/tree
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=2
MessageTimeout=10
{health}{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        # gres/gpu drops file-less GPUs, so each node gets stand-in device files
        # (plain files: nothing constrains devices here, Slurm only numbers them).
        gres = []
        for n in self.names:
            dev = r / "dev" / n
            dev.mkdir(parents=True, exist_ok=True)
            for i in range(self.cards):
                (dev / f"nvidia{i}").touch()
            if self.cards:
                gres.append(f"NodeName={n} Name=gpu File={dev}/nvidia[0-{self.cards - 1}]\n")
        (r / "gres.conf").write_text("".join(gres))
        lines = [f"SwitchName={sw} Nodes={','.join(ns)}\n" for sw, ns in self.switches.items() if ns]
        lines.append(f"SwitchName=spine Switches={','.join(sw for sw, ns in self.switches.items() if ns)}\n")
        (r / "topology.conf").write_text("".join(lines))

    def _spawn(self, key: str, argv: list[str], env: Mapping[str, str] | None = None) -> None:
        log = open(self.root / f"{key}.stderr", "ab")  # noqa: SIM115 (the child owns it)
        try:
            self.procs[key] = subprocess.Popen(
                _with_parent_death_signal(argv), env=dict(env or self.env), stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()

    def _start_munge(self) -> None:
        m = self.root / "munge"
        self._spawn("munged", [MUNGED, "-F", "-f", f"--socket={self.munge_socket}",
                               f"--key-file={m / 'munge.key'}", f"--pid-file={m / 'munged.pid'}",
                               f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"])
        self._wait(lambda: self.munge_socket.exists(), "munged", 10)

    def _start_ctld(self) -> None:
        self._spawn("slurmctld", [SLURMCTLD, "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self.run(["scontrol", "ping"], timeout=10).stdout.count("UP") > 0,
                   "slurmctld", 30)

    def _start_slurmd(self, name: str) -> None:
        env = self.env | self.node_env.get(name, {})
        self._spawn(name, [SLURMD, "-D", "-N", name, "-f", str(self.conf)], env)

    def _wait(self, ready: object, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if ready():  # type: ignore[operator]
                return
            time.sleep(0.1)
        raise RuntimeError(f"{what} did not come up within {timeout}s\n{self.logs_tail()}")

    def _check_alive(self) -> None:
        for key, proc in self.procs.items():
            if proc.poll() is not None:
                err = (self.root / f"{key}.stderr")
                text = err.read_text(errors="replace")[-1500:] if err.exists() else ""
                raise RuntimeError(f"{key} exited with {proc.returncode} at start:\n{text}\n{self.logs_tail()}")

    def _stepd_pids(self, name: str) -> list[int]:
        """This cluster's slurmstepd processes of node ``name``. slurmstepd detaches from
        slurmd and clears its environment; it keeps its node's log open, so it is found by
        that open file (``<root>/slurmd-<name>.log``): another cluster's node1 is not ours."""
        log = str(self.root / f"slurmd-{name}.log")
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if Path(f"/proc/{entry}/comm").read_text().strip() != "slurmstepd":
                    continue
                fds = os.listdir(f"/proc/{entry}/fd")
                targets = {os.readlink(f"/proc/{entry}/fd/{fd}") for fd in fds}
            except OSError:
                continue
            if any(t == log or t.startswith(log + " ") for t in targets):
                found.append(int(entry))
        return found


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGSTOP)
    for pid in [proc.pid, *descendants(proc.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=10)


@contextlib.contextmanager
def running_cluster(tmp_path: Path, **kw: object) -> Iterator[SlurmCluster]:
    cluster = SlurmCluster(tmp_path, **kw)  # type: ignore[arg-type]
    try:
        yield cluster.start()
    finally:
        cluster.stop()
