"""The stress layer reads each card's tail over the repeats of its collectives (sncheck.health.tails,
rule collective-latency-spikes): a persistently jittery card is named, confirmed and isolated, a transient
one released, a clean cluster swept over and over finds nothing (reviews20 #11: a jittery card passed the
nightly, its pair findings released on one clean look, and a --duration soak found nothing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sncheck.health.tails import MIN_SPIKES, rank_skew_spikes
from tests.test_confirm_symptoms import run

SMALL = """name: small
design:
  scale_up:  {bandwidth: "450 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "15 us"}
supernodes:
  - {name: sn0, hosts: "node[001-004]", cards_per_host: 4}
  - {name: sn1, hosts: "node[005-008]", cards_per_host: 4}
"""
STRESS = "name: stress-only\nlayers:\n  - stress:\n      collectives: [all_reduce, all_to_all]\n      repeats: {n}\ngate: critical\n"
JITTER = "{type: jittery_card, target: node006/gpu1, probability: 0.2, factor: 10%s}"


def _rows(skews: dict[str, list[float]], group: str = "host:h1") -> pd.DataFrame:
    return pd.DataFrame([{"kind": "rank", "group": group, "card": c, "skew_us": s} for c, v in skews.items() for s in v])


def test_a_card_s_tail_is_the_share_of_its_rows_far_beyond_its_own_median():
    rng = np.random.default_rng(1)
    clean = list(np.abs(rng.normal(0, 2, 200)))
    spiky = [s + (30.0 if i % 5 == 0 else 0.0) for i, s in enumerate(np.abs(rng.normal(0, 2, 200)))]  # 1 in 5
    late = list(50 + np.abs(rng.normal(0, 2, 200)))  # a slow card: late every time, never a spike
    rare = [s + (30.0 if i < MIN_SPIKES - 1 else 0.0) for i, s in enumerate(clean)]  # a stray launch or two
    out = rank_skew_spikes(_rows({"a": clean, "b": spiky, "c": late, "d": rare}), None).set_index("entity")
    assert out.loc["b", "value"] == pytest.approx(0.2) and out.loc["b", "spikes"] == 40
    assert out.loc[["a", "c", "d"], "value"].tolist() == [0.0, 0.0, 0.0]
    # more sweeps: the same share, sharper (a median never moved by it)
    more = rank_skew_spikes(_rows({"a": clean * 10, "b": spiky * 10}), None).set_index("entity")
    assert more.loc["b", "value"] == pytest.approx(0.2) and more.loc["b", "rows"] == 2000
    # every rank spiking alike (a loaded machine's shared cores): no card's own tail
    alike = rank_skew_spikes(_rows({"a": spiky, "b": spiky, "c": spiky}), None)
    assert alike["value"].tolist() == [0.0, 0.0, 0.0]


def _stress(tmp_path: Path, faults: list[str], seed: int, repeats: int = 2):
    inv = tmp_path / "small.yaml"
    inv.write_text(SMALL)
    return run(tmp_path, str(inv), faults, playbook=STRESS.format(n=repeats), seed=seed)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_persistently_jittery_card_is_named_confirmed_and_isolated(tmp_path, seed):
    # before: exit 0, the card (or links through it) released by a retest that read medians
    code, res = _stress(tmp_path, [JITTER % ""], seed)
    assert code == 1 and res["verdict"] == "fail"
    assert [(f["entity"], f["rule"], f["severity"]) for f in res["findings"]] == [
        ("node006/gpu1", "collective-latency-spikes", "critical")], res["findings"]
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == [("node006/gpu1", "quarantine"),
                                                                      ("node006/gpu1", "isolate")]


def test_a_transient_jitter_is_released(tmp_path):
    code, res = _stress(tmp_path, [JITTER % ", transient: true"], 1)
    assert code == 0 and [(i["entity"], i["action"]) for i in res["isolation"]] == [
        ("node006/gpu1", "quarantine"), ("node006/gpu1", "release")]


def test_a_clean_cluster_swept_over_and_over_finds_nothing(tmp_path):
    code, res = _stress(tmp_path, [], 3, repeats=8)
    assert code == 0 and res["findings"] == [] and res["isolation"] == []
