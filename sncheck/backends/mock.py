"""A simulated supernode cluster: an alpha-beta cost model with seeded noise and faults.

The cost model (published; README "Mock backend cost model"):

* Card injection capacity: ``B_card = s_c * B_up`` where ``s_c`` is the card's speed
  (1, or the ``slow_card`` factor) and ``B_up`` the scale-up design bandwidth.
* Pair bandwidth: intra-host and scale-up pairs get ``B_tier * min(s_a, s_b)``;
  scale-out pairs get ``min(B_out, B_card_a, B_card_b)`` (the NIC is the bottleneck);
  then times the ``degraded_link`` factor. A ``dead_link`` carries nothing (timeout).
* Pair latency: ``L_tier * max(m_a, m_b)`` with ``m`` the ``high_latency_card`` factor;
  each ping-pong sample of a ``jittery_card`` spikes by ``factor`` with ``probability``.
* Ring all-reduce over p ranks, n bytes: ``2(p-1)a + 2((p-1)/p) n / B`` with ``a`` the
  worst ring-edge latency and ``B`` the worst ring-edge bandwidth.
* Pairwise all-to-all: ``(p-1)a + ((p-1)/p) n / B`` with ``a``, ``B`` over all pairs.
  The slowest participant bounds every collective.
* Launch skew: each rank starts ``|N(0, 2 us)|`` late, plus ``(1/s - 1) * 50 us`` of
  extra compute on a slow card, plus a jitter spike.
* Noise: every bandwidth and latency sample is multiplied by ``1 + 0.02 N(0, 1)``.
* ``corrupt_card``: data it sends or reduces is wrong, so checksums of its pairs and
  validation of its collectives fail. ``down_host``: unreachable, nothing runs there.
* Golden: ``loss(t) = 1.2 + 3.6 exp(-t / 15)`` with 0.5% noise; with a ``diverge`` card
  taking part the loss grows by 25% a step from step 10 on, to inf. Step time is
  ``50 ms / min(s)`` of compute plus a ring all-reduce of 100 MB of gradients (over a
  dead link the ring falls back to PCIe at 25 GB/s).

Detection never sees any of this; it only sees the rows.
"""

from __future__ import annotations

import math

import numpy as np

from ..faults import PLATFORM_FAULTS
from ..plan import ConnectivityPlan, GoldenPlan, Group, StressPlan
from ..rows import collective_row, golden_row, not_run_row, p2p_row, rank_row
from ..topology import INTRA_HOST, SCALE_OUT, SCALE_UP, host_of, link_id
from . import mockfacts
from .base import Backend, Emit

NOISE_CV = 0.02
BASE_SKEW_US = 2.0
COMPUTE_US = 50.0
GOLDEN_COMPUTE_S = 0.05
GOLDEN_GRAD_BYTES = 100e6
PCIE_FALLBACK_GBPS = 25.0
DTYPE_BYTES = 4


def golden_loss_curve(steps: int, rng: np.random.Generator, diverge: bool) -> list[float]:
    """The simulated training loss; shared by the backend and the shipped reference."""
    out = []
    for t in range(steps):
        loss = 1.2 + 3.6 * math.exp(-t / 15.0)
        loss *= 1.0 + 0.005 * rng.standard_normal()
        if diverge and t >= 10:
            growth = 1.25 ** (t - 9)
            loss = loss * growth if growth < 1e30 else math.inf
        out.append(loss)
    return out


class MockBackend(Backend):
    name = "mock"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rng = np.random.default_rng(self.seed)
        inv = self.topo.inventory
        missing = [t for t in (SCALE_UP,) if inv.design_for(t) is None]
        if missing or (len(inv.supernodes) > 1 and inv.design_for(SCALE_OUT) is None):
            from ..errors import ConfigError

            raise ConfigError("the mock backend needs design values (design.scale_up, and "
                              "design.scale_out for several supernodes) in the inventory",
                              inv.source)
        self._act(self.faults.faults)

    def begin_confirmation(self) -> None:
        """Transient faults have passed by the time the retest runs."""
        super().begin_confirmation()
        self._act([f for f in self.faults.faults if not f.transient])

    def _act(self, faults) -> None:
        """Turn faults into the simulator's state (replacing what was there)."""
        self.speed: dict[str, float] = {}
        self.lat_mult: dict[str, float] = {}
        self.jitter: dict[str, tuple[float, float]] = {}
        self.corrupt: set[str] = set()
        self.diverge: set[str] = set()
        self.link_factor: dict[str, float] = {}
        self.dead: set[str] = set()
        self.down: set[str] = set()
        self.platform_faults = [f for f in faults if f.type in PLATFORM_FAULTS]
        for f in faults:
            if f.type == "slow_card":
                self.speed[f.target] = f.factor
            elif f.type == "high_latency_card":
                self.lat_mult[f.target] = f.factor
            elif f.type == "jittery_card":
                self.jitter[f.target] = (f.probability, f.factor)
            elif f.type == "corrupt_card":
                self.corrupt.add(f.target)
            elif f.type == "diverge":
                self.diverge.add(f.target)
            elif f.type == "degraded_link":
                self.link_factor[f.target] = f.factor
            elif f.type == "dead_link":
                self.dead.add(f.target)
            elif f.type == "down_host":
                self.down.add(f.target)

    def plan_defaults(self, layer: str) -> dict:
        return {"golden": {"reference": "mock-demo"}}.get(layer, {})

    # -- physics ---------------------------------------------------------------------
    def _noise(self, size: int | None = None):
        return 1.0 + NOISE_CV * self.rng.standard_normal(size)

    def _true_bw(self, a: str, b: str, tier: str | None = None) -> float:
        """Noise-free bandwidth of a pair in GB/s (0 for a dead link)."""
        link = link_id(a, b)
        if link in self.dead:
            return 0.0
        tier = tier or self.topo.tier(a, b)
        inv = self.topo.inventory
        sa, sb = self.speed.get(a, 1.0), self.speed.get(b, 1.0)
        if tier == SCALE_OUT:
            up = inv.design_for(SCALE_UP).bandwidth_GBps
            bw = min(inv.design_for(SCALE_OUT).bandwidth_GBps, sa * up, sb * up)
        else:
            bw = inv.design_for(tier).bandwidth_GBps * min(sa, sb)
        return bw * self.link_factor.get(link, 1.0)

    def _true_lat(self, a: str, b: str, tier: str | None = None) -> float:
        tier = tier or self.topo.tier(a, b)
        base = self.topo.inventory.design_for(tier).latency_us
        return base * max(self.lat_mult.get(a, 1.0), self.lat_mult.get(b, 1.0))

    def _reachable(self, card: str) -> bool:
        return host_of(card) not in self.down

    # -- layers ----------------------------------------------------------------------
    def host_facts(self, hosts: tuple[str, ...], emit: Emit) -> None:
        """Tool output rendered from real captures, read by the SSH backend's parsers and checks."""
        mockfacts.host_facts(self.topo, self.faults.active(self.transient_ended), hosts, emit)

    def p2p(self, plan: ConnectivityPlan, emit: Emit) -> None:
        for rnd in plan.rounds:
            self.progress(f"connectivity round {rnd.index + 1}/{len(plan.rounds)} ({rnd.phase})")
            live = []
            for a, b in rnd.pairs:
                tier, link = self.topo.tier(a, b), link_id(a, b)
                if not (self._reachable(a) and self._reachable(b)):
                    down = host_of(a) if not self._reachable(a) else host_of(b)
                    emit(p2p_row(rnd.index, a, b, link, tier, plan.bw_bytes, status="unreachable",
                                 error=f"{down} unreachable"))
                elif self._true_bw(a, b, tier) <= 0:
                    emit(p2p_row(rnd.index, a, b, link, tier, plan.bw_bytes, status="timeout",
                                 error=f"no data across {link} within the timeout"))
                else:
                    live.append((a, b, tier, link))
            if not live:
                continue
            # One draw per round: bandwidth samples (3 per pair) and ping-pong samples.
            true_bw = np.array([self._true_bw(a, b, t) for a, b, t, _ in live])
            bws = true_bw[:, None] * self._noise((len(live), 3))
            lat = np.array([[self._true_lat(a, b, t)] for a, b, t, _ in live]) * self._noise((len(live), plan.lat_iters))
            for i, (a, b, _, _) in enumerate(live):
                for card in (a, b):
                    if card in self.jitter:
                        p, f = self.jitter[card]
                        lat[i] = np.where(self.rng.random(plan.lat_iters) < p, lat[i] * f, lat[i])
            med = np.median(lat, axis=1)
            p99 = np.percentile(lat, 99, axis=1)
            for i, (a, b, tier, link) in enumerate(live):
                row = p2p_row(rnd.index, a, b, link, tier, plan.bw_bytes, bw=float(bws[i, 0]),
                              bw_rev=float(bws[i, 1]), bibw=float(2 * bws[i, 2]), lat=float(med[i]),
                              checksum_ok=not ({a, b} & self.corrupt))
                row["lat_p99_us"] = float(p99[i])
                emit(row)

    def _group_model(self, members: tuple[str, ...], collective: str) -> tuple[float, float]:
        """Worst latency (us) and bandwidth (GB/s) the collective sees over its edges."""
        if collective == "all_reduce":
            edges = [(members[i], members[(i + 1) % len(members)]) for i in range(len(members))]
            if len(members) == 2:
                edges = edges[:1]
        else:
            edges = [(a, b) for i, a in enumerate(members) for b in members[i + 1:]]
        alpha = max(self._true_lat(a, b) for a, b in edges)
        beta_bw = min(self._true_bw(a, b) for a, b in edges)
        return alpha, beta_bw

    def _group_model_fast(self, members: tuple[str, ...], collective: str) -> tuple[float, float]:
        """Same bound as :meth:`_group_model` without enumerating O(p^2) pairs.

        For all-to-all over a big group: the worst latency is the worst tier's latency
        times the worst card multiplier; the worst bandwidth is the slowest tier at the
        slowest card's speed, or a faulted link inside the group.
        """
        if collective == "all_reduce" or len(members) <= 16:
            return self._group_model(members, collective)
        inv = self.topo.inventory
        by_host: dict[str, int] = {}
        for m in members:
            by_host[host_of(m)] = by_host.get(host_of(m), 0) + 1
        sns = {inv.hosts[h].supernode for h in by_host}
        tiers = ([INTRA_HOST] if max(by_host.values()) > 1 else []) + ([SCALE_UP] if len(by_host) > 1 else [])
        if len(sns) > 1:
            tiers.append(SCALE_OUT)
        alpha = max(inv.design_for(t).latency_us for t in tiers)
        alpha *= max(self.lat_mult.get(m, 1.0) for m in members)
        s = min(self.speed.get(m, 1.0) for m in members)
        up = inv.design_for(SCALE_UP).bandwidth_GBps
        bws = [inv.design_for(t).bandwidth_GBps * s for t in tiers if t != SCALE_OUT]
        if SCALE_OUT in tiers:
            bws.append(min(inv.design_for(SCALE_OUT).bandwidth_GBps, s * up))
        mset = set(members)
        for link in list(self.link_factor) + list(self.dead):
            a, _, b = link.partition("<->")
            if a in mset and b in mset:
                bws.append(self._true_bw(a, b))
        return alpha, min(bws)

    def collectives(self, plan: StressPlan, emit: Emit) -> None:
        repeats = plan.repeats if plan.duration_s is None else max(plan.repeats, 1)
        reported: set[str] = set()
        for gi, group in enumerate(plan.groups):
            self.progress(f"stress group {gi + 1}/{len(plan.groups)} {group.id}")
            group = self._reachable_part(group, "stress", reported, emit)
            if group is None:
                continue
            for collective in plan.collectives:
                alpha, bw = self._group_model_fast(group.members, collective)
                for rep in range(repeats):
                    for size in plan.sizes:
                        self._emit_collective(group, collective, size, rep, alpha, bw, plan, emit)

    def _reachable_part(self, group: Group, layer: str, reported: set[str], emit: Emit) -> Group | None:
        """The group without members on unreachable hosts (each such host reported once).

        Returns None when too few members are left to run it.
        """
        down = sorted({host_of(m) for m in group.members if not self._reachable(m)})
        for h in down:
            if h not in reported:
                reported.add(h)
                emit(not_run_row(layer, h, "host", "unreachable",
                                 f"{h} unreachable: {layer} runs without it (first missed in {group.id})"))
        if not down:
            return group
        members = tuple(m for m in group.members if self._reachable(m))
        minimum = 1 if group.kind == "card" else 2
        return Group(group.id, group.kind, members) if len(members) >= minimum else None

    def _emit_collective(self, group: Group, collective: str, size: int, rep: int,
                         alpha: float, bw: float, plan: StressPlan, emit: Emit) -> None:
        p = len(group.members)
        count = size // DTYPE_BYTES
        if bw <= 0:
            emit(collective_row(group.id, group.kind, p, collective, size, count, "float", rep,
                                time_us=None, wrong=None, status="timeout"))
            return
        beta_us_per_byte = 1e-3 / bw  # 1 GB/s = 1e3 bytes per us
        if collective == "all_reduce":
            t = 2 * (p - 1) * alpha + 2 * ((p - 1) / p) * size * beta_us_per_byte
        else:
            t = (p - 1) * alpha + ((p - 1) / p) * size * beta_us_per_byte
        skews = np.abs(BASE_SKEW_US * self.rng.standard_normal(p))
        for i, m in enumerate(group.members):
            skews[i] += (1.0 / self.speed.get(m, 1.0) - 1.0) * COMPUTE_US
            if m in self.jitter:
                prob, f = self.jitter[m]
                if self.rng.random() < prob:
                    skews[i] += alpha * f
        skews -= skews.min()
        t = float(t * self._noise()) + float(skews.max())
        corrupt = [m for m in group.members if m in self.corrupt]
        per_rank_wrong = []
        for m in group.members:
            if not corrupt or count == 0:
                per_rank_wrong.append(0)
            elif collective == "all_reduce":
                per_rank_wrong.append(count)  # a bad contribution spoils every reduced element
            else:  # all-to-all: the chunks that came from the corrupt ranks
                from_bad = len([c for c in corrupt if c != m])
                per_rank_wrong.append(count // p * from_bad)
        emit(collective_row(group.id, group.kind, p, collective, size, count, "float", rep,
                            time_us=t, wrong=int(sum(per_rank_wrong))))
        for m, skew, wrong in zip(group.members, skews, per_rank_wrong):
            emit(rank_row(group.id, collective, size, rep, m, skew_us=float(skew),
                          op_us=t - float(skew), wrong=int(wrong)))

    def golden(self, plan: GoldenPlan, emit: Emit) -> None:
        reported: set[str] = set()
        for group in plan.groups:
            group = self._reachable_part(group, "golden", reported, emit)
            if group is None:
                continue
            self.progress(f"golden {group.id}: {plan.steps} steps")
            # The data order is fixed by the plan seed; noise varies with the run seed.
            rng = np.random.default_rng([plan.seed, self.seed, len(group.members)])
            losses = golden_loss_curve(plan.steps, rng, bool(self.diverge & set(group.members)))
            alpha, bw = self._group_model(group.members, "all_reduce") if len(group.members) > 1 else (0.0, 0.0)
            bw = max(bw, PCIE_FALLBACK_GBPS)  # a dead NVLink: the ring falls back to PCIe
            p = len(group.members)
            comm = 0.0 if p == 1 else (2 * (p - 1) * alpha + 2 * ((p - 1) / p) * GOLDEN_GRAD_BYTES * 1e-3 / max(bw, 1e-9)) * 1e-6
            compute = GOLDEN_COMPUTE_S / min(self.speed.get(m, 1.0) for m in group.members)
            stage = "solo" if group.kind == "card" else "group"
            for step, loss in enumerate(losses):
                c = comm * float(self._noise())
                k = compute * float(self._noise())
                emit(golden_row(group.id, stage, step, loss, c + k, c))

