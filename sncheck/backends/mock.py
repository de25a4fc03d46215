"""A simulated supernode cluster: an alpha-beta cost model with seeded noise and faults.

The cost model (published; README "Mock backend cost model"), computed with numpy over
whole rounds and sweeps (cards are indices; every quantity below is an array):

* Card speed ``s_c``: 1, times the ``slow_card`` and ``thermal_throttle`` factors.
  Card NVLink share ``n_c``: the links up over the design count (``nvlink_down``).
* Pair bandwidth: intra-host and scale-up pairs get ``B_tier * min(s_a * n_a, s_b * n_b)``;
  scale-out pairs get ``min(B_out, s_a * B_up, s_b * B_up)`` (the NIC is the bottleneck),
  capped at ``B_out`` times the slower end's NIC factor (``slow_nic``), or nothing where either
  end's NIC on that rail is down (``ib_port_down``, ``switch_port_down`` at its port), times
  the factor of each switch on the pair's path (``sncheck.fabric``: ``slow_switch``,
  ``dead_switch``, an uplink ``switch_port_down``); then times the ``degraded_link`` factor. A
  ``dead_link`` carries nothing (timeout). Each direction on its own (``direction: a->b``); a
  collective's edge at the slower one. ``above: N``: only messages over N bytes.
* Pair latency: ``L_tier * max(m_a, m_b)`` with ``m`` the ``high_latency_card`` factor, times
  the ``high_latency_link`` factor; each ping-pong sample of a ``jittery_card`` spikes by
  ``factor`` with ``probability``.
* Ring all-reduce over p ranks, n bytes: ``2(p-1)a + 2((p-1)/p) n / B`` with ``a`` the
  worst ring-edge latency and ``B`` the worst ring-edge bandwidth.
* Pairwise all-to-all: ``(p-1)a + ((p-1)/p) n / B`` with ``a``, ``B`` over all pairs.
  The slowest participant bounds every collective.
* Launch skew: each rank starts ``|N(0, 2 us)|`` late, plus ``(1/s - 1) * 50 us`` of
  extra compute on a slow card, plus a jitter spike.
* Noise: every bandwidth and latency sample is multiplied by ``1 + 0.02 N(0, 1)``.
* ``corrupt_card``: data it sends or reduces is wrong, so checksums of its pairs and
  validation of its collectives fail. ``collective_corruption``: only reductions
  through it are wrong (all-reduce); its p2p payloads and all-to-all chunks arrive
  intact. ``down_host``: unreachable, nothing runs there.
* Golden: ``loss(t) = 1.2 + 3.6 exp(-t / 15)`` with 0.5% noise; with a ``diverge`` card
  taking part the loss grows by 25% a step from step 10 on, to inf. Step time is
  ``50 ms / min(s)`` of compute plus a ring all-reduce of 100 MB of gradients (over a
  dead link the ring falls back to PCIe at 25 GB/s). The shipped references
  (``GOLDEN_REFERENCES``: 2, 4, 8 and 16 ranks a replica) are this model's clean runs,
  recorded with ``sncheck golden record --backend mock --repeats 10 --seed 0``.

The same seed gives the same rows: the random draws come in a fixed order (per round:
bandwidth samples, ping-pong samples, jitter; per group and collective: skews and noise;
per golden replica: step noise). A fleet-size round (at least
``mockp2p.ORDER_STATISTICS_FROM`` ping-pong samples) draws the summaries of its pairs without a jittery end directly, as the
order statistics of ``lat_iters`` normal samples (the same distribution, without the
samples: a 131,072-card plan would draw and sort 1.6 G of them), then the jittery pairs'
samples and spikes. ``ecc_uncorrectable``, ``remap_pending``,
``missing_tool`` and the platform faults show only in the host facts.

The state the faults make, and the noise-free bandwidth and latency of any pair, are
``sncheck.backends.mockphysics``; the card pairs' rounds ``sncheck.backends.mockp2p``. Detection never sees any of this; it only sees the rows.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, StressPlan
from sncheck.rows import as_sink, not_run_row
from sncheck.topology import SCALE_OUT, SCALE_UP, host_of
from sncheck.backends import mockfacts, mockp2p
from sncheck.backends.base import Backend, Emit
from sncheck.backends.behind import Behind
from sncheck.backends.mockp2p import OK, STATUSES, TIMEOUT, part_rows
from sncheck.backends.mockp2p import names as code_names
from sncheck.backends.mockphysics import NOISE_CV, TIERS, Physics, gated_sizes, physics_at
from sncheck.errors import ConfigError

BASE_SKEW_US = 2.0
COMPUTE_US = 50.0
GOLDEN_COMPUTE_S = 0.05
GOLDEN_GRAD_BYTES = 100e6
PCIE_FALLBACK_GBPS = 25.0
DTYPE_BYTES = 4
# Rows are written as one Parquet part per batch: a stress pass's sweeps go out together up to
# at least this many rank rows (a part's cost is mostly per part below that; the p2p rounds':
# mockp2p.BATCH_PAIRS).
BATCH_RANK_ROWS = 262_144


def _ids(names: list[str], at: np.ndarray) -> pa.DictionaryArray:
    """``names[at]`` as an Arrow dictionary column: one entry per distinct name."""
    distinct = list(dict.fromkeys(names))
    code = {name: i for i, name in enumerate(distinct)}
    return code_names(np.array([code[n] for n in names], dtype=np.int32)[at], tuple(distinct))


class _Names:
    """An id column of a sweep not yet emitted: ``names[codes]`` (joined with the next
    sweeps' into one dictionary column when the batch goes out)."""

    def __init__(self, names: list[str], codes: np.ndarray) -> None:
        self.names, self.codes = names, codes


class _Cards:
    """A card column of a sweep not yet emitted: indices into the backend's cards."""

    def __init__(self, index: np.ndarray) -> None:
        self.index = index


class _SweepBatch:
    """Sweeps' collective and rank rows gathered into one batch of each kind (in order:
    a sweep's collective rows, then its rank rows, each batch complete sweeps only)."""

    def __init__(self, rows: int) -> None:
        self.limit = rows  # rows of either kind that fill a batch
        self.coll: list[dict] = []
        self.rank: list[dict] = []
        self.rank_rows = 0
        self.coll_rows = 0

    def add(self, coll: dict, rank: dict | None) -> None:
        self.coll.append(coll)
        self.coll_rows += len(coll["time_us"])
        if rank is not None:
            self.rank.append(rank)
            self.rank_rows += len(rank["skew_us"])

    @property
    def full(self) -> bool:
        """At least a batch of either kind (sweeps that all timed out have no rank rows:
        their collective rows alone bound the batch)."""
        return max(self.rank_rows, self.coll_rows) >= self.limit

    def emit(self, card_ids: Callable[[np.ndarray], pa.DictionaryArray], sink) -> "_SweepBatch":
        """Write the gathered rows (nothing when there are none); returns an empty batch.
        ``card_ids``: card indices as the backend's card id column."""
        for kind, parts in (("collective", self.coll), ("rank", self.rank)):
            if parts:
                sink.batch(kind, {k: _joined(card_ids, [p[k] for p in parts]) for k in parts[0]})
        return _SweepBatch(self.limit)


def _joined(card_ids: Callable[[np.ndarray], pa.DictionaryArray], parts: list) -> Any:
    """One column from the sweeps' pieces: ids over one dictionary of every sweep's names
    (in order: as Arrow unifies the sweeps' own dictionaries), a scalar as it is."""
    first = parts[0]
    if isinstance(first, _Names):
        names: list[str] = []
        codes = []
        for part in parts:
            codes.append(part.codes + len(names))
            names += part.names
        return _ids(names, np.concatenate(codes))
    if isinstance(first, _Cards):
        return card_ids(np.concatenate([part.index for part in parts]))
    if isinstance(first, str):
        return first
    return np.concatenate(parts)


# replica ranks -> fixtures/golden/: each recorded from this model (README "Mock backend cost model")
GOLDEN_REFERENCES = {2: "mock-2", 4: "mock-demo", 8: "mock-8", 16: "mock-16"}


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
    near_budget_s = None  # simulated rounds: their wall time is the harness's, not the cluster's

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rng = np.random.default_rng(self.seed)
        inv = self.topo.inventory
        missing = [t for t in (SCALE_UP,) if inv.design_for(t) is None]
        if missing or (len(inv.supernodes) > 1 and inv.design_for(SCALE_OUT) is None):
            raise ConfigError("the mock backend needs design values (design.scale_up, and "
                              "design.scale_out for several supernodes) in the inventory",
                              inv.source)
        cards = self.topo.cards
        self.ids = [c.id for c in cards]
        self.index = {c: i for i, c in enumerate(self.ids)}
        self.labels = pa.array(self.ids, pa.string())
        # each card's place in natural sort order (link ids): the topology's, computed once for
        # every reader (131,072 cards: 1.8 s of sorting by natural keys)
        self.rank = self.topo.card_table["natural_rank"].to_numpy(np.int64)
        design = [inv.design_for(t) or inv.design_for(SCALE_UP) for t in TIERS]
        self.B = np.array([d.bandwidth_GBps if d else np.nan for d in design])  # GB/s per tier code
        self.L = np.array([d.latency_us if d else np.nan for d in design])      # us per tier code
        self._act(self.faults.active())

    def begin_confirmation(self) -> None:
        """Transient faults have passed by the time the retest runs; late ones begin."""
        super().begin_confirmation()
        self._act(self.faults.active(ended_transient=True))

    def _act(self, faults) -> None:
        """Turn the faults in effect into the simulator's state (mockphysics.Physics), one
        per band of message sizes between the faults' ``above`` thresholds."""
        self._faults_now = list(faults)
        self._bands: dict[int, Physics] = {}
        self.phys = self.phys_at(math.inf)  # every fault: what does not depend on the message size

    def phys_at(self, size: float) -> Physics:
        """The physics for messages of ``size`` bytes."""
        return physics_at(self._bands, self.topo, self._faults_now, self.B, self.L, size)

    def plan_defaults(self, layer: str) -> dict:
        if layer != "golden":
            return {}
        # Golden curves recorded on the mock (sncheck golden record --backend mock), one per
        # replica size: a replica is one host's cards. Another size is "not judged". Hosts of
        # several card counts (mixed SKUs) get the curves of their sizes, a list (one per size).
        sizes = {self.topo.inventory.hosts[h].cards for h in self.topo.hosts}
        if len(sizes) > 1:
            return {"reference": [GOLDEN_REFERENCES[r] for r in sorted(sizes) if r in GOLDEN_REFERENCES]
                    or [GOLDEN_REFERENCES[max(GOLDEN_REFERENCES)]]}
        return {"reference": GOLDEN_REFERENCES.get(max(sizes, default=0), "mock-demo")}

    # -- physics: every function takes card index arrays a, b --------------------------
    def noise(self, size=None):
        """``1 + 0.02 N(0, 1)`` per sample (arrays computed in place: millions at a time)."""
        z = self.rng.standard_normal(size)
        if size is None:
            return 1.0 + NOISE_CV * z
        z *= NOISE_CV
        z += 1.0
        return z

    def idx(self, cards) -> np.ndarray:
        return np.fromiter((self.index[c] for c in cards), dtype=np.int64, count=len(cards))

    def card_ids(self, idx: np.ndarray) -> pa.DictionaryArray:
        """Card names as a dictionary over every card (no hashing of strings per batch)."""
        return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), self.labels)

    # -- layers ----------------------------------------------------------------------
    def host_facts(self, hosts: tuple[str, ...], emit: Emit) -> None:
        """Tool output rendered from real captures, read by the SSH backend's parsers and checks."""
        active = tuple(self.faults.active(self.transient_ended))
        # what each read saw, to render a host's tool output again for its evidence
        self.__dict__.setdefault("_fact_reads", []).append((hosts, active))
        # with each host's kernel log since the last read, as an SSH host's facts come
        mockfacts.host_facts(self.topo, active, hosts, emit, self.fact_judge, self.__dict__.setdefault("_kernel_read", set()))

    def provenance_hosts(self) -> list[str]:
        """One host of each platform whose facts were read: what its tools print names
        the versions in results.json's ``tools``."""
        read = {h for hosts, _ in self.__dict__.get("_fact_reads", []) for h in hosts}
        seen: dict[str | None, str] = {}
        for sn in self.topo.inventory.supernodes:
            host = next((h for h in sn.hosts if h in read), None)
            if host is not None:
                seen.setdefault(sn.platform, host)
        return list(seen.values())

    def raw_outputs(self, host: str) -> list[dict]:
        """The tool output of each read of ``host``, rendered on first ask and kept
        (:meth:`keep_output`): only the hosts evidence asks about, never the fleet."""
        asked = self.__dict__.setdefault("_outputs_rendered", set())
        if host not in asked:
            asked.add(host)
            for hosts, faults in self.__dict__.get("_fact_reads", []):
                if host in hosts:
                    for cmd, out in mockfacts.rendered_outputs(self.topo, faults, host):
                        self.keep_output(host, cmd.tool, cmd.display, out.stdout, out.stderr, out.exit_code)
        return super().raw_outputs(host)

    def p2p(self, plan: ConnectivityPlan, emit: Emit) -> None:
        """Every pair of a plan (:func:`sncheck.backends.mockp2p.p2p`)."""
        mockp2p.p2p(self, plan, as_sink(emit))

    # -- collectives -----------------------------------------------------------------
    def collectives(self, plan: StressPlan, emit: Emit) -> None:
        """Runs of consecutive groups of one size are simulated at once; their rows go out
        together, a batch of at least ``BATCH_RANK_ROWS`` rank rows (times :func:`part_rows`'
        factor in a large fleet; and their collective rows) or the pass's last."""
        sink = as_sink(emit)
        repeats = plan.repeats if plan.duration_s is None else max(plan.repeats, 1)
        reported: set[str] = set()
        run: list[Group] = []
        run_idx: list[np.ndarray] = []  # their members' indices
        run_jittery = False
        pending = _SweepBatch(part_rows(BATCH_RANK_ROWS, len(self.ids)))
        # every group's cards, whole or not, jittery or not: at once (per group, most of a pass's cost)
        flat = self.idx([m for g in plan.groups for m in g.members])
        bounds = np.concatenate(([0], np.cumsum([len(g.members) for g in plan.groups]))).astype(np.int64)
        down = np.concatenate(([0], np.cumsum(~self.phys.up[flat])))[bounds]
        jitter = np.concatenate(([0], np.cumsum(self.phys.jit_p[flat] > 0)))[bounds]
        with Behind() as behind:   # a batch goes to the sink while the next sweeps are simulated
            for gi, group in enumerate(plan.groups):
                self.progress(f"stress group {gi + 1}/{len(plan.groups)} {group.id}")
                idx = flat[bounds[gi]:bounds[gi + 1]]
                if down[gi + 1] == down[gi]:
                    part, jittery = group, bool(jitter[gi + 1] > jitter[gi])
                else:
                    behind.wait()   # (its not_run rows after the batches before them)
                    cut = self._reachable_part(group, "stress", reported, sink, idx)
                    if cut is None:
                        continue
                    part, idx = cut, self.idx(cut.members)
                    jittery = bool((self.phys.jit_p[idx] > 0).any())
                if run and (len(part.members) != len(run[0].members) or jittery or run_jittery):
                    pending.add(*self._sweep(run, run_idx, plan, repeats))
                    run, run_idx = [], []
                    if pending.full:
                        behind.emit(pending.emit, self.card_ids, sink)
                        pending = _SweepBatch(pending.limit)
                run_jittery = run_jittery if run else jittery  # a run's first group's
                run.append(part)
                run_idx.append(idx)
            if run:
                pending.add(*self._sweep(run, run_idx, plan, repeats))
            behind.emit(pending.emit, self.card_ids, sink)

    def _reachable_part(self, group: Group, layer: str, reported: set[str], emit,
                        idx: np.ndarray | None = None) -> Group | None:
        """The group without members on unreachable hosts (each such host reported once; ``idx``:
        its members' indices, when known); None when too few members are left to run it."""
        idx = self.idx(group.members) if idx is None else idx
        up = self.phys.up
        if up[idx].all():
            return group
        down = sorted({host_of(self.ids[i]) for i in idx[~up[idx]]})
        for h in down:
            if h not in reported:
                reported.add(h)
                emit(not_run_row(layer, h, "host", "unreachable",
                                 f"{h} unreachable: {layer} runs without it (first missed in {group.id})"))
        members = tuple(self.ids[i] for i in idx[up[idx]])
        minimum = 1 if group.kind == "card" else 2
        return Group(group.id, group.kind, members) if len(members) >= minimum else None

    def _sweep(self, groups: list[Group], idx: list[np.ndarray], plan: StressPlan,
               repeats: int) -> tuple[dict, dict | None]:
        """Every collective x repeat x size of groups of one size ``p``: its collective
        rows and rank rows (None: no collective ran), as :class:`_SweepBatch` columns.

        Per group and collective, in order: ``p`` skew draws and one noise draw per row
        (a jittery member draws its spike after the skews); a collective that cannot run
        (a link carries nothing) draws nothing and is a timeout row.
        """
        members = np.array(idx)                                          # (G, p): the groups' cards
        G, p = members.shape
        sizes = np.tile(np.array(plan.sizes, dtype=np.int64), repeats)  # row r: repeat r // S
        reps = np.repeat(np.arange(repeats), len(plan.sizes))
        R = len(sizes)
        C = len(plan.collectives)
        phys = self.phys
        model = [phys.group_model(members, c) for c in plan.collectives]
        alpha = np.stack([m[0] for m in model], axis=1)                 # (G, C)
        bw = np.stack([m[1] for m in model], axis=1)
        live = bw > 0
        # (G, C, R): the bandwidth at each row's size (a fault with ``above`` acts on larger messages only)
        bw_rows = np.repeat(bw[:, :, None], R, axis=2)
        if gated_sizes(self._faults_now):
            for size in np.unique(sizes):
                at = self.phys_at(float(size))
                if at is not phys:
                    bw_rows[:, :, sizes == size] = np.stack(
                        [at.group_model(members, c)[1] for c in plan.collectives], axis=1)[:, :, None]
        skews = np.zeros((G, C, R, p))
        noise = np.ones((G, C, R))
        if G == 1 and (phys.jit_p[members[0]] > 0).any():  # per row, spikes drawn between skews and noise
            for c in np.flatnonzero(live[0]):
                for r in range(R):
                    skews[0, c, r] = np.abs(BASE_SKEW_US * self.rng.standard_normal(p))
                    for i, m in enumerate(members[0]):
                        if phys.jit_p[m] > 0 and self.rng.random() < phys.jit_p[m]:
                            skews[0, c, r, i] += alpha[0, c] * phys.jit_f[m]
                    noise[0, c, r] = self.noise()
        else:
            z = self.rng.standard_normal((int(live.sum()), R, p + 1))
            skews[live] = np.abs(BASE_SKEW_US * z[..., :p])
            noise[live] = 1.0 + NOISE_CV * z[..., p]
        skews += ((1.0 / phys.speed[members] - 1.0) * COMPUTE_US)[:, None, None, :]
        skews -= skews.min(axis=3, keepdims=True)
        # alpha-beta times, (G, C, R): 1 GB/s moves 1e3 bytes per us
        is_ar = np.array([c == "all_reduce" for c in plan.collectives])[None, :, None]
        steps = np.where(is_ar, 2 * (p - 1), p - 1)
        volume = np.where(is_ar, 2 * ((p - 1) / p), (p - 1) / p) * sizes[None, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = steps * alpha[:, :, None] + volume * (1e-3 / bw_rows)
        t = t * noise + skews.max(axis=3)
        # wrong elements per rank: a bad reducer spoils every reduced element; in an
        # all-to-all each rank gets bad chunks from the corrupt ranks other than itself
        count = sizes // DTYPE_BYTES                                      # (R,)
        bad_reduce = phys.reduce_bad[members].any(axis=1)                 # (G,)
        corrupt = phys.corrupt[members]                                   # (G, p)
        from_bad = corrupt.sum(axis=1)[:, None] - corrupt                 # (G, p)
        wrong = np.where(is_ar[..., None], (bad_reduce[:, None, None, None] * count[None, None, :, None]),
                         (count[None, None, :, None] // p) * from_bad[:, None, None, :])
        wrong = np.broadcast_to(wrong, (G, C, R, p)) * (count[None, None, :, None] > 0)
        return self._sweep_rows(groups, members, plan, sizes, reps, count, t, skews, wrong, live)

    def _sweep_rows(self, groups, members, plan, sizes, reps, count, t, skews, wrong, live) -> tuple[dict, dict | None]:
        G, C, R, p = skews.shape
        gid, gkind = [g.id for g in groups], [g.kind for g in groups]
        shape = (G, C, R)
        gi, ci, ri = (np.broadcast_to(x, shape).ravel() for x in np.ix_(np.arange(G), np.arange(C), np.arange(R)))
        ok = live.ravel()[np.ravel_multi_index((gi, ci), (G, C))]
        t_flat = np.where(ok, t.ravel(), np.nan)
        wrong_sum = wrong.sum(axis=3).ravel()
        algbw = np.where(ok, sizes[ri] / (t_flat * 1e-6) / 1e9, np.nan)
        is_ar = np.array([c == "all_reduce" for c in plan.collectives])
        factor = np.where(is_ar[ci], 2 * (p - 1) / p, (p - 1) / p)
        n = len(gi)
        coll = {
            "group": _Names(gid, gi), "group_kind": _Names(gkind, gi), "ranks": np.full(n, p),
            "collective": _Names(list(plan.collectives), ci), "size_bytes": sizes[ri], "count": count[ri],
            "dtype": "float", "repeat": reps[ri], "time_us": t_flat, "algbw_GBps": algbw,
            "busbw_GBps": algbw * factor, "wrong": np.where(ok, wrong_sum, np.nan),
            "status": _Names(list(STATUSES[:2]), np.where(ok, OK, TIMEOUT))}
        rows = np.flatnonzero(ok)
        if not len(rows):
            return coll, None
        gr, cr, rr = gi[rows], ci[rows], ri[rows]
        sk = skews.reshape(G * C * R, p)[rows]
        op = t.reshape(G * C * R)[rows, None] - sk
        return coll, {
            "group": _Names(gid, np.repeat(gr, p)), "collective": _Names(list(plan.collectives), np.repeat(cr, p)),
            "size_bytes": np.repeat(sizes[rr], p), "repeat": np.repeat(reps[rr], p),
            "card": _Cards(members[gr].ravel()), "skew_us": sk.ravel(), "op_us": op.ravel(),
            "wrong": wrong.reshape(G * C * R, p)[rows].ravel()}

    # -- golden ----------------------------------------------------------------------
    @staticmethod
    def _rings(phys: Physics, members: list[np.ndarray]) -> dict[int, tuple[float, float]]:
        """Each replica's ring all-reduce (worst edge latency in us, bandwidth in GB/s),
        the replicas of one size in one call (2,048 replicas at 16,384 cards)."""
        by_size: dict[int, list[int]] = {}
        for i, m in enumerate(members):
            if len(m) > 1:
                by_size.setdefault(len(m), []).append(i)
        out: dict[int, tuple[float, float]] = {}
        for at in by_size.values():
            lat_us, bw_gbps = phys.group_model(np.stack([members[i] for i in at]), "all_reduce")
            out.update(zip(at, zip(lat_us.tolist(), bw_gbps.tolist())))
        return out

    def golden_gradients(self) -> float:
        return GOLDEN_GRAD_BYTES  # the simulated golden model: one all-reduce of these a step

    def golden(self, plan: GoldenPlan, emit: Emit) -> None:
        """Every replica at once: one batch of all their steps."""
        sink = as_sink(emit)
        reported: set[str] = set()
        live = [g for g in (self._reachable_part(g, "golden", reported, sink) for g in plan.groups) if g]
        if not live:
            return
        self.progress(f"golden: {len(live)} replicas x {plan.steps} steps")
        curves: dict[tuple[int, bool], list[float]] = {}
        loss: list[list[float]] = []
        comm: list[float] = []
        compute: list[float] = []
        phys = self.phys_at(GOLDEN_GRAD_BYTES)
        members = [self.idx(group.members) for group in live]
        ring = self._rings(phys, members)
        for i, m in enumerate(members):
            p = len(m)
            diverge = bool(phys.diverge[m].any())
            if (p, diverge) not in curves:
                # The data order is fixed by the plan seed; noise varies with the run seed.
                rng = np.random.default_rng([plan.seed, self.seed, p])
                curves[(p, diverge)] = golden_loss_curve(plan.steps, rng, diverge)
            loss.append(curves[(p, diverge)])
            if p > 1:
                a, bw = ring[i][0], max(ring[i][1], PCIE_FALLBACK_GBPS)  # a dead NVLink: PCIe
                comm.append((2 * (p - 1) * a + 2 * ((p - 1) / p) * GOLDEN_GRAD_BYTES * 1e-3 / bw) * 1e-6)
            else:
                comm.append(0.0)
            compute.append(GOLDEN_COMPUTE_S / phys.speed[m].min())
        z = self.noise((len(live), plan.steps, 2))  # per step: comm noise, compute noise
        c = np.array(comm)[:, None] * z[..., 0]
        k = np.array(compute)[:, None] * z[..., 1]
        step_time = c + k
        n = len(live) * plan.steps
        sink.batch("golden", {
            "group": np.repeat(np.array([g.id for g in live], dtype=object), plan.steps),
            "stage": np.repeat(np.array(["solo" if g.kind == "card" else "group" for g in live], dtype=object),
                               plan.steps),
            "step": np.tile(np.arange(plan.steps), len(live)), "loss": np.array(loss, dtype=float).reshape(n),
            "step_time_s": step_time.ravel(), "comm_s": c.ravel(),
            "comm_share": np.where(step_time > 0, c / np.where(step_time > 0, step_time, 1), np.nan).ravel()})
