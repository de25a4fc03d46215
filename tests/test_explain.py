"""Localization as an explanation search (issue 29 item 3; sncheck/health/explain.py): the
fewest culprits, each with a factor, explaining every pair within the rules' bars, the
more specific one only where the evidence separates them. Hand-built pair frames under
the mock's published cost model: a pair at the lower of its ends' speeds times its
link's factor (bandwidth), at the higher of its ends' multipliers (latency)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sncheck.run.inputs import load_inventory
from sncheck.health.culprits import explain_cells, kind_of
from sncheck.health.metrics import DetectContext
from sncheck.health.pairgroups import unique_inverse
from sncheck.health.rules import load_rules, load_rules_text
from sncheck.model import host_of, link_id, nic_of
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
INVENTORIES = ROOT / "fixtures/inventories"
RULES = load_rules("default")


def topo_of(name: str) -> Topology:
    return Topology(load_inventory(INVENTORIES / f"{name}.yaml"))


@pytest.fixture(scope="module")
def pod() -> Topology:
    return topo_of("mi300x-pod")


@pytest.fixture(scope="module")
def fleet() -> Topology:
    return topo_of("fleet-12sn")


def cells_of(topo: Topology, speed=None, link=None, lat=None, nic=None, pairs=None, noise=0.0, seed=0,
             metric="p2p_bandwidth") -> pd.DataFrame:
    """Every pair of the topology (or ``pairs``) under the mock's cost model: ``speed``
    card -> factor, ``link`` link id -> factor (0: dead), ``lat`` card -> multiplier,
    ``nic`` card -> its rail NIC's factor (scale-out only)."""
    speed, link, lat, nic = speed or {}, link or {}, lat or {}, nic or {}
    ids = topo.card_ids
    if pairs is None:
        pairs = [(x, y) for i, x in enumerate(ids) for y in ids[i + 1:]]
    cells = pd.DataFrame({"src": [p for p, _ in pairs], "dst": [q for _, q in pairs]})
    cells["tier"] = topo.tiers(cells["src"], cells["dst"])
    cells["link"] = topo.link_ids(cells["src"], cells["dst"])
    design = {t: getattr(d, "bandwidth_GBps" if metric == "p2p_bandwidth" else "latency_us")
              for t, d in topo.inventory.design.items()}
    up = design.get("scale_up", design.get("intra_host"))
    base = cells["tier"].map(lambda t: design.get(t, up)).astype(float).to_numpy()
    a, b = cells["src"].to_numpy(), cells["dst"].to_numpy()
    if metric == "p2p_bandwidth":
        sa = np.array([speed.get(c, 1.0) for c in a])
        sb = np.array([speed.get(c, 1.0) for c in b])
        out = cells["tier"].to_numpy() == "scale_out"
        cap = design.get("scale_out", 1.0) / (up or 1.0)
        na = np.array([nic.get(c, 1.0) for c in a])
        nb = np.array([nic.get(c, 1.0) for c in b])
        f = np.where(out, np.minimum(np.minimum(na, nb), np.minimum(sa, sb) / cap), np.minimum(sa, sb))
        f = np.minimum(f, 1.0) * np.array([link.get(x, 1.0) for x in cells["link"]])
    else:
        f = np.maximum([lat.get(c, 1.0) for c in a], [lat.get(c, 1.0) for c in b])
    value = base * f * (1 + noise * np.random.default_rng(seed).standard_normal(len(cells)))
    cells["value"] = np.where(f > 0, value, np.nan)
    cells["design"] = base
    cells["failed"] = cells["value"].isna()
    return cells


def named(cells: pd.DataFrame, topo: Topology, metric="p2p_bandwidth", rules=RULES) -> set[tuple[str, str]]:
    return {(f.entity, f.entity_kind) for f in findings(cells, topo, metric, rules)}


def findings(cells, topo, metric="p2p_bandwidth", rules=RULES):
    mine = [r for r in rules.rules if r.metric == metric and kind_of(r)]
    return explain_cells(cells, mine, DetectContext(topo, dict(topo.inventory.design)))


# ------------------------------------------------------------------ the classes
@pytest.mark.parametrize("slow", [7, 6])
def test_seven_of_eight_slow_cards_are_seven_cards_and_the_eighth_is_said_healthy(fleet, slow):
    """A host count never decides: the eighth card measured healthy with the other hosts
    is not part of any host finding, and the evidence says so."""
    host = "s04n2"
    sick = fleet.cards_of_host(host)[:slow]
    cells = cells_of(fleet, speed={c: 0.7 for c in sick}, noise=0.02)
    out = findings(cells, fleet)
    assert {(f.entity, f.entity_kind) for f in out} == {(c, "card") for c in sick}
    healthy = fleet.cards_of_host(host)[slow]
    why = [r["why"] for f in out for r in f.evidence.get("rivals", []) if r["entity"] == host]
    assert why and all(healthy in w or "measured" in w for w in why), why


def test_every_card_slow_alike_is_the_host(fleet):
    cells = cells_of(fleet, speed={c: 0.7 for c in fleet.cards_of_host("s04n2")}, noise=0.02)
    assert named(cells, fleet) == {("s04n2", "host")}


def test_a_faint_host_is_the_host_and_a_faint_seven_are_cards(fleet):
    """At 0.9 every pair passes its bar (0.8); the cards' medians do not (0.93)."""
    cards = fleet.cards_of_host("s07n1")
    assert named(cells_of(fleet, speed={c: 0.9 for c in cards}, noise=0.01), fleet) == {("s07n1", "host")}
    assert named(cells_of(fleet, speed={c: 0.9 for c in cards[:7]}, noise=0.01), fleet) == \
        {(c, "card") for c in cards[:7]}


def test_a_whole_domain_slow_is_the_supernode_and_a_lone_card_beside_it_stays(fleet):
    sick = {c: 0.6 for c in fleet.cards_of_supernode("sn03")}
    sick["s09n1/gpu2"] = 0.7
    assert named(cells_of(fleet, speed=sick, noise=0.02), fleet) == {("sn03", "supernode"), ("s09n1/gpu2", "card")}


def test_a_single_domain_at_0_9_is_the_supernode_by_design():
    """One NVL72 rack at 0.9: its peers are itself (no peer rule can see it); its tier's
    design can (the domain rule's bar, 0.93)."""
    rack = topo_of("nvl72")
    out = findings(cells_of(rack, speed={c: 0.9 for c in rack.card_ids}, noise=0.01), rack)
    assert [(f.entity, f.entity_kind, f.rule) for f in out] == [
        ("rack0", "supernode", "p2p-bandwidth-domain-below-design")]


def test_a_one_host_domain_faint_as_a_whole_is_the_host(pod):
    cards = pod.cards_of_host("mi05")
    assert named(cells_of(pod, speed={c: 0.9 for c in cards}, noise=0.01), pod) == {("mi05", "host")}


def test_a_link_masked_by_a_high_latency_end_is_found(fleet):
    """The issue's masked links: a 0.3 link beside a high-latency card (the latency finds
    the card, the bandwidth the link), and a 0.5 link between a 0.85 card and a throttled
    (0.8) one: three culprits."""
    a, b = "s02n1/gpu1", "s02n1/gpu2"
    cells = cells_of(fleet, link={link_id(a, b): 0.3}, noise=0.02)
    assert named(cells, fleet) == {(link_id(a, b), "link")}
    assert named(cells_of(fleet, lat={a: 3.0}, noise=0.02, metric="p2p_latency"), fleet, "p2p_latency") == \
        {(a, "card")}
    c, d = "s05n3/gpu0", "s05n3/gpu3"
    cells = cells_of(fleet, speed={c: 0.85, d: 0.8}, link={link_id(c, d): 0.5}, noise=0.02)
    out = {(f.entity, f.entity_kind): f for f in findings(cells, fleet)}
    assert set(out) == {(c, "card"), (d, "card"), (link_id(c, d), "link")}
    assert out[(link_id(c, d), "link")].evidence.get("independent") is True


def test_a_link_is_its_own_only_when_well_below_its_ends(pod):
    a, b = "mi01/gpu0", "mi01/gpu1"
    for factor, own in ((1.0, False), (0.9, False), (0.6, True), (0.0, True)):
        cells = cells_of(pod, speed={a: 0.6, b: 0.7}, link={link_id(a, b): factor})
        out = named(cells, pod)
        assert {(a, "card"), (b, "card")} <= out
        assert ((link_id(a, b), "link") in out) == own, (factor, out)


def test_a_nic_is_its_card_s_scale_out_pairs_alone(pod):
    card = "mi02/gpu5"
    assert named(cells_of(pod, nic={card: 0.5}), pod) == {(nic_of(card), "nic")}
    # slow inside the domain too: the card (its scale-out pairs capped by the NIC's design)
    assert named(cells_of(pod, speed={card: 0.3}), pod) == {(card, "card")}
    # every NIC of a host down: the host
    cells = cells_of(pod, nic={c: 0.0 for c in pod.cards_of_host("mi06")})
    assert named(cells, pod) == {("mi06", "host")}


def test_a_card_measured_in_one_pair_is_card_or_link_not_localised(pod):
    pairs = [("mi01/gpu0", "mi02/gpu0")]
    cells = cells_of(pod, pairs=pairs, link={link_id(*pairs[0]): 0.3})
    out = findings(cells, pod)
    assert sorted((f.entity, f.entity_kind, f.evidence.get("localised")) for f in out) == [
        ("mi01/gpu0", "card", False), ("mi02/gpu0", "card", False)]
    more = pairs + [("mi01/gpu0", "mi01/gpu1"), ("mi02/gpu0", "mi02/gpu1")]
    assert named(cells_of(pod, pairs=more, link={link_id(*pairs[0]): 0.3}), pod) == \
        {(link_id(*pairs[0]), "link")}


def test_controls_beside_a_slow_card_or_host_are_not_culprits(fleet, pod):
    """A retest's controls measured beside the suspect: their bad pairs are all with it."""
    x, a, b = "s02n2/gpu7", "s02n1/gpu7", "s02n3/gpu7"
    cells = cells_of(fleet, pairs=[(x, a), (x, b), (a, b)] * 2, speed={x: 0.6})
    assert named(cells, fleet) == {(x, "card")}
    host = pod.cards_of_host("mi04")
    order = host + ["mi01/gpu0", "mi02/gpu0", "mi03/gpu0"]
    pairs = [(p, q) for i, p in enumerate(order) for q in order[i + 1:] if host_of(p) != host_of(q)] * 2
    assert named(cells_of(pod, pairs=pairs, speed={c: 0.3 for c in host}), pod) == {("mi04", "host")}


def test_a_faint_latency_card_beside_a_worse_one_is_named(fleet):
    worse, faint = "s01n1/gpu1", "s01n2/gpu6"
    cells = cells_of(fleet, lat={worse: 3.9, faint: 1.52}, noise=0.01, metric="p2p_latency")
    assert named(cells, fleet, "p2p_latency") == {(worse, "card"), (faint, "card")}


def test_the_rules_bars_are_the_noise_bars(fleet):
    """A rules change changes the verdict: the same faint card is named under a card bar
    of 0.93 and not under one of 0.85."""
    card = "s03n3/gpu4"
    cells = cells_of(fleet, speed={card: 0.9}, noise=0.01)
    assert named(cells, fleet) == {(card, "card")}
    loose = load_rules_text(
        "rules:\n  - {name: slow, op: peer_outlier, metric: p2p_bandwidth, per: card, scope: card, below: 0.85,"
        " severity: warning}\n")
    assert named(cells, fleet, rules=loose) == set()


def test_a_clean_fleet_names_nothing(fleet):
    assert named(cells_of(fleet, noise=0.02), fleet) == set()


def test_pairs_through_a_known_culprit_feed_no_pairwise_collective_verdict(fleet):
    """A pairwise collective mixes both ends' compute and launch with the path: beside a
    culprit an earlier layer named, a pair says nothing of the other end (seven slow cards
    of a host made its healthy eighth the only 'slow' one among their pairs, measured
    against their median)."""
    host = fleet.cards_of_host("s06n3")
    healthy = host[7]
    pairs = [(p, q) for i, p in enumerate(host) for q in host[i + 1:]]
    cells = cells_of(fleet, pairs=pairs, speed={c: 0.7 for c in host[:7]})
    # the mock's pair time: what moves is the difference of the ends' launch (a 0.7 card
    # starts 21 us late): the healthy card's pairs are the slow ones against the median
    cells["value"] = np.where(cells["src"].eq(healthy) | cells["dst"].eq(healthy), 1.6, 1.0)
    cells["design"] = np.nan
    rules = [r for r in RULES.rules if r.metric == "pair_small_time"]
    ctx = DetectContext(fleet, dict(fleet.inventory.design))
    assert {(f.entity, f.entity_kind) for f in explain_cells(cells, rules, ctx)} == set()  # 1.6x is inside 2.0
    cells["value"] = np.where(cells["src"].eq(healthy) | cells["dst"].eq(healthy), 2.6, 1.0)
    assert {(f.entity, f.entity_kind) for f in explain_cells(cells, rules, ctx)} == {(healthy, "card")}
    ctx.known = frozenset((c, "card") for c in host[:7])
    assert explain_cells(cells, rules, ctx) == []
    ctx.subject = host[0]  # a retest of one of them: its own pairs are judged afresh
    assert ctx.culprit_cards(subject=False) == set(host[1:7]) and ctx.culprit_cards() == set(host[:7])


def test_medians_are_numpys_and_pandas_to_the_bit():
    """The search's medians (a sort, not np.median's checks or pandas' grouping, for the
    small arrays a retest's tier gives) are the same values to the bit: NaN left out, the
    mean of the two middle values for an even count, any owner order, ties, one value."""
    from sncheck.health.explain import SMALL_GROUPS, group_median, median

    rng = np.random.default_rng(7)
    for trial in range(100):
        n = int(rng.integers(1, 200))
        owner = rng.integers(0, int(rng.integers(1, 30)), n)
        values = rng.choice([rng.random(n) * 1e3, rng.integers(0, 4, n).astype(float)])  # ties too
        values[rng.random(n) < 0.1] = np.nan
        keep = ~np.isnan(values)
        got, med, count = group_median(owner, values)
        grouped = pd.Series(values[keep]).groupby(owner[keep], sort=True)
        assert got.tolist() == grouped.median().index.tolist(), trial
        assert med.tobytes() == grouped.median().to_numpy(float).tobytes(), trial
        assert count.tolist() == grouped.size().tolist(), trial
        if keep.any():
            assert median(values) == float(np.median(values[keep])), trial
    assert np.isnan(median(np.array([np.nan])))
    big = rng.integers(0, 500, SMALL_GROUPS + 1)  # pandas' path, the same answer
    got, med, count = group_median(big, big * 0.5)
    assert got.tolist() == list(range(500)) and (med == got * 0.5).all() and count.sum() == SMALL_GROUPS + 1


def test_pair_keys_grouped_as_numpy_unique_groups_them() -> None:
    """The pair summaries group a tier's rows by a stable sort (runs of rows in round
    order): the same groups and codes as ``np.unique``, repeats, one row and none alike."""
    rng = np.random.default_rng(7)
    for key in (np.zeros(0, np.int64), np.array([5]), np.array([3, 3, 3]), rng.integers(0, 40, 500),
                np.concatenate([np.arange(100, 0, -1), np.arange(50)])):
        key = np.asarray(key, np.int64)
        got, want = unique_inverse(key), np.unique(key, return_inverse=True)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_card_medians_and_residuals_taken_in_chunks_name_the_same(fleet, monkeypatch):
    """Each card's median over its pairs is taken a range of cards at a time (issue 31: at
    fleet size a tier's pair ends are tens of millions): the same findings, to the last digit
    of every message, as in one piece, on a noisy fleet with a slow card, a slow host and a
    weak link."""
    from sncheck.health import levels

    host = host_of(fleet.card_ids[40])
    cells = cells_of(fleet, speed={fleet.card_ids[3]: 0.85, **{c: 0.9 for c in fleet.cards_of_host(host)}},
                     link={link_id(fleet.card_ids[60], fleet.card_ids[61]): 0.5}, noise=0.01, seed=3)

    def said() -> list[tuple]:
        return sorted((f.entity, f.entity_kind, f.rule, f.message) for f in findings(cells, fleet))

    whole = said()
    calls = []
    group_median = levels.group_median
    monkeypatch.setattr(levels, "group_median", lambda *a: calls.append(len(a[0])) or group_median(*a))
    monkeypatch.setattr(levels, "CARD_CHUNK", 7)
    monkeypatch.setattr(levels, "ENDS_AT_ONCE", 64)
    assert said() == whole and len(whole) >= 3
    assert calls and max(calls) < sum(calls) / 4  # taken in many pieces, none the whole tier
