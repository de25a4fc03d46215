"""Each tier's figures, and the time a collective takes on it.

**Cost model** (Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication
Operations in MPICH", 2005; ../shared/DESIGN.md). A collective over n ranks of a buffer of
S bytes, S sized as nccl-tests sizes it (all-reduce: the buffer; all-gather, reduce-scatter
and all-to-all: the whole buffer, count x n), takes

    t = steps(op, n) x alpha + S x busfactor(op, n) / B

with alpha the tier's latency per step, B its bus bandwidth (nccl-tests busbw: the rate at
which each rank moves bytes over its slowest link) and busfactor nccl-tests' bus bandwidth
factor (doc/PERFORMANCE.md; :data:`sncheck.rows.BUSBW_FACTOR`, its one home): the
bytes each rank moves, over S. The steps: ring all-reduce 2(n-1) (a reduce-scatter then an
all-gather), tree all-reduce 2 log2 n (up and down a binary tree; NCCL's double binary
tree keeps the ring's bandwidth term), ring all-gather and reduce-scatter n-1, pairwise
all-to-all n-1, send/recv 1. An all-reduce takes the faster of ring and tree, as NCCL's
tuner picks per size.

**Groups that span tiers.** A ring moves in lock-step, so it runs at its slowest hop: a
group that spans domains runs at the scale-out figures, one that spans hosts inside a
domain at the scale-up figures. A pairwise all-to-all exchanges with each peer in turn, so
each exchange runs at the tier between the two: t = sum over peers (alpha_tier + (S/n) /
B_tier). Hierarchical algorithms (NCCL's NVLS or CollNet, DeepSpeed-MoE's hierarchical
all-to-all) would do better across domains; they are not modelled.

**Measured figures** (``--measured RUN``): a run directory's stress rows give, per tier,
collective and group size, the time at each message size (the median over repeats and
groups; rows of the confirmation retest, failed rows and rows with wrong elements left
out); its connectivity rows give each tier's one-way latency (alpha) and its point-to-
point bandwidth. A collective's time at size S is the measured time interpolated in
log-log between the measured sizes (above the largest, at the largest one's bus bandwidth;
below the smallest, the smallest one's time), measured on the same collective where the
run has it (else all-reduce, whose bus bandwidth nccl-tests defines to compare across
collectives), with the group size nearest the one asked for, and then moved to the group
size asked for with the alpha-beta model:

    t(op, n) = (f / f_m) x t_m + (steps(op, n) - steps_m x f / f_m) x alpha

(f, f_m the bus factors, t_m the measured time): exact where the measured group has the
same size, and the model's own scaling where it has not. A baseline (``sncheck baseline
make``) gives each tier's point-to-point bandwidth and latency only. A tier the run did not
measure takes the inventory's design figures (its platform's, unless the inventory sets
its own), else ``--design``; each tier says where its figures came from.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sncheck.config.inventory import TIERS, tier_design
from sncheck.errors import ConfigError
from sncheck.model import LINK_SEP, Tier, host_of
from sncheck.rows import BUSBW_FACTOR
from sncheck.store.results import own_record, record_of
from sncheck.store.frames import RowFrames
from sncheck.store.rundir import read_frames, refuse_impossible
from sncheck.config.inventory import TierDesign
from sncheck.config.units import parse_bandwidth, parse_latency

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "sendrecv")
GROUP_KIND_TIER = {"host": Tier.INTRA_HOST.value, "rail": Tier.SCALE_UP.value, "domain": Tier.SCALE_UP.value,
                   "cross": Tier.SCALE_OUT.value}  # stress groups (sncheck.probeplan.stress_groups) by kind


def steps(op: str, n: int, algo: str = "ring") -> float:
    """Latency steps of ``op`` over ``n`` ranks (the alpha term's multiplier)."""
    if n < 2:
        return 0.0
    if op == "all_reduce":
        return 2.0 * math.ceil(math.log2(n)) if algo == "tree" else 2.0 * (n - 1)
    if op == "sendrecv":
        return 1.0
    return float(n - 1)


def busfactor(op: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor: bytes each rank moves, over S."""
    return BUSBW_FACTOR[op](n) if n >= 2 else 0.0


@dataclass
class TierFigures:
    tier: str
    alpha_s: float                 # latency per step
    bandwidth_GBps: float          # bus bandwidth at large messages
    source: str
    # (collective, ranks) -> (sizes in bytes, times in s), sorted by size: measured curves
    curves: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    p2p_GBps: float | None = None  # measured point-to-point bandwidth (send/recv)

    @property
    def measured(self) -> bool:
        return bool(self.curves) or self.p2p_GBps is not None

    def time(self, op: str, n: int, size: float) -> tuple[float, str]:
        """Seconds for ``op`` over ``n`` ranks of ``size`` bytes on this tier, and the algorithm."""
        if n < 2 or size <= 0:
            return 0.0, "-"
        if op == "sendrecv" and self.p2p_GBps:
            return self.alpha_s + size / (self.p2p_GBps * 1e9), "p2p"
        curve = self._curve(op, n)
        if curve is None:
            algos = ("ring", "tree") if op == "all_reduce" else {"sendrecv": ("p2p",), "all_to_all": ("pairwise",)}.get(
                op, ("ring",))
            bw = self.bandwidth_GBps * 1e9
            best = min((steps(op, n, a) * self.alpha_s + size * busfactor(op, n) / bw, a) for a in algos)
            return best
        (op_m, n_m), (sizes, times) = curve
        t_m = _interp(sizes, times, size)
        f, f_m = busfactor(op, n), busfactor(op_m, n_m)
        moved = (f / f_m) * t_m + (steps(op, n) - steps(op_m, n_m) * f / f_m) * self.alpha_s
        floor = size * f / (self.bandwidth_GBps * 1e9)  # never faster than the tier's best bus bandwidth
        return max(moved, floor, self.alpha_s), "measured"

    def _curve(self, op: str, n: int):
        if not self.curves:
            return None
        for want in (op, "all_reduce", None):
            keys = [k for k in self.curves if want is None or k[0] == want]
            if keys:
                key = min(keys, key=lambda k: (abs(math.log(k[1] / n)), -k[1]))
                return key, self.curves[key]
        return None

    def to_dict(self) -> dict:
        out: dict = {"alpha_us": round(self.alpha_s * 1e6, 3), "bandwidth_GBps": round(self.bandwidth_GBps, 3),
                     "source": self.source}
        if self.curves:
            out["measured"] = sorted(f"{op} x{n}: {len(s)} sizes" for (op, n), (s, _) in self.curves.items())
        if self.p2p_GBps is not None:
            out["p2p_GBps"] = round(self.p2p_GBps, 3)
        return out


def _interp(sizes: np.ndarray, times: np.ndarray, size: float) -> float:
    if size >= sizes[-1]:
        return float(times[-1] * size / sizes[-1])
    if size <= sizes[0]:
        return float(times[0])
    return float(np.exp(np.interp(np.log(size), np.log(sizes), np.log(times))))


class Figures:
    """The figures of every tier; intra-host falls back to scale-up (:func:`tier_design`)."""

    def __init__(self, tiers: Mapping[str, TierFigures]) -> None:
        self.tiers = dict(tiers)

    def get(self, tier: str) -> TierFigures:
        fig = tier_design(self.tiers, tier)
        if fig is None:
            raise ConfigError(f"no figures for the {tier} tier: give -i INVENTORY (a platform's design values), "
                              f"--design {tier}=BANDWIDTH@LATENCY or --measured RUN")
        return fig

    def to_dict(self) -> dict:
        return {t: f.to_dict() for t, f in self.tiers.items()}

    def merged(self, fallback: "Figures") -> "Figures":
        """These figures, with ``fallback``'s for the tiers these lack."""
        return Figures({**fallback.tiers, **self.tiers})


def design_figures(design: Mapping, source: str) -> Figures:
    """Figures from design values: tier -> TierDesign (bandwidth_GBps, latency_us)."""
    return Figures({t: TierFigures(t, d.latency_us * 1e-6, d.bandwidth_GBps, source) for t, d in design.items()})


# ------------------------------------------------------------------ measured

def measured_figures(ref: str | Path, inventory: str | None = None) -> Figures:
    """``--measured RUN``: a run directory (or its results.json), or a baseline JSON; with
    ``inventory`` (``plan -i``), one of that inventory's runs."""
    p = Path(ref)
    if p.is_file() and p.name != "results.json":
        return _baseline_figures(p, inventory)
    run_dir = p.parent if p.is_file() else p
    if not os.path.lexists(run_dir / "results.json"):  # a FIFO or device there: the reader names it
        raise ConfigError("not a run directory (no results.json) or a baseline (sncheck baseline make)", str(p))

    results = _read_json(own_record(run_dir / "results.json"), "a run's results.json")
    record_of(results, str(run_dir / "results.json"))  # a newer or older layout is refused, never read as v1
    _same_fleet(results.get("inventory"), inventory, "measured", run_dir / "results.json")
    hosts = {h: sn.get("name") for sn in (results.get("topology") or {}).get("supernodes", [])
             if isinstance(sn, dict) for h in sn.get("hosts", [])}
    frames = read_frames(run_dir)
    p2p = frames.kind("p2p", FIGURES_P2P)
    refuse_impossible(p2p, run_dir, "taken as the tiers' figures")
    figs = frames_figures(p2p, frames.kind("collective", FIGURES_COLLECTIVE), hosts,
                          f"measured {run_dir}")
    recorded = {t: d for t, d in (results.get("design") or {}).items() if isinstance(d, dict) and t in TIERS}
    fallback = Figures({t: TierFigures(t, float(d["latency_us"]) * 1e-6, float(d["bandwidth_GBps"]),
                                       f"{run_dir}: results.json design ({d.get('source', 'recorded')})")
                        for t, d in recorded.items() if _positive(d.get("latency_us")) and _positive(d.get("bandwidth_GBps"))})
    figs = figs.merged(fallback)
    if not figs.tiers:
        raise ConfigError("the run measured no tier: no connectivity or stress rows, no design values", str(run_dir))
    return figs


def frames_figures(p2p: pd.DataFrame, coll: pd.DataFrame, host_supernode: Mapping[str, str | None],
                   source: str) -> Figures:
    """Figures from a run's rows: connectivity ``p2p`` and stress ``collective`` rows."""
    return _figures(_p2p_by_tier(p2p, _kept(p2p, "connectivity")), coll, host_supernode, source)


def view_figures(frames: RowFrames, host_supernode: Mapping[str, str | None], source: str) -> Figures:
    """:func:`frames_figures` of a view's rows (``frames``: a run store's, read as asked
    for), the pair rows read a column at a time: the choosing columns and the tiers once
    (a few bytes a row), then each number alone, taken for the rows kept and let go. A
    frame of the six columns of every pair row, with its Arrow read beside it, was the
    16,384-card gate's peak; the same rows in the same order give the same medians."""
    chosen = frames.read("p2p", ("tier", *_CHOOSING))
    keep, tiers = _kept(chosen, "connectivity"), chosen["tier"] if "tier" in chosen else None
    del chosen
    by_tier = _p2p_by_tier(tiers, keep, lambda c: frames.read("p2p", (c,))[c])
    return _figures(by_tier, frames.kind("collective", FIGURES_COLLECTIVE), host_supernode, source)


def _figures(by_tier: dict[str, tuple[np.ndarray, np.ndarray]], coll: pd.DataFrame,
             host_supernode: Mapping[str, str | None], source: str) -> Figures:
    coll = _usable(coll, "stress", COLLECTIVE_COLUMNS)
    if not coll.empty:
        coll = coll.assign(tier=_group_tiers(coll["group_kind"], coll["group"], host_supernode))
        coll = coll[coll["tier"].notna() & (pd.to_numeric(coll["time_us"], errors="coerce") > 0)]
        if "wrong" in coll:
            coll = coll[pd.to_numeric(coll["wrong"], errors="coerce").fillna(0) == 0]
    out: dict[str, TierFigures] = {}
    for tier in TIERS:
        lat, bw = by_tier.get(tier, (_NONE, _NONE))
        curves = _curves(coll[coll["tier"] == tier]) if not coll.empty else {}
        if not len(lat) and not len(bw) and not curves:
            continue
        best_bus = max((float((s * busfactor(op, n) / t).max()) for (op, n), (s, t) in curves.items()), default=0.0)
        alpha = float(np.median(lat[lat > 0])) * 1e-6 if (lat > 0).any() else _alpha_from_curves(curves)
        p2p_bw = float(np.median(bw[bw > 0])) if (bw > 0).any() else None
        bandwidth = max(best_bus / 1e9, p2p_bw or 0.0)
        if bandwidth <= 0 or alpha <= 0:
            continue
        out[tier] = TierFigures(tier, alpha, bandwidth, source, curves, p2p_bw)
    return Figures(out)


_NONE = np.empty(0)


def _p2p_by_tier(p2p: pd.DataFrame | pd.Series | None, keep: np.ndarray,
                 column: Callable[[str], pd.Series] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Tier -> the latencies and bandwidths of the rows ``keep`` picks (each without its
    missing values), as arrays: one pass over a fleet's millions of pair rows, without a
    copy of them or a frame per tier. ``p2p``: the rows, or only their tiers with
    ``column`` reading each number column of the same rows when asked for (one at a time)."""
    tier_of = p2p["tier"] if isinstance(p2p, pd.DataFrame) and "tier" in p2p else p2p
    if tier_of is None or isinstance(tier_of, pd.DataFrame) or tier_of.empty:
        return {}
    code, tiers = pd.factorize(tier_of)   # (a categorical's codes: no string per row)
    rows = [(i, tier) for i, tier in enumerate(tiers.tolist()) if tier in TIERS]
    mine = {tier: (code == i) & keep for i, tier in rows}
    out: dict[str, list[np.ndarray]] = {tier: [] for _, tier in rows}
    for c in ("lat_us", "bw_GBps"):
        if column is not None:
            v = pd.to_numeric(column(c), errors="coerce").to_numpy(float)
        elif isinstance(p2p, pd.DataFrame) and c in p2p:
            v = pd.to_numeric(p2p[c], errors="coerce").to_numpy(float)
        else:
            v = np.full(len(code), np.nan)
        for tier, at in mine.items():
            x = v[at]
            out[tier].append(x[np.isfinite(x)])  # an inf is no figure either
        del v
    return {tier: (lat, bw) for tier, (lat, bw) in out.items()}


# The columns the figures read (and those choosing the rows): at fleet size the p2p rows
# are millions, so only these are copied when the rows are chosen, never every column.
P2P_COLUMNS = ("tier", "lat_us", "bw_GBps")
COLLECTIVE_COLUMNS = ("group_kind", "group", "collective", "ranks", "size_bytes", "time_us", "wrong")
_CHOOSING = ("layer", "confirms", "status")
FIGURES_P2P, FIGURES_COLLECTIVE = P2P_COLUMNS + _CHOOSING, COLLECTIVE_COLUMNS + _CHOOSING   # what frames_figures reads


def _usable(rows: pd.DataFrame, layer: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows of the layer itself (not a retest's), that ran: only ``columns`` of them."""
    if rows is None or rows.empty:
        return pd.DataFrame()
    rows = rows[[c for c in dict.fromkeys(columns + _CHOOSING) if c in rows.columns]]
    return rows[_kept(rows, layer)]


def _kept(rows: pd.DataFrame | None, layer: str) -> np.ndarray:
    """Which ``rows`` are the layer's own (not a retest's) and ran."""
    if rows is None or rows.empty:
        return np.zeros(0, dtype=bool)
    keep = (rows["layer"] == layer).to_numpy(bool, copy=True) if "layer" in rows else np.ones(len(rows), dtype=bool)
    if "confirms" in rows:
        keep &= rows["confirms"].isna().to_numpy(bool)
    if "status" in rows:
        keep &= (rows["status"] == "ok").to_numpy(bool)
    return keep


def _group_tiers(kinds: pd.Series, groups: pd.Series, host_supernode: Mapping[str, str | None]) -> np.ndarray:
    """The tier of each stress group (:func:`_group_tier`), worked out once per distinct
    (kind, group): a fleet's stress pass has a hundred thousand rows of a few thousand groups."""
    k_at, k_names = pd.factorize(kinds, use_na_sentinel=False)
    g_at, g_names = pd.factorize(groups, use_na_sentinel=False)
    pairs, at = np.unique(k_at.astype(np.int64) * max(len(g_names), 1) + g_at, return_inverse=True)
    k_names, g_names = list(k_names), list(g_names)
    tiers = [_group_tier(k_names[p // max(len(g_names), 1)], g_names[p % max(len(g_names), 1)], host_supernode)
             for p in pairs.tolist()]
    return np.array(tiers, dtype=object)[at.ravel()]


def _group_tier(kind, group, host_supernode: Mapping[str, str | None]) -> str | None:
    if kind in GROUP_KIND_TIER:
        return GROUP_KIND_TIER[kind]
    if kind == "pair" and isinstance(group, str) and "<->" in group:
        a, b = (host_of(c) for c in group.removeprefix("pair:").split(LINK_SEP, 1))
        if a == b:
            return Tier.INTRA_HOST.value
        sa, sb = host_supernode.get(a), host_supernode.get(b)
        if sa is None or sb is None:
            return None  # a host the run's topology does not name: its tier is unknown
        return Tier.SCALE_UP.value if sa == sb else Tier.SCALE_OUT.value
    return None


def _curves(rows: pd.DataFrame) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    out = {}
    rows = rows[rows["collective"].isin(OPS)]
    med = rows.groupby(["collective", "ranks", "size_bytes"], observed=True)["time_us"].median().reset_index()
    for (op, n), g in med.groupby(["collective", "ranks"], observed=True):
        g = g[(g["size_bytes"] > 0) & (g["time_us"] > 0)].sort_values("size_bytes")
        if len(g) and int(n) >= 2:
            out[(str(op), int(n))] = (g["size_bytes"].to_numpy(float), g["time_us"].to_numpy(float) * 1e-6)
    return out


def _alpha_from_curves(curves) -> float:
    """Without point-to-point latency: the smallest message's time per latency step."""
    per = [t[0] / steps(op, n) for (op, n), (_, t) in curves.items() if steps(op, n) > 0]
    return min(per) if per else 0.0


def _same_fleet(measured_on: object, inventory: str | None, how: str, path: Path) -> None:
    """A run (a baseline) of another inventory than ``plan -i``'s gives another fleet's tiers:
    `plan -i small --measured RUN-OF-OTHER` costed small's collectives at the other's 45 GB/s, exit 0
    (hostile round 24, H24-05), where `run --baseline` refuses another inventory's baseline."""
    if inventory is not None and isinstance(measured_on, str) and measured_on != inventory:
        raise ConfigError(f"was {how} on inventory {measured_on!r}; -i is inventory {inventory!r}: a run's "
                          "figures are its own fleet's (give one of this inventory's runs, or leave out -i)", str(path))


def _baseline_figures(path: Path, inventory: str | None = None) -> Figures:
    data = _read_json(path, "a run directory or a baseline (sncheck baseline make)")
    if data.get("schema") != "sncheck.baseline/1":
        raise ConfigError("not a run directory or a baseline (schema sncheck.baseline/1)", str(path))
    _held_as_baselines_are(data, path)
    _same_fleet(data.get("inventory"), inventory, "made from runs", path)
    metrics = data.get("metrics") or {}
    bw = (metrics.get("p2p_bandwidth") or {}).get("tier") or {}
    lat = (metrics.get("p2p_latency") or {}).get("tier") or {}
    out = {}
    for tier in TIERS:
        if _positive(bw.get(tier)) and _positive(lat.get(tier)):
            out[tier] = TierFigures(tier, float(lat[tier]) * 1e-6, float(bw[tier]), f"baseline {path}",
                                    p2p_GBps=float(bw[tier]))
    if not out:
        raise ConfigError("the baseline holds no tier with both bandwidth and latency", str(path))
    return Figures(out)


def _held_as_baselines_are(data: dict, path: Path) -> None:
    """A baseline as `run --baseline` holds it (config.jsonio.Baseline): values a link can have, an
    inventory that is a name. `plan --measured` read its own way: 1e-300 GB/s costed a step at 10^292 s,
    an `inventory` of 5 was taken (hostile round 24, H24-19)."""
    from sncheck.config.jsonio import Baseline, validate  # noqa: PLC0415 -- pydantic: only when a baseline is read

    validate(Baseline, data, path, "baseline")


def _read_json(path: Path, what: str) -> dict:
    from sncheck.config.jsonio import read_json  # noqa: PLC0415 -- pydantic: only when a measured run's figures are read; the one reader: size-capped, regular files only

    data = read_json(path, what)
    if not isinstance(data, dict):
        raise ConfigError(f"not {what} (not a JSON object)", str(path))
    return data


def _positive(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def parse_design(specs: tuple[str, ...]) -> Figures:
    """``--design scale_up=900GB/s@3us`` (repeatable): a tier's bandwidth and latency."""

    design = {}
    for spec in specs:
        tier, sep, rest = spec.partition("=")
        bw, at, lat = rest.partition("@")
        tier = tier.strip()
        if not sep or not at or tier not in TIERS:
            raise ConfigError(f"--design takes TIER=BANDWIDTH@LATENCY with TIER one of {', '.join(TIERS)}, "
                              f"e.g. scale_out=400Gb/s@5us; got {spec!r}")
        if tier in design:  # the last would have been taken without a word
            raise ConfigError(f"--design names {tier} twice ({spec!r}): give each tier once")
        try:
            design[tier] = TierDesign(parse_bandwidth(bw.strip()), parse_latency(lat.strip()))
        except (ValueError, ConfigError) as e:
            raise ConfigError(f"--design {spec!r}: {e}") from e
    return design_figures(design, "--design")
