"""The mock backend is a simulator: check its physics against the published cost model."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sncheck.backends.mock import MockBackend
from sncheck.run.inputs import load_faults_text, load_inventory
from sncheck.probeplan import ConnectivityPlan, GoldenPlan, Group, Round, StressPlan, connectivity_plan, stress_groups
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))


def backend(faults: str = "", seed: int = 0) -> MockBackend:
    plan = load_faults_text(f"faults:\n{faults}" if faults else "faults: []", TOPO)
    return MockBackend(TOPO, plan, seed=seed)


def p2p(b: MockBackend, pairs) -> pd.DataFrame:
    rows = []
    b.p2p(ConnectivityPlan(rounds=(Round(0, "scale_up", tuple(pairs)),), hosts=()), rows.append)
    return pd.DataFrame(rows).set_index("link")


def coll(b: MockBackend, members, sizes=(8, 1 << 30), collectives=("all_reduce",)) -> pd.DataFrame:
    rows = []
    b.collectives(StressPlan(groups=(Group("g", "host", tuple(members)),), collectives=collectives, sizes=sizes), rows.append)
    return pd.DataFrame(rows)


HOST1 = [f"node001/gpu{i}" for i in range(4)]


def test_p2p_matches_design_per_tier():
    rows = p2p(backend(), [("node001/gpu0", "node001/gpu1"), ("node002/gpu0", "node003/gpu0"), ("node004/gpu0", "node012/gpu0")])
    assert rows["bw_GBps"].iloc[0] == pytest.approx(450, rel=0.1)
    assert rows.loc[rows["tier"] == "scale_out", "bw_GBps"].iloc[0] == pytest.approx(50, rel=0.1)
    assert rows.loc[rows["tier"] == "scale_out", "lat_us"].iloc[0] == pytest.approx(15, rel=0.1)
    assert rows["checksum_ok"].all()


def test_noise_is_about_two_percent_and_seeded():
    pairs = [(f"node00{h}/gpu0", f"node00{h}/gpu1") for h in range(1, 9)] * 50
    bw = p2p(backend(seed=5), pairs)["bw_GBps"]
    assert 0.01 < bw.std() / bw.mean() < 0.03
    again = p2p(backend(seed=5), pairs)["bw_GBps"]
    assert (bw.to_numpy() == again.to_numpy()).all()
    assert not (bw.to_numpy() == p2p(backend(seed=6), pairs)["bw_GBps"].to_numpy()).all()


def test_ring_allreduce_follows_alpha_beta():
    rows = coll(backend(), HOST1, sizes=(1 << 30,))
    r = rows[rows["kind"] == "collective"].iloc[0]
    p, n = 4, 1 << 30
    expected = 2 * (p - 1) * 3.0 + 2 * (p - 1) / p * n * 1e-3 / 450
    assert r["time_us"] == pytest.approx(expected, rel=0.1)
    assert r["busbw_GBps"] == pytest.approx(450, rel=0.1)  # busbw recovers the link bandwidth
    assert r["algbw_GBps"] == pytest.approx(r["busbw_GBps"] / (2 * 3 / 4), rel=1e-6)


def test_alltoall_follows_alpha_beta():
    rows = coll(backend(), HOST1, sizes=(8,), collectives=("all_to_all",))
    r = rows[rows["kind"] == "collective"].iloc[0]
    assert r["time_us"] == pytest.approx(3 * 3.0 + 3 / 4 * 8 * 1e-3 / 450, rel=0.1, abs=8)


def test_slow_card_slows_its_links_and_compute():
    b = backend("  - {type: slow_card, target: node001/gpu1, factor: 0.6}")
    rows = p2p(b, [("node001/gpu0", "node001/gpu1"), ("node001/gpu2", "node001/gpu3")])
    assert rows.loc["node001/gpu0<->node001/gpu1", "bw_GBps"] == pytest.approx(270, rel=0.1)
    assert rows.loc["node001/gpu2<->node001/gpu3", "bw_GBps"] == pytest.approx(450, rel=0.1)
    ranks = coll(b, HOST1)
    skew = ranks[ranks["kind"] == "rank"].groupby("card")["skew_us"].mean()
    assert skew.idxmax() == "node001/gpu1" and skew.max() > 20
    golden = []
    b.golden(GoldenPlan(groups=(Group("host:node001", "host", tuple(HOST1)),), steps=5), golden.append)
    assert np.median([g["step_time_s"] for g in golden]) > 0.05 / 0.6 * 0.95


def test_a_pair_runs_at_its_slower_end_each_end_at_its_own_speed_over_its_own_links():
    """B_tier · min(s_a·n_a, s_b·n_b): a card at 0.74 paired with a card that has 8 of 18
    NVLinks up runs at the link-limited end's 8/18, not 0.74 · 8/18 (bench_detection_accuracy
    scenario 1012: the product read as a link worse than both its ends, a false link finding)."""
    b = backend("  - {type: slow_card, target: node001/gpu0, factor: 0.74}\n"
                "  - {type: nvlink_down, target: node001/gpu1, links: 10}")
    rows = p2p(b, [("node001/gpu0", "node001/gpu1"), ("node001/gpu0", "node001/gpu2"),
                   ("node001/gpu1", "node001/gpu2")])
    assert rows.loc["node001/gpu0<->node001/gpu1", "bw_GBps"] == pytest.approx(450 * 8 / 18, rel=0.1)
    assert rows.loc["node001/gpu0<->node001/gpu2", "bw_GBps"] == pytest.approx(450 * 0.74, rel=0.1)
    assert rows.loc["node001/gpu1<->node001/gpu2", "bw_GBps"] == pytest.approx(450 * 8 / 18, rel=0.1)


def test_degraded_and_dead_link_affect_that_pair_only():
    b = backend('  - {type: degraded_link, target: "node001/gpu0<->node001/gpu1", factor: 0.5}\n'
                '  - {type: dead_link, target: "node001/gpu2<->node001/gpu3"}')
    rows = p2p(b, [("node001/gpu0", "node001/gpu1"), ("node001/gpu2", "node001/gpu3"), ("node001/gpu0", "node001/gpu2")])
    assert rows.loc["node001/gpu0<->node001/gpu1", "bw_GBps"] == pytest.approx(225, rel=0.1)
    dead = rows.loc["node001/gpu2<->node001/gpu3"]
    assert dead["status"] == "timeout" and math.isnan(dead["bw_GBps"])
    assert rows.loc["node001/gpu0<->node001/gpu2", "bw_GBps"] == pytest.approx(450, rel=0.1)


def test_down_host_is_unreachable():
    b = backend("  - {type: down_host, target: node002}")
    facts = []
    b.host_facts(("node001", "node002"), facts.append)
    reach = {f["host"]: f["value"] for f in facts if f["fact"] == "reachable"}
    assert reach == {"node001": True, "node002": False}
    rows = p2p(b, [("node001/gpu0", "node002/gpu0")])
    assert rows["status"].iloc[0] == "unreachable"


def test_corrupt_card_gives_wrong_results():
    b = backend("  - {type: corrupt_card, target: node001/gpu2}")
    rows = coll(b, HOST1, sizes=(1024,), collectives=("all_reduce", "all_to_all"))
    c = rows[rows["kind"] == "collective"].set_index("collective")
    assert c.loc["all_reduce", "wrong"] == 256 * 4
    assert c.loc["all_to_all", "wrong"] == 256 // 4 * 3
    clean = coll(b, [f"node002/gpu{i}" for i in range(4)], sizes=(1024,))
    assert (clean.loc[clean["kind"] == "collective", "wrong"] == 0).all()
    pairs = p2p(b, [("node001/gpu2", "node001/gpu3"), ("node001/gpu0", "node001/gpu1")])
    assert not pairs.loc["node001/gpu2<->node001/gpu3", "checksum_ok"]
    assert pairs.loc["node001/gpu0<->node001/gpu1", "checksum_ok"]


def test_jittery_card_spikes_latency_tail():
    b = backend("  - {type: jittery_card, target: node001/gpu0, probability: 0.2, factor: 10}")
    rows = p2p(b, [("node001/gpu0", "node001/gpu1"), ("node001/gpu2", "node001/gpu3")])
    jit, calm = rows.iloc[0], rows.iloc[1]
    assert jit["lat_p99_us"] > 5 * jit["lat_us"] and calm["lat_p99_us"] < 1.2 * calm["lat_us"]


def test_high_latency_card_keeps_bandwidth():
    b = backend("  - {type: high_latency_card, target: node001/gpu0, factor: 3}")
    r = p2p(b, [("node001/gpu0", "node001/gpu1")]).iloc[0]
    assert r["lat_us"] == pytest.approx(9, rel=0.1) and r["bw_GBps"] == pytest.approx(450, rel=0.1)


def test_diverge_blows_up_the_loss():
    b = backend("  - {type: diverge, target: node001/gpu0}")
    rows = []
    b.golden(GoldenPlan(groups=(Group("host:node001", "host", tuple(HOST1)), Group("host:node002", "host",
                        tuple(f"node002/gpu{i}" for i in range(4)))), steps=60), rows.append)
    g = pd.DataFrame(rows)
    final = g[g["step"] == 59].set_index("group")["loss"]
    assert not math.isfinite(final["host:node001"]) or final["host:node001"] > 100
    assert final["host:node002"] == pytest.approx(1.2 + 3.6 * math.exp(-59 / 15), rel=0.03)


def test_full_plan_rows_have_the_schema():
    b = backend()
    rows = []
    b.p2p(connectivity_plan(TOPO), rows.append)
    assert len(rows) == 1248 and {r["kind"] for r in rows} == {"p2p"}
    rows = []
    b.collectives(StressPlan(groups=stress_groups(TOPO), sizes=(8, 1 << 20)), rows.append)
    kinds = pd.DataFrame(rows)["kind"].value_counts()
    assert kinds["collective"] == 30 * 2 * 2  # 16 hosts, 8 rail groups, 2 domains, 4 cross groups (one a rail)


def test_golden_curve_band_is_sized_from_the_spread():
    from sncheck.errors import ConfigError
    from sncheck.run.recording import curve_from_runs

    def run(scale: float) -> list[dict]:
        return [{"kind": "golden", "group": "host:localhost", "stage": "group", "step": s,
                 "loss": (4.0 - s) * scale, "step_time_s": 0.1, "comm_s": 0.02, "comm_share": 0.2}
                for s in range(3)]

    curve = curve_from_runs([run(1.0), run(1.01), run(0.99)], "t", "local", {"ranks": 2})
    assert curve["schema"] == "sncheck.golden/1" and curve["runs"] == 3
    assert curve["loss"] == pytest.approx([4.0, 3.0, 2.0])
    assert curve["loss_spread"] == pytest.approx([0.01, 0.01, 0.01])
    assert curve["band"] == pytest.approx({"step_rel": 0.03, "final_rel": 0.03})
    assert (curve["step_time_s"], curve["comm_share"]) == (0.1, 0.2)
    with pytest.raises(ConfigError):
        curve_from_runs([run(float("nan"))], "t", "local", {})


def test_sweep_batches_are_bounded_when_every_collective_times_out(monkeypatch):
    """Sweeps whose collectives all time out have no rank rows: their collective rows alone
    bound the batch (they were gathered into one batch for the whole pass)."""
    import sncheck.backends.mock as mock

    class Sink:
        def __init__(self) -> None:
            self.batches: list[tuple[str, int]] = []

        def __call__(self, row: dict) -> None:
            pass

        def batch(self, kind: str, columns: dict) -> None:
            self.batches.append((kind, max(len(v) for v in columns.values() if not isinstance(v, str))))

    monkeypatch.setattr(mock, "BATCH_RANK_ROWS", 4)
    b = backend('  - {type: dead_link, target: "node001/gpu0<->node001/gpu1"}\n'
                '  - {type: dead_link, target: "node001/gpu2<->node001/gpu3"}')
    pair, three = ("node001/gpu0", "node001/gpu1"), ("node001/gpu2", "node001/gpu3", "node001/gpu0")
    groups = tuple(Group(f"g{i}", "host", pair if i % 2 else three) for i in range(20))   # each its own sweep
    sink = Sink()
    b.collectives(StressPlan(groups=groups, collectives=("all_reduce",), sizes=(8,)), sink)
    assert {k for k, _ in sink.batches} == {"collective"}   # every one timed out: no rank rows
    assert sum(n for _, n in sink.batches) == 20
    assert len(sink.batches) >= 4 and max(n for _, n in sink.batches) <= 4


def test_a_stress_pass_gives_the_rows_of_its_groups_run_one_at_a_time():
    """The pass simulates runs of consecutive groups of one size at once (a jittery card's
    group alone, a down host's cards left out): the same draws in the same order as each
    group on its own, so the same rows."""
    faults = ("  - {type: jittery_card, target: node002/gpu1, probability: 0.3, factor: 8}\n"
              "  - {type: down_host, target: node005}\n  - {type: slow_card, target: node003/gpu2, factor: 0.7}")
    plan = StressPlan(groups=stress_groups(TOPO), sizes=(8, 1 << 20))
    assert len({len(g.members) for g in plan.groups}) > 1
    whole: list[dict] = []
    backend(faults, seed=5).collectives(plan, whole.append)
    alone: list[dict] = []
    b = backend(faults, seed=5)
    for g in plan.groups:
        b.collectives(StressPlan(groups=(g,), collectives=plan.collectives, sizes=plan.sizes), alone.append)
    key = ["kind", "group", "collective", "size_bytes", "repeat", "card"]

    def measured(rows: list[dict]) -> pd.DataFrame:
        frame = pd.DataFrame([r for r in rows if r["kind"] in ("collective", "rank")])
        return frame.reindex(columns=sorted(frame.columns)).sort_values(key, na_position="first").reset_index(drop=True)

    got, want = measured(whole), measured(alone)
    assert len(got) > 100 and (got["group"].str.contains("node002")).any()
    assert not got["card"].dropna().str.startswith("node005").any()
    pd.testing.assert_frame_equal(got, want)
