"""Scale-out and copy tests through the SSH fan-out (the connectivity option ``tools``).

What runs, and how it is judged, is the host's vendor plug-in's (its ``scale_out`` and
``copy_bench``, :mod:`sncheck.vendors.base`); this module runs it over the connections:

* the pair tests, ``ib_write_bw`` / ``ib_write_lat`` (perftest), between rail-aligned host pairs, on the
  connectivity plan's cross-supernode rounds (the bounded schedule by default, all pairs
  for acceptance, scoped by ``--targets``), sampled by :func:`sncheck.probeplan.perftest_schedule`
  so that every NIC meets ``tools_coverage`` distinct peers (2 by default; ``all``: every
  rail pair of the plan; a scoped plan runs all its pairs). Per
  pair the server starts on one host and the client on the other, both on rail k's NIC,
  which is the k-th HCA of the host's ``ibstat`` in natural order; the NIC rate the
  bandwidth is judged against is that HCA's port rate as ``ibstat`` prints it. A round's
  host pairs run at once (at most ``forks``), each pair's rails one after the other.
* the copy test inside every host, its vendor's: ``nvbandwidth`` (the device-to-device and
  host-to-device copy-engine matrices against the design: scale-up bandwidth;
  host-to-device from the platform's ``h2d_GBps`` where it names one), ``transferbench``
  (TransferBench p2p, every GPU pair against the platform's ``p2p_GBps``).

Every command is an argv list (quoted by the transport), bounded on the host by
``timeout`` and on this side by the command timeout. The results are ``host_fact`` rows
made by the vendor plug-ins' checks and judged by the rules like any host fact;
a pair's row names its link (``entity``: the rail-aligned card pair, ``entity_kind``
``link``), so a slow pair is a finding about that host pair and rail. A tool missing on
a host, a host that cannot be reached, a pair that never connected or timed out: each
is a ``not_run`` row (never a pass). The inventory's ``checks: {ib_write_bw: false}``
switches a tool off (recorded as skipped).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from sncheck.errors import ParseError, TransportError
from sncheck.probeplan import ConnectivityPlan, RailPair
from sncheck.rows import host_fact_row, not_run_row
from sncheck.transport import Connection, HostTaskError, Result, fan_out
from sncheck.vendors import facts as hostfacts
from sncheck.vendors import registry
from sncheck.vendors.base import CopyBench, ScaleOut
from sncheck.backends.sshjobs import cause_of

if TYPE_CHECKING:
    from sncheck.backends.ssh import SshBackend

LAYER = "connectivity"
CONNECT_TRIES = 5            # the client retries while its server is still starting
CONNECT_WAIT_S = 0.5


def bounded(argv: list[str], seconds: float) -> list[str]:
    """``argv`` stopped on the host after ``seconds`` (coreutils ``timeout``), so a server
    whose client never came does not stay behind. ``timeout`` exits 127 when the tool is
    not there, as a shell does."""
    return ["timeout", "-k", "5", f"{max(1, int(seconds))}", *argv]


class ScaleOutTests:
    """The ``tools`` of a connectivity plan, run over an SSH backend's connections."""

    def __init__(self, backend: SshBackend, emit: Callable[[dict], None], conn: Callable[[str], Connection],
                 mark_down: Callable[[str, TransportError], None]) -> None:
        self.b = backend
        self.emit = emit
        self.conn, self.mark_down = conn, mark_down  # the backend's own connections and its down hosts
        self.inv = backend.topo.inventory
        self.timeout = backend.command_timeout
        self._missing: set[tuple[str, str]] = set()  # (host, tool): reported once, then skipped
        self._unresolved: dict[tuple[str, str], str] = {}  # (client, server): a gateway name it cannot resolve
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ entry

    def run(self, plan: ConnectivityPlan) -> None:
        pair_tools = [t for t in plan.tools if t in registry.pair_tools()]
        if pair_tools:
            sched = plan.perftest
            self.b.progress(f"connectivity: perftest on {sched.describe()}")
            self.pairs(sched.rounds, pair_tools)
        benches = [t for t in plan.tools if t in registry.copy_benches()]
        if benches:
            self.copy_engines(list(plan.hosts), benches)

    def _scale_out(self, host: str) -> ScaleOut | None:
        return registry.vendor_of(self.inv.platform_of(host)).scale_out

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
        facts = {t: registry.pair_tools()[t].fact for t in tools}
        for t in tools:
            for h in hosts:
                if self._off(h, t):
                    self._skipped(h, t, facts[t])
        nics = self._nics(hosts)
        dials: dict[str, set[str]] = {}  # each client dials its servers by peer_address
        for p in (p for rnd in rounds for p in rnd if p.client in nics and p.server in nics):
            dials.setdefault(p.client, set()).add(p.server)
        self._unresolved = self.b.unresolved(dials)
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

            outcome = fan_out([self.conn(h) for h in todo], one, forks=self.b.forks)
            for h, r in outcome.items():
                if isinstance(r, TransportError):
                    if not isinstance(r, HostTaskError):
                        self.mark_down(h, r)
                    for p in by_client[h]:
                        self.emit(not_run_row(LAYER, p.link, "link", "error",
                                              f"{p.link}: {', '.join(tools)} stopped: {r.message}"))

    def _nics(self, hosts: list[str]) -> dict[str, list[tuple[str, float | None]]]:
        """Each host's rails from its NIC listing (``ibstat``); a host whose NICs cannot be
        read is reported."""
        live = [h for h in hosts if h not in self.b.down]
        tools = {h: self._scale_out(h) for h in live}
        for h in live:
            if tools[h] is None:
                vendor = registry.vendor_of(self.inv.platform_of(h)).name
                self.emit(not_run_row(LAYER, h, "host", "error", f"{h}: scale-out pair tests not run: the {vendor} "
                                                                 "plug-in names no scale-out NIC tool"))
        live = [h for h in live if tools[h] is not None]
        outcome = fan_out([self.conn(h) for h in live],
                          lambda c: c.run(list(tools[c.host].nic_argv), timeout=self.timeout),  # type: ignore[union-attr]
                          forks=self.b.forks)
        nics: dict[str, list[tuple[str, float | None]]] = {}
        for h in live:
            r, so = outcome[h], tools[h]
            assert so is not None
            if isinstance(r, TransportError):
                if not isinstance(r, HostTaskError):
                    self.mark_down(h, r)
                continue  # the pairs of a down host are reported as such
            why = None
            if r.exit_code == hostfacts.MISSING_EXIT:
                why = f"{so.nic_tool} not found on the PATH: cannot tell which NIC is rail k"
            elif not r.ok:
                why = f"{so.nic_tool} failed (exit {r.exit_code}): cannot tell which NIC is rail k"
            else:
                try:
                    nics[h] = so.nic_rails(r.stdout)
                except ParseError as e:
                    why = f"{so.nic_tool} output not understood ({e.message}): cannot tell which NIC is rail k"
            if why:
                self.emit(not_run_row(LAYER, h, "host", "error", f"{h}: scale-out pair tests not run: {why}"))
        return nics

    def _pair(self, p: RailPair, tool: str, nics: dict) -> None:
        if (p.client, tool) in self._missing or (p.server, tool) in self._missing:
            return  # the host's not-run row says why; the pair is not measured
        if p.client not in nics or p.server not in nics:
            return  # reported by _nics (or the host is down)
        if (p.client, p.server) in self._unresolved:  # it would wait for a server it cannot find
            self.emit(not_run_row(LAYER, p.link, "link", "error",
                                  f"{p.link}: {tool} not run: {self._unresolved[p.client, p.server]}"))
            return
        so = self._scale_out(p.client)
        assert so is not None  # a host without one has no NICs listed
        test = so.pair_tests[tool]
        rails = [(h, nics[h]) for h in (p.client, p.server)]
        short = [h for h, r in rails if len(r) <= p.rail]
        if short:
            self.emit(not_run_row(LAYER, p.link, "link", "error",
                                  f"{p.link}: {tool} not run: {short[0]} has no NIC for rail {p.rail} "
                                  f"({so.nic_tool} lists {len(nics[short[0]])})"))
            return
        dev_c, rate = nics[p.client][p.rail]
        dev_s = nics[p.server][p.rail][0]
        port = so.base_port + p.rail
        address = self.b.peer_address(p.server)
        limit = self.timeout
        server_argv = bounded(test.argv(dev_s, port, None), limit)
        client_argv = bounded(test.argv(dev_c, port, address), limit)
        server_conn, client_conn = self.conn(p.server), self.conn(p.client)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sncheck-perftest") as pool:
            served = pool.submit(server_conn.run, server_argv, timeout=limit + 10)
            client = None
            for _ in range(CONNECT_TRIES):
                time.sleep(CONNECT_WAIT_S)  # the server needs a moment to listen
                client = client_conn.run(client_argv, timeout=limit + 10)
                if client.ok or served.done() or not so.not_listening(client.stdout + client.stderr):
                    break
            server: Result | TransportError
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
        try:
            parsed = test.parse(client.stdout)
        except ParseError as e:
            status = "error" if client.exit_code else "parse_failed"
            self.emit(not_run_row(LAYER, p.link, "link", status,
                                  f"{p.link}: no {tool} result from {p.client} (exit {client.exit_code}): "
                                  f"{e.message}; {cause_of(client)}"))
            return
        if client.exit_code not in (0, None) and not parsed["rows"]:
            self.emit(not_run_row(LAYER, p.link, "link", "error",
                                  f"{p.link}: {tool} {p.client} -> {p.server} failed (exit {client.exit_code}): "
                                  f"{cause_of(client)}"))
            return
        peer = f"{p.server} (rail {p.rail}: {dev_c} -> {dev_s})"
        if test.judged_against == "nic_rate":
            if rate is None:
                self.emit(not_run_row(LAYER, p.link, "link", "error",
                                      f"{p.link}: {tool} not judged: {so.nic_tool} on {p.client} shows no rate "
                                      f"for {dev_c}"))
                return
            bound = rate
        else:
            design = self.inv.design_for("scale_out")
            if design is None:
                self.emit(not_run_row(LAYER, p.link, "link", "error",
                                      f"{p.link}: {tool} not judged: the inventory has no scale_out design"))
                return
            bound = design.latency_us
        rows = test.check(p.client, parsed, bound, peer)
        for row in rows:
            self.emit({**row, "entity": p.link, "entity_kind": "link"})

    # ------------------------------------------------------------------ the copy test inside a host

    def copy_engines(self, hosts: list[str], benches: list[str]) -> None:
        """Each host's vendor's copy test (nvbandwidth, TransferBench p2p), where the plan
        names it; a host whose vendor has none of the named ones says so."""
        todo: dict[str, CopyBench] = {}
        for h in hosts:
            bench = registry.vendor_of(self.inv.platform_of(h)).copy_bench
            if bench is None or bench.tool not in benches:
                vendor = registry.vendor_of(self.inv.platform_of(h)).name
                self.emit(not_run_row(LAYER, h, "host", "not_run",
                                      f"{h}: {', '.join(benches)} not run: not the {vendor} plug-in's copy test"
                                      + (f" (that is {bench.tool})" if bench else " (it has none)")))
            elif self._off(h, bench.tool):
                self._skipped(h, bench.tool, bench.card_fact)
            elif h in self.b.down:
                self.emit(not_run_row(LAYER, h, "host", "unreachable",
                                      f"{h}: {bench.tool} not run: unreachable ({self.b.down[h]})"))
            else:
                todo[h] = bench
        argvs = {h: bounded(list(bench.argv), self.timeout) for h, bench in todo.items()}
        outcome = fan_out([self.conn(h) for h in todo],
                          lambda c: c.run(argvs[c.host], timeout=self.timeout + 10), forks=self.b.forks)
        for h, bench in todo.items():
            r = outcome[h]
            if isinstance(r, TransportError):
                if not isinstance(r, HostTaskError):
                    self.mark_down(h, r)
                self.emit(not_run_row(LAYER, h, "host", "unreachable" if not isinstance(r, HostTaskError) else "error",
                                      f"{h}: {bench.tool} not run: {r.message}"))
                continue
            self.b.keep_output(h, bench.tool, " ".join(argvs[h]), r.stdout, r.stderr, r.exit_code)
            self._copy_engine_rows(h, bench, r)

    def _copy_engine_rows(self, host: str, bench: CopyBench, r: Result) -> None:
        tool = bench.tool
        if r.exit_code == hostfacts.MISSING_EXIT:
            self._missing_once(host, tool, f"{tool} not found on the PATH")
            return
        if r.timed_out or r.exit_code == 124:
            self.emit(not_run_row(LAYER, host, "host", "timeout",
                                  f"{host}: {tool} ran past {self.timeout:g}s and was stopped"))
            return
        try:
            parsed = bench.parse(r.stdout)
        except ParseError as e:
            self.emit(not_run_row(LAYER, host, "host", "error" if r.exit_code else "parse_failed",
                                  f"{host}: no {tool} result (exit {r.exit_code}): {e.message}; {cause_of(r)}"))
            return
        plat = self.inv.platform_of(host)
        up = self.inv.design_for("scale_up")
        rows = bench.check(host, parsed, up.bandwidth_GBps if up else None, plat.params if plat else {})
        problems = list(parsed["errors"]) + ([f"exit {r.exit_code}: {cause_of(r)}"] if r.exit_code else [])
        if self.inv.hosts[host].cards >= 2 and not any(row["fact"] == bench.card_fact for row in rows):
            problems.append("no device-to-device copy judged (no matrix in the output, or no scale_up design)")
        if problems:
            why = "; ".join(problems)
            self.emit(not_run_row(LAYER, host, "host", "error", f"{host}: {tool}: {why}"))
        for row in rows:
            self.emit(row)
