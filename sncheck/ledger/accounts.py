"""The three accounts of one layout (``sncheck plan``): memory, communication, time; and the verdict.

:class:`Cluster` is what ``-i`` and ``--state-dir`` give: the healthy cards of each supernode
(the state store's quarantined and isolated entities out, as ``sncheck capacity`` counts
them), its platform (card memory, peak, design values). :func:`plan` does the accounts of
one layout; :func:`rank` orders several (``--compare``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sncheck.errors import ConfigError
from sncheck.config.inventory import Inventory
from sncheck.config.playbook import ParallelLayout
from sncheck.health.capacity import CapacityReport, capacity
from sncheck.ledger import comm as comm_mod
from sncheck.ledger.memory import Ledger, Model, Training, ledger, platform_memory
from sncheck.ledger.placement import Domains, Placement
from sncheck.ledger.tiers import Figures, design_figures
from sncheck.ledger.timing import DEFAULT_MFU, TimeAccount, time_account
from sncheck.ledger.verdict import Verdict, judge
from sncheck.topology import Topology
from sncheck.store.state import StateStore


class Cluster:
    """An inventory's supernodes, platform and healthy cards (``-i``, ``--state-dir``)."""

    def __init__(self, inventory: Inventory, state_dir: str | None = None) -> None:
        self.inventory = inventory
        self.out: list[str] = []
        if state_dir:
            with StateStore(Path(state_dir).expanduser()) as store:
                self.out = [r["entity"] for r in store.current_status()]
        self.topo = Topology(self.inventory)
        inv = self.inventory
        names = {getattr(inv.platform_of(h), "name", None) for h in inv.hosts}
        self.platform = inv.platform_of(next(iter(inv.hosts))) if len(names) == 1 else None

    @property
    def name(self) -> str:
        return self.inventory.name

    def capacity(self, tp: int, ep: int, pp: int, dp: int | None) -> tuple[dict, CapacityReport]:
        probe = ParallelLayout(tp=tp, ep=ep, pp=pp, dp=dp or _some_dp(tp, ep))
        report = capacity(self.topo, self.out, probe)
        cap = {"total_cards": report.total_cards, "healthy_cards": report.healthy_cards, "out": self.out,
               "max_dp": report.max_dp, "fits": report.fits if dp else report.max_dp > 0,
               "replica_cards": tp * pp, "warnings": report.warnings}
        return cap, report

    def domains(self, report: CapacityReport) -> Domains:
        """The supernodes' healthy cards, in inventory order; beyond them, more of the largest."""
        inv = self.inventory
        host_cards = tuple(inv.hosts[sn.hosts[0]].cards for sn in inv.supernodes)
        full = max(s.cards for s in report.supernodes)
        return Domains(tuple(s.healthy for s in report.supernodes), host_cards,
                       tuple(s.name for s in report.supernodes), extra_size=full)

    def figures(self) -> Figures | None:
        if not self.inventory.design:
            return None
        plat = f", platform {self.platform.name}" if self.platform is not None else ""
        return design_figures(self.inventory.design, f"design (inventory {self.name}{plat})")

    def memory(self) -> float | None:
        return platform_memory(self.platform)

    def peak_tflops(self, precision: str) -> float | None:
        peaks = getattr(self.platform, "peak_tflops", None) or {}
        return peaks.get(precision)


def _some_dp(tp: int, ep: int) -> int:
    dp = 1
    while (tp * dp) % ep:
        dp += 1
    return dp


@dataclass
class Options:
    """The choices of one plan that are not the layout."""

    card_memory: float | None = None
    memory_source: str | None = None
    reserve: float = 0.0
    global_batch: int | None = None    # sequences a step; None: 4 x PP micro-batches a replica
    mfu: float = DEFAULT_MFU
    peak_tflops: float | None = None   # per card; None: the platform's
    overlap: bool = False
    figures: Figures | None = None
    domain_cards: int | None = None    # without -i: cards per scale-up domain
    host_cards: int | None = None


@dataclass
class Plan:
    layout: ParallelLayout
    ledger: Ledger
    capacity: dict | None
    domains: Domains | None
    comm: list | None = None
    time: TimeAccount | None = None
    verdict: Verdict | None = None
    global_batch: int | None = None
    m: int | None = None
    notes: list[str] = field(default_factory=list)
    replicas: int | None = None        # the DP that fits, 0 when none does (the accounts show one replica)

    @property
    def fits(self) -> bool | None:
        """Memory and capacity: None when memory cannot be said."""
        cap_ok = (self.capacity is None or bool(self.capacity["fits"])) and self.replicas != 0
        if self.ledger.fits is None:
            return None if cap_ok else False
        return self.ledger.fits and cap_ok

    @property
    def ok(self) -> bool:
        """The exit-0 condition: it fits (or memory cannot be said) and its share is under the upper band."""
        return self.fits is not False and (self.verdict is None or self.verdict.under_upper_band)

    def to_dict(self) -> dict:
        lay = self.layout
        dp = lay.dp if self.replicas is None else self.replicas
        return {"layout": {"tp": lay.tp, "ep": lay.ep, "pp": lay.pp, "dp": dp, "world": lay.tp * lay.pp * dp},
                "per_card": self.ledger.to_dict(), "capacity": self.capacity, "fits": self.fits,
                "global_batch": self.global_batch, "micro_batches": self.m,
                "domains": None if self.domains is None else {"cards": list(self.domains.sizes),
                                                              "hosts_of": list(self.domains.host_cards),
                                                              "names": list(self.domains.names)},
                "communication": None if self.comm is None else [c.to_dict() for c in self.comm],
                "time": None if self.time is None else self.time.to_dict(),
                "verdict": None if self.verdict is None else self.verdict.to_dict(),
                "ok": self.ok, "notes": list(self.notes)}


def plan(model: Model, train: Training, tp: int, ep: int, pp: int, dp: int | None, opts: Options,
         cluster: Cluster | None = None) -> Plan:
    """The memory ledger, the capacity, and (with tier figures) the communication and time accounts."""
    cap = report = None
    if cluster is not None:
        cap, report = cluster.capacity(tp, ep, pp, dp)
    if dp is None:
        if cap is None:
            raise ConfigError("dp=... (as many replicas as fit) needs -i INVENTORY to count the cards; or give dp=N")
        dp = cap["max_dp"]
    led = ledger(model, train, tp, ep, pp, max(dp, 1), opts.card_memory, opts.reserve)  # 0 fit: show what one needs
    lay = ParallelLayout(tp=tp, ep=ep, pp=pp, dp=max(dp, 1))
    domains = cluster.domains(report) if cluster is not None and report is not None else (
        Domains.uniform(opts.domain_cards, opts.host_cards) if opts.domain_cards else None)
    result = Plan(lay, led, cap, domains, replicas=dp)
    if opts.global_batch is not None:  # a batch the replicas cannot split is no layout, figures or not
        comm_mod.micro_batches(opts.global_batch, train.micro_batch, lay.dp)
    if opts.figures is None:
        return result
    if domains is None:
        raise ConfigError("the communication account needs the scale-up domain: -i INVENTORY or --domain CARDS")
    gb = opts.global_batch or lay.dp * train.micro_batch * 4 * lay.pp
    if opts.global_batch is None:
        result.notes.append(f"global batch {gb} sequences (4 x PP micro-batches a replica): give --global-batch")
    m = comm_mod.micro_batches(gb, train.micro_batch, lay.dp)
    result.global_batch, result.m = gb, m
    if (tp > 1 or ep > 1 or pp > 1) and (model.hidden is None or model.layers is None):
        result.notes.append("communication account: give --hidden and --layers (TP, EP and PP volumes need them)")
        return result
    result.comm = comm_mod.account(model, train, lay, Placement(lay, domains), m)
    peak = opts.peak_tflops or (cluster.peak_tflops(train.precision) if cluster is not None else None)
    if peak is None:
        result.notes.append(f"time account: no peak for this card in {train.precision}: give --peak-tflops")
        return result
    result.time = time_account(model, lay, train.seq, gb, m, result.comm, opts.figures, peak * 1e12, opts.mfu,
                               opts.overlap, train.zero)
    result.notes += result.time.notes
    result.verdict = judge(result.time, max(domains.sizes))
    return result


def rank(plans: list[Plan]) -> list[Plan]:
    """Layouts that fit first, then by step time, then by share."""
    def key(p: Plan) -> tuple:
        step = p.time.step_s if p.time else float("inf")
        share = p.time.share if p.time else float("inf")
        return (p.fits is False, step, share)
    return sorted(plans, key=key)
