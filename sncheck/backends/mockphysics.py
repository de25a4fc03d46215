"""The mock's physics: the fault plan turned into per-card, per-link and per-switch state, and
the noise-free bandwidth and latency of any pair (README "Mock backend cost model").

Paths come from the fabric model (:mod:`sncheck.fabric`), the one home of which NIC hangs
off which leaf and which spine joins two leaves: a switch fault acts on exactly the pairs
whose path crosses it, as localization reads them.

A :class:`Physics` is the state at one message size: a fault with ``above: N`` acts only on
messages of more than N bytes, so the mock asks :func:`physics_at` for the size it moves.
Cards are positions in ``topo.card_ids``; every function takes position arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sncheck.config.faultplan import Fault
from sncheck.model import LEAF, parse_switch
from sncheck.topology import SCALE_OUT, SCALE_UP, Topology

DESIGN_NVLINKS = 18  # NVLink 4 links per card (H100), as the mock's nvidia-smi prints them
EXACT_ALL_PAIRS = 16  # all-to-all groups up to this size: every pair; above: the bound below
TIERS = ("intra_host", SCALE_UP, SCALE_OUT)  # tier codes 0, 1, 2
INTRA, UP, OUT = 0, 1, 2
NOISE_CV = 0.02  # every bandwidth and latency sample is multiplied by 1 + NOISE_CV N(0, 1)


def gated_sizes(faults: Sequence[Fault]) -> tuple[int, ...]:
    """The ``above`` thresholds of the faults, sorted: the sizes where the physics changes."""
    return tuple(sorted({f.above for f in faults if f.above is not None}))


class Physics:
    """The simulator's state for the faults in effect at messages of ``size`` bytes (None:
    every fault, whatever its ``above``)."""

    def __init__(self, topo: Topology, faults: Sequence[Fault], B: np.ndarray, L: np.ndarray,
                 size: float | None = None) -> None:
        cards = topo.cards
        n = len(cards)
        self.n, self.B, self.L = n, B, L
        # the fabric's paths only where a switch fault needs them (a fleet's fabric takes seconds to build)
        switched = any(f.type in ("slow_switch", "dead_switch", "switch_port_down") for f in faults)
        self.fabric = fabric = topo.fabric if switched else None
        hosts = {h: i for i, h in enumerate(topo.hosts)}
        sns = {s: i for i, s in enumerate(topo.supernode_names)}
        self.host = np.array([hosts[c.host] for c in cards], dtype=np.int64)
        self.sn = np.array([sns[c.supernode] for c in cards], dtype=np.int64)
        self.rail = np.array([c.index for c in cards], dtype=np.int64)
        index = {c.id: i for i, c in enumerate(cards)}
        self.speed = np.ones(n)       # compute and link speed (slow_card, thermal_throttle)
        self.nvlink = np.ones(n)      # share of NVLink links up (nvlink_down)
        self.lat_mult = np.ones(n)    # high_latency_card
        self.jit_p = np.zeros(n)      # jittery_card probability and factor
        self.jit_f = np.ones(n)
        self.corrupt = np.zeros(n, dtype=bool)       # corrupt_card: p2p and collectives wrong
        self.reduce_bad = np.zeros(n, dtype=bool)    # corrupt_card or collective_corruption
        self.diverge = np.zeros(n, dtype=bool)
        self.nic_down = np.zeros(n, dtype=bool)      # ib_port_down, switch_port_down at a host port
        self.nic_speed = np.ones(n)                  # slow_nic: this card's rail NIC
        self.up = np.ones(n, dtype=bool)             # reachable (down_host)
        self.link_bw: dict[int, float] = {}          # directed key src*n+dst -> factor (0: dead)
        self.link_lat: dict[int, float] = {}         # undirected key -> latency factor (high_latency_link)
        self.leaf_f = np.ones(len(fabric.leaf_names) if fabric else 0)    # slow_switch / dead_switch factors
        self.spine_f = np.ones(len(fabric.spine_names) if fabric else 0)
        self.uplink_down: set[tuple[int, int]] = set()   # (leaf, spine) cables down
        for f in faults:
            if f.above is not None and (size is not None and size <= f.above):
                continue  # a fault of larger messages than this size
            t = f.type
            factor = 1.0 if f.factor is None else f.factor  # every type with a factor defaults it
            if t in ("slow_card", "thermal_throttle"):
                self.speed[index[f.target]] *= factor
            elif t == "nvlink_down":
                i = index[f.target]
                self.nvlink[i] = max(0.0, self.nvlink[i] - (f.links or 1) / DESIGN_NVLINKS)
            elif t == "high_latency_card":
                self.lat_mult[index[f.target]] = factor
            elif t == "jittery_card":
                i = index[f.target]
                self.jit_p[i], self.jit_f[i] = f.probability, f.factor
            elif t in ("corrupt_card", "collective_corruption"):
                self.reduce_bad[index[f.target]] = True
                self.corrupt[index[f.target]] |= t == "corrupt_card"
            elif t == "diverge":
                self.diverge[index[f.target]] = True
            elif t in ("degraded_link", "dead_link"):
                self._link(f, index)
            elif t == "high_latency_link":
                a, _, b = f.target.partition("<->")
                key = int(self.key(np.array([index[a]]), np.array([index[b]]))[0])
                self.link_lat[key] = self.link_lat.get(key, 1.0) * factor
            elif t == "down_host":
                self.up[self.host == hosts[f.target]] = False
            elif t in ("ib_port_down", "slow_nic"):
                on_rail = (self.host == hosts[f.target]) & (self.rail == (f.port or 1) - 1)
                if t == "ib_port_down":
                    self.nic_down[on_rail] = True
                else:
                    self.nic_speed[on_rail] *= factor
            elif t in ("slow_switch", "dead_switch"):
                assert fabric is not None
                kind, i = fabric.switch_ref(f.target)
                factors = self.leaf_f if kind == LEAF else self.spine_f
                factors[i] *= factor if t == "slow_switch" else 0.0
            elif t == "switch_port_down":
                self._port_down(f.target)
        self.switched = bool((self.leaf_f != 1).any() or (self.spine_f != 1).any() or self.uplink_down)
        # what each card's end allows (true_bw's terms that are one card's, once per card):
        # its NVLink share at its speed, and its NIC's cap (0 where the NIC is down)
        self._share = self.speed * self.nvlink
        self._nic_cap = np.where(self.nic_down, 0.0, np.minimum(self.speed * B[UP], B[OUT] * self.nic_speed))
        keys = sorted(self.link_bw)
        self._bw_keys = np.array(keys, dtype=np.int64)
        self._bw_vals = np.array([self.link_bw[k] for k in keys])
        keys = sorted(self.link_lat)
        self._lat_keys = np.array(keys, dtype=np.int64)
        self._lat_vals = np.array([self.link_lat[k] for k in keys])
        # The few cards a per-card or per-link term is not 1 for: a pair's term is looked up
        # only where both ends could have one (elsewhere it is 1: multiplying by it changes no bit).
        self._bw_ends = self._ends_of(self._bw_keys)
        self._lat_ends = self._ends_of(self._lat_keys)
        self._lat_plain = bool((self.lat_mult == 1).all())
        self._all_up = bool(self.up.all())
        self._intact = not self.corrupt.any()
        self.jittery = bool((self.jit_p > 0).any())

    def _link(self, f: Fault, index: dict[str, int]) -> None:
        a, _, b = f.target.partition("<->")
        value = (f.factor or 1.0) if f.type == "degraded_link" else 0.0
        ia, ib = index[a], index[b]
        ways = [(ia, ib), (ib, ia)]
        if f.direction is not None:  # that way only
            src, _, dst = f.direction.partition("->")
            ways = [(index[src], index[dst])]
        for x, y in ways:
            key = x * self.n + y
            self.link_bw[key] = self.link_bw.get(key, 1.0) * value

    def _port_down(self, port: str) -> None:
        assert self.fabric is not None
        cable = self.fabric.cable_at(port)
        a, _, b = cable.partition("<->")
        if parse_switch(a) is None:  # a NIC's cable: its scale-out traffic stops
            self.nic_down[self.fabric.card_position(a)] = True
            return
        _, leaf = self.fabric.switch_ref(a.partition("[")[0])
        _, spine = self.fabric.switch_ref(b.partition("[")[0])
        self.uplink_down.add((leaf, spine))

    def _ends_of(self, keys: np.ndarray) -> np.ndarray:
        """Which cards are an end of one of the pair ``keys`` (``src * n + dst``)."""
        out = np.zeros(self.n, dtype=bool)
        out[keys // self.n] = True
        out[keys % self.n] = True
        return out

    # -- physics: every function takes card position arrays a, b ------------------------
    def key(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The undirected key of each pair."""
        return np.minimum(a, b) * self.n + np.maximum(a, b)

    def tier(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Each pair's tier code: one host (0), one supernode (1, another host), across (2)."""
        return np.add(self.host[a] != self.host[b], self.sn[a] != self.sn[b], out=out, dtype=np.int64)

    def reach(self, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        """Whether both ends of each pair are up (None: every card is)."""
        return None if self._all_up else self.up[a] & self.up[b]

    def intact(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Whether each pair's payload arrives intact (no corrupt end), into ``out``."""
        if self._intact:
            out[:] = True
            return out
        return np.logical_not(self.corrupt[a] | self.corrupt[b], out=out)

    @staticmethod
    def _lookup(keys: np.ndarray, table_keys: np.ndarray, table_vals: np.ndarray) -> np.ndarray:
        out = np.ones(len(keys))
        if len(table_keys):
            pos = np.clip(np.searchsorted(table_keys, keys), 0, len(table_keys) - 1)
            hit = table_keys[pos] == keys
            out[hit] = table_vals[pos[hit]]
        return out

    def link_factor(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The degraded/dead link factor of the traffic from ``a`` to ``b``."""
        return self._lookup(a * self.n + b, self._bw_keys, self._bw_vals)

    def switch_factor(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The product of the factors of the switches on each pair's scale-out path (sncheck.fabric)."""
        assert self.fabric is not None
        leaf = self.fabric.card_leaf
        return self.leaf_pair_factor(leaf[a], leaf[b])

    def leaf_pair_factor(self, la: np.ndarray, lb: np.ndarray) -> np.ndarray:
        """The switch factor of the path between NICs on leaves ``la`` and ``lb``: each leaf
        once, the spine between them, nothing over an uplink cable that is down."""
        assert self.fabric is not None
        spine = self.fabric.spines_between(la, lb)
        f = self.leaf_f[la] * np.where(la != lb, self.leaf_f[lb], 1.0)
        crossing = spine >= 0
        if len(self.spine_f):
            f = f * np.where(crossing, self.spine_f[np.where(crossing, spine, 0)], 1.0)
        for leaf, s in self.uplink_down:
            f = np.where(crossing & (spine == s) & ((la == leaf) | (lb == leaf)), 0.0, f)
        return f

    def true_bw(self, a: np.ndarray, b: np.ndarray, tier: np.ndarray | None = None) -> np.ndarray:
        """Noise-free bandwidth from ``a`` to ``b`` in GB/s (0: nothing gets across)."""
        return self.both_ways(a, b, tier)[0]

    def both_ways(self, a: np.ndarray, b: np.ndarray,
                  tier: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`true_bw` from ``a`` to ``b`` and from ``b`` to ``a`` (new arrays): what the
        ends allow (the same either way, computed once), then each way's switches on the
        path and the link's factor."""
        tier = self.tier(a, b) if tier is None else tier
        fwd = self._ends(a, b, tier)
        rev = fwd.copy()
        if self.switched:
            out = np.flatnonzero(tier == OUT)
            if len(out):
                oa, ob = a[out], b[out]
                fwd[out] *= self.switch_factor(oa, ob)
                rev[out] *= self.switch_factor(ob, oa)
        if len(self._bw_keys):   # (a factor of 1 elsewhere)
            hit = np.flatnonzero(self._bw_ends[a] & self._bw_ends[b])
            if len(hit):
                ha, hb = a[hit], b[hit]
                fwd[hit] *= self.link_factor(ha, hb)
                rev[hit] *= self.link_factor(hb, ha)
        return fwd, rev

    def _ends(self, a: np.ndarray, b: np.ndarray, tier: np.ndarray) -> np.ndarray:
        """What the two ends allow, either way: each end moves its own share (a slow card at
        its speed over its links, the pair at the lower); scale-out at the slower end's
        speed and NIC, capped at the design (nothing where a NIC is down). The minimum of
        the cards' own products is the product of their minimum (rounding keeps order).
        Only the terms of the pairs' tiers are computed (a round is one tier, mostly)."""
        out = tier == OUT
        across = int(np.count_nonzero(out))
        if across < len(tier):
            nvlink = self.B[tier] * np.minimum(self._share[a], self._share[b])
            if not across:
                return nvlink
        nic = np.minimum(np.minimum(self._nic_cap[a], self._nic_cap[b]), self.B[OUT])
        return nic if across == len(tier) else np.where(out, nic, nvlink)

    def edge_bw(self, a: np.ndarray, b: np.ndarray, tier: np.ndarray | None = None) -> np.ndarray:
        """A collective's edge carries both ways: the slower of the two directions."""
        return np.minimum(*self.both_ways(a, b, tier))

    def true_lat(self, a: np.ndarray, b: np.ndarray, tier: np.ndarray | None = None) -> np.ndarray:
        """Noise-free latency in us (factors of 1 left out: they change no bit)."""
        tier = self.tier(a, b) if tier is None else tier
        lat = self.L[tier]
        if not self._lat_plain:
            lat *= np.maximum(self.lat_mult[a], self.lat_mult[b])
        if len(self._lat_keys):
            hit = np.flatnonzero(self._lat_ends[a] & self._lat_ends[b])
            if len(hit):
                lat[hit] *= self._lookup(self.key(a[hit], b[hit]), self._lat_keys, self._lat_vals)
        return lat

    def group_model(self, members: np.ndarray, collective: str) -> tuple[np.ndarray, np.ndarray]:
        """Worst latency (us) and bandwidth (GB/s) over each group's edges.

        ``members``: (groups, p) card positions, groups of one size. All-reduce: the ring
        edges; all-to-all: every pair (up to ``EXACT_ALL_PAIRS`` members), else the bound
        of :meth:`all_pairs_bound`.
        """
        g, p = members.shape
        if collective == "all_reduce":
            a, b = members, np.roll(members, -1, axis=1)
            if p == 2:
                a, b = a[:, :1], b[:, :1]
        elif p <= EXACT_ALL_PAIRS:
            i, j = np.triu_indices(p, k=1)
            a, b = members[:, i], members[:, j]
        else:
            return self.all_pairs_bound(members)
        fa, fb = a.ravel(), b.ravel()
        alpha = self.true_lat(fa, fb).reshape(a.shape).max(axis=1)
        bw = self.edge_bw(fa, fb).reshape(a.shape).min(axis=1)
        return alpha, bw

    def all_pairs_bound(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All-to-all over a big group without enumerating O(p^2) pairs.

        Worst latency: the worst tier's latency times the worst card multiplier and the
        worst faulted link inside the group. Worst bandwidth: each tier at the slowest
        card's speed and the fewest NVLinks (every pair is tested, so those two cards
        meet), the NIC tier at the slowest card and NIC (nothing where a member's NIC is
        down) times the worst switch between two members of different supernodes, and any
        faulted link inside the group.
        """
        alphas, bws = [], []
        for m in members:
            hosts, per_host = np.unique(self.host[m], return_counts=True)
            tiers = ([INTRA] if per_host.max() > 1 else []) + ([UP] if len(hosts) > 1 else [])
            cross = len(np.unique(self.sn[m])) > 1
            if cross:
                tiers.append(OUT)
            worst_link = 1.0   # a faulted link inside the group: looked for where a member ends one
            if self._lat_ends[m].any():
                inside = np.isin(self._lat_keys // self.n, m) & np.isin(self._lat_keys % self.n, m)
                worst_link = self._lat_vals[inside].max(initial=1.0)
            alphas.append(self.L[tiers].max() * self.lat_mult[m].max() * worst_link)
            s = self.speed[m].min()
            bw = [self.B[t] * s * self.nvlink[m].min() for t in tiers if t != OUT]
            if cross:
                nic = 0.0 if self.nic_down[m].any() else min(self.B[OUT] * self.nic_speed[m].min(), s * self.B[UP])
                bw.append(nic * (self._worst_switch(m) if self.switched else 1.0))
            hit = np.isin(self._bw_keys // self.n, m) & np.isin(self._bw_keys % self.n, m) \
                if self._bw_ends[m].any() else np.zeros(len(self._bw_keys), bool)
            for k in self._bw_keys[hit]:
                lo, hi = np.array([k // self.n]), np.array([k % self.n])
                bw.append(float(self.true_bw(lo, hi)[0]))
            bws.append(min(bw))
        return np.array(alphas), np.array(bws)

    def _worst_switch(self, m: np.ndarray) -> float:
        """The lowest switch factor over the scale-out pairs of a group: a pair's switches
        depend on its two leaves only (Fabric.crossing_leaf_pairs)."""
        assert self.fabric is not None
        la, lb = self.fabric.crossing_leaf_pairs(m)
        return float(self.leaf_pair_factor(la, lb).min()) if len(la) else 1.0


def physics_at(cache: dict, topo: Topology, faults: Sequence[Fault], B: np.ndarray, L: np.ndarray,
               size: float) -> Physics:
    """The physics for messages of ``size`` bytes, one per band between ``above`` thresholds
    (kept in ``cache``)."""
    band = sum(1 for t in gated_sizes(faults) if size > t)
    if band not in cache:
        cache[band] = Physics(topo, faults, B, L, size)
    return cache[band]
