"""A near suspect's sequential retest is bounded by what its repeats cost on the backend
(sncheck.run.nearbar.NearClock, ``Backend.near_budget``): on the local backend a repeat of a
card's gloo pairs costs seconds beside other work, and a card kept near its bar by a busy
machine's noise ran hundreds of rounds (test_probe_signals' jittery card: ~15 min). When the
next batch would spend the budget the card is inconclusive (the busy-machine contract, exit 4),
never isolated nor released on the samples it had."""

from __future__ import annotations

from mock_gate import mock_gate

from sncheck.backends.local import LocalBackend
from sncheck.backends.mock import MockBackend
from sncheck.backends.base import Backend
from sncheck.model import ExitCode, Verdict
from sncheck.run.nearbar import BESIDE, NEAR_SAMPLES, WITHIN, NearClock


class _Clock:
    """A clock each measurement moves by its repeats times ``per`` seconds."""

    def __init__(self, per: float) -> None:
        self.t, self.per = 0.0, per

    def __call__(self) -> float:
        return self.t


def test_a_batch_runs_only_when_the_cost_a_repeat_measured_says_it_fits_the_budget() -> None:
    """4 s a repeat (the local backend beside other work), 120 s: the first batch (8 repeats,
    32 s) and the second (16, to 96 s) fit; the third (24 more, to 192 s) does not, and says
    so. No budget (the mock) never stops a batch, however slow the harness runs."""
    clock = _Clock(4.0)

    def measure(repeats: int):
        def run(_how: str) -> None:
            clock.t += repeats * clock.per
        return run

    near = NearClock(120.0, clock)
    near.timed(measure(8), "peer-to-peer pairs", 8)
    near.timed(measure(0), "host facts", None)  # not its pairs: neither time nor repeats counted
    assert near.fits(16) and near.over is None
    near.timed(measure(16), "peer-to-peer pairs", 16)
    assert not near.fits(24)
    assert near.over == ("its near-bar budget of 120 s cannot hold 24 more repeats of its pairs at 4.00 s a repeat, "
                         "24 repeats in 96 s so far")
    within = [{"rule": "p2p-bandwidth-card-slow", "outcome": None, "note": f"{WITHIN}: median 0.930"},
              {"rule": "p2p-bandwidth-below-peers", "outcome": None, "note": f"{BESIDE}{WITHIN}: median 0.90"}]
    busy = "inconclusive: the machine was busy (load 5.0 on 2 cores)"
    assert near.spent(within, busy) == \
        f"inconclusive: the machine was too busy for the retest to decide ({near.over}); " \
        "the machine was busy (load 5.0 on 2 cores)"
    # a quiet machine (or no load reported) is no busy machine: the retest's note says the budget
    # stopped it, and the suspect stays quarantined, the gate failed (review s43)
    assert near.spent(within, None) is None
    assert near.said("p2p-bandwidth-card-slow: x") == f"not decided: {near.over}; p2p-bandwidth-card-slow: x"
    # an open symptom for another reason (no control) is not the budget's to call busy
    assert near.spent(within + [{"rule": "x", "outcome": None, "note": "not re-measured: no known-good peers"}],
                      busy) is None
    unbounded = NearClock(None, _Clock(1e6))
    unbounded.timed(measure(8), "peer-to-peer pairs", 8)
    assert unbounded.fits(10_000) and unbounded.spent(within, busy) is None and unbounded.said("w") == "w"


def test_each_backend_has_its_budget_and_an_option_overrides_it() -> None:
    """The mock's rounds are simulated (no wall-time bound: its findings never hang on the
    harness's clock); the local backend's gloo repeats cost seconds (120 s); real hosts 600 s."""
    assert (MockBackend.near_budget_s, LocalBackend.near_budget_s, Backend.near_budget_s) == (None, 120.0, 600.0)


def test_a_card_at_its_bar_is_inconclusive_when_the_budget_is_spent_never_isolated_or_released(tmp_path,
                                                                                             monkeypatch) -> None:
    """The card at the 0.93 bar of test_near_bar (undecided at the bound of 1024 samples on the
    mock) with a budget its first batch already spends, on a machine that reports a busy load:
    the retest stops after that batch, the card stays quarantined, inconclusive as on a busy
    machine, exit 4 (main: the option was no budget, and the retest ran its batches to the
    bound). On a quiet machine: tests/test_review_s43.py."""
    monkeypatch.setattr(MockBackend, "machine_load", lambda self: {"runnable": 8.0, "cores": 2, "steal": 0.0})
    outcome = mock_gate(tmp_path, "mi300x-pod", ["{type: slow_card, target: mi02/gpu3, factor: 0.93}"],
                        backend_options={"near_budget_s": 1e-9})
    res = outcome.results
    [f] = [f for f in res["findings"] if f["entity"] == "mi02/gpu3"]
    why = f["evidence"]["inconclusive"]
    assert why.startswith("inconclusive: the machine was too busy for the retest to decide (its near-bar budget of "
                          "1e-09 s cannot hold 16 more repeats of its pairs"), why
    assert f"{WITHIN}: median" in f["evidence"]["retest"] and str(NEAR_SAMPLES) not in f["evidence"]["retest"], \
        f["evidence"]["retest"]
    assert [i["action"] for i in res["isolation"] if i["entity"] == "mi02/gpu3"] == ["quarantine", "quarantine"]
    assert res["verdict"] == Verdict.INCONCLUSIVE and outcome.exit_code == ExitCode.INCONCLUSIVE == 4
