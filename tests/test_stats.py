"""The judging statistics (sncheck/health/stats.py): what they compute equals what the
metric functions and rule ops compute from pandas frames, from the row files and from
frames alike; PairSummary, Noise, EntityStats, exceptions and pairs_of as documented;
bad rows (NaN, missing columns, unreachable hosts, tiers without design) read as the
metric functions read them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sncheck.run.inputs import load_inventory, load_inventory_text, load_playbook_text
from sncheck.health.metrics import METRICS, DetectContext
from sncheck.health.rules import load_rules, load_rules_text
from sncheck.health.stats import ENTITY_COLUMNS, PAIR_COLUMNS, JudgingStats, summaries
from sncheck.run.runner import RunOptions, execute
from sncheck.store.engine import FileRows, FrameRows
from sncheck.model import link_id
from sncheck.rows import p2p_row
from sncheck.store.rundir import read_frames
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
DEMO = load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml")
FAULTS = """faults:
  - {type: slow_card, target: node003/gpu2, factor: 0.7}
  - {type: degraded_link, target: "node005/gpu0<->node005/gpu1", factor: 0.4}
  - {type: dead_link, target: "node002/gpu1<->node010/gpu1"}
  - {type: down_host, target: node007}
  - {type: corrupt_card, target: node012/gpu3}
  - {type: high_latency_card, target: node006/gpu1, factor: 3}
  - {type: jittery_card, target: node004/gpu0, probability: 0.2, factor: 10}
"""
P2P_KINDS = ("p2p_bandwidth", "p2p_latency", "p2p_latency_tail", "p2p_checksum_failures")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("stats")
    (tmp / "faults.yaml").write_text(FAULTS)
    playbook = load_playbook_text("name: conn\nlayers:\n  - connectivity: {}\nconfirm: false\n")
    execute(playbook, DEMO, RunOptions(backend="mock", faults=str(tmp / "faults.yaml"), seed=3,
                                                            out=str(tmp / "run")))
    return tmp / "run"


def context() -> DetectContext:
    return DetectContext(Topology(DEMO), dict(DEMO.design))


def rules():
    return load_rules("default").for_layer("connectivity")


@pytest.fixture(scope="module")
def stats(run_dir):
    return JudgingStats(FileRows(run_dir / "rows", {"layer": "connectivity"}), context(), rules())


def metric_cells(run_dir, kind: str) -> pd.DataFrame:
    """A metric's cells, each with its link: a p2p metric carries no link text (its two
    ends' ``link_id``, issue 31), a pairwise collective's carries it."""
    cells = METRICS[kind].fn(read_frames(run_dir).where(layer="connectivity"), context())
    if "link" not in cells:
        cells["link"] = [link_id(str(a), str(b)) for a, b in zip(cells["src"], cells["dst"])]
    return cells


def test_kinds_tiers_and_cells_are_the_metric_functions(run_dir, stats):
    assert stats.kinds == P2P_KINDS
    for kind in P2P_KINDS:
        cells = metric_cells(run_dir, kind)
        ok = cells[~cells["failed"].astype(bool)]
        table = stats.tier_table(kind).set_index("tier")
        assert table["n_cells"].sum() == len(cells), kind
        for tier, values in ok.groupby(ok["tier"].astype(str))["value"]:
            v = values.to_numpy(float)
            med = np.median(v[~np.isnan(v)])
            assert table.at[tier, "value"] == med, (kind, tier)  # exact, to the bit
            assert table.at[tier, "n_ok"] == len(v)
            assert math.isclose(table.at[tier, "mad"], np.median(np.abs(v[~np.isnan(v)] - med)), abs_tol=1e-12)
        assert stats.tiers(kind) == ("intra_host", "scale_up", "scale_out")


def test_card_medians_and_counts_are_exact(run_dir, stats):
    for kind in ("p2p_bandwidth", "p2p_latency"):
        cells = metric_cells(run_dir, kind)
        both = pd.DataFrame({"card": np.concatenate([cells["src"].astype(str), cells["dst"].astype(str)]),
                             "tier": np.tile(cells["tier"].astype(str), 2),
                             "value": np.tile(cells["value"].to_numpy(float), 2),
                             "failed": np.tile(cells["failed"].to_numpy(bool), 2)})
        ok = both[~both["failed"]]
        want = ok.groupby(["card", "tier"])["value"].median()
        got = stats.card_table(kind).set_index(["card", "tier"])
        assert (got.loc[want.index, "value"].to_numpy() == want.to_numpy()).all(), kind
        assert (got["n_cells"] == both.groupby(["card", "tier"]).size().loc[got.index]).all()
        assert (got["n_failed"] == both.groupby(["card", "tier"])["failed"].sum().loc[got.index]).all()


def test_exceptions_are_the_pairs_each_rule_flags(run_dir, stats):
    """Each pair rule's column marks exactly the cells its op judges bad."""
    by_rule = {r.name: r for r in rules()}
    for kind in P2P_KINDS:
        cells = metric_cells(run_dir, kind).reset_index(drop=True)
        ok = ~cells["failed"].astype(bool)
        ex = stats.exception_cells(kind)
        med = cells[ok].groupby(cells["tier"].astype(str))["value"].median()
        for name in [c for c in ex.columns if c in by_rule]:
            r = by_rule[name]
            ratio = {"ratio_to_design": cells["value"] / cells.get("design", np.nan),
                     "peer_outlier": cells["value"] / cells["tier"].astype(str).map(med),
                     "threshold": cells["value"], "counter_nonzero": cells["value"].fillna(0)}[r.op]
            bad = ratio < r.params["below"] if "below" in r.params else ratio > r.params.get("above", 0)
            if r.op in ("ratio_to_design", "peer_outlier"):
                bad |= ~ok
            want = set(cells.loc[bad.to_numpy(bool), "link"].astype(str))
            assert set(ex.loc[ex[name], "link"].astype(str)) == want, (kind, name)
    bw = stats.exceptions("p2p_bandwidth")
    assert list(bw.columns[:len(PAIR_COLUMNS)]) == list(PAIR_COLUMNS)
    dead = bw[bw["link"] == "node002/gpu1<->node010/gpu1"].iloc[0]
    assert dead["failed"] and dead["n_failed"] == 1 and math.isnan(dead["value"])
    slow = bw[bw["link"] == "node005/gpu0<->node005/gpu1"].iloc[0]
    assert slow["ratio"] < 0.5 and "p2p-bandwidth-below-design" in slow["rules"] and slow["a"] == "node005/gpu0"
    spikes = stats.exceptions("p2p_latency_tail")
    assert set(spikes["a"]) | set(spikes["b"]) >= {"node004/gpu0"} and spikes["spiky"].all()


def test_frame_and_file_sources_agree(run_dir, stats):
    frames = read_frames(run_dir)
    mem = JudgingStats(FrameRows(frames, {"layer": "connectivity"}), context(), rules())
    for kind in P2P_KINDS:
        pd.testing.assert_frame_equal(mem.tier_table(kind).sort_values("tier").reset_index(drop=True),
                                      stats.tier_table(kind).sort_values("tier").reset_index(drop=True))
        a = mem.exceptions(kind).sort_values(["tier", "link"]).reset_index(drop=True)
        b = stats.exceptions(kind).sort_values(["tier", "link"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)


def test_entity_stats_and_pairs_of(stats):
    card = stats.entity("p2p_bandwidth", "scale_up", "node003/gpu2")
    assert card is not None and card.entity_kind == "card" and card.median < 0.75 and card.n_bad == card.n_pairs
    assert card.q10 <= card.median <= card.q90
    pairs = stats.pairs_of("node003/gpu2", "p2p_bandwidth", "scale_up")
    assert len(pairs) == card.n_pairs and ((pairs["a"] == "node003/gpu2") | (pairs["b"] == "node003/gpu2")).all()
    assert summaries(pairs)[0].kind == "p2p_bandwidth"
    # a latency card: ratios below 1 are worse, q10 the ratio of its 90th percentile latency
    lat = stats.entity("p2p_latency", "scale_up", "node006/gpu1")
    assert lat is not None and lat.median < 0.4 and lat.q10 <= lat.median <= lat.q90
    # a NIC is its card's scale-out pairs; a host every pair with an end on it
    nic = stats.entity("p2p_bandwidth", "scale_out", "node002/nic1")
    assert nic is not None and nic.entity_kind == "nic" and nic.n_failed == 1
    assert set(stats.pairs_of("node002/nic1", "p2p_bandwidth")["tier"]) == {"scale_out"}
    host = stats.entity("p2p_bandwidth", "scale_up", "node003")
    assert host is not None and host.entity_kind == "host" and host.n_bad == card.n_bad
    sn = stats.entity("p2p_bandwidth", "scale_out", "sn0")
    assert sn is not None and sn.entity_kind == "supernode" and sn.n_failed >= 1
    link = stats.pairs_of("node005/gpu0<->node005/gpu1", "p2p_bandwidth")
    assert len(link) == 1 and link["n"].iloc[0] == 1
    assert stats.entity("p2p_bandwidth", "scale_up", "node007/gpu0") is None  # unreachable: never measured
    cards = stats.entities("p2p_bandwidth", "scale_up")
    assert list(cards.columns) == list(ENTITY_COLUMNS) and len(cards) == 60  # 64 cards, node007 down


def test_noise_and_bars(stats):
    n = stats.noise("p2p_bandwidth", "scale_up")
    assert n.design == 450.0 and n.reference == 450.0 and abs(n.median - 1) < 0.01 and 0 < n.mad < 0.05
    assert {(b.rule, b.against, b.per) for b in n.bars} >= {
        ("p2p-bandwidth-below-design", "design", "pair"), ("p2p-bandwidth-below-peers", "peers", "pair"),
        ("p2p-bandwidth-card-slow", "peers", "card"), ("p2p-bandwidth-domain-below-design", "design", "supernode")}
    assert math.isnan(n.spread)  # each pair measured once
    tail = stats.noise("p2p_latency_tail", "scale_up")
    assert tail.reference == tail.value and math.isnan(tail.design)  # no design: the tier median
    with pytest.raises(KeyError):
        stats.kind("rank_skew")


def test_hostile_rows_read_as_the_metrics_read_them():
    """NaN directions, a missing lat_p99 and checksum column, an unreachable host, a row
    with no status, a tier the inventory has no design for."""
    inv = load_inventory_text("design:\n  scale_up: {bandwidth: 100, latency: 2}\nsupernodes:\n"
                              "  - {name: a, hosts: 'n[1-2]', cards_per_host: 2}\n")
    ctx = DetectContext(Topology(inv), dict(inv.design))
    rows = [p2p_row(0, "n1/gpu0", "n1/gpu1", "n1/gpu0<->n1/gpu1", "intra_host", 1, bw=100.0, bw_rev=None, lat=2.0),
            p2p_row(0, "n2/gpu0", "n2/gpu1", "n2/gpu0<->n2/gpu1", "intra_host", 1, bw=float("nan"), bw_rev=50.0,
                    lat=2.0),
            p2p_row(1, "n1/gpu0", "n2/gpu0", "n1/gpu0<->n2/gpu0", "scale_up", 1, bw=None, bw_rev=None, lat=None,
                    status="timeout"),
            p2p_row(1, "n1/gpu1", "n2/gpu1", "n1/gpu1<->n2/gpu1", "scale_up", 1, status="unreachable"),
            p2p_row(2, "n1/gpu0", "n2/gpu1", "n1/gpu0<->n2/gpu1", "weird_tier", 1, bw=7.0, bw_rev=9.0, lat=1.0)]
    frame = pd.DataFrame(rows).drop(columns=["lat_p99_us", "checksum_ok"])
    r = load_rules_text("rules:\n  - {name: d, op: ratio_to_design, metric: p2p_bandwidth, below: 0.8, severity: critical}\n"
                        "  - {name: p, op: peer_outlier, metric: p2p_latency, method: ratio, above: 2.0, "
                        "severity: critical, min_peers: 1}\n").rules
    st = JudgingStats(FrameRows(frame), ctx, r)
    assert st.kinds == ("p2p_bandwidth", "p2p_latency")   # no p99, no checksum column: not measured
    bw = st.tier_table("p2p_bandwidth").set_index("tier")
    assert bw.at["intra_host", "value"] == 75.0           # 100 (one direction), 50 (NaN is missing)
    assert bw.at["scale_up", "n_cells"] == 1 and bw.at["scale_up", "n_ok"] == 0   # the timeout; unreachable left out
    assert st.reference("p2p_bandwidth", "weird_tier") == 8.0   # no design: its median
    ex = st.exceptions("p2p_bandwidth")
    assert set(ex["link"]) == {"n1/gpu0<->n2/gpu0", "n2/gpu0<->n2/gpu1"}   # failed, and 50/100 below 0.8
    assert st.exceptions("p2p_latency").empty
    assert JudgingStats(FrameRows(pd.DataFrame()), ctx, r).kinds == ()
