"""One host-fact judgement for every backend: which commands, how their outcome is judged,
which device each fact names, and the cross-host step of a scale-up domain.

Every backend (mock, SSH, Slurm) and ``node-check`` reads host facts through one
:class:`FactJudge`. What differs is only how a backend *reads* a host: SSH runs each
command over paramiko, Slurm collects every command's outcome in one ``srun`` step,
``node-check`` runs them here, the mock renders them from real captures. Each hands the
judge a ``run(cmd)`` for a reachable host (or an ``unreachable`` row), and the judge does
the rest the same way everywhere:

* the commands of the host's platform (its vendor plug-in), plus :data:`HOST_WIDE`
  (commands every host runs whatever its vendor: hook new fact sources there), evaluated
  by :func:`sncheck.vendors.facts.check_host` (retry of "not ready yet" output within
  the platform's window, checks the inventory switched off, a missing or hung tool);
* :func:`per_device`: a failed fact whose tool named the devices at fault becomes one row
  per device, ``entity`` and ``entity_kind`` set: the card (``<host>/gpu<i>``), its NIC
  (``<host>/nic<rail>``, kind ``nic``) or a scale-up link inside the host (kind ``link``).
  The host is named only for a host-wide cause (the driver, IMEX, every port down, a
  missing tool), or when the tool did not say which device;
* the devices a host lists (GPU UUIDs, serials, bus ids: a row's ``ids``) must be the
  ones it listed at its first read in this run: a retest that sees other devices is a
  ``devices_changed`` finding on the host, never "not reproduced";
* one card in one machine (:meth:`FactJudge.shared`): a globally unique identity (a GPU
  UUID or serial, amd-smi's UUID, an Ascend die's VDie ID: :mod:`sncheck.vendors.identity`;
  never a PCI bus id, which every machine numbers alike, nor a placeholder) that two hosts
  list is a ``devices_shared`` finding on each host read now, naming the other host and
  the identity: a cloned or misreported identity, or two names reaching one machine, so
  neither listing can be trusted. A host read alone (a retest) is held to the identities
  the others listed at their last read in this run;
* the domain step (:meth:`FactJudge.domains`): each supernode on a platform with a
  ``domain_check`` is judged over a fresh read of every reachable host of it
  (:meth:`FactJudge.to_read`), so a retest of one tray sees its rack as it is now, on
  every backend alike; rows about hosts that were not asked for are not emitted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sncheck.rows import host_fact_row
from sncheck.model import card_id, link_id, nic_id
from sncheck.vendors import parsers, registry
from sncheck.vendors.facts import Expect, FactCommand, check_host, listed
from sncheck.vendors.identity import unique_id

Run = Callable[[FactCommand], Any]  # runs one fact command on the host: an outcome (a transport Result)
Emit = Callable[[dict], None]

# Fact commands every host runs, whatever its vendor (after its platform's own): the home
# of a new vendor-neutral fact source (the kernel log's Xid lines, error counters). Each is
# a FactCommand whose check names the devices it can (fact_row's cards / nics / links).
HOST_WIDE: tuple[FactCommand, ...] = ()

_SPLIT_KEYS = ("cards", "nics", "links")


def devices_of(row: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(entity, entity kind, what is wrong there) for each device a failed row names."""
    host = str(row["host"])
    out: list[tuple[str, str, str]] = []
    for index, what in (row.get("cards") or {}).items():
        out.append((card_id(host, int(index)), "card", what))
    for rail, what in (row.get("nics") or {}).items():
        out.append((nic_id(host, int(rail)), "nic", what))
    for pair, what in (row.get("links") or {}).items():
        a, b = (int(i) for i in str(pair).split("-"))
        out.append((link_id(card_id(host, a), card_id(host, b)), "link", what))
    return out


def per_device(rows: Iterable[dict]) -> Iterator[dict]:
    """One row per device a failed fact names (the fact, its value and tool kept; the
    message says the device and what is wrong there); every other row as it is."""
    for row in rows:
        named = devices_of(row) if not row.get("ok") else []
        base = {k: v for k, v in row.items() if k not in _SPLIT_KEYS}
        if not named:
            yield base
        for entity, kind, what in named:
            yield {**base, "entity": entity, "entity_kind": kind, "message": f"{entity}: {what}"}


def bind(cmd: FactCommand) -> FactCommand:
    """``cmd`` with its output's view and that view's listing (the view whose parser is the
    command's: ``nvidia-smi -q`` is read by ``nvidia-smi-q``), so its outcome is judged whole
    or not (:func:`sncheck.vendors.facts.listing_problems`); as it is when no view lists records."""
    if cmd.listing is not None:
        return cmd
    view = parsers.view_of(cmd.parse)
    spec = parsers.listings().get(view) if view else None
    return replace(cmd, view=view, listing=spec) if spec else cmd


def judge_host(host: str, expect: Expect, commands: Sequence[FactCommand], run: Run, *,
               checks: Mapping[str, bool] | None = None, window_s: float = 0.0, interval_s: float = 5.0,
               sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> Iterator[dict]:
    """The rows of one reachable host, devices named, as each command is judged: a pure
    function of what ``run`` returns (the mock renders and judges each distinct host
    state once)."""
    rows = check_host(host, expect, [bind(c) for c in (*commands, *HOST_WIDE)], run, checks=dict(checks or {}),
                      window_s=window_s, interval_s=interval_s, sleep=sleep, clock=clock)
    return per_device(rows)


@dataclass
class FactJudge:
    """The host-fact judgement of one run (one per backend instance: it remembers each
    host's devices at its first read). ``window_s`` / ``interval_s`` override the
    platform's fabric retry window and interval (backend options)."""

    inventory: Any  # sncheck.config.inventory.Inventory, or None (node-check without one)
    window_s: float | None = None
    interval_s: float | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    first_ids: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    last_ids: dict[str, frozenset[str]] = field(default_factory=dict)  # host -> its unique ids at its last read
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ---------------------------------------------------------------- one host

    def platform(self, host: str):
        inv = self.inventory
        return inv.platform_of(host) if inv is not None and host in inv.hosts else None

    def expect(self, host: str, cards: int | None = None) -> Expect:
        inv = self.inventory
        known = inv is not None and host in inv.hosts
        return Expect(cards=cards if cards is not None else (inv.hosts[host].cards if known else 0),
                      platform=self.platform(host),
                      domain_hosts=len(inv.supernode_of(host).hosts) if known else None)

    def commands(self, host: str) -> list[FactCommand]:
        plat = self.platform(host)
        return [bind(c) for c in registry.vendor_of(plat).commands_for(plat)]

    def checks(self, host: str) -> dict[str, bool]:
        inv = self.inventory
        return inv.checks_of(host) if inv is not None and host in inv.hosts else {}

    def windows(self, host: str) -> tuple[float, float]:
        plat = self.platform(host)
        params = plat.params if plat else {}
        window = self.window_s if self.window_s is not None else float(params.get("fabric_retry_s", 0.0))
        every = self.interval_s if self.interval_s is not None else float(params.get("fabric_retry_every_s", 5.0))
        return window, every

    def judge(self, host: str, run: Run, *, cards: int | None = None) -> Iterator[dict]:
        """Every fact of reachable ``host``, judged, as each command is; ``run(cmd)`` is the
        backend's way of running one command there."""
        window, every = self.windows(host)
        rows: list[dict] = []
        for row in judge_host(host, self.expect(host, cards), self.commands(host), run, checks=self.checks(host),
                              window_s=window, interval_s=every, sleep=self.sleep, clock=self.clock):
            rows.append(row)
            yield row
        yield from self.changed(host, rows)

    def seen(self, host: str, rows: list[dict]) -> list[dict]:
        """``rows`` of ``host`` (judged already), and :meth:`changed`'s."""
        return rows + self.changed(host, rows)

    def changed(self, host: str, rows: list[dict]) -> list[dict]:
        """A ``devices_changed`` finding when the devices ``host`` lists in ``rows`` are not
        the ones it listed at its first read in this run; else nothing."""
        now = {str(r["fact"]): tuple(r["ids"]) for r in rows
               if r.get("status") == "ok" and isinstance(r.get("ids"), (list, tuple)) and r["ids"]}
        named = {i for ids in now.values() for i in ids}   # (one card's id in several facts: asked once)
        with self._lock:
            self.last_ids[host] = frozenset(i for i in named if unique_id(i))
            first = self.first_ids.setdefault(host, {})
            changed = [(fact, first[fact], ids) for fact, ids in now.items() if fact in first and first[fact] != ids]
            for fact, ids in now.items():
                first.setdefault(fact, ids)
        out: list[dict] = []
        for fact, before, after in changed:
            gone = [i for i in before if i not in after]
            new = [i for i in after if i not in before]
            what = (f"gone: {listed(gone)}" if gone else "") + ("; " if gone and new else "") + \
                   (f"new: {listed(new)}" if new else "")
            out.append(host_fact_row(
                host, "devices_changed", len(after), len(before), False, tool=_tool_of(rows, fact),
                message=f"{host}: the devices changed since the first read of this run ({fact}: "
                        f"{len(before)} then {len(after)} listed; {what or 'another order'}): "
                        "a retest of other devices proves nothing about the first ones"))
        return out

    def shared(self, read: Iterable[str], rows_by_host: Mapping[str, list[dict]]) -> list[dict]:
        """A ``devices_shared`` row on each host of ``read`` that lists a unique identity
        (:func:`unique_id`) another host listed at its last read in this run: one card is
        in one machine."""
        with self._lock:
            owners: dict[str, list[str]] = {}
            for host, ids in self.last_ids.items():
                for i in ids:
                    owners.setdefault(i, []).append(host)
        twice = {i: hosts for i, hosts in owners.items() if len(hosts) > 1}
        out: list[dict] = []
        for host in read if twice else ():
            mine = self.last_ids.get(host, frozenset())
            also = {i: [h for h in twice[i] if h != host] for i in sorted(mine & twice.keys())}
            if not also:
                continue
            others = sorted({h for hs in also.values() for h in hs})
            said = listed([f"{i} (also {', '.join(hs)})" for i, hs in also.items()])
            out.append(host_fact_row(
                host, DEVICES_SHARED, len(also), 0, False, tool=_id_tool(rows_by_host.get(host, []), set(also)),
                message=f"{host}: lists {len(also)} device identit{'y' if len(also) == 1 else 'ies'} that "
                        f"{', '.join(others)} list{'s' if len(others) == 1 else ''} too: {said}; one card is in one "
                        "machine: a cloned or misreported identity, or two names reaching one machine, so these "
                        "hosts' listings cannot be trusted"))
        return out

    @staticmethod
    def reachable(host: str, tool: str, message: str) -> dict:
        return host_fact_row(host, "reachable", True, True, True, tool=tool, message=f"{host}: {message}")

    @staticmethod
    def unreachable(host: str, tool: str, cause: str) -> dict:
        return host_fact_row(host, "reachable", False, True, False, status="unreachable", tool=tool,
                             message=f"{host}: unreachable: {cause}")

    # ---------------------------------------------------------------- many hosts

    def to_read(self, hosts: Sequence[str]) -> tuple[str, ...]:
        """``hosts`` and every other host of their domains whose platform judges the
        domain whole: the domain step reads them all, now."""
        inv = self.inventory
        out = list(dict.fromkeys(hosts))
        if inv is None:
            return tuple(out)
        for sn in inv.supernodes:
            if sn.platform and _domain_check(sn.platform) is not None and set(sn.hosts) & set(hosts):
                out += [h for h in sn.hosts if h not in out]
        return tuple(out)

    def domains(self, asked: Iterable[str], rows_by_host: Mapping[str, list[dict]]) -> list[dict]:
        """The cross-host step: each supernode of an asked host is judged whole by its
        vendor's domain check over the rows read now; the rows about asked hosts."""
        inv = self.inventory
        asked = set(asked)
        out: list[dict] = []
        if inv is None:
            return out
        for sn in inv.supernodes:
            check = _domain_check(sn.platform) if sn.platform else None
            if check is None or not asked & set(sn.hosts):
                continue
            rows = [r for h in sn.hosts for r in rows_by_host.get(h, ())]
            out += [r for r in per_device(check(registry.platform(sn.platform), sn.name, sn.hosts, rows, inv.hosts))
                    if r["host"] in asked]
        return out

    def read(self, hosts: Sequence[str], fan_out: Callable[[tuple[str, ...], "Reached", "Lost"], None],
             emit: Emit) -> None:
        """The whole host-fact step over ``hosts``. ``fan_out(todo, reached, lost)`` is the
        backend's way of reading hosts: for each host of ``todo`` it calls
        ``reached(host, tool, how, run)`` once connected (``run`` runs one command there; or
        ``rows=`` the host's rows, judged already) or ``lost(host, row)`` with the row that
        says why it could not be read. Rows of asked hosts are emitted as each host is
        judged; then the domain step's."""
        asked = set(hosts)
        got: dict[str, list[dict]] = {}
        lock = threading.Lock()

        def out(host: str, rows: Iterable[dict]) -> None:
            if host in asked:
                with lock:
                    for r in rows:
                        emit(r)

        def reached(host: str, tool: str, how: str, run: Run | None = None, *,
                    rows: list[dict] | None = None, cards: int | None = None) -> None:
            out(host, [self.reachable(host, tool, how)])
            mine = got.setdefault(host, [])
            judged: Iterable[dict]
            if rows is not None:
                judged = self.seen(host, rows)
            elif run is not None:
                judged = self.judge(host, run, cards=cards)
            else:
                raise TypeError("reached() needs the host's rows or a way to run its commands")
            for row in judged:
                mine.append(row)
                out(host, [row])

        def lost(host: str, row: dict) -> None:
            got.pop(host, None)
            out(host, [row])

        fan_out(self.to_read(hosts), reached, lost)
        for r in self.shared([h for h in got if h in asked], got):
            out(r["host"], [r])
        for r in self.domains(asked, got):
            out(r["host"], [r])


DEVICES_SHARED = "devices_shared"
def _id_tool(rows: list[dict], ids: set[str]) -> str | None:
    """The tool that listed one of ``ids`` (nvidia-smi a GPU's UUID, ibstat an adapter's GUID)."""
    return next((r.get("tool") for r in rows if r.get("ids") and ids & {str(i) for i in r["ids"]}), None)


Reached = Callable[..., None]
Lost = Callable[[str, dict], None]


def _domain_check(platform: str):
    return registry.vendor_of(registry.platform(platform)).domain_check


def _tool_of(rows: list[dict], fact: str) -> str | None:
    return next((r.get("tool") for r in rows if r.get("fact") == fact), None)
