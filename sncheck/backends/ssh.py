"""The SSH backend: real hosts through paramiko, real tools, existing launchers.

* ``host_facts``: on every host at once (at most ``forks``), the fact commands of the
  host's platform, from its vendor plug-in (:mod:`sncheck.vendors.registry`; NVIDIA's
  default list when the inventory names no platform), checked by the plug-in's pure
  functions; a command whose output says "not ready yet" (NVL72 fabric In Progress) is
  read again for the platform's ``fabric_retry_s`` (option ``fabric_retry_s``), judged
  as on every backend (:mod:`sncheck.vendors.hostjudge`): devices named, and per
  supernode the vendor's ``domain_check`` over a fresh read of all its hosts (NVL72: one
  (ClusterUUID, CliqueId) per rack). A host that cannot be reached gives one
  ``reachable`` row with status ``unreachable`` and the cause.
* ``p2p`` and ``golden`` (and ``collectives`` without nccl-tests): the torch probe
  :mod:`sncheck.worker.torchdist` under ``torchrun`` on every host, static rendezvous
  on the first host's address and a port free there. The job JSON (the local
  backend's format) is written to a private directory on each host over SSH; rank 0
  appends rows to a file on the first host, which is read back while the job runs.
* ``collectives`` with nccl-tests (``launcher.nccl_tests_dir`` set, or
  ``all_reduce_perf`` on the first host's PATH): per group and collective, one
  nccl-tests run through ``mpirun`` or ``srun`` (the inventory's ``launcher``),
  started on the first host; see :mod:`sncheck.launch.commands` for the lines.

Hosts found unreachable are not tried again by the measuring layers of the same run:
each reports them (``not_run``, status ``unreachable``) and runs without them, or not
at all when fewer than two hosts remain. ``host_facts`` always tries again (it is how
a confirmation retest asks whether a host is back). Remote hosts need ``python3`` with ``torch``
and ``sncheck`` importable for the torch probe; a host without them gives a
``not_run`` row naming the missing module.

Options (keyword arguments; the CLI passes the first four):

``forks``                hosts worked on at once (default: inventory ``ssh.forks``)
``ssh_config``           ssh config file (default ``~/.ssh/config`` when it exists)
``known_hosts``          default: inventory ``ssh.known_hosts``, else ``~/.ssh/known_hosts``
``accept_new_host_keys`` record keys of hosts seen for the first time
``connect_timeout``, ``command_timeout``  default: the inventory's ``ssh`` section
``dist_backend``         ``gloo`` | ``nccl`` | ``hccl`` | None (the probe takes the vendor's device:
                         nccl where CUDA is; an Ascend platform's npu+hccl through torch_npu)
``python``               the remote interpreter (``python3``)
``job_timeout_s``        longest a torchrun or nccl-tests job may run (3600)
``op_timeout_s``         the probe's per-operation timeout (60)
``retries``, ``backoff`` connect retries (2, after 0.5 s, 1 s)
``act_faults_on_real_hosts``  required for a fault plan: card faults are acted out by the
                         torch probe on the hosts; tool faults (sncheck.config.faultplan.HOST_TOOL_FAULTS)
                         go to each fact command as ``SNCHECK_FAULTS`` (JSON), which real tools
                         ignore and the test doubles replay. Transient faults end before the retest.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sncheck.errors import ConfigError, HarnessError, ParseError, TransportError
from sncheck.config.faultplan import HOST_TOOL_FAULTS
from sncheck.config.inventory import DIST_BACKENDS
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, Round, StressPlan
from sncheck.launch import commands as launch
from sncheck.launch.job import build_job, cards_of_hosts
from sncheck.vendors import facts as hostfacts
from sncheck.vendors import registry
from sncheck.vendors.nvidia.nccl_tests import parse_nccl_tests
from sncheck.worker.device import DEVICE_MODULES
from sncheck.store.rows import collective_row, host_fact_row, not_run_row, p2p_row
from sncheck.topology import Topology, host_of, link_id, rail_of
from sncheck.transport import Connection, HostTaskError, Result, fan_out, load_ssh_config, resolve_host
from sncheck.backends.base import Backend, Emit
from sncheck.backends.hostreads import KERNEL_LOG_TIMEOUT_S, QUERY_COMMANDS, HostReads

log = logging.getLogger("sncheck.backends.ssh")

KNOWN_OPTIONS = ("forks", "ssh_config", "known_hosts", "accept_new_host_keys", "connect_timeout",
                 "command_timeout", "dist_backend", "python", "job_timeout_s", "op_timeout_s",
                 "retries", "backoff", "poll_s", "fabric_retry_s", "fabric_retry_every_s",
                 "act_faults_on_real_hosts", "state_dir", "sysfs_root")
JOB_LAYER = {"p2p": "connectivity", "collectives": "stress", "golden": "golden"}
PORT_ATTEMPTS = 3
GLOO_P2P_BYTES = 8 << 20
_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?\w*(?:Error|Exception)\b.*$")


def _locked(emit: Emit) -> Emit:
    """``emit`` made safe to call from the fan-out threads."""
    lock = threading.Lock()

    def locked(row: dict) -> None:
        with lock:
            emit(row)

    return locked


def cause_of(result: Result, lines: int = 2) -> str:
    """The telling part of a failed command's output: its last exception line, or its tail."""
    text = result.stderr + "\n" + result.stdout
    found = [ln.strip() for ln in text.splitlines()
             if _ERROR_LINE.match(ln) and "ChildFailedError" not in ln]
    if found:
        return found[-1][:500]
    return " | ".join(ln.strip() for ln in result.tail(lines).splitlines() if ln.strip())[:500] or "no output"


KERNEL_LOG_COMMAND = ("(dmesg --ctime 2>/dev/null || dmesg 2>&1 || echo 'dmesg: not permitted') "
                      "| grep -E 'NVRM|Xid|XID|AER|nvidia|not permitted' | tail -n 200")


class SshBackend(Backend):
    name = "ssh"

    def __init__(self, topo: Topology, faults=None, seed: int = 0, progress=None, **options: Any) -> None:
        super().__init__(topo, faults, seed, progress, **options)
        unknown = sorted(set(options) - set(KNOWN_OPTIONS))
        if unknown:
            raise ConfigError(f"unknown ssh backend option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(KNOWN_OPTIONS)}")
        inv = topo.inventory
        if self.faults and not options.get("act_faults_on_real_hosts"):
            raise ConfigError("a fault plan on the ssh backend acts its faults out on real hosts (slow, "
                              "corrupt and delayed probes); pass --act-faults-on-real-hosts to do that")
        for f in self.faults.unsupported(self.name):
            raise ConfigError(f"the ssh backend cannot act out fault type {f.type!r} (target "
                              f"{f.target}) on real hosts; use the mock backend for it")
        self.forks = int(options.get("forks") or inv.ssh.forks)
        if self.forks < 1:
            raise ConfigError(f"forks must be at least 1, got {self.forks}")
        self.connect_timeout = float(options.get("connect_timeout") or inv.ssh.connect_timeout)
        self.command_timeout = float(options.get("command_timeout") or inv.ssh.command_timeout)
        self.known_hosts = str(options.get("known_hosts") or inv.ssh.known_hosts or "~/.ssh/known_hosts")
        self.accept_new_host_keys = bool(options.get("accept_new_host_keys", False))
        self.dist_backend = options.get("dist_backend") or inv.dist_backend
        if self.dist_backend not in (None, *DIST_BACKENDS):
            raise ConfigError(f"dist_backend must be one of {', '.join(DIST_BACKENDS)}, got {self.dist_backend!r}")
        self.python = str(options.get("python") or "python3")
        self.job_timeout_s = float(options.get("job_timeout_s") or 3600.0)
        self.op_timeout_s = float(options.get("op_timeout_s") or 60.0)
        self.retries = int(options.get("retries", 2))
        self.backoff = float(options.get("backoff", 0.5))
        self.poll_s = float(options.get("poll_s") or 0.5)
        config = load_ssh_config(options.get("ssh_config"))
        defaults = {"user": inv.ssh.user, "port": inv.ssh.port, "identity_file": inv.ssh.identity_file}
        self.specs = {}
        for h in topo.hosts:
            host = inv.hosts[h]
            over = {"address": host.address, "port": host.port, "user": host.user,
                    "identity_file": host.identity_file}
            self.specs[h] = resolve_host(h, over, defaults, config)
        self._conns: dict[str, Connection] = {}
        self._conns_lock = threading.Lock()
        self.down: dict[str, str] = {}  # host -> why it is out of this run
        # the kernel log since the last run, the fabric counters before and after it
        self.reads = HostReads(inv.name, options.get("state_dir"), str(options.get("sysfs_root") or "/sys"))

    def calibrate(self, emit: Emit) -> dict:
        """Nothing: an SSH inventory carries the cluster's design values."""
        return {}

    def plan_defaults(self, layer: str) -> dict:
        if layer == "connectivity" and self.dist_backend == "gloo":
            # gloo moves tensors through host memory and TCP: 64 MiB x every pair is slow
            return {"bw_bytes": GLOO_P2P_BYTES}
        return {}

    # ------------------------------------------------------------------ connections

    def _conn(self, host: str) -> Connection:
        with self._conns_lock:
            if host not in self._conns:
                self._conns[host] = Connection(
                    self.specs[host], connect_timeout=self.connect_timeout, known_hosts=self.known_hosts,
                    accept_new_host_keys=self.accept_new_host_keys, retries=self.retries,
                    backoff=self.backoff)
            return self._conns[host]

    def close(self) -> None:
        self.reads.save()  # the kernel log cursors: the next run reads only what is new
        with self._conns_lock:
            conns, self._conns = list(self._conns.values()), {}
        for c in conns:
            c.close()

    def _mark_down(self, host: str, error: TransportError) -> None:
        self.down.setdefault(host, error.message)

    # ------------------------------------------------------------------ host facts

    def host_facts(self, hosts: tuple[str, ...], emit: Emit) -> None:
        """Read every host at once (at most ``forks``) and judge it with the judgement every
        backend shares (:class:`sncheck.vendors.hostjudge.FactJudge`); then, on each asked
        host, the reads only a real host has (:mod:`sncheck.backends.hostreads`: its IB port
        counters and its kernel log since the last run)."""
        emit = _locked(emit)
        self.fact_judge.read(hosts, lambda todo, reached, lost: self._read_hosts(todo, reached, lost,
                                                                                   set(hosts), emit), emit)

    def _read_hosts(self, todo: tuple[str, ...], reached, lost, asked: set[str], emit: Emit) -> None:
        """The SSH way of reading hosts: connect, then run each fact command over paramiko."""
        judge = self.fact_judge
        connected: set[str] = set()

        def facts(conn: Connection) -> Result:
            started = time.monotonic()
            conn.open()
            connected.add(conn.host)
            reached(conn.host, "ssh", f"connected to {conn.spec}", self._reader(conn))
            if conn.host in asked:
                for row in self._host_reads(conn):
                    emit(row)
            return Result(conn.host, "host facts", "", "", 0, time.monotonic() - started)

        # Every host is tried again here, even one already found down: reading a host's
        # facts is how a confirmation retest asks whether it is back.
        outcome = fan_out([self._conn(h) for h in todo], facts, forks=self.forks)
        for h, r in outcome.items():
            if h in connected and not isinstance(r, TransportError):
                self.down.pop(h, None)
            if isinstance(r, HostTaskError):
                lost(h, host_fact_row(h, "host_facts", None, None, False, status="error", tool="sncheck",
                                      message=f"{h}: host facts stopped by an unexpected error: {r.message}"))
            elif isinstance(r, TransportError):
                self._mark_down(h, r)
                cause = f"connection lost during host facts: {r.message}" if h in connected else r.message
                lost(h, judge.unreachable(h, "ssh", cause))

    def _reader(self, conn: Connection):
        """``run(cmd)`` on ``conn``'s host: the tool faults in effect go to the command in
        SNCHECK_FAULTS (test doubles read it); the raw output is kept for the evidence."""
        h = conn.host
        env = self._tool_fault_env(h)

        def read(cmd: hostfacts.FactCommand) -> Result:
            res = conn.run(list(cmd.argv), env=env, timeout=self.command_timeout)
            self.keep_output(h, cmd.tool, cmd.display, res.stdout, res.stderr, res.exit_code)
            return res

        return read

    def _host_reads(self, conn: Connection, nvlink: bool = False) -> list[dict]:
        """The IB port counters (their first read; ``nvlink``: the NVLink counters too, where
        no host facts read them) and the kernel log since the last run."""
        h, judge = conn.host, self.fact_judge
        expect, checks = judge.expect(h), judge.checks(h)
        return (self.reads.counters(h, expect, judge.commands(h), self._reader(conn), checks, again=False,
                                    nvlink=nvlink)
                + self.reads.kernel(h, expect, self._kernel_run(conn), self.raw_outputs(h), checks))

    def host_reads(self, hosts: tuple[str, ...], emit: Emit) -> bool:
        """The kernel log and the counters' first read on every reachable host at once, for
        a run without host facts. The host's ``nvidia-smi -q`` is read first (kept for the
        evidence, not judged) so that each Xid names its card by bus id."""
        emit = _locked(emit)
        judge = self.fact_judge

        def reads(conn: Connection) -> Result:
            conn.open()
            h, run = conn.host, self._reader(conn)
            listing = [c for c in judge.commands(h) if c.display in QUERY_COMMANDS]
            if listing and not [o for o in self.raw_outputs(h) if o.get("command") in QUERY_COMMANDS]:
                run(listing[0])
            for row in self._host_reads(conn, nvlink=True):
                emit(row)
            return Result(h, "host reads", "", "", 0, 0.0)

        outcome = fan_out([self._conn(h) for h in hosts if h not in self.down], reads, forks=self.forks)
        for h, r in outcome.items():
            if isinstance(r, TransportError):  # what was not read is a failed fact, never a pass
                self._mark_down(h, r)
                emit(host_fact_row(h, "kernel_log", None, None, False, status="unreachable", tool="kernel-log",
                                   message=f"{h}: kernel log and counters not read: {r.message}"))
            elif isinstance(r, HostTaskError):
                emit(host_fact_row(h, "kernel_log", None, None, False, status="error", tool="kernel-log",
                                   message=f"{h}: kernel log and counters not read: {r.message}"))
        return True

    def _kernel_run(self, conn: Connection):
        timeout = min(self.command_timeout, KERNEL_LOG_TIMEOUT_S)
        return lambda cmd: conn.run(list(cmd.argv), timeout=timeout)

    def fabric_counters(self, hosts: tuple[str, ...], emit: Emit) -> None:
        """The counters read again once the traffic is over (HostReads.counters), on every
        reachable host at once."""
        emit = _locked(emit)
        judge = self.fact_judge

        def again(conn: Connection) -> Result:
            h = conn.host
            for row in self.reads.counters(h, judge.expect(h), judge.commands(h), self._reader(conn),
                                           judge.checks(h), again=True):
                emit(row)
            return Result(h, "fabric counters", "", "", 0, 0.0)

        fan_out([self._conn(h) for h in hosts if h not in self.down], again, forks=self.forks)

    def _tool_fault_env(self, host: str) -> dict[str, str] | None:
        """SNCHECK_FAULTS for the host's tools: the tool faults in effect there (test doubles read it)."""
        mine = self.faults.on_host(host, HOST_TOOL_FAULTS, self.transient_ended)
        if not mine:
            return None
        return {"SNCHECK_FAULTS": json.dumps([f.to_dict() for f in mine], separators=(",", ":"))}

    def kernel_log(self, host: str) -> str | None:
        """The last lines of the kernel log that mention the accelerators or PCIe errors.
        Bounded (``tail``); a host that does not let us read it says so in the text. The
        text the host facts read (every host at once) when there is one; else every host
        not read yet is read now, all at once, each bounded by KERNEL_LOG_TIMEOUT_S."""
        if host in self.down:
            return None
        if host not in self.reads.kernel_text:
            self._prefetch_kernel_logs()
        if host in self.reads.kernel_text:
            return self.reads.kernel_text[host]
        try:
            res = self._conn(host).run(["sh", "-c", KERNEL_LOG_COMMAND], timeout=self.command_timeout)
        except Exception as e:  # noqa: BLE001 - evidence is best effort; the finding stands without it
            return f"# kernel log not read: {e}\n"
        head = f"# command: {KERNEL_LOG_COMMAND}\n# exit: {res.exit_code}\n"
        return head + (res.stdout or "") + (f"# stderr: {res.stderr}" if res.stderr else "")

    def _prefetch_kernel_logs(self) -> None:
        todo = [h for h in self.topo.hosts if h not in self.down and h not in self.reads.kernel_text]
        timeout = min(self.command_timeout, KERNEL_LOG_TIMEOUT_S)

        def read(conn: Connection) -> Result:
            try:
                res = conn.run(["sh", "-c", KERNEL_LOG_COMMAND], timeout=timeout)
            except TransportError as e:
                self.reads.kernel_text[conn.host] = f"# kernel log not read: {e}\n"
                raise
            self.reads.kernel_text[conn.host] = (
                f"# command: {KERNEL_LOG_COMMAND}\n# exit: {res.exit_code}\n" + (res.stdout or "")
                + (f"# stderr: {res.stderr}" if res.stderr else "")
                + (f"# timed out after {timeout:g}s\n" if res.timed_out else ""))
            return res

        fan_out([self._conn(h) for h in todo], read, forks=self.forks)

    # ------------------------------------------------------------------ readiness

    def _ready(self, hosts: Sequence[str], layer: str, emit: Emit, argv: list[str], what: str) -> list[str]:
        """Hosts that answered ``argv`` with exit 0; a ``not_run`` row for every other one."""
        todo = []
        for h in hosts:
            if h in self.down:
                emit(not_run_row(layer, h, "host", "unreachable",
                                 f"{h} unreachable: {layer} runs without it ({self.down[h]})"))
            else:
                todo.append(h)
        outcome = fan_out([self._conn(h) for h in todo],
                          lambda c: c.run(argv, timeout=self.command_timeout), forks=self.forks)
        ready = []
        for h in todo:
            r = outcome[h]
            if isinstance(r, HostTaskError):
                emit(not_run_row(layer, h, "host", "error", f"{h}: {r.message}"))
            elif isinstance(r, TransportError):
                self._mark_down(h, r)
                emit(not_run_row(layer, h, "host", "unreachable",
                                 f"{h} unreachable: {layer} runs without it ({r.message})"))
            elif r.timed_out:
                emit(not_run_row(layer, h, "host", "timeout", f"{h}: {what} check timed out: {r.command}"))
            elif r.exit_code == hostfacts.MISSING_EXIT:
                emit(not_run_row(layer, h, "host", "error",
                                 f"{h}: cannot run {layer}: {argv[0]} not found on the PATH"))
            elif r.exit_code == launch.MISSING_MODULES_EXIT and argv[0] == self.python:
                emit(not_run_row(layer, h, "host", "error",
                                 f"{h}: cannot run the torch probe: {self.python} cannot import "
                                 f"{r.stdout.strip() or 'its modules'} (install torch and sncheck there)"))
            elif not r.ok:
                emit(not_run_row(layer, h, "host", "error", f"{h}: {what} check failed: {cause_of(r)}"))
            else:
                ready.append(h)
        return ready

    def _enough(self, ready: list[str], wanted: Sequence[str], layer: str, emit: Emit) -> bool:
        need = min(2, len(wanted))
        if ready and len(ready) >= need:
            return True
        for h in ready:
            emit(not_run_row(layer, h, "host", "not_run",
                             f"{h}: {layer} not run: only {len(ready)} of {len(wanted)} hosts are "
                             f"reachable and ready (it needs {need})"))
        return False

    def _torch_ready(self, hosts: Sequence[str], layer: str, emit: Emit) -> list[str]:
        # the module that drives the vendor's device too (torch_npu on Ascend), unless on CPU
        device = None if self.dist_backend == "gloo" else registry.torch_device(self.topo.inventory, hosts)
        extra = [DEVICE_MODULES[device]] if device in DEVICE_MODULES else []
        argv = launch.module_check_argv(["torch", launch.TORCH_PROBE_MODULE, *extra], self.python)
        return self._ready(hosts, layer, emit, argv, "torch probe")

    # ------------------------------------------------------------------ layers

    def p2p(self, plan: ConnectivityPlan, emit: Emit) -> None:
        layer = JOB_LAYER["p2p"]
        used = {host_of(c) for rnd in plan.rounds for pair in rnd.pairs for c in pair} | set(plan.hosts)
        hosts = [h for h in self.topo.hosts if h in used]
        ready = self._torch_ready(hosts, layer, emit)
        if not self._enough(ready, hosts, layer, emit):
            ready = []
        keep = set(ready)
        rounds = []
        for rnd in plan.rounds:
            pairs = []
            for a, b in rnd.pairs:
                if host_of(a) in keep and host_of(b) in keep:
                    pairs.append((a, b))
                    continue
                out = host_of(a) if host_of(a) not in keep else host_of(b)
                emit(p2p_row(rnd.index, a, b, link_id(a, b), self.topo.tier(a, b), plan.bw_bytes,
                             status="unreachable", error=f"{out} unreachable or not ready"))
            rounds.append(Round(rnd.index, rnd.phase, tuple(pairs)))
        if ready:
            job_plan = dataclasses.replace(plan, rounds=tuple(rounds), hosts=tuple(ready))
            self._torch_job("p2p", ready, job_plan, emit)

    def scale_out(self, plan: ConnectivityPlan, emit: Emit) -> bool:
        """ib_write_bw / ib_write_lat between rail-aligned host pairs of the plan's
        cross-supernode rounds, nvbandwidth in each host (:mod:`.scaleout`)."""
        from sncheck.backends.scaleout import ScaleOutTests
        ScaleOutTests(self, _locked(emit)).run(plan)
        return True

    def golden(self, plan: GoldenPlan, emit: Emit) -> None:
        layer = JOB_LAYER["golden"]
        hosts = self._hosts_of(plan.groups)
        ready = self._torch_ready(hosts, layer, emit)
        if not self._enough(ready, hosts, layer, emit):
            return
        groups = _shrink(plan.groups, set(ready), minimum=1)
        if groups:
            self._torch_job("golden", ready, dataclasses.replace(plan, groups=groups), emit)

    def collectives(self, plan: StressPlan, emit: Emit) -> None:
        layer = JOB_LAYER["collectives"]
        hosts = self._hosts_of(plan.groups)
        ready = self._ready(hosts, layer, emit, ["true"], "login")
        if not self._enough(ready, hosts, layer, emit):
            return
        groups = _shrink(plan.groups, set(ready), minimum=2)
        tests_dir = self._nccl_tests_dir(ready[0])
        if tests_dir is not None:
            self._nccl_tests(dataclasses.replace(plan, groups=groups), ready[0], tests_dir, emit)
            return
        ready = self._torch_ready(ready, layer, emit)
        if not self._enough(ready, hosts, layer, emit):
            return
        groups = _shrink(groups, set(ready), minimum=2)
        if groups:
            self._torch_job("collectives", ready, dataclasses.replace(plan, groups=groups), emit)

    def _hosts_of(self, groups: Sequence[Group]) -> list[str]:
        used = {host_of(m) for g in groups for m in g.members}
        return [h for h in self.topo.hosts if h in used]

    # ------------------------------------------------------------------ torch jobs

    def _torch_job(self, job_layer: str, hosts: list[str], plan: Any, emit: Emit) -> None:
        """Run the probe under torchrun on ``hosts`` (node rank = position) and emit its rows."""
        layer = JOB_LAYER[job_layer]
        text = build_job(self, job_layer, cards_of_hosts(self.topo, hosts), plan).to_json()
        workdirs = self._stage(hosts, layer, f"sncheck-{job_layer}-", emit)
        try:
            if len(workdirs) != len(hosts):
                for h in workdirs:
                    emit(not_run_row(layer, h, "host", "not_run",
                                     f"{h}: {layer} not run: the job could not be staged on every host"))
                return
            if not self._write_everywhere(hosts, workdirs, "job.json", text, layer, emit):
                return
            for attempt in range(1, PORT_ATTEMPTS + 1):
                if not self._launch(job_layer, hosts, workdirs, emit, last_try=attempt == PORT_ATTEMPTS):
                    return
                self.progress(f"{layer}: the rendezvous port on {hosts[0]} was taken; retrying")
        finally:
            self._cleanup(workdirs)

    def _stage(self, hosts: Sequence[str], layer: str, prefix: str, emit: Emit) -> dict[str, str]:
        """A private directory on each host; a ``not_run`` row for each host where that failed."""
        outcome = fan_out([self._conn(h) for h in hosts],
                          lambda c: c.run(launch.mktemp_dir_argv(prefix), timeout=self.command_timeout),
                          forks=self.forks)
        dirs = {}
        for h in hosts:
            r = outcome[h]
            path = r.stdout.strip() if isinstance(r, Result) and r.ok else ""
            if path.startswith("/") and "\n" not in path:
                dirs[h] = path
            else:
                emit(self._failed_row(layer, h, r, "creating a work directory"))
        return dirs

    def _write_everywhere(self, hosts: Sequence[str], workdirs: dict[str, str], name: str, text: str,
                          layer: str, emit: Emit) -> bool:
        def write(conn: Connection) -> Result:
            res = None
            for argv in launch.write_file_argvs(f"{workdirs[conn.host]}/{name}", text):
                res = conn.run(argv, timeout=self.command_timeout)
                if not res.ok:
                    break
            assert res is not None
            return res

        outcome = fan_out([self._conn(h) for h in hosts], write, forks=self.forks)
        bad = [h for h in hosts if not (isinstance(outcome[h], Result) and outcome[h].ok)]
        if not bad:
            return True
        for h in hosts:
            if h in bad:
                emit(self._failed_row(layer, h, outcome[h], f"writing {name}"))
            else:
                emit(not_run_row(layer, h, "host", "not_run",
                                 f"{h}: {layer} not run: {name} could not be written on {', '.join(bad)}"))
        return False

    def _failed_row(self, layer: str, host: str, r: Result | TransportError, doing: str) -> dict:
        if isinstance(r, TransportError) and not isinstance(r, HostTaskError):
            self._mark_down(host, r)
            return not_run_row(layer, host, "host", "unreachable", f"{host} unreachable while {doing}: {r.message}")
        if isinstance(r, TransportError):
            return not_run_row(layer, host, "host", "error", f"{host}: {doing}: {r.message}")
        if r.timed_out:
            return not_run_row(layer, host, "host", "timeout", f"{host}: {doing} timed out: {r.command}")
        return not_run_row(layer, host, "host", "error", f"{host}: {doing} failed (exit {r.exit_code}): {cause_of(r)}")

    def _cleanup(self, workdirs: dict[str, str]) -> None:
        live = [h for h in workdirs if h not in self.down]
        outcome = fan_out([self._conn(h) for h in live],
                          lambda c: c.run(launch.remove_tree_argv(workdirs[c.host]), timeout=self.command_timeout),
                          forks=self.forks)
        for h, r in outcome.items():
            if not (isinstance(r, Result) and r.ok):
                log.warning("%s: could not remove %s: %s", h, workdirs[h], r)

    def _free_port(self, host: str) -> int:
        address = self.specs[host].hostname
        r = self._conn(host).run(launch.free_port_argv(address, self.python), timeout=self.command_timeout)
        if not r.ok or not r.stdout.strip().isdigit():
            raise HarnessError(f"{host}: cannot find a free port on {address} for the rendezvous: {cause_of(r)}")
        return int(r.stdout.strip())

    def _launch(self, job_layer: str, hosts: list[str], workdirs: dict[str, str], emit: Emit,
                last_try: bool) -> bool:
        """One torchrun attempt. True when it should be retried (the rendezvous port was taken)."""
        layer = JOB_LAYER[job_layer]
        first = hosts[0]
        try:
            port = self._free_port(first)
        except TransportError as e:
            self._mark_down(first, e)
            for h in hosts:
                emit(not_run_row(layer, h, "host", "unreachable" if h == first else "not_run",
                                 f"{h}: {layer} not run: {first} (the rendezvous host) is unreachable: {e.message}"))
            return False
        except HarnessError as e:
            for h in hosts:
                emit(not_run_row(layer, h, "host", "error", f"{h}: {layer} not run: {e}"))
            return False
        endpoint = launch.format_endpoint(self.specs[first].hostname, port)
        out_path = f"{workdirs[first]}/rows.jsonl"
        pidfiles = {h: f"{workdirs[h]}/torchrun.pid" for h in hosts}
        self.progress(f"{layer}: torchrun on {len(hosts)} hosts, rendezvous {endpoint}")
        futures: dict[str, Future] = {}
        tail = _RowTail(self._conn(first), out_path, self.command_timeout)
        emitted = 0
        pool = ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="sncheck-torchrun")
        stopped: set[str] = set()
        try:
            for rank, h in enumerate(hosts):
                argv = launch.exec_with_pidfile_argv(pidfiles[h], launch.torchrun_argv(
                    len(hosts), self.topo.inventory.hosts[h].cards, rank, endpoint,
                    launch.torch_probe_args(f"{workdirs[h]}/job.json", out_path), python=self.python))
                futures[h] = pool.submit(self._conn(h).run, argv, timeout=self.job_timeout_s)
            while True:
                done = all(f.done() for f in futures.values())
                emitted += self._pass_rows(tail, layer, emit)
                if done:
                    break
                failed = [h for h, f in futures.items() if f.done() and not _succeeded(f)]
                if failed and not stopped:
                    stopped = {h for h, f in futures.items() if not f.done()}
                    self._stop(stopped, pidfiles)
                time.sleep(self.poll_s)
        except KeyboardInterrupt:  # a stop (SIGTERM, Ctrl-C): end the remote jobs, never wait them out
            running = {h for h, f in futures.items() if not f.done()}
            pool.shutdown(wait=False, cancel_futures=True)
            self._stop(running, pidfiles)
            for h in running:  # a command still blocked in its channel returns now, not at its timeout
                self._conn(h).close()
            raise
        finally:
            pool.shutdown(wait=True)  # at once after a stop: every job's channel is closed
        outcomes = {h: _outcome(f) for h, f in futures.items()}
        first_out = outcomes[first]
        if (not last_try and emitted == 0 and isinstance(first_out, Result) and not first_out.ok
                and "address already in use" in (first_out.stderr + first_out.stdout).lower()):
            return True
        culprits = [h for h, r in outcomes.items() if not (isinstance(r, Result) and r.ok) and h not in stopped]
        for h in culprits or [h for h, r in outcomes.items() if not (isinstance(r, Result) and r.ok)]:
            emit(self._job_failure_row(layer, h, outcomes[h]))
        return False

    def _pass_rows(self, tail: _RowTail, layer: str, emit: Emit) -> int:
        n = 0
        for item in tail.poll():
            if isinstance(item, str):  # a line that is not JSON
                emit(not_run_row(layer, tail.conn.host, "host", "parse_failed",
                                 f"{tail.conn.host}: the torch probe wrote a line that is not JSON: {item[:200]!r}"))
            elif "_progress" in item:
                self.progress(str(item["_progress"]))
            else:
                emit(item)
                n += 1
        return n

    def _stop(self, hosts: set[str], pidfiles: dict[str, str]) -> None:
        if not hosts:
            return
        self.progress(f"stopping torchrun on {', '.join(sorted(hosts))}")
        timeout = min(self.command_timeout, launch.STOP_GRACE_S + 10)  # a stop is bounded in time
        fan_out([self._conn(h) for h in hosts],
                lambda c: c.run(launch.kill_pidfile_argv(pidfiles[c.host]), timeout=timeout),
                forks=self.forks)

    def _job_failure_row(self, layer: str, host: str, r: Result | BaseException) -> dict:
        if isinstance(r, TransportError) and not isinstance(r, HostTaskError):
            self._mark_down(host, r)
            return not_run_row(layer, host, "host", "unreachable", f"{host}: lost during the {layer} job: {r.message}")
        if isinstance(r, BaseException):
            return not_run_row(layer, host, "host", "error", f"{host}: the {layer} job failed: {r}")
        if r.timed_out:
            return not_run_row(layer, host, "host", "timeout",
                               f"{host}: the {layer} job (torchrun) ran past {self.job_timeout_s:g}s and was stopped")
        return not_run_row(layer, host, "host", "error",
                           f"{host}: torchrun for the {layer} job exited {r.exit_code}: {cause_of(r)}")

    # ------------------------------------------------------------------ nccl-tests

    def _nccl_tests_dir(self, first: str) -> str | None:
        """The nccl-tests directory ("" for the PATH), or None when there are none."""
        configured = self.topo.inventory.launcher.nccl_tests_dir
        if configured:
            return configured
        try:
            r = self._conn(first).run(launch.which_argv("all_reduce_perf"), timeout=self.command_timeout)
        except TransportError as e:
            log.warning("%s: cannot look for nccl-tests: %s", first, e)
            return None
        return "" if r.ok and r.stdout.strip() else None

    def _parts(self, group: Group) -> list[launch.LaunchPart]:
        launcher = self.topo.inventory.launcher.type
        by_host: dict[str, list[int]] = {}
        for m in group.members:
            by_host.setdefault(host_of(m), []).append(rail_of(m))
        parts = []
        for h, idx in by_host.items():
            devices = None if sorted(idx) == list(range(len(idx))) else tuple(sorted(idx))
            name = self.specs[h].hostname if launcher == "mpirun" else h
            parts.append(launch.LaunchPart(name, len(idx), devices))
        return parts

    def _nccl_tests(self, plan: StressPlan, first: str, tests_dir: str, emit: Emit) -> None:
        layer = JOB_LAYER["collectives"]
        launcher = self.topo.inventory.launcher
        conn = self._conn(first)
        workdirs = self._stage([first], layer, "sncheck-nccl-", emit)
        if first not in workdirs:
            return
        sizes = sorted(plan.sizes)
        factor = max(2, sizes[1] // sizes[0]) if len(sizes) > 1 else 2
        try:
            for gi, group in enumerate(plan.groups):
                self.progress(f"stress group {gi + 1}/{len(plan.groups)} {group.id} (nccl-tests via {launcher.type})")
                parts = self._parts(group)
                hostfile = None
                if launch.needs_hostfile(launcher.type, parts):
                    hostfile = f"{workdirs[first]}/hostfile-{gi}"
                    written = [conn.run(argv, timeout=self.command_timeout)
                               for argv in launch.write_file_argvs(hostfile, launch.hostfile_text(parts))]
                    if not all(r.ok for r in written):
                        bad = next(r for r in written if not r.ok)
                        emit(not_run_row(layer, group.id, "group", "error",
                                         f"{group.id}: cannot write the hostfile on {first}: {cause_of(bad)}"))
                        continue
                collectives = list(plan.collectives) + (["sendrecv"] if group.kind == "pair" else [])
                for collective in collectives:
                    cmd = launch.nccl_tests_argv(collective, sizes[0], sizes[-1], step_factor=factor,
                                                 iters=plan.iters, warmup=plan.warmup,
                                                 directory=tests_dir or None)
                    argv = launch.launcher_argv(launcher.type, parts, launcher.extra_args, cmd, hostfile)
                    for rep in range(max(1, plan.repeats)):
                        for row in self._run_nccl(conn, argv, group, collective, rep):
                            emit(row)
        except TransportError as e:
            self._mark_down(first, e)
            emit(not_run_row(layer, first, "host", "unreachable",
                             f"{first}: lost while launching nccl-tests: {e.message}"))
        finally:
            self._cleanup(workdirs)

    def _run_nccl(self, conn: Connection, argv: list[str], group: Group, collective: str, rep: int) -> list[dict]:
        layer = JOB_LAYER["collectives"]
        res = conn.run(argv, timeout=self.job_timeout_s)
        shown = " ".join(argv)
        if res.timed_out:
            return [not_run_row(layer, group.id, "group", "timeout",
                                f"{group.id}: `{shown}` ran past {self.job_timeout_s:g}s and was killed")]
        if res.exit_code == hostfacts.MISSING_EXIT:
            return [not_run_row(layer, group.id, "group", "error",
                                f"{group.id}: `{argv[0]}` not found on {conn.host}: {cause_of(res)}")]
        try:
            parsed = parse_nccl_tests(res.stdout + "\n" + res.stderr, collective=collective)
        except ParseError as e:
            status = "error" if res.exit_code else "parse_failed"
            return [not_run_row(layer, group.id, "group", status,
                                f"{group.id}: no nccl-tests results from `{shown}` (exit {res.exit_code}): "
                                f"{e.message}; {cause_of(res)}")]
        rows = nccl_collective_rows(parsed, group, collective, rep)
        problems = list(parsed["errors"])
        if res.exit_code != 0 and not problems:
            problems.append(f"exit {res.exit_code}: {cause_of(res)}")
        if problems:
            rows.append(not_run_row(layer, group.id, "group", "error",
                                    f"{group.id}: `{shown}`: {'; '.join(problems[:3])}"))
        return rows


# ---------------------------------------------------------------------- helpers

class _RowTail:
    """The JSON lines rank 0 appends to a file on the first host, read as they arrive."""

    def __init__(self, conn: Connection, path: str, timeout: float) -> None:
        self.conn, self.path, self.timeout = conn, path, timeout
        self.offset, self.partial, self.broken = 0, "", False

    def poll(self) -> list[dict | str]:
        if self.broken:
            return []
        try:
            r = self.conn.run(launch.tail_from_argv(self.path, self.offset), timeout=self.timeout)
        except TransportError as e:
            log.warning("%s: stopped reading %s: %s", self.conn.host, self.path, e)
            self.broken = True
            return []
        if not r.ok:  # not written yet
            return []
        self.offset += len(r.stdout.encode("utf-8"))
        *complete, self.partial = (self.partial + r.stdout).split("\n")
        out: list[dict | str] = []
        for line in complete:
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    out.append(line)
        return out


def _succeeded(f: Future) -> bool:
    r = _outcome(f)
    return isinstance(r, Result) and r.ok


def _outcome(f: Future) -> Result | BaseException:
    exc = f.exception()
    if exc is not None:
        if not isinstance(exc, TransportError):
            log.error("unexpected %s in a torchrun thread", type(exc).__name__, exc_info=exc)
        return exc
    return f.result()


def _shrink(groups: Sequence[Group], hosts: set[str], minimum: int) -> tuple[Group, ...]:
    """Groups without members on other hosts; groups left too small are dropped."""
    out = []
    for g in groups:
        members = tuple(m for m in g.members if host_of(m) in hosts)
        need = 1 if g.kind == "card" else minimum
        if len(members) >= need:
            out.append(Group(g.id, g.kind, members) if members != g.members else g)
    return tuple(out)


def nccl_collective_rows(parsed: dict, group: Group, collective: str, repeat: int) -> list[dict]:
    """``collective`` rows from one parsed nccl-tests log: per size, the out-of-place
    timings as the row's time/algbw/busbw, and the in-place ones alongside."""
    rows = []
    for r in parsed.get("rows") or []:
        oop, inp = r["out_of_place"], r["in_place"]
        known = [w for w in (oop.get("wrong"), inp.get("wrong")) if w is not None]
        errs = [e for e in (oop.get("max_error"), inp.get("max_error")) if e is not None]
        rows.append(collective_row(
            group.id, group.kind, parsed.get("ranks") or len(group.members), collective, r["size_bytes"],
            r["count"], r["type"], repeat, time_us=oop.get("time_us"),
            algbw=oop.get("algbw_GBps"), busbw=oop.get("busbw_GBps"),  # as nccl-tests printed them
            wrong=sum(known) if known else None, max_error=max(errs) if errs else None,
            # the in-place half where the log has it (null where it printed N/A)
            time_in_place_us=inp.get("time_us"), algbw_in_place_GBps=inp.get("algbw_GBps"),
            busbw_in_place_GBps=inp.get("busbw_GBps"),
            status="ok" if oop.get("time_us") is not None else "error"))
    return rows

