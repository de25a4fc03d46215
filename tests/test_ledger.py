"""The memory ledger against hand-computed examples (bytes, worked out in the comments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.ledger import GiB, Model, Training, ledger, parse_count, parse_layout, parse_memory

REPO = Path(__file__).resolve().parents[1]


def test_dense_70b_by_hand() -> None:
    # Ψ = 70e9 / (TP 8 x PP 4) = 2.1875e9 parameters per card.
    # weights = grads = 2 B x Ψ = 4.375e9 B; Adam (mixed): 12 B x Ψ = 26.25e9 B.
    # activations (selective): 34 s b h L / TP = 34 x 4096 x 1 x 8192 x 80 / 8 = 11_408_506_880 B.
    led = ledger(Model(70e9, hidden=8192, layers=80), Training(seq=4096), tp=8, ep=1, pp=4, dp=2,
                 card_memory=80 * GiB)
    assert led.params_per_card == pytest.approx(2.1875e9)
    assert led.weights == pytest.approx(4.375e9) and led.gradients == pytest.approx(4.375e9)
    assert led.optimizer == pytest.approx(26.25e9)
    assert led.activations == 11_408_506_880
    assert led.total == pytest.approx(35e9 + 11_408_506_880)
    assert led.fits is True  # 43.2 GiB of 80


def test_moe_1_8t_by_hand_with_and_without_zero() -> None:
    # 1.8T with 1.6T in experts; TP 8, EP 8, PP 16, DP 4.
    # Ψ = 0.2e12 / (8 x 16) + 1.6e12 / (8 x 16) = 1.5625e9 + 12.5e9 = 14.0625e9.
    # Static memory without ZeRO: 16 B x Ψ = 225e9 B = 209.5 GiB: over a 186 GiB GB200 already.
    model = Model(1.8e12, 1.6e12, hidden=12288, layers=128, top_k=2)
    train = Training(seq=8192)
    led = ledger(model, train, tp=8, ep=8, pp=16, dp=4, card_memory=186 * GiB)
    assert led.params_per_card == pytest.approx(14.0625e9)
    assert led.weights + led.gradients + led.optimizer == pytest.approx(225e9)
    # activations, top-2: (15 + 19 x 2) s b h L / TP = 53 x 8192 x 12288 x 128 / 8 = 85_362_475_008 B.
    assert led.activations == 85_362_475_008
    assert led.fits is False
    # ZeRO-1: the optimizer state divided by DP 4 (dense) and by TP x DP / EP = 4 (experts):
    # 12 x (1.5625e9 / 4 + 12.5e9 / 4) = 42.1875e9 B; total 56.25e9 + 42.1875e9 + 85_362_475_008 B.
    led1 = ledger(model, Training(seq=8192, zero=1), tp=8, ep=8, pp=16, dp=4, card_memory=186 * GiB)
    assert led1.optimizer == pytest.approx(42.1875e9)
    assert led1.total == pytest.approx(98.4375e9 + 85_362_475_008)
    assert led1.fits is True and led1.total / GiB == pytest.approx(171.2, abs=0.05)


def test_recompute_fp32_sgd_and_zero3_by_hand() -> None:
    # 1B dense, TP 2, PP 1, DP 4, fp32 + SGD (momentum only): w = g = 4 B, o = 4 B.
    # Ψ = 0.5e9. ZeRO-3 divides all three by DP 4: 3 x 4 B x 0.125e9 = 1.5e9 B.
    # full recompute: 2 s b h L / TP = 2 x 1024 x 2 x 2048 x 16 / 2 = 67_108_864 B.
    led = ledger(Model(1e9, hidden=2048, layers=16), Training("fp32", "sgd", 1024, 2, "full", 3),
                 tp=2, ep=1, pp=1, dp=4)
    assert led.weights + led.gradients + led.optimizer == pytest.approx(1.5e9)
    assert led.activations == 67_108_864 and led.fits is None  # no card memory: cannot say
    # No recomputation adds 5 a s^2 b per layer: with 16 heads, 5 x 16 x 1024^2 x 2 x 16 / 2 more.
    led = ledger(Model(1e9, hidden=2048, layers=16, heads=16), Training(seq=1024, micro_batch=2, recompute="none"),
                 tp=2, ep=1, pp=1, dp=4)
    assert led.activations == (34 * 1024 * 2 * 2048 + 5 * 16 * 1024 * 1024 * 2) * 16 // 2


def test_inputs_are_checked() -> None:
    assert parse_count("1.8T") == 1.8e12 and parse_count("70B") == 70e9 and parse_count("175e9") == 175e9
    assert parse_memory("80GB") == 80 * GiB and parse_layout("tp=8,ep=8,pp=16,dp=...")["dp"] is None
    for bad in (lambda: parse_count("lots"), lambda: parse_layout("tp=0"), lambda: parse_layout("xp=2"),
                lambda: ledger(Model(1e9, 0), Training(), tp=2, ep=2, pp=1, dp=1),          # EP without experts
                lambda: ledger(Model(1e9, 5e8), Training(), tp=2, ep=4, pp=1, dp=1),        # EP does not divide TP x DP
                lambda: ledger(Model(1e9, hidden=8, layers=10), Training(), tp=1, ep=1, pp=4, dp=1)):  # PP !| L
        with pytest.raises(ConfigError):
            bad()


def test_plan_cli_with_capacity_after_isolation(tmp_path: Path) -> None:
    inv = str(REPO / "fixtures" / "inventories" / "demo-2sn.yaml")  # 2 supernodes x 8 hosts x 4 cards
    args = ["plan", "--params", "70B", "--layout", "tp=4,pp=2,dp=...", "--hidden", "8192", "--layers", "80",
            "--card-memory", "80GB", "-i", inv, "--state-dir", str(tmp_path / "state"), "--json"]
    res = CliRunner().invoke(main, args, catch_exceptions=False)
    assert res.exit_code == 1, res.output  # 8.75e9 params/card x 16 B = 130 GiB > 80: does not fit
    doc = json.loads(res.output)
    assert doc["capacity"]["max_dp"] == 8 and doc["layout"]["dp"] == 8   # 64 cards / (TP 4 x PP 2)
    res = CliRunner().invoke(main, ["isolate", "node003", "-i", inv, "--via", "hostfile", "--apply",
                                    "--state-dir", str(tmp_path / "state")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    args[args.index("tp=4,pp=2,dp=...")] = "tp=4,pp=8,dp=..."
    res = CliRunner().invoke(main, args + ["--zero", "1"], catch_exceptions=False)
    doc = json.loads(res.output)
    # 60 healthy cards; units of TP 4 per supernode: 7 + 8 = 15 units = 60 cards; 60 // 32 = 1 replica.
    assert doc["capacity"]["healthy_cards"] == 60 and doc["capacity"]["max_dp"] == 1
    assert doc["capacity"]["out"] == ["node003"]
    assert doc["per_card"]["fits"] is True and res.exit_code == 0, res.output
