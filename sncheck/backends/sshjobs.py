"""The jobs the SSH backend starts on its hosts (:class:`SshJobs`, a part of
:class:`sncheck.backends.ssh.SshBackend`):

* the torch probe :mod:`sncheck.worker.torchdist` under ``torchrun`` on every host,
  static rendezvous on the first host's address and a port free there. The job JSON is
  written to a private directory on each host over SSH; rank 0 appends rows to a file on
  the first host, which is read back while the job runs (:class:`RowTail`);
* the vendor's collective tool (its plug-in's ``collective``: nccl-tests, rccl-tests),
  per group and collective, through ``mpirun`` or ``srun`` (the inventory's
  ``launcher``), started on the first host; see :mod:`sncheck.launch.commands`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sncheck.errors import HarnessError, ParseError, TransportError
from sncheck.launch import commands as launch
from sncheck.launch.job import build_job, cards_of_hosts
from sncheck.probeplan import Group, StressPlan
from sncheck.rows import JsonLines, not_run_row
from sncheck.topology import Topology
from sncheck.model import host_of, rail_of
from sncheck.transport import Connection, HostTaskError, Result, fan_out
from sncheck.vendors import after_end, facts as hostfacts
from sncheck.vendors import registry
from sncheck.vendors.base import CollectiveTool
from sncheck.backends.base import Emit
from sncheck.backends.processes import port_taken

log = logging.getLogger("sncheck.backends.ssh")

JOB_LAYER = {"p2p": "connectivity", "collectives": "stress", "golden": "golden"}
PORT_ATTEMPTS = 3
_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?\w*(?:Error|Exception)\b.*$")


def cause_of(result: Result, lines: int = 2) -> str:
    """The telling part of a failed command's output: its last exception line, or its tail."""
    text = result.stderr + "\n" + result.stdout
    found = [ln.strip() for ln in text.splitlines()
             if _ERROR_LINE.match(ln) and "ChildFailedError" not in ln]
    if found:
        return found[-1][:500]
    return " | ".join(ln.strip() for ln in result.tail(lines).splitlines() if ln.strip())[:500] or "no output"


class SshJobs:
    """The torch-probe and collective-tool jobs of an SSH backend (its connections,
    ``specs``, ``down`` hosts and timeouts are the backend's own)."""

    # what SshBackend gives these methods
    topo: Topology
    specs: dict[str, Any]
    down: dict[str, str]
    forks: int
    python: str
    command_timeout: float
    job_timeout_s: float
    poll_s: float
    progress: Callable[[str], None]
    _conn: Callable[[str], Connection]
    _mark_down: Callable[[str, TransportError], None]
    pass_worker_rows: Callable[[list[dict | str], str, str, Emit], int]

    def peer_address(self, host: str) -> str:
        """What the other hosts dial to reach ``host`` (a rendezvous, mpirun's hostfile, a
        perftest server): the address sncheck dials; behind an SSH gateway that routes by user
        (``ssh_gateway: true``) that address is the gateway's, no host's, so its inventory name."""
        return host if self.topo.inventory.hosts[host].ssh_gateway else self.specs[host].hostname

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
        bad = [h for h in hosts if not (isinstance(r := outcome[h], Result) and r.ok)]
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
        address = self.peer_address(host)
        r = self._conn(host).run(launch.free_port_argv(address, self.python), timeout=self.command_timeout)
        if not r.ok or not r.stdout.strip().isdecimal():
            raise HarnessError(f"{host}: cannot find a free port on {address} for the rendezvous: {cause_of(r)}")
        return int(r.stdout.strip())

    def unresolved(self, dials: Mapping[str, Iterable[str]]) -> dict[tuple[str, str], str]:
        """Behind an SSH gateway (``ssh_gateway: true``) the other hosts reach a host at its
        inventory name (:meth:`peer_address`: a rendezvous, mpirun's hostfile, a perftest
        server); a host where that name does not resolve would wait for it (the rendezvous
        until job_timeout_s, a perftest server until the command timeout) or fail saying
        nothing of the gateway (review s43o). ``dials``: each host and the hosts it will
        dial; each is asked at once for the marked ones' names. What cannot be dialled:
        (host, the host it cannot reach) -> one line naming both and the gateway. A host not
        reached here is the job's to find unreachable."""
        hosts = self.topo.inventory.hosts
        asked = {h: names for h, targets in dials.items()
                 if (names := sorted({t for t in targets if hosts[t].ssh_gateway}))}
        if not asked:
            return {}
        outcome = fan_out([self._conn(h) for h in asked],
                          lambda c: c.run(launch.resolve_argv(asked[c.host], self.python), timeout=self.command_timeout),
                          forks=self.forks)
        out = {}
        for h, names in asked.items():
            if not isinstance(r := outcome[h], Result) or r.ok:
                continue
            causes = launch.unresolved_names(r.stdout, names) or dict.fromkeys(
                names, "timed out" if r.timed_out else cause_of(r))
            for name, cause in causes.items():
                spec = self.specs[name]
                out[h, name] = (f"{h} cannot resolve {name}, the name the hosts reach {name} at behind its SSH "
                                f"gateway ({spec.hostname} port {spec.port}, ssh_gateway: true): {cause}; "
                                f"make {name} resolve on every host (DNS or /etc/hosts)")
        return out

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
        if unresolved := list(self.unresolved({h: (first,) for h in hosts if h != first}).values()):
            for h in hosts:
                emit(not_run_row(layer, h, "host", "error", f"{h}: {layer} not run: {unresolved[0]}"))
            return False
        endpoint = launch.format_endpoint(self.peer_address(first), port)
        out_path = f"{workdirs[first]}/rows.jsonl"
        pidfiles = {h: f"{workdirs[h]}/torchrun.pid" for h in hosts}
        self.progress(f"{layer}: torchrun on {len(hosts)} hosts, rendezvous {endpoint}")
        futures: dict[str, Future] = {}
        tail = RowTail(self._conn(first), out_path, self.command_timeout)
        emitted = 0
        pool = ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="sncheck-torchrun")
        stopped: set[str] = set()
        try:
            for rank, h in enumerate(hosts):
                argv = launch.exec_with_pidfile_argv(pidfiles[h], launch.torchrun_argv(
                    len(hosts), self.topo.inventory.hosts[h].cards, rank, endpoint,
                    launch.torch_probe_args(f"{workdirs[h]}/job.json", out_path), python=self.python))
                futures[h] = pool.submit(self._conn(h).run, argv, timeout=self.job_timeout_s,
                                         max_output=None)  # the job's logs; its rows come by RowTail
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
                and port_taken(first_out.stderr + first_out.stdout)):
            return True
        culprits = [h for h, r in outcomes.items() if not (isinstance(r, Result) and r.ok) and h not in stopped]
        for h in culprits or [h for h, r in outcomes.items() if not (isinstance(r, Result) and r.ok)]:
            emit(self._job_failure_row(layer, h, outcomes[h]))
        return False

    def _pass_rows(self, tail: RowTail, layer: str, emit: Emit) -> int:
        return self.pass_worker_rows(tail.poll(), layer, tail.conn.host, emit)

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

    # ------------------------------------------------------------------ the vendor's collective tool

    def _collective_tool(self, hosts: Sequence[str]) -> CollectiveTool | None:
        """The hosts' vendor's collective benchmark sncheck can launch (nccl-tests,
        rccl-tests), or None (then the torch probe runs the collectives)."""
        return registry.collective_tool(self.topo.inventory, hosts)

    def _tests_dir(self, first: str, tool: CollectiveTool) -> str | None:
        """The directory of the tool's binaries ("" for the PATH), or None when there are none."""
        configured = self.topo.inventory.launcher.nccl_tests_dir
        if configured:
            return configured
        try:
            r = self._conn(first).run(launch.which_argv(tool.program()), timeout=self.command_timeout)
        except TransportError as e:
            log.warning("%s: cannot look for %s: %s", first, tool.name, e)
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
            name = self.peer_address(h) if launcher == "mpirun" else h
            parts.append(launch.LaunchPart(name, len(idx), devices))
        return parts

    def _collective_tests(self, plan: StressPlan, first: str, tool: CollectiveTool, tests_dir: str,
                          emit: Emit) -> None:
        assert tool.argv is not None
        layer = JOB_LAYER["collectives"]
        launcher = self.topo.inventory.launcher
        env = registry.vendor_of(self.topo.inventory.platform_of(first)).visible_devices_env
        conn = self._conn(first)
        workdirs = self._stage([first], layer, "sncheck-nccl-", emit)
        if first not in workdirs:
            return
        sizes = sorted(plan.sizes)
        factor = max(2, sizes[1] // sizes[0]) if len(sizes) > 1 else 2
        # mpirun on the first host dials the other hosts of its hostfile (or --host) by those names
        unresolved = self.unresolved({first: {host_of(m) for g in plan.groups for m in g.members} - {first}}) \
            if launcher.type == "mpirun" else {}
        try:
            for gi, group in enumerate(plan.groups):
                self.progress(f"stress group {gi + 1}/{len(plan.groups)} {group.id} ({tool.name} via {launcher.type})")
                if why := [unresolved[first, host_of(m)] for m in group.members if (first, host_of(m)) in unresolved]:
                    emit(not_run_row(layer, group.id, "group", "error", f"{group.id}: {tool.name} not run: {why[0]}"))
                    continue
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
                    cmd = tool.argv(collective, sizes[0], sizes[-1], step_factor=factor, iters=plan.iters,
                                    warmup=plan.warmup, directory=tests_dir or None)
                    argv = launch.launcher_argv(launcher.type, parts, launcher.extra_args, cmd, hostfile, env)
                    for rep in range(max(1, plan.repeats)):
                        for row in self._run_collective(conn, tool, argv, group, collective, rep):
                            emit(row)
        except TransportError as e:
            self._mark_down(first, e)
            emit(not_run_row(layer, first, "host", "unreachable",
                             f"{first}: lost while launching {tool.name}: {e.message}"))
        finally:
            self._cleanup(workdirs)

    def _run_collective(self, conn: Connection, tool: CollectiveTool, argv: list[str], group: Group,
                        collective: str, rep: int) -> list[dict]:
        assert tool.rows is not None
        layer = JOB_LAYER["collectives"]
        # a launcher's output gathers every rank's (NCCL_DEBUG=INFO before the table): never cut at
        # transport.MAX_OUTPUT_BYTES, a bound for fact tools (cut, the table would read 'parse failed')
        res = conn.run(argv, timeout=self.job_timeout_s, max_output=None)
        shown = " ".join(argv)
        if res.timed_out:
            return [not_run_row(layer, group.id, "group", "timeout",
                                f"{group.id}: `{shown}` ran past {self.job_timeout_s:g}s and was killed")]
        if res.exit_code == hostfacts.MISSING_EXIT:
            return [not_run_row(layer, group.id, "group", "error",
                                f"{group.id}: `{argv[0]}` not found on {conn.host}: {cause_of(res)}")]
        try:
            parsed = after_end.read_job(tool.parse, res.stdout, res.stderr, collective=collective)
        except ParseError as e:
            status = "error" if res.exit_code else "parse_failed"
            return [not_run_row(layer, group.id, "group", status,
                                f"{group.id}: no {tool.name} results from `{shown}` (exit {res.exit_code}): "
                                f"{e.message}; {cause_of(res)}")]
        rows = tool.rows(parsed, group, collective, rep)
        problems = list(parsed["errors"])
        if res.exit_code != 0 and not problems:
            problems.append(f"exit {res.exit_code}: {cause_of(res)}")
        if problems:
            rows.append(not_run_row(layer, group.id, "group", "error",
                                    f"{group.id}: `{shown}`: {'; '.join(problems[:3])}"))
        return rows


class RowTail:
    """The JSON lines rank 0 appends to a file on the first host, read as they arrive."""

    def __init__(self, conn: Connection, path: str, timeout: float) -> None:
        self.conn, self.path, self.timeout = conn, path, timeout
        self.offset, self.lines, self.broken = 0, JsonLines(), False

    def poll(self) -> list[dict | str]:
        if self.broken:
            return []
        try:
            # sncheck's own rows, read on from where the last look ended: never cut (a cut read
            # would lose rows), its size is the rows the job wrote since
            r = self.conn.run(launch.tail_from_argv(self.path, self.offset), timeout=self.timeout, max_output=None)
        except TransportError as e:
            log.warning("%s: stopped reading %s: %s", self.conn.host, self.path, e)
            self.broken = True
            return []
        if not r.ok:  # not written yet
            return []
        data = r.stdout.encode("utf-8")
        self.offset += len(data)
        return self.lines.feed(data)


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

