"""Scale-out and copy-engine tests through the SSH fan-out (the connectivity option ``tools``).

* ``ib_write_bw`` / ``ib_write_lat`` (perftest) between rail-aligned host pairs, on the
  connectivity plan's cross-supernode rounds (the bounded schedule by default, all pairs
  for acceptance, scoped by ``--targets``), sampled by :func:`sncheck.probeplan.perftest_schedule`
  so that every NIC meets ``tools_coverage`` distinct peers (2 by default; ``all``: every
  rail pair of the plan; a scoped plan runs all its pairs). Per
  pair the server starts on one host and the client on the other, both on rail k's NIC,
  which is the k-th HCA of the host's ``ibstat`` in natural order; the NIC rate the
  bandwidth is judged against is that HCA's port rate as ``ibstat`` prints it. A round's
  host pairs run at once (at most ``forks``), each pair's rails one after the other.
* ``nvbandwidth`` inside every host: the device-to-device and host-to-device copy-engine
  matrices against the design (scale-up bandwidth; host-to-device from the platform's
  ``h2d_GBps`` where it names one).

Every command is an argv list (quoted by the transport), bounded on the host by
``timeout`` and on this side by the command timeout. The results are ``host_fact`` rows
made by the vendor plug-ins' checks (:mod:`sncheck.vendors.infiniband.perftest`,
:mod:`sncheck.vendors.nvidia.nvbandwidth`) and judged by the rules like any host fact;
a pair's row names its link (``entity``: the rail-aligned card pair, ``entity_kind``
``link``), so a slow pair is a finding about that host pair and rail. A tool missing on
a host, a host that cannot be reached, a pair that never connected or timed out: each
is a ``not_run`` row (never a pass). The inventory's ``checks: {ib_write_bw: false}``
switches a tool off (recorded as skipped).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from sncheck.errors import ParseError, TransportError
from sncheck.probeplan import PAIR_TOOLS, ConnectivityPlan, RailPair
from sncheck.store.rows import host_fact_row, not_run_row
from sncheck.topology import natural_key
from sncheck.transport import Connection, HostTaskError, Result, fan_out
from sncheck.vendors import facts as hostfacts
from sncheck.vendors.infiniband import ibstat, perftest
from sncheck.vendors.nvidia import nvbandwidth

if TYPE_CHECKING:
    from sncheck.backends.ssh import SshBackend

LAYER = "connectivity"
BASE_PORT = 18515            # perftest's default port; rail k listens on BASE_PORT + k
BW_BYTES = 8 << 20           # ib_write_bw message size (the bandwidth-bound end)
BW_ITERS = 5000
LAT_BYTES = 2                # ib_write_lat message size (perftest's default)
LAT_ITERS = 1000
CONNECT_TRIES = 5            # the client retries while its server is still starting
CONNECT_WAIT_S = 0.5
NVBANDWIDTH_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce")
_NOT_LISTENING = re.compile(r"(?i)couldn't connect|connection refused|unable to open file descriptor")


def perftest_argv(tool: str, device: str, port: int, server: str | None = None) -> list[str]:
    """One side of a perftest run; ``server`` is the address the client connects to."""
    size, iters = (BW_BYTES, BW_ITERS) if tool == "ib_write_bw" else (LAT_BYTES, LAT_ITERS)
    argv = [tool, "-d", device, "-p", str(port), "-s", str(size), "-n", str(iters), "-F"]
    if tool == "ib_write_bw":
        argv.append("--report_gbits")
    return argv + ([server] if server else [])


def nvbandwidth_argv() -> list[str]:
    return ["nvbandwidth", "-t", *NVBANDWIDTH_TESTS]


def bounded(argv: list[str], seconds: float) -> list[str]:
    """``argv`` stopped on the host after ``seconds`` (coreutils ``timeout``), so a server
    whose client never came does not stay behind. ``timeout`` exits 127 when the tool is
    not there, as a shell does."""
    return ["timeout", "-k", "5", f"{max(1, int(seconds))}", *argv]


def nic_rails(text: str) -> list[tuple[str, float | None]]:
    """Rail k -> (HCA name, its first port's rate in Gb/s), from ``ibstat``: the HCAs in
    natural order (mlx5_2 before mlx5_10)."""
    parsed = ibstat.parse_ibstat(text)
    cas = sorted(parsed["cas"], key=lambda ca: natural_key(ca["name"]))
    out = []
    for ca in cas:
        ports = ca.get("ports") or []
        rate = ports[0].get("rate_gbps") if ports else None
        out.append((ca["name"], float(rate) if rate is not None else None))
    return out


class ScaleOutTests:
    """The ``tools`` of a connectivity plan, run over an SSH backend's connections."""

    def __init__(self, backend: SshBackend, emit: Callable[[dict], None]) -> None:
        self.b = backend
        self.emit = emit
        self.inv = backend.topo.inventory
        self.timeout = backend.command_timeout
        self._missing: set[tuple[str, str]] = set()  # (host, tool): reported once, then skipped
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ entry

    def run(self, plan: ConnectivityPlan) -> None:
        pair_tools = [t for t in plan.tools if t in PAIR_TOOLS]
        if pair_tools:
            sched = plan.perftest
            self.b.progress(f"connectivity: perftest on {sched.describe()}")
            self.pairs(sched.rounds, pair_tools)
        if "nvbandwidth" in plan.tools:
            self.copy_engines(list(plan.hosts))

    def _off(self, host: str, tool: str) -> bool:
        return self.inv.checks_of(host).get(tool, True) is False

    def _skipped(self, host: str, tool: str, fact: str) -> None:
        self.emit(host_fact_row(host, fact, None, None, True, status="skipped", tool=tool,
                                message=f"{host}: {fact} not checked: skipped, the inventory says this cluster "
                                        f"has no {tool} (checks: {{{tool}: false}})"))

    def _missing_once(self, host: str, tool: str, why: str) -> None:
        with self._lock:
            if (host, tool) in self._missing:
                return
            self._missing.add((host, tool))
        self.emit(not_run_row(LAYER, host, "host", "missing_tool", f"{host}: {tool} not run: {why}"))

    # ------------------------------------------------------------------ perftest

    def pairs(self, rounds: list[list[RailPair]], tools: list[str]) -> None:
        hosts = sorted({h for rnd in rounds for p in rnd for h in (p.client, p.server)})
        for t in tools:
            for h in hosts:
                if self._off(h, t):
                    self._skipped(h, t, "ib_bw" if t == "ib_write_bw" else "ib_lat")
        nics = self._nics(hosts)
        for i, rnd in enumerate(rounds):
            self.b.progress(f"connectivity: scale-out round {i + 1}/{len(rounds)} "
                            f"({len(rnd)} rail pairs, {', '.join(tools)})")
            by_client: dict[str, list[RailPair]] = {}
            for p in rnd:
                by_client.setdefault(p.client, []).append(p)
            todo = []
            for client, mine in by_client.items():
                down = [h for h in (client, mine[0].server) if h in self.b.down]
                if down:
                    for p in mine:
                        self.emit(not_run_row(LAYER, p.link, "link", "unreachable",
                                              f"{p.link}: {', '.join(tools)} not run: {down[0]} unreachable "
                                              f"({self.b.down[down[0]]})"))
                    continue
                todo.append(client)

            def one(conn: Connection, by_client=by_client) -> Result:
                started = time.monotonic()
                for p in by_client[conn.host]:
                    for tool in tools:
                        if not (self._off(p.client, tool) or self._off(p.server, tool)):
                            self._pair(p, tool, nics)
                return Result(conn.host, "scale-out pairs", "", "", 0, time.monotonic() - started)

            outcome = fan_out([self.b._conn(h) for h in todo], one, forks=self.b.forks)
            for h, r in outcome.items():
                if isinstance(r, TransportError):
                    if not isinstance(r, HostTaskError):
                        self.b._mark_down(h, r)
                    for p in by_client[h]:
                        self.emit(not_run_row(LAYER, p.link, "link", "error",
                                              f"{p.link}: {', '.join(tools)} stopped: {r.message}"))

    def _nics(self, hosts: list[str]) -> dict[str, list[tuple[str, float | None]]]:
        """Each host's rails from ``ibstat``; a host whose NICs cannot be read is reported."""
        live = [h for h in hosts if h not in self.b.down]
        argv = ["ibstat"]
        outcome = fan_out([self.b._conn(h) for h in live],
                          lambda c: c.run(argv, timeout=self.timeout), forks=self.b.forks)
        nics: dict[str, list[tuple[str, float | None]]] = {}
        for h in live:
            r = outcome[h]
            if isinstance(r, TransportError):
                if not isinstance(r, HostTaskError):
                    self.b._mark_down(h, r)
                continue  # the pairs of a down host are reported as such
            why = None
            if r.exit_code == hostfacts.MISSING_EXIT:
                why = "ibstat not found on the PATH: cannot tell which NIC is rail k"
            elif not r.ok:
                why = f"ibstat failed (exit {r.exit_code}): cannot tell which NIC is rail k"
            else:
                try:
                    nics[h] = nic_rails(r.stdout)
                except ParseError as e:
                    why = f"ibstat output not understood ({e.message}): cannot tell which NIC is rail k"
            if why:
                self.emit(not_run_row(LAYER, h, "host", "error", f"{h}: scale-out pair tests not run: {why}"))
        return nics

    def _pair(self, p: RailPair, tool: str, nics: dict) -> None:
        if (p.client, tool) in self._missing or (p.server, tool) in self._missing:
            return  # the host's not-run row says why; the pair is not measured
        if p.client not in nics or p.server not in nics:
            return  # reported by _nics (or the host is down)
        rails = [(h, nics[h]) for h in (p.client, p.server)]
        short = [h for h, r in rails if len(r) <= p.rail]
        if short:
            self.emit(not_run_row(LAYER, p.link, "link", "error",
                                  f"{p.link}: {tool} not run: {short[0]} has no NIC for rail {p.rail} "
                                  f"(ibstat lists {len(nics[short[0]])})"))
            return
        dev_c, rate = nics[p.client][p.rail]
        dev_s = nics[p.server][p.rail][0]
        port = BASE_PORT + p.rail
        address = self.b.specs[p.server].hostname
        limit = self.timeout
        server_argv = bounded(perftest_argv(tool, dev_s, port), limit)
        client_argv = bounded(perftest_argv(tool, dev_c, port, address), limit)
        server_conn, client_conn = self.b._conn(p.server), self.b._conn(p.client)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sncheck-perftest") as pool:
            served = pool.submit(server_conn.run, server_argv, timeout=limit + 10)
            client = None
            for _ in range(CONNECT_TRIES):
                time.sleep(CONNECT_WAIT_S)  # the server needs a moment to listen
                client = client_conn.run(client_argv, timeout=limit + 10)
                if client.ok or served.done() or not _NOT_LISTENING.search(client.stdout + client.stderr):
                    break
            try:
                server = served.result()
            except TransportError as e:
                server = e
        assert client is not None
        self.b.keep_output(p.client, tool, " ".join(client_argv), client.stdout, client.stderr, client.exit_code)
        if isinstance(server, Result):
            self.b.keep_output(p.server, tool, " ".join(server_argv), server.stdout, server.stderr, server.exit_code)
        for h, r in ((p.client, client), (p.server, server)):
            if isinstance(r, Result) and r.exit_code == hostfacts.MISSING_EXIT:
                self._missing_once(h, tool, f"{tool} not found on the PATH (perftest not installed?)")
                return
        if client.timed_out or client.exit_code == 124:
            self.emit(not_run_row(LAYER, p.link, "link", "timeout",
                                  f"{p.link}: {tool} {p.client} -> {p.server} ran past {limit:g}s and was stopped"))
            return
        parse = perftest.parse_ib_write_bw if tool == "ib_write_bw" else perftest.parse_ib_lat
        try:
            parsed = parse(client.stdout)
        except ParseError as e:
            from sncheck.backends.ssh import cause_of
            status = "error" if client.exit_code else "parse_failed"
            self.emit(not_run_row(LAYER, p.link, "link", status,
                                  f"{p.link}: no {tool} result from {p.client} (exit {client.exit_code}): "
                                  f"{e.message}; {cause_of(client)}"))
            return
        if client.exit_code not in (0, None) and not parsed["rows"]:
            from sncheck.backends.ssh import cause_of
            self.emit(not_run_row(LAYER, p.link, "link", "error",
                                  f"{p.link}: {tool} {p.client} -> {p.server} failed (exit {client.exit_code}): "
                                  f"{cause_of(client)}"))
            return
        peer = f"{p.server} (rail {p.rail}: {dev_c} -> {dev_s})"
        if tool == "ib_write_bw":
            if rate is None:
                self.emit(not_run_row(LAYER, p.link, "link", "error",
                                      f"{p.link}: ib_write_bw not judged: ibstat on {p.client} shows no rate "
                                      f"for {dev_c}"))
                return
            rows = perftest.check_ib_write_bw(p.client, parsed, nic_Gbps=rate, peer=peer)
        else:
            design = self.inv.design_for("scale_out")
            if design is None:
                self.emit(not_run_row(LAYER, p.link, "link", "error",
                                      f"{p.link}: ib_write_lat not judged: the inventory has no scale_out design"))
                return
            rows = perftest.check_ib_write_lat(p.client, parsed, design_us=design.latency_us, peer=peer)
        for row in rows:
            self.emit({**row, "entity": p.link, "entity_kind": "link"})

    # ------------------------------------------------------------------ nvbandwidth

    def copy_engines(self, hosts: list[str]) -> None:
        todo = []
        for h in hosts:
            if self._off(h, "nvbandwidth"):
                self._skipped(h, "nvbandwidth", "nvbandwidth_d2d")
            elif h in self.b.down:
                self.emit(not_run_row(LAYER, h, "host", "unreachable",
                                      f"{h}: nvbandwidth not run: unreachable ({self.b.down[h]})"))
            else:
                todo.append(h)
        argv = bounded(nvbandwidth_argv(), self.timeout)
        outcome = fan_out([self.b._conn(h) for h in todo],
                          lambda c: c.run(argv, timeout=self.timeout + 10), forks=self.b.forks)
        for h in todo:
            r = outcome[h]
            if isinstance(r, TransportError):
                if not isinstance(r, HostTaskError):
                    self.b._mark_down(h, r)
                self.emit(not_run_row(LAYER, h, "host", "unreachable" if not isinstance(r, HostTaskError) else "error",
                                      f"{h}: nvbandwidth not run: {r.message}"))
                continue
            self.b.keep_output(h, "nvbandwidth", " ".join(argv), r.stdout, r.stderr, r.exit_code)
            self._copy_engine_rows(h, r)

    def _copy_engine_rows(self, host: str, r: Result) -> None:
        from sncheck.backends.ssh import cause_of
        if r.exit_code == hostfacts.MISSING_EXIT:
            self._missing_once(host, "nvbandwidth", "nvbandwidth not found on the PATH")
            return
        if r.timed_out or r.exit_code == 124:
            self.emit(not_run_row(LAYER, host, "host", "timeout",
                                  f"{host}: nvbandwidth ran past {self.timeout:g}s and was stopped"))
            return
        try:
            parsed = nvbandwidth.parse_nvbandwidth(r.stdout)
        except ParseError as e:
            self.emit(not_run_row(LAYER, host, "host", "error" if r.exit_code else "parse_failed",
                                  f"{host}: no nvbandwidth result (exit {r.exit_code}): {e.message}; {cause_of(r)}"))
            return
        plat = self.inv.platform_of(host)
        up = self.inv.design_for("scale_up")
        h2d = (plat.params if plat else {}).get("h2d_GBps")
        rows = nvbandwidth.check_nvbandwidth(host, parsed, d2d_GBps=up.bandwidth_GBps if up else None,
                                             h2d_GBps=h2d)
        problems = list(parsed["errors"]) + ([f"exit {r.exit_code}: {cause_of(r)}"] if r.exit_code else [])
        if self.inv.hosts[host].cards >= 2 and not any(row["fact"] == "nvbandwidth_d2d" for row in rows):
            problems.append("no device-to-device copy judged (no matrix in the output, or no scale_up design)")
        if problems:
            why = "; ".join(problems)
            self.emit(not_run_row(LAYER, host, "host", "error", f"{host}: nvbandwidth: {why}"))
        for row in rows:
            self.emit(row)
