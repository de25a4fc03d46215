"""Issue 29: a card inside its card bar by less than its median's noise is re-measured by
its retest until it is clear of the bar (sncheck.run.nearbar), the rules' thresholds
unchanged; still within the noise at the bound on samples, it is not judged (inconclusive),
never released nor isolated."""

import numpy as np
import pandas as pd

from mock_gate import mock_gate
from sncheck.health.culprits import NEAR_RETEST
from sncheck.health.rules import load_rules
from sncheck.model import ExitCode, Verdict
from sncheck.run.nearbar import NEAR_SAMPLES, NEAR_UNDECIDED, at_bound, judge_samples

CARD_SLOW = next(r for r in load_rules("default").rules if r.name == "p2p-bandwidth-card-slow")  # below 0.93


def test_a_faint_card_measured_just_inside_the_bar_is_re_measured_and_isolated(tmp_path):
    """main: a 0.925 card of an MI300X host (7 XGMI partners) measured a median of 0.932
    of its peers on seed 3, inside the 0.93 bar: no finding, the card in service."""
    res = mock_gate(tmp_path, "mi300x-pod", ["{type: slow_card, target: mi02/gpu3, factor: 0.925}"], seed=3).results
    [f] = [f for f in res["findings"] if f["severity"] in ("warning", "critical")]
    assert (f["entity"], f["rule"]) == ("mi02/gpu3", "p2p-bandwidth-card-slow"), f
    near = f["evidence"]["near_bar"]
    assert near["bar"] == 0.93 and 0.93 <= near["ratio"] < 0.93 + 2 * near["se"] and near["pairs"] == 7, near
    assert "beyond the bar, clear of the noise" in f["evidence"]["retest"], f["evidence"]["retest"]
    assert [(i["entity"], i["action"]) for i in res["isolation"]] == [("mi02/gpu3", "quarantine"),
                                                                       ("mi02/gpu3", "isolate")]


def cells(card_ratio: float, samples: int, seed: int = 0, noise: float = 0.014) -> pd.DataFrame:
    """A retest's metric frame of one tier: the card with 5 controls, ``samples`` pair
    measurements of the card and as many among the controls (design 100)."""
    rng = np.random.default_rng(seed)
    controls = [f"h/gpu{k}" for k in range(1, 6)]
    mine = [("h/gpu0", controls[k % 5], 100 * card_ratio * (1 + noise * rng.standard_normal())) for k in range(samples)]
    theirs = [(controls[k % 5], controls[(k + 1) % 5], 100 * (1 + noise * rng.standard_normal())) for k in range(samples)]
    return pd.DataFrame([{"src": a, "dst": b, "value": v, "failed": False} for a, b, v in mine + theirs])


def test_the_retest_decides_only_when_the_median_is_clear_of_the_bar():
    """One look at a batch (40 samples) decides only far from the bar (the sequential
    boundary is strict early); at the bound (NEAR_SAMPLES) a card 0.5% from it is decided,
    each side, and a card at the bar is not judged, never released nor isolated."""
    beyond, said = judge_samples(CARD_SLOW, cells(0.85, 40), "h/gpu0")
    assert beyond is True and "beyond the bar" in said
    inside, said = judge_samples(CARD_SLOW, cells(1.0, 40), "h/gpu0")
    assert inside is False and "inside the bar, clear of the noise" in said
    # 0.925 is beyond the bar and 0.935 inside it, but one batch never tells either from 0.93,
    # and no number of samples the wrong way
    for seed in range(40):
        assert judge_samples(CARD_SLOW, cells(0.925, 40, seed), "h/gpu0")[0] is None
        assert judge_samples(CARD_SLOW, cells(0.935, 40, seed), "h/gpu0")[0] is None
    for seed in range(5):
        assert judge_samples(CARD_SLOW, cells(0.925, NEAR_SAMPLES, seed), "h/gpu0")[0] is True
        assert judge_samples(CARD_SLOW, cells(0.935, NEAR_SAMPLES, seed), "h/gpu0")[0] is False
    # at the bar itself no number of samples tells: not judged at the bound, never a release
    for seed in range(5):
        got, said = judge_samples(CARD_SLOW, cells(0.93, NEAR_SAMPLES, seed), "h/gpu0")
        assert got is None and at_bound(said) and f"over {NEAR_SAMPLES} samples" in said, said
    failed = cells(0.91, 40).assign(failed=True)
    assert judge_samples(CARD_SLOW, failed, "h/gpu0") == (None, "none of its pairs re-measured")


def test_a_card_at_the_bar_is_not_judged_when_the_bound_is_reached(tmp_path):
    """The bound: batches of repeats until the card's samples reach NEAR_SAMPLES, then
    neither isolated nor released: not judged, inconclusive (exit 4), the evidence saying
    why with the samples, median, standard error and bar (main: 240 samples, then a
    quarantine gating as if measured, exit 1)."""
    outcome = mock_gate(tmp_path, "mi300x-pod", ["{type: slow_card, target: mi02/gpu3, factor: 0.93}"])
    res = outcome.results
    [f] = [f for f in res["findings"] if f["entity"] == "mi02/gpu3"]
    assert f["severity"] == "warning" and f["evidence"]["near_bar"] and f["not_judged"]
    why = f["evidence"]["inconclusive"]
    assert at_bound(why.removeprefix("p2p-bandwidth-card-slow: ")), why
    assert all(w in why for w in ("samples", "median", "standard error", "bar 0.930")), why
    assert f["message"].endswith(NEAR_UNDECIDED) and NEAR_RETEST not in f["message"], f["message"]
    assert [i["action"] for i in res["isolation"] if i["entity"] == "mi02/gpu3"] == ["quarantine", "quarantine"]
    assert res["verdict"] == Verdict.INCONCLUSIVE and outcome.exit_code == ExitCode.INCONCLUSIVE == 4
