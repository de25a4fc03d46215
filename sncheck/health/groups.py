"""Collective groups against their peer groups, size by size, under the cost model.

The stress layer runs each collective over host, rail, domain and cross groups at every
size of its sweep. Under the mock's published cost model (README "Mock backend cost
model") a group of ``p`` ranks moving ``n`` bytes takes ``t = k(p) alpha + F(p) n beta``
(ring all-reduce ``k = 2(p-1)``, pairwise all-to-all ``k = p-1``), and its bus bandwidth is
``F(p) n / t`` (nccl-tests' factors), so ``x = 1 / busbw = p alpha / n + beta`` for both:
groups of other rank counts are compared through ``alpha`` (their peers' latency at the
sweep's smallest size) where a group has no peer of its own rank count, at the sizes where
that prediction is bandwidth-bound (its latency term under a tenth, as for design below), and
groups of one rank count exactly as their bus bandwidths' ratio to the peers' median. A group is slow at
a size when its bus bandwidth is below ``below`` of what its peers predict for it and its
time is at least ``min_excess_us`` above (launch skew: ``|N(0, 2 us)|`` a rank, the noise of small messages)
and ``noise_k`` times the noise this run measured there (:func:`_noise`: its peers' spread, its and their
repeats'); a group whose one peer of its rank count is the other is compared only where bandwidth-bound,
as for other rank counts (two numbers are no level: reviews16 #9). A group with
no peer of its kind (one domain) and every cross group (one a rail: on most fabrics they share
leaves or spines, so a slow switch would slow each peer alike) is judged against its tier's design
at the sizes where the model makes it bandwidth-bound (the latency term under a tenth),
by ``design_below``; where no size is, it is not judged (said, never a pass).

A slow group is its own finding only where no culprit already named (an earlier layer's,
or the pairwise narrowing's: ``DetectContext.known``) is among its members or on its
links: the narrowing measures the suspects' pairs at the smallest size a group was slow
at (:func:`slow_sizes`), so the explanation names the card or link it holds; what nothing
explains stays on the group's entities (its host, its supernode, every supernode a cross
group spans, each said as not localised: the retest of such a finding, reproduced, keeps it
quarantined and gating, never isolates one supernode for it), never dropped.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd

from sncheck.config.inventory import tier_design
from sncheck.health.groupmemo import judged_once, measured
from sncheck.health.groupreading import peers_kept, reading
from sncheck.model import CARD_ENDS, EntityKind, Finding, card_of, host_of, natural_key, split_link
from sncheck.probeplan import WITHOUT
from sncheck.store.frames import RowFrames, kind_rows

if TYPE_CHECKING:
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import Rule
    from sncheck.topology import Topology

NOT_GROUPS = ("pair", "confirm")  # the narrowing's pairs and a retest's groups are judged as pairs
COLUMNS = ["group", "group_kind", "collective", "size_bytes", "ranks", "time_us", "expected_us", "value",
           "excess_us", "noise_us", "basis", "peers_us", "design_us", "repeat_noise_us"]
BANDWIDTH_BOUND = 0.1  # a lone group is judged against design where the latency term is under this share
LONE_PEER_BOUND = 0.2  # against one peer: 1 - the bar, a doubled latency term reads within it (a 72-GPU rack: never 0.1)
DEFAULTS = {"below": 0.8, "design_below": 0.5, "min_excess_us": 20.0, "noise_k": 3.0}  # the shipped rule's bars
MAD_SIGMA = 1.4826  # a normal sample's standard deviation over its median absolute deviation


def bus_factor(collective: str, p: np.ndarray) -> np.ndarray:
    """nccl-tests' busbw factor (doc/PERFORMANCE.md) for groups of ``p`` ranks."""
    p = p.astype(float)
    if collective == "all_reduce":
        return 2 * (p - 1) / p
    if collective in ("broadcast", "reduce", "sendrecv"):
        return np.ones_like(p)
    return (p - 1) / p


def group_busbw(rows, ctx: "DetectContext") -> pd.DataFrame:
    """Per group, collective and size: its median time, the time its peers predict for its
    ranks (``expected_us``), their ratio ``value`` (predicted over measured: below 1 is slower) and
    the excess; ``basis`` says what it was judged against: peers, design, or none. A cross group
    read both ways keeps both times (``peers_us``, ``design_us``): which one judges it depends on the
    rule's bars (:func:`reading`); ``expected_us`` holds the shipped bars' choice. Worked out once for the
    same measured groups and design (:mod:`sncheck.health.groupmemo`)."""
    coll = measured(rows, NOT_GROUPS)
    return judged_once(coll, ctx, _judged) if not coll.empty else pd.DataFrame(columns=COLUMNS)


def _judged(coll: pd.DataFrame, ctx: "DetectContext") -> pd.DataFrame:
    key = ["collective", "group_kind", "group", "size_bytes", "ranks"]
    times = coll.groupby(key, observed=True, sort=True)["time_us"]
    # a group's repeats (a soak's sweeps, a playbook's repeats) measure its own noise: half their range
    g = times.median().reset_index().assign(spread_us=((times.max() - times.min()) / 2).to_numpy())
    # a group run again without some cards shares the rest with its first run: neither is the other's
    # peer (each predicted from the other, a fault on both reads as no slowness: reviews17 #1's cross group
    # rerun without a named NIC's card, as slow as its source at 256 MiB). The first runs are judged
    # without the reruns (as before any rerun), each rerun without its source (one that ran nothing: r9-18)
    # among its kind's groups (every level a group is judged against is its kind's: _judge)
    names = pd.Series(g["group"].cat.categories)
    first = names.str.partition(WITHOUT)[0]
    again_of = ((first != names) & first.isin(set(names[first == names]))).to_numpy()
    codes = g["group"].cat.codes.to_numpy()
    rerun, kinds = again_of[codes], g["group_kind"].cat.codes.to_numpy()
    parts = _by_collective(g[~rerun], ctx)
    for at in np.flatnonzero(again_of):
        source = np.flatnonzero((names == first[at]).to_numpy())  # (its first run)
        keep = ((~rerun & ~np.isin(codes, source)) | (codes == at)) & (kinds == kinds[np.argmax(codes == at)])
        parts += [j[j["group"].cat.codes.to_numpy() == at] for j in _by_collective(g[keep], ctx)]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    # (the ids as text from here: what every reader of the frame compares and prints)
    return pd.concat(parts, ignore_index=True)[COLUMNS].astype({"group": str, "group_kind": str, "collective": str})


def _by_collective(g: pd.DataFrame, ctx: "DetectContext") -> list[pd.DataFrame]:
    return [_judge(part, str(c), ctx) for c, part in g.groupby("collective", sort=True)]


def _judge(g: pd.DataFrame, collective: str, ctx: "DetectContext") -> pd.DataFrame:
    p = g["ranks"].to_numpy(float)
    n = g["size_bytes"].to_numpy(float)
    f = bus_factor(collective, p)
    x = g["time_us"].to_numpy(float) / (f * n)  # 1 / busbw, us a byte
    kind = g["group_kind"].cat.codes.to_numpy()  # (the categories' codes: no text hashed a row)
    # alpha of each kind: its groups' latency at the kind's smallest size (x = p alpha / n there)
    smallest = pd.Series(n).groupby(kind).transform("min").to_numpy() == n
    alpha = pd.Series(n * x / p)[smallest].groupby(kind[smallest]).median()
    a = pd.Series(kind).map(alpha).to_numpy(float)
    # peers of its own rank count where it has one (alpha cancels), else of its kind through alpha, only
    # where that prediction is bandwidth-bound: at latency-bound sizes a bigger group's noise and launch
    # skew (additive, not p alpha) scale into a smaller one's prediction, a difference of two large
    # terms (r8-33: a domain of 8 predicted from one of 24 read 0.78 on a clean run, 12 us late; at
    # twice the model's noise and skew 10 of 20 clean nvl72-6and2 runs named the domain of 8, 20-27
    # us late, reviews16 #4)
    kind_size = [kind, g["size_bytes"].to_numpy()]
    same = _peers(pd.Series(x), kind_size + [p])
    mixed = _peers(pd.Series(x - p * a / n), kind_size)
    count = np.where(same[1] >= 2, same[1], mixed[1])
    expected = np.where(same[1] >= 2, same[0], p * a / n + mixed[0]) * f * n
    basis = np.where(count >= 2, "peers", "none").astype(object)
    # one peer of its own rank count is no level, only the other group's noise (reviews16 #9: on a real
    # loopback night two hosts' groups differed 25% and 20 us at 4 KiB, every run, and the rule named one):
    # as for other rank counts, compared only where bandwidth-bound, where a launch's jitter is no share
    lone_peer = same[1] == 2
    latency_bound = ((same[1] < 2) | lone_peer) & (count >= 2) & (
        p * a / n > np.where(lone_peer, LONE_PEER_BOUND * same[0], BANDWIDTH_BOUND * (p * a / n + mixed[0])))
    expected[latency_bound], basis[latency_bound] = np.nan, "none"
    # cross groups (one a rail) share the scale-out fabric's leaves or spines on most fabrics: a slow
    # switch under all of them slows every peer alike, so each is read against the tier's design too
    # (reviews19 #2: with one cross group a rail, a ToR leaf holding every rail read as no slowness); the
    # peers' reading is kept where design's is within its bar and the peers' beyond theirs (one rail's NIC
    # at 0.6 is 0.6 of its peers, within design's 0.5: reviews20 #1, judged against design alone, a 0.6 NIC
    # passed the nightly); else design's, and where design bounds nothing nothing (at latency-bound sizes a
    # jittery card's spikes made its rail's cross group 'slow against its peers' and quarantined a leaf)
    t = g["time_us"].to_numpy(float)
    cross = g["group_kind"].to_numpy() == "cross"
    peers_us, design_us = np.full(len(g), np.nan), np.full(len(g), np.nan)
    lone = (count < 2) | cross | lone_peer
    if lone.any():  # the tier's design where the model makes it bandwidth-bound
        d_lat, d_bw = _design(g[lone], ctx)
        alpha_term, beta_term = p[lone] * d_lat / n[lone], 1.0 / (d_bw * 1e3)  # GB/s: 1e3 bytes a us
        bound = alpha_term <= BANDWIDTH_BOUND * (alpha_term + beta_term)
        by_design = np.where(bound, (alpha_term + beta_term) * f[lone] * n[lone], np.nan)
        by_peers = np.where((cross | lone_peer)[lone] & (basis[lone] == "peers"), expected[lone], np.nan)
        # one peer (two racks): its reading, design's where that alone is beyond its bar (reviews20 #13)
        with np.errstate(invalid="ignore"):
            design_alone = (by_design / t[lone] < DEFAULTS["design_below"]) & ~(by_peers / t[lone] < DEFAULTS["below"])
        one = lone_peer[lone]
        kept = np.where(one, ~np.isnan(by_peers) & ~design_alone, peers_kept(by_peers, by_design, t[lone], DEFAULTS))
        expected[lone] = np.where(kept, by_peers, by_design)
        basis[lone] = np.where(kept, "peers", np.where(bound, "design", "none"))
        peers_us[lone], design_us[lone] = np.where(bound & ~one, by_peers, np.nan), by_design  # (reading: cross)
    return g.assign(expected_us=expected, value=expected / t, excess_us=t - expected, basis=basis,
                    **_noise(g, x, f * n, kind_size + [p]), peers_us=peers_us, design_us=design_us)


def _noise(g: pd.DataFrame, x: np.ndarray, scale: np.ndarray, by: list) -> dict[str, np.ndarray]:
    """What this run measured of its own noise at each group and size, in us: against its peers
    (``noise_us``) the spread of its peers of one rank count (MAD, three or more of them), its repeats'
    and its peers' repeats' (the median's); against design (``repeat_noise_us``) the repeats' alone.
    A group read against design is not judged by its peers, and their spread holds the faults looked
    for: two slow NICs on two of four rails made the cross groups' MAD the fault itself (2,107 us against
    an excess of 2,870 at 64 MiB), and the nightly passed both at 0.30 of design (reviews21 #6).
    The rule's fixed floor (``min_excess_us``) is the mock's launch skew, not a real machine's."""
    values = pd.Series(x)
    grouped = values.groupby(by)
    count = grouped.transform("size").to_numpy()
    mad = (values - grouped.transform("median")).abs().groupby(by).transform("median").to_numpy()
    spread = pd.Series(g["spread_us"].to_numpy(float) / scale)
    peers_spread = spread.groupby(by).transform("median").to_numpy()
    repeats = np.maximum(spread.to_numpy(), peers_spread)
    return {"noise_us": np.maximum(np.where(count >= 3, MAD_SIGMA * mad, 0.0), repeats) * scale,
            "repeat_noise_us": repeats * scale}


def _peers(values: pd.Series, by: list) -> tuple[np.ndarray, np.ndarray]:
    """Each value's peers' level (their median; of two, the other one) and how many share its key."""
    grouped = values.groupby(by)
    count = grouped.transform("size").to_numpy()
    level = np.where(count == 2, grouped.transform("sum").to_numpy() - values.to_numpy(),
                     grouped.transform("median").to_numpy())
    return level, count


def _design(lone: pd.DataFrame, ctx: "DetectContext") -> tuple[np.ndarray, np.ndarray]:
    """Each lone group's tier's design latency (us) and bandwidth (GB/s); NaN without one."""
    tiers = [group_tier(str(gid), ctx.topo) for gid in lone["group"]]
    designs = [tier_design(ctx.design, t) if t else None for t in tiers]
    lat = np.array([d.latency_us if d and d.latency_us else np.nan for d in designs], float)
    bw = np.array([d.bandwidth_GBps if d and d.bandwidth_GBps else np.nan for d in designs], float)
    return lat, bw


def group_members(group: str, topo: "Topology") -> list[str]:
    """The cards of a stress group, from its id (``sncheck.probeplan.stress_groups``; a group run
    again without some, ``probeplan.without``: less those)."""
    group, _, gone = group.partition(WITHOUT)
    if gone:
        less = set(gone.split("+"))
        return [c for c in group_members(group, topo) if c not in less]
    kind, _, rest = group.partition(":")
    if kind == "host":
        return topo.cards_of_host(rest) if rest in topo.inventory.hosts else []
    if kind == "domain":
        return topo.cards_of_supernode(rest) if rest in topo.supernode_names else []
    if kind == "rail":
        sn, _, card = rest.rpartition(":")
        hosts = topo.hosts_of_supernode(sn) if sn in topo.supernode_names else []
        return [c for c in (f"{h}/{card}" for h in hosts) if c in topo.by_id]
    if kind == "cross":
        return [c for c in (f"{h}/{rest}" for h in topo.hosts) if c in topo.by_id]
    return []


def group_tier(group: str, topo: "Topology") -> str | None:
    """The slowest tier a group's collective crosses: scale-out across supernodes, scale-up
    across hosts, else inside a host. Worked out once a group and topology: judging asks it of a
    lone group's every row (a cross group's are one a size and collective, and it reads every card
    of the group: 16,384 at 131,072 cards; asked a row, it was 6 of the 16k gate's 31 s CPU)."""
    known = _TIERS.setdefault(topo, {})
    if group not in known:
        known[group] = _group_tier(group, topo)
    return known[group]


_TIERS: "WeakKeyDictionary[Topology, dict[str, str | None]]" = WeakKeyDictionary()


def _group_tier(group: str, topo: "Topology") -> str | None:
    cards = group_members(group, topo)
    if len(cards) < 2:
        return None
    if len({topo.by_id[c].supernode for c in cards}) > 1:
        return "scale_out"
    return "scale_up" if len({host_of(c) for c in cards}) > 1 else "intra_host"


def group_entities(group: str, topo: "Topology") -> list[tuple[str, EntityKind]]:
    """Who a slow group's finding names: its host, else the supernode holding its cards; a group
    over several supernodes (a cross group) the least of the scale-out fabric its pairs between
    supernodes cross (:func:`scale_out_path`), each finding saying it is not localised
    (:func:`group_outlier`). Naming the first supernode alone put a scale-out link's slowness
    (h1/gpu0<->w1/gpu0, seen only by cross:gpu0) on supernode six's 24 cards (reviews16 #1);
    naming every supernode it spans was a quarantine record on each of 64 at fleet size."""
    cards = group_members(group, topo)
    hosts = sorted({host_of(c) for c in cards})
    if len(hosts) == 1:
        return [(hosts[0], EntityKind.HOST)]
    held = {topo.by_id[c].supernode for c in cards}
    if len(held) > 1 and len(path := scale_out_path(cards, topo)) in range(1, len(held)):  # fewer than supernodes
        return [(switch, EntityKind.SWITCH) for switch in path]
    return [(sn, EntityKind.SUPERNODE) for sn in topo.supernode_names if sn in held]


def scale_out_path(cards: list[str], topo: "Topology") -> list[str]:
    """The least of the fabric model (sncheck.fabric) every scale-out pair of ``cards`` crosses: the one
    leaf holding all their NICs (an inventory without a fabric: a leaf per rail), else the one spine
    the model routes every pair of their leaves through, else their leaves (the rail's scale-out
    path; named only where fewer than the supernodes it spans); empty where a card has no NIC on a leaf."""
    fabric = topo.fabric
    pos = np.array([fabric.card_position(c) for c in cards], np.int64)
    leaves = np.unique(fabric.card_leaf[pos])
    if not len(leaves) or (leaves < 0).any():
        return []
    if len(leaves) == 1:
        return [fabric.leaf_id(int(leaves[0]))]
    la, lb = (x.ravel() for x in np.meshgrid(leaves, leaves))
    spines = np.unique(fabric.spines_between(la[la < lb], lb[la < lb]))
    if len(spines) == 1 and spines[0] >= 0:
        return [fabric.spine_id(int(spines[0]))]
    return [fabric.leaf_id(int(li)) for li in leaves]


def spans(group: str, topo: "Topology") -> list[str]:
    """The supernodes a group's cards are in, in inventory order."""
    held = {topo.by_id[c].supernode for c in group_members(group, topo)}
    return [sn for sn in topo.supernode_names if sn in held]


def bars(rule: "Rule | None") -> dict[str, float]:
    """A group rule's bars (the shipped defaults without one)."""
    params = rule.params if rule is not None else {}
    return {k: float(params.get(k, v)) for k, v in DEFAULTS.items()}


def slow(frame: pd.DataFrame, bar: dict[str, float]) -> pd.Series:
    """Which rows of :func:`group_busbw` are beyond the bars (each read as they choose: :func:`reading`)."""
    frame = reading(frame, bar)
    limit = np.where(frame["basis"] == "design", bar["design_below"], bar["below"])
    noise = frame["noise_us"].astype(float)
    if "repeat_noise_us" in frame:  # against design, the repeats' noise alone (_noise)
        noise = noise.where(frame["basis"] != "design", frame["repeat_noise_us"].astype(float))
    floor = np.maximum(bar["min_excess_us"], bar["noise_k"] * noise.fillna(0.0))
    return (frame["value"].astype(float) < limit) & (frame["excess_us"].astype(float) >= floor)


def slow_sizes(rows, ctx: "DetectContext", rule: "Rule | None" = None, above: int = 0,
               largest: bool = False) -> dict[str, int]:
    """Each slow group and the smallest size it was slow at (the stress narrowing's size); ``above``:
    the smallest above that size (a group slow at its small sizes through one fault, and at its
    large ones through another acting only there); ``largest``: the largest instead (where a fault
    acting above a size shows, whatever another culprit made slow below it)."""
    frame = group_busbw(rows, ctx)
    bad = frame[slow(frame, bars(rule)) & (frame["size_bytes"] > above)]
    sizes = bad.groupby("group")["size_bytes"]
    return {str(k): int(v) for k, v in (sizes.max() if largest else sizes.min()).items()}


def explained(cards: list[str], known: frozenset[tuple[str, str]], topo: "Topology") -> bool:
    """A named culprit on the group's paths: among its cards, holding one, on a link between two
    of them, or a NIC or switch its scale-out pairs cross. A NIC or a switch carries only
    scale-out pairs, so it explains only a group over several supernodes, and a switch only where
    its NICs hold the group's cards (reviews16 #8, #12: any named switch anywhere, or a NIC of a
    host or domain group, silenced that group's slowness unsaid)."""
    return explainer(cards, known, topo) is not None


def explainer(cards: list[str], known: frozenset[tuple[str, str]], topo: "Topology") -> tuple[str, str] | None:
    """The first named culprit (entity, kind), in their sorted order, that :func:`explained` finds
    on the group's paths; None where none is (the report says which culprit a slow group was left to)."""
    mine = set(cards)
    return next(((e, k) for e, k in sorted(known) if _sits_on(e, k, mine, cards, topo)), None)


def explainers(cards: list[str], known: frozenset[tuple[str, str]], topo: "Topology") -> set[str]:
    """The cards of a group that its named culprits sit on, as :func:`explained` reads them: a card, a
    NIC's card, a host's or a supernode's cards, both ends of a link between two of them, the cards
    whose NICs a switch (or cable) that carries the group's pairs holds. The group without them is
    the measurement that says whether those culprits explain its slowness (reviews17 #1: a transient
    NIC, released by its retest, silenced a 0.3x scale-out link its group alone showed)."""
    mine = set(cards)
    return set().union(*(_sits_on(e, k, mine, cards, topo) for e, k in known))


def launch_spread(rows, groups: Collection[str] | None = None) -> pd.Series:
    """Per (group, collective, size): how late its last rank launched after its first (the median over
    repeats of the ranks' skew range). A slow card launches late (the cost model: ``(1/s - 1) 50 us``,
    measured here, not assumed): the group's time holds that wait before any byte moves. ``groups``:
    only theirs (None: every group's).

    The rank rows are read a piece at a time (``RowFrames.pieces``), each piece reduced to its
    (group, collective, size, repeat) latest and earliest launch, those of all pieces to their
    extremes (exact: a maximum of maxima), never a frame of every rank row: with a cross group a rail,
    that frame (3.7 M rows at 16,384 cards) raised the stress layer's peak by 477 MiB, and at 131,072
    cards took the gate's from connectivity's 3,947 MiB to 5,498 (README "Fleet scale")."""
    columns = ["group", "collective", "size_bytes", "repeat", "skew_us"]
    pieces = rows.pieces("rank", columns) if isinstance(rows, RowFrames) else [kind_rows(rows, "rank", columns)]
    keys = ["group", "collective", "size_bytes", "repeat"]
    ends = []
    for piece in pieces:
        if groups is not None:
            piece = piece[piece["group"].isin(list(groups))]
        if piece.empty:
            continue
        piece = piece.astype({"group": str, "collective": str, "skew_us": float})
        per = piece.groupby(keys, observed=True)["skew_us"]
        ends.append(pd.DataFrame({"last": per.max(), "first": per.min()}))
    if not ends:
        return pd.Series(dtype=float)
    both = ends[0] if len(ends) == 1 else pd.concat(ends).groupby(level=keys).agg({"last": "max", "first": "min"})
    spread = (both["last"] - both["first"]).groupby(level=[0, 1, 2], observed=True).median()
    spread.index = spread.index.set_levels(spread.index.levels[2].astype(np.int64), level=2)
    return spread


def beyond_culprits(frame: pd.DataFrame, members: dict[str, list[str]], known: frozenset[tuple[str, str]],
                    factors: dict[str, float], topo: "Topology", rule: "Rule | None",
                    late: pd.Series | None = None, cap: float | None = None) -> dict[str, dict]:
    """Of the slow groups in ``members`` (those no rerun without their culprits' cards could tell: a
    culprit every card of the group, or all but one, sits under), those slower than their culprits'
    own measured factors explain: at a bandwidth-bound size (the time its peers predict at least ten
    times what they predict at the sweep's smallest size, its latency) the group reads below the
    product of the named culprits' factors on it (``factors``: each one's finding's; one culprit: its
    own, several: their slowdowns compound on a shared path) times the group's bar, so another fault
    beside them acts there. A culprit explains what it predicts within the
    bar, never more: a card at 0.7 on a two-card host whose link to its mate runs at 0.3 above 128 MiB
    (the host group reads 0.21 at 1 GiB), a spine at 0.6 over every leaf beside a NIC at 0.4 above
    128 MiB. A culprit with no measured factor (a dead link, a host down) explains its groups whole.
    ``late`` (:func:`launch_spread`): a slow card also launches late, a wait its factor does not
    say; the culprit predicts the group's peers' time over its factor plus that measured wait
    (r11-07: a card at 0.5 on a two-card host, 50 us late, read 0.29 at 16 MiB and its host was
    named beside it). ``cap`` (``within.out_cap``): a card's speed shows over scale-out only through
    its NIC's cap, so on a group over the switches a card, host or supernode at ``f`` predicts
    ``min(1, f / cap)`` (a 0.7 card on rail 3 read 0.56 in its pairs and 'explained' its cross group at
    0.40 of design, a NIC at 0.4 beside it: reviews21 #3). Group -> the culprit (the lowest factor's),
    its factor, the group's worst value and the smallest such size."""
    if frame.empty or not members:
        return {}
    bar = bars(rule)
    frame = reading(frame[frame["group"].isin(list(members)) & (frame["basis"] != "none")], bar)
    latency = frame.groupby(["group", "collective"])["expected_us"].transform("min").astype(float)
    frame = frame[frame["expected_us"].astype(float) >= latency / BANDWIDTH_BOUND]
    bad = frame[slow(frame, bar)]
    out: dict[str, dict] = {}
    for group, rows_of in bad.groupby("group", sort=True):
        cards = members[str(group)]
        on = [(e, k) for e, k in sorted(known) if _sits_on(e, k, set(cards), cards, topo)]
        if not on or any(e not in factors for e, _ in on):
            continue
        acts = _acting(on, factors, cap if group_crosses_switches(cards, topo) else None)
        entity, kind = min(on, key=lambda c: acts[c[0]])
        # several culprits on its paths compound (a throttled card at 0.8 on a 0.5 link reads 0.4): their
        # product bounds what they predict together (lenient where they sit on different pairs)
        joint = float(np.prod([acts[e] for e, _ in on]))
        expected = rows_of["expected_us"].astype(float).to_numpy()
        wait = np.zeros(len(rows_of))
        if late is not None and len(late):
            at = pd.MultiIndex.from_arrays([rows_of["group"].astype(str), rows_of["collective"].astype(str),
                                            rows_of["size_bytes"].astype(np.int64)])
            wait = np.nan_to_num(late.reindex(at).to_numpy(float))
        predicted = expected / (expected / joint + wait)  # the value the culprits give
        limit = np.where(rows_of["basis"] == "design", bar["design_below"], bar["below"]) * predicted
        worse = rows_of[rows_of["value"].astype(float).to_numpy() < limit]
        if not worse.empty:
            out[str(group)] = {"entity": entity, "entity_kind": kind, "factor": round(factors[entity], 4),
                               "measured": round(float(worse["value"].astype(float).min()), 4),
                               "from_bytes": int(worse["size_bytes"].min())}
    return out


def _acting(on: list[tuple[str, str]], factors: dict[str, float], cap: float | None) -> dict[str, float]:
    """Each culprit's factor as it acts on a group (``cap``: over the scale-out network, a card's speed through
    its NIC's cap, :func:`beyond_culprits`)."""
    return {e: min(1.0, factors[e] / cap) if cap and k in CARD_ENDS else factors[e] for e, k in on}


def _sits_on(entity: str, kind: str, mine: set[str], cards: list[str], topo: "Topology") -> set[str]:
    """The cards of the group (``mine``) that one culprit is on, as its paths cross it; none: it is not
    on the group's paths (the one reading :func:`explained`, :func:`explainer` and :func:`explainers` share)."""
    if kind == "card":
        return {entity} & mine
    if kind == "nic":
        return {card_of(entity)} & mine if group_crosses_switches(cards, topo) else set()
    if kind == "host":
        return {c for c in mine if host_of(c) == entity}
    if kind == "supernode":
        return {c for c in mine if c in topo.by_id and topo.by_id[c].supernode == entity}
    if kind == "link" and "<->" in entity and set(split_link(entity)) <= mine:
        return set(split_link(entity))
    if kind == "switch" and _switch_carries(entity, mine, topo):
        return {card_of(n) for n in topo.fabric.nics_of(entity)} & mine
    return set()


def group_crosses_switches(cards: list[str], topo: "Topology") -> bool:
    return len({topo.by_id[c].supernode for c in cards if c in topo.by_id}) > 1


def _switch_carries(switch: str, mine: set[str], topo: "Topology") -> bool:
    """Whether a scale-out pair of the group's cards crosses ``switch``: a leaf holding one of
    their NICs, a spine (or a leaf-to-spine cable) with two of them in different supernodes
    beneath it, in a group over several supernodes."""
    if not group_crosses_switches(sorted(mine), topo) or not topo.fabric.is_element(switch):
        return False
    under = {card_of(n) for n in topo.fabric.nics_of(switch)} & mine
    if switch.startswith("leaf:") and "<->" not in switch:
        return bool(under)
    return len({topo.by_id[c].supernode for c in under if c in topo.by_id}) > 1


def group_outlier(rows, rule: "Rule", ctx: "DetectContext") -> list[Finding]:
    """Each group beyond its bars at some size of the sweep that no named culprit explains:
    a finding on its entities. A group judged at no size is not compared (below)."""
    frame = ctx.metric(rule.metric, rows)
    if frame.empty:
        return []
    frame = reading(frame, bars(rule))
    bad = frame[slow(frame, bars(rule))]
    worst: dict[tuple[str, EntityKind], Finding] = {}  # one finding an entity: its worst group's
    held = {str(g): _slow_cards(str(g), ctx) for g in bad["group"].unique()}  # what each slow group says is slow
    for group, rows_of in bad.groupby("group", sort=True):
        cards = group_members(str(group), ctx.topo)
        beyond = ctx.beyond.get(str(group))
        if not cards or (beyond is None and explained(cards, ctx.known, ctx.topo)):
            continue
        if beyond is not None and explained(cards, frozenset(k for k in ctx.known if k[0] not in ctx.factors), ctx.topo):
            continue  # a culprit named since (this layer's pairs: no measured factor here) explains it whole
        if beyond is not None:  # slower than its culprit explains: judged from where it is (beyond_culprits)
            rows_of = rows_of[rows_of["size_bytes"] >= beyond["from_bytes"]]
        over = spans(str(group), ctx.topo)
        entities = group_entities(str(group), ctx.topo)
        wide = {kind for _, kind in entities} & {EntityKind.SUPERNODE, EntityKind.HOST}
        at = crossing(cards, held, ctx.topo, hosts=EntityKind.SUPERNODE in wide) if wide else {}
        entities = [(c, EntityKind.HOST if c in ctx.topo.inventory.hosts else EntityKind.CARD)
                    for c in sorted(at, key=natural_key)] or entities
        for entity, kind in entities:
            f = _finding(str(group), len(cards), over, rows_of, entity, kind, rule, [e for e, _ in entities], beyond,
                         at.get(entity, ()))
            had = worst.get((entity, kind))
            groups = sorted({str(group)} | set(had.evidence["groups"] if had else ()))
            if had is None or f.evidence["measured"] < had.evidence["measured"]:
                had = worst[(entity, kind)] = f
            had.evidence["groups"] = groups
    # A group no peer compares and no size of the sweep bounds by its tier's design (a single NVL72
    # rack's one domain, a fleet's one cross group) is not compared: its cards' pairs and the
    # layer's other rules still judge it. A "not judged" finding for it made every clean run of a
    # single domain's stress layer "not judged" (bench_platform_accuracy's clean nvl72-rack run).
    return list(worst.values())


def _slow_cards(group: str, ctx: "DetectContext") -> set[str]:
    """The cards a slow group says may be slow: all of them, or where a named culprit explains it
    only the cards that culprit sits on (:func:`explainers`). A host group slowed by its 0.85 card
    must not cross a rail group a jittery card of another host slowed at a third, healthy card."""
    cards = group_members(group, ctx.topo)
    if ctx.beyond.get(group) is None and explained(cards, ctx.known, ctx.topo):
        return explainers(cards, ctx.known, ctx.topo)
    return set(cards)


def crossing(cards: list[str], held: dict[str, set[str]], topo: "Topology", hosts: bool = True) -> dict[str, list[str]]:
    """What inside a host's or one supernode's slow group (``cards``) the slow groups (``held``:
    the cards each says may be slow, :func:`_slow_cards`) say is slow, each with the slow groups saying it:
    the one or two cards where slow host and rail groups cross; else (``hosts``) the one or two
    slow hosts whose every card it holds; else none (its host or supernode). A group's slowness
    no culprit explains is first what the slow groups crossing it share with it, as the narrowing
    finds its suspects and as wrong results are localised (invariants.wrong_not_localised), never
    at once the host or supernode holding it: a card spiking 10x one op in five slowed host:node006 and rail:sn0:gpu1, its narrowing
    named one link of it, and the rail group's finding "isolated" sn0's 32 cards under a passing
    gate (reviews19 #9); a 4x-latency card's host and domain groups isolated its supernode (#4)."""
    mine = set(cards)
    slow = {g: c for g, c in held.items() if g.startswith("host:") and WITHOUT not in g}
    rails = {g: c for g, c in held.items() if g.startswith("rail:") and WITHOUT not in g}
    cross = {c for h in slow.values() for r in rails.values() for c in h & r} & mine
    if 1 <= len(cross) <= 2:
        return {c: sorted(g for g, h in {**slow, **rails}.items() if c in h and set(h) != mine) for c in cross}
    inside = {name: [g] for g, h in slow.items() if (name := g.partition(":")[2]) in topo.inventory.hosts
              and h == set(topo.cards_of_host(name)) and h < mine}  # a whole slow host group no culprit explains
    return inside if hosts and 1 <= len(inside) <= 2 else {}


def _one_of(entity: str, kind: EntityKind, named: list[str]) -> str:
    if kind == EntityKind.SUPERNODE:
        listed = ", ".join(named) if len(named) <= 8 else f"the {len(named)} supernodes"
        return f"{kind} {entity} is one of {listed} it spans"
    if len(named) == 1:
        return f"{kind} {entity} carries every pair of it between supernodes, no link or NIC named on it"
    listed = ", ".join(named) if len(named) <= 8 else f"the {len(named)} leaves"
    return f"{kind} {entity} is one of {listed} its pairs between supernodes cross"


def _finding(group: str, ranks: int, over: list[str], rows_of: pd.DataFrame, entity: str, kind: EntityKind,
             rule: "Rule", named: list[str], beyond: dict | None = None, at: list[str] | tuple = ()) -> Finding:
    worst = rows_of.loc[rows_of["value"].astype(float).idxmin()]
    first = int(rows_of["size_bytes"].min())
    sizes = sorted({int(s) for s in rows_of["size_bytes"]})
    against = "its tier's design" if worst["basis"] == "design" else "its peer groups"
    where = f" over {len(over)} supernodes" if len(over) > 1 else ""
    # the rule's summary says how (shipped: "slow"), the basis against what: a lone group judged against
    # its tier's design read "slow against its peer groups", as if it had some
    message = (f"{kind} {entity}: collective group {group} ({ranks} ranks{where}): {rule.summary} against {against}: "
               f"{worst['collective']} at {_size(int(worst['size_bytes']))} took {worst['time_us']:.1f} us where "
               f"{against} predict {worst['expected_us']:.1f} us ({worst['value']:.2f}x); slow at {len(sizes)} of "
               f"the sweep's sizes from {_size(first)}; " + (
                   "no card, link or host named inside it explains that" if beyond is None else
                   f"{beyond['entity_kind']} {beyond['entity']}, named on it, measured {beyond['factor']:.2f} and "
                   "explains no slower"))
    evidence = {"measured": round(float(worst["value"]), 4), "expected": 1.0, "unit": "x predicted",
                "group": group, "groups": [group], "collective": str(worst["collective"]), "sizes": sizes,
                "smallest_bytes": first, "against": str(worst["basis"])}
    if beyond is not None:
        evidence["beyond"] = dict(beyond)
    if at:  # the card where it crosses the slow host groups: not localised by a pair
        how = "the slow groups cross only at it" if kind == EntityKind.CARD else "the slow host group inside it"
        message += f"; {how} ({', '.join(at)}): not localised by a pair"
        evidence.update(localised=False, crossing=sorted({group, *at}))
    if where:  # no one supernode holds it: the fabric its pairs cross (or each supernode), none as the culprit
        message += f"; not localised: {_one_of(entity, kind, named)}"
        evidence.update(localised=False, supernodes=over)
    return Finding(entity, kind, rule.layer, rule.name, rule.severity, message, evidence)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"
