"""What an SSH host is read for besides its vendor's fact commands: the kernel log since
the last run, and the fabric error counters before and after the run.

* ``kernel_log`` (tool ``kernel-log``): :func:`sncheck.vendors.kernel_log.read_command`,
  bounded by :data:`KERNEL_LOG_TIMEOUT_S` (a hanging ``dmesg`` says "timed out" and holds
  up nothing else: every host is read at once, in its own host-facts task). Only the
  lines after the last run count: the journal cursor (``--after-cursor``) or, without a
  journal, the last ``dmesg --time-format iso`` timestamp, kept per inventory and host in
  ``<state dir>/kernel-log-cursors.json``. Without ``--state-dir`` (or on a host's first
  run) every line of this boot's log counts. The same file keeps each host's reports of the
  last 30 days (``reports``: what a table's count over a window counts, by the log's own
  timestamps) and the driver version its log last showed (``driver``). Each Xid names the card whose bus id the
  host's card listing read just before lists (the vendor plug-in's ``bus_listing``:
  NVIDIA's ``nvidia-smi -q`` or ``-q -x``), where that listing names every card, else as
  :func:`name_cards` says.
* ``ib_counters`` (tool ``ib-counters``): the NICs' port counters, as the vendor's
  ``scale_out`` reads them (every port counter file under ``<sysfs_root>/class/infiniband``;
  option ``sysfs_root``, default ``/sys``: a container that sees the host's sysfs
  elsewhere names it), on hosts whose platform lists its NICs (``ibstat``). Each port
  carries its rail, and the row the counters whose growth is a fault.
* ``nvlink_errors`` is the vendor's own fact command (``nvidia-smi nvlink -e``), read
  again by :meth:`HostReads.after`.

Each read is a ``host_fact`` row whose ``value`` carries what was read and ``read``: 0
for the host facts' read, then 1, 2, ... The rules judge them
(:mod:`sncheck.health.fabric`); nothing here decides pass or fail.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from collections.abc import Collection
from typing import Any, Callable

from sncheck.config.jsonio import read_json
from sncheck.config.fileio import write_atomic
from sncheck.errors import ConfigError
from sncheck.vendors import facts as hostfacts
from sncheck.vendors import kernel_log, registry
from sncheck.vendors.base import ScaleOut
from sncheck.vendors.hostjudge import bind

KERNEL_LOG_TIMEOUT_S = 60.0
CURSOR_FILE = "kernel-log-cursors.json"
log = logging.getLogger("sncheck.backends.hostreads")


def name_cards(listed: dict[str, int | None], known: dict[str, int], cards: int,
               buses: list[str], gpu_buses: Collection[str]) -> dict[str, int]:
    """Bus id -> card index for the bus ids of a kernel log's reports.

    ``listed``: the bus ids of the host's ``nvidia-smi -q`` now, with the card each names
    (None where the listing is not whole). A bus id it lacks is a GPU that fell off the bus
    (Xid 79) or never came up. It is named, in this order, by ``known`` (the host's last
    whole listing, kept in the state dir) or by its place in PCI bus order: nvidia-smi
    numbers GPUs in bus order, so when the listed bus ids and the reports' missing ones are
    together as many as the host's cards, each one's rank is its index. Else it names no
    card (the host). ``gpu_buses``: the bus ids a GPU driver's own report names; only those
    take a rank, so an AER or GHES record at a root port or a NIC
    never takes a card's place."""
    out = {b: i for b, i in listed.items() if i is not None}
    missing = sorted({b for b in buses if b and b not in listed})
    ranked = [b for b in missing if b in gpu_buses]
    if ranked and not out and len(listed) + len(ranked) == cards:
        out = {b: i for i, b in enumerate(sorted([*listed, *ranked]))}
        if any(known.get(b) not in (None, i) for b, i in out.items()):
            return {}  # the last whole listing says otherwise (cards moved?): trust neither
    for b in missing:
        if b not in out and b in known and known[b] not in out.values():
            out[b] = known[b]
    return out


def _check_kernel(namer: Callable[[list[str], Collection[str]], dict[str, int]], since_last: bool, after_time: str | None,
                  earlier: list[dict], driver: str | None):
    def check(host: str, parsed: dict[str, Any], _expect: hostfacts.Expect) -> list[dict]:
        kept = kernel_log.since(parsed, after_time)
        # a report already on record (the journal's cursor was lost: this boot read again) is not new
        known = {k for r in earlier if (k := kernel_log.report_key(r)) is not None}
        fresh = [e for e in kept["events"] if kernel_log.report_key(e, parsed.get("boot")) not in known]
        # a NIC's or a task's report names no card: its bus id is not a GPU that fell off the bus
        hosts_own = kernel_log.HOST_SOURCES
        cards_of_bus = namer([e.get("bus_id") or "" for e in fresh if e["source"] not in hosts_own],
                             {e.get("bus_id") or "" for e in fresh if e["source"] in kernel_log.GPU_SOURCES})
        events = [{**e, "card": cards_of_bus.get(e.get("bus_id") or "") if e["source"] not in hosts_own else None}
                  for e in fresh]
        errors = kept.get("errors") or []  # the parser's, and since's: a clock gone back
        if not parsed.get("complete"):
            errors = [*errors, "the read ended before its end marker (cut short)"]
        shown = ", ".join(kernel_log.describe(e) for e in events[:6]) or "none"
        where = "since the last run" if since_last else "in this boot's log (no earlier run on record)"
        msg = (f"kernel log: {len(events)} reports {where}: {shown}"
               + (f"; {hostfacts.listed(errors)}" if errors else ""))
        # earlier: the reports kept from earlier runs (a count over a window spans runs);
        # boot: places dmesg's uptime stamps; driver_version: the driver the reports ran on
        value = {"events": events, "lines": parsed.get("lines"), "since_last_run": since_last,
                 "mapped_cards": len(cards_of_bus), "earlier": earlier, "boot": parsed.get("boot"),
                 "driver_version": parsed.get("driver_version") or driver}
        return [hostfacts.fact_row(host, "kernel_log", value, None, not errors, msg, "kernel-log")]
    return check


check_kernel = _check_kernel  # (the mock's simulated read judges its log as an SSH host's is: mockfacts)


def check_ib(read_no: int, so: ScaleOut, devices: list[str] | None = None):
    """The ``ib_counters`` row of one read; its ports' rails from its own devices and ``devices``
    (the host's other reads': a device missing from one read must not move the others' rails)."""
    def check(host: str, parsed: dict[str, Any], _expect: hostfacts.Expect) -> list[dict]:
        ports = parsed.get("ports") or []
        if so.rails is not None:
            rail = so.rails([*(devices or ()), *(p["device"] for p in ports if p.get("device"))])
            ports = [{**p, "rail": rail.get(p.get("device"))} for p in ports]
        errors = parsed.get("errors") or []
        msg = (f"IB port counters of {len(ports)} ports read (judged by their growth during the run)"
               if ports else "no RDMA devices under /sys/class/infiniband: no IB port counters to judge")
        if errors:
            msg += f"; {hostfacts.listed(errors)}"
        value = {"ports": ports, "read": read_no, "error_counters": list(so.error_counters)}
        return [hostfacts.fact_row(host, "ib_counters", value, None, not errors, msg, so.counters_tool)]
    return check


def counter_rows(host: str, reads: list[dict[str, Any]], so: ScaleOut) -> list[dict]:
    """The ``ib_counters`` rows of ``reads`` (parsed outputs of ``so``'s counter read, the
    earliest first: read 0, 1, ...) as a run records them (:func:`check_ib`): a pasted read
    (``sncheck parse ib-counters``) judged by the rules a run's reads are judged by."""
    devices = [p["device"] for parsed in reads for p in parsed.get("ports") or [] if p.get("device")]
    return [row for n, parsed in enumerate(reads)
            for row in check_ib(n, so, devices)(host, parsed, hostfacts.Expect(cards=0))]


class HostReads:
    """The kernel log and counter reads of one SSH backend (see the module)."""

    def __init__(self, inventory_name: str, state_dir: str | None, sysfs_root: str = "/sys") -> None:
        self.key = inventory_name
        self.path = Path(state_dir) / CURSOR_FILE if state_dir else None
        self.sysfs = sysfs_root
        self.cursors: dict[str, dict] = self._load()
        self.kernel_text: dict[str, str] = {}  # host -> the last kernel log read, for the evidence
        self.reads: dict[str, int] = {}
        self.ib_devices: dict[str, list[str]] = {}  # host -> the RDMA devices its counter reads named
        self._lock = threading.Lock()

    # -------------------------------------------------------------- cursors

    def _load(self) -> dict[str, dict]:
        mine = self._read_file().get(self.key)
        return {h: c for h, c in mine.items() if isinstance(c, dict)} if isinstance(mine, dict) else {}

    def _read_file(self) -> dict:
        """The cursor file's content; {} when it is absent, damaged, a link, or not a regular
        file (this run then reads every line). Through the one reader: a FIFO planted there
        never holds the read, and the read stops at the JSON limit."""
        if self.path is None or self.path.is_symlink():
            return {}
        try:
            data = read_json(self.path, "kernel-log cursors")
        except ConfigError:  # damaged (nested past the interpreter's depth included): read every line
            return {}
        return data if isinstance(data, dict) else {}

    def save(self) -> None:
        """Keep each host's cursor for the next run, replacing the file whole; a FIFO, device
        or socket planted under its name is left alone (it was renamed over), and said."""
        if self.path is None or not self.cursors:
            return
        data = self._read_file()
        data[self.key] = self.cursors
        try:
            write_atomic(self.path, json.dumps(data, indent=1, sort_keys=True))
        except (ConfigError, OSError) as e:
            log.warning("kernel-log cursors not kept (the next run reads every line again): %s", e)

    def _next(self, host: str) -> int:
        with self._lock:
            n = self.reads.get(host, -1) + 1
            self.reads[host] = n
            return n

    # -------------------------------------------------------------- reads

    def kernel_command(self, host: str, check: Any = None) -> hostfacts.FactCommand:
        """The kernel log read of ``host`` now (after the last run's cursor): its argv is what
        a backend may start ahead of the host facts."""
        cursor = self.cursors.get(host, {})
        return hostfacts.command("kernel_log", "kernel-log", ["sh", "-c", kernel_log.read_command(cursor.get("cursor"))],
                                 kernel_log.parse_kernel_log, check, "kernel_log")

    def counters_command(self, expect: hostfacts.Expect, tools: set[str]) -> list[str] | None:
        """The argv of the NICs' counter read on a host of this platform (None: no such read)."""
        so = registry.vendor_of(expect.platform).scale_out
        if so is None or so.counters_argv is None or so.nic_tool not in tools:
            return None
        return list(so.counters_argv(self.sysfs))

    def kernel(self, host: str, expect: hostfacts.Expect, run: Callable[[hostfacts.FactCommand], Any],
               raw_outputs: list[dict], checks: dict[str, bool]) -> list[dict]:
        """The kernel log rows of one host (``run`` runs a FactCommand there)."""
        cursor = self.cursors.get(host, {})
        listing = registry.vendor_of(expect.platform).bus_listing
        listed = listing.buses(raw_outputs, expect) if listing else {}
        known = {str(b): int(i) for b, i in (cursor.get("bus_ids") or {}).items() if isinstance(i, int)}
        whole = {b: i for b, i in listed.items() if i is not None}
        if whole and len(whole) == expect.cards:
            with self._lock:  # the next run names a card that has left the listing by this one
                self.cursors[host] = {**self.cursors.get(host, {}), "bus_ids": whole}

        def namer(buses: list[str], gpu_buses: Collection[str]) -> dict[str, int]:
            return name_cards(listed, known, expect.cards, buses, gpu_buses)

        since_last = bool(cursor.get("cursor") or cursor.get("time"))
        stored = cursor.get("reports")
        earlier = kernel_log.kept_reports(stored if isinstance(stored, list) else [], [], None)
        driver = cursor.get("driver") if isinstance(cursor.get("driver"), str) else None
        cmd = self.kernel_command(host, _check_kernel(namer, since_last,
                                                      None if cursor.get("cursor") else cursor.get("time"),
                                                      earlier, driver))
        if hostfacts.switched_off(cmd, checks):
            return hostfacts.skipped_rows(host, cmd)
        res = run(cmd)
        self.kernel_text[host] = (f"# command: {cmd.argv[-1]}\n# exit: {res.exit_code}\n" + (res.stdout or "")
                                  + (f"# stderr: {res.stderr}" if res.stderr else "")
                                  + ("# timed out\n" if res.timed_out else ""))
        parsed, rows = hostfacts.outcome(host, cmd, expect, exit_code=res.exit_code, stdout=res.stdout,
                                         stderr=res.stderr, timed_out=res.timed_out, duration=res.duration)
        if parsed is not None and parsed.get("cursor_lost"):
            with self._lock:  # the journal no longer has it: read the whole boot next time
                old = self.cursors.pop(host, {})
                self.cursors[host] = {k: v for k, v in old.items() if k in ("bus_ids", "reports", "driver")}
        elif parsed is not None and not parsed.get("errors") and parsed.get("complete"):
            judged: dict[str, Any] = next((r["value"] for r in rows if r.get("fact") == "kernel_log" and isinstance(r.get("value"), dict)),
                          {})
            with self._lock:  # the next read starts after what this one saw, and counts what it found
                now = self.cursors.get(host, cursor)
                kept = {k: v for k, v in now.items() if k in ("cursor", "time")}
                if parsed.get("cursor"):
                    kept = {"cursor": parsed["cursor"]}
                elif parsed.get("last_time"):
                    kept = {"time": parsed["last_time"]}
                bus_ids = now.get("bus_ids") or cursor.get("bus_ids")
                before = now.get("reports")
                reports = kernel_log.kept_reports(before if isinstance(before, list) else [],
                                                  judged.get("events") or [], parsed.get("boot"))
                driver = parsed.get("driver_version") or now.get("driver")
                self.cursors[host] = {**kept, **({"bus_ids": bus_ids} if bus_ids else {}),
                                      **({"reports": reports} if reports else {}), **({"driver": driver} if driver else {})}
        return rows

    def ib(self, host: str, expect: hostfacts.Expect, run: Callable[[hostfacts.FactCommand], Any],
           checks: dict[str, bool], read_no: int, so: ScaleOut) -> list[dict]:
        assert so.counters_argv is not None and so.parse_counters is not None
        cmd = bind(hostfacts.command("ib_counters", so.counters_tool, so.counters_argv(self.sysfs),
                                     so.parse_counters, check_ib(read_no, so, self.ib_devices.get(host)),
                                     "ib_counters"))  # its listing too
        if hostfacts.switched_off(cmd, checks) or checks.get(so.nic_tool) is False:
            return hostfacts.skipped_rows(host, cmd)
        res = run(cmd)
        rows = hostfacts.outcome(host, cmd, expect, exit_code=res.exit_code, stdout=res.stdout, stderr=res.stderr,
                                 timed_out=res.timed_out, duration=res.duration)[1]
        with self._lock:  # the next read's rails count the devices this one named (a NIC lost between them)
            seen = self.ib_devices.setdefault(host, [])
            seen += [d for r in rows if isinstance(r.get("value"), dict) for p in r["value"].get("ports") or []
                     if (d := p.get("device")) and d not in seen]
        return rows

    def counters(self, host: str, expect: hostfacts.Expect, commands: list[hostfacts.FactCommand],
                 run: Callable[[hostfacts.FactCommand], Any], checks: dict[str, bool], again: bool,
                 nvlink: bool | None = None) -> list[dict]:
        """A read of the host's counters: the NICs' port counters (when its platform lists
        its NICs: ``ibstat``) and, ``again`` (after the traffic) or ``nvlink`` (a run without host
        facts), ``nvlink_errors`` too (when its platform has it: the host facts read it the
        first time)."""
        n = self._next(host)
        rows: list[dict] = []
        names = {c.name for c in commands}
        if (again if nvlink is None else nvlink) and "nvlink_errors" in names:
            cmd = next(c for c in commands if c.name == "nvlink_errors")
            if not hostfacts.switched_off(cmd, checks):
                res = run(cmd)
                found = hostfacts.outcome(host, cmd, expect, exit_code=res.exit_code, stdout=res.stdout,
                                          stderr=res.stderr, timed_out=res.timed_out, duration=res.duration)[1]
                for r in found:
                    if isinstance(r.get("value"), dict):
                        r["value"] = {**r["value"], "read": n}
                rows += found
        so = registry.vendor_of(expect.platform).scale_out
        if so is not None and so.counters_argv is not None and so.nic_tool in {c.tool for c in commands}:
            rows += self.ib(host, expect, run, checks, n, so)
        return rows
