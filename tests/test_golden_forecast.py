"""The ledger's forecast of the golden model's communication, against the golden layer's
measurement of the same run (sncheck/ledger/golden.py): on the mock, whose golden model is
the alpha-beta model it measures with, within 10%; a forecast off by more than the margin
is a finding about the ledger. The local backend's 5 runs are the bench
(tests/bench/bench_golden_forecast.py); its main test (test_local_run.py) holds one run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.ledger.golden import MARGIN, ddp_buckets, forecast
from sncheck.ledger.tiers import Figures, TierFigures
from sncheck.worker.golden_config import GoldenConfig

INV = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"


def test_ddp_buckets_and_the_golden_models_gradients() -> None:
    assert ddp_buckets(474_112) == (474_112,)
    assert ddp_buckets(60 << 20) == (1 << 20, 25 << 20, 25 << 20, 9 << 20)
    assert ddp_buckets(0) == ()
    assert GoldenConfig().params == 118_528 and GoldenConfig().gradient_bytes == 474_112


def test_golden_params_match_the_built_model() -> None:
    pytest.importorskip("torch")
    from sncheck.worker.golden_model import build_model

    for cfg in (GoldenConfig(), GoldenConfig(vocab=50, d_model=32, n_layers=3, n_heads=2, seq_len=16)):
        assert cfg.params == sum(p.numel() for p in build_model(cfg).parameters())


def test_forecast_by_hand_and_off_by_more_than_the_margin() -> None:
    fig = Figures({"intra_host": TierFigures("intra_host", 10e-6, 10.0, "hand")})
    rows = pd.DataFrame({"group": ["host:a"] * 3, "step_time_s": [0.1, 0.1, 0.1], "comm_s": [0.004] * 3,
                         "comm_min_s": [0.002] * 3})
    (f,) = forecast(rows, fig, (1e6,), {"host:a": (4, "intra_host")})
    t = fig.get("intra_host").time("all_reduce", 4, 1e6)[0]     # 190 us (tree): see test_ledger_accounts
    assert f.forecast_comm_s == pytest.approx(t) and f.measured_comm_s == 0.002 and f.compute_s == 0.096
    assert f.ratio == pytest.approx(0.002 / t) and not f.within    # 10.5x: the ledger is off
    assert f.forecast_share == pytest.approx(t / (t + 0.096))
    (f,) = forecast(rows.assign(comm_min_s=t * 2), fig, (1e6,), {"host:a": (4, "intra_host")})
    assert f.within and f.ratio == pytest.approx(2.0)


def run_mock(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "nightly-stress", "-i", str(INV / "demo-2sn.yaml"), "--backend", "mock",
                                  "--seed", "5", "--out", str(out), "-q", *extra])
    assert r.exit_code in (0, 1), r.output
    return json.loads((out / "results.json").read_text())


def test_mock_golden_share_agrees_with_the_forecast(tmp_path) -> None:
    res = run_mock(tmp_path)
    fc = next(lay for lay in res["layers"] if lay["name"] == "golden")["summary"]["forecast"]
    assert fc["replicas"] == 16 and fc["replicas_within"] == 16 and fc["within"] is True
    assert 1 / MARGIN <= fc["ratio"]["min"] <= fc["ratio"]["max"] <= MARGIN       # the margin, asserted
    assert fc["ratio"]["median"] == pytest.approx(1.0, rel=0.10)                   # the mock's own model
    assert fc["typical"]["source"] == "measured (this run)"
    assert not [f for f in res["findings"] if f["rule"].startswith("golden-share")]


def test_one_slow_replica_is_not_the_ledgers_fault(tmp_path) -> None:
    (tmp_path / "f.yaml").write_text("faults:\n  - {type: degraded_link, target: \"node001/gpu0<->node001/gpu1\", "
                                     "factor: 0.05}\n")
    res = run_mock(tmp_path, "--faults", str(tmp_path / "f.yaml"))
    fc = next(lay for lay in res["layers"] if lay["name"] == "golden")["summary"]["forecast"]
    assert fc["within"] is True and fc["replicas_within"] == 15
    assert fc["worst"]["group"] == "host:node001" and fc["worst"]["ratio"] > MARGIN
    assert not [f for f in res["findings"] if f["rule"] == "golden-share-forecast-off"]


def test_a_forecast_that_misses_is_a_finding_about_the_ledger(tmp_path, monkeypatch) -> None:
    from sncheck.backends.mock import GOLDEN_GRAD_BYTES, MockBackend

    # a ledger that counts the wrong gradients (10x the mock's model): every replica misses
    monkeypatch.setattr(MockBackend, "golden_gradients", lambda self: 10 * GOLDEN_GRAD_BYTES)
    res = run_mock(tmp_path)
    fc = next(lay for lay in res["layers"] if lay["name"] == "golden")["summary"]["forecast"]
    assert fc["within"] is False and fc["ratio"]["median"] < 1 / MARGIN
    (f,) = [f for f in res["findings"] if f["rule"] == "golden-share-forecast-off"]
    assert f["severity"] == "info" and f["about"] == "check" and f["entity"] == "sn0"
    assert f["message"].startswith("the ledger's forecast of the golden model's gradient all-reduce is off by 0.1")
    assert res["verdict"] == "pass"   # about the ledger: never the hardware's gate
