"""``sncheck plan``'s three accounts through the CLI: on the tiers a real (mock) run measured,
with -i and --state-dir, --compare, --json, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main

INV = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"
DENSE = ["--params", "70B", "--hidden", "8192", "--layers", "80", "--seq", "4096", "--zero", "1"]
MOE = ["--params", "1.8T", "--expert-params", "1.6T", "--experts", "128", "--top-k", "2", "--hidden", "12288",
       "--layers", "120", "--seq", "4096", "--zero", "1", "--recompute", "full"]


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, Path]:
    """The stress layer on the mock backend for both platforms: what --measured reads."""
    out = {}
    for name in ("nvl72-rack", "cm384"):
        d = tmp_path_factory.mktemp(name) / "run"
        r = invoke("stress", "-i", INV / f"{name}.yaml", "--backend", "mock", "--seed", "1", "--out", d, "-q")
        assert r.exit_code == 0, r.output
        out[name] = d
    return out


@pytest.mark.parametrize("inv, model, layout", [
    ("nvl72-rack", DENSE, "tp=8,pp=2,dp=4"),
    ("cm384", DENSE, "tp=8,pp=4,dp=..."),
    ("nvl72-rack", MOE, "tp=8,ep=64,pp=6,dp=8"),
    ("cm384", MOE, "tp=8,ep=64,pp=6,dp=..."),
])
def test_three_accounts_on_measured_tiers(measured, inv, model, layout) -> None:
    r = invoke("plan", *model, "--layout", layout, "-i", INV / f"{inv}.yaml", "--measured", measured[inv],
               "--global-batch", "1536")
    out = r.output
    for account in ("memory account (per card):", "communication account (per rank", "time account (per step"):
        assert account in out, out
    assert "share " in out and " band)" in out and "verdict: communication is " in out
    assert f"measured {measured[inv]}" in out             # tiers from the run, each says so
    doc = json.loads(invoke("plan", *model, "--layout", layout, "-i", INV / f"{inv}.yaml", "--measured",
                            measured[inv], "--global-batch", "1536", "--json").output)
    share, band = doc["verdict"]["share"], doc["verdict"]["band"]
    assert 0 < share < 1 and band == ("low" if share < 0.1 else "middle" if share < 0.3 else "high")
    assert doc["time"]["step_s"] > doc["time"]["compute_s"] > 0
    assert r.exit_code == (0 if doc["fits"] is not False and share < 0.3 else 1), out
    kinds = {c["parallelism"] for c in doc["communication"]}
    assert {"TP", "PP"} <= kinds and ("EP" in kinds) == (model is MOE)
    if inv == "nvl72-rack" and model is MOE:
        # 384 cards on a 72-card rack: one stage of TP x DP = 64 a rack; TP and EP inside, PP across
        by = {c["parallelism"]: c["placement"] for c in doc["communication"]}
        assert by["TP"]["tier"] == "scale_up" and by["EP"]["crossing_domains"] == 0
        assert by["PP"]["tier"] == "scale_out" and doc["capacity"]["fits"] is False and r.exit_code == 1


def test_compare_ranks_three_layouts(measured) -> None:
    r = invoke("plan", *DENSE, "--layout", "tp=8,pp=2,dp=4", "--compare", "tp=4,pp=2,dp=8", "--compare",
               "tp=16,pp=1,dp=4", "-i", INV / "nvl72-rack.yaml", "--measured", measured["nvl72-rack"],
               "--global-batch", "512", "--json")
    doc = json.loads(r.output)
    ranked = doc["compare"]
    assert [c["rank"] for c in ranked] == [1, 2, 3]
    steps = [c["time"]["step_s"] for c in ranked]
    assert steps == sorted(steps)
    assert [c["layout"]["tp"] for c in ranked] == [4, 8, 16]      # more TP, more traffic every layer
    assert r.exit_code == (0 if ranked[0]["ok"] else 1)
    text = invoke("plan", *DENSE, "--layout", "tp=8,pp=2,dp=4", "--compare", "tp=4,pp=2,dp=8", "--compare",
                  "tp=16,pp=1,dp=4", "-i", INV / "nvl72-rack.yaml", "--measured", measured["nvl72-rack"],
                  "--global-batch", "512").output
    assert "compare (global batch 512" in text and "TP=4 EP=1 PP=2 DP=8" in text


def test_tp_across_supernodes_fails_with_its_reason(tmp_path) -> None:
    # demo-2sn: 2 supernodes of 32 cards; TP 64 must span both
    r = invoke("plan", *DENSE, "--layout", "tp=64,pp=1,dp=1", "-i", INV / "demo-2sn.yaml", "--peak-tflops", "989",
               "--global-batch", "8")
    assert r.exit_code == 1, r.output
    assert "TP=64 spans 2 supernodes of 32: its all-gathers and reduce-scatters run at scale-out speed" in r.output
    assert "warning: TP=64 spans 2 supernodes of 32" in r.output


def test_healthy_cards_only_with_the_state_store(tmp_path) -> None:
    inv, state = INV / "demo-2sn.yaml", tmp_path / "state"
    base = ["plan", *DENSE, "--layout", "tp=16,pp=1,dp=...", "-i", inv, "--state-dir", state, "--peak-tflops", "989",
            "--global-batch", "48", "--json"]
    before = json.loads(invoke(*base).output)
    assert before["domains"]["cards"] == [32, 32] and before["layout"]["dp"] == 4
    assert invoke("isolate", "node003", "-i", inv, "--via", "hostfile", "--apply", "--state-dir", state).exit_code == 0
    after = json.loads(invoke(*base).output)
    assert after["domains"]["cards"] == [28, 32] and after["layout"]["dp"] == 3   # 28 hold one TP group of 16
    assert after["capacity"]["out"] == ["node003"]


def test_measured_baseline_and_run_topology_without_inventory(measured, tmp_path) -> None:
    base = tmp_path / "b.json"
    base.write_text(json.dumps({"schema": "sncheck.baseline/1", "name": "b", "metrics": {
        "p2p_bandwidth": {"tier": {"scale_up": 700.0, "scale_out": 45.0}, "unit": "GB/s"},
        "p2p_latency": {"tier": {"scale_up": 4.0, "scale_out": 12.0}, "unit": "us"}}}))
    doc = json.loads(invoke("plan", *DENSE, "--layout", "tp=8,pp=2,dp=4", "--measured", base, "--domain", "72",
                            "--peak-tflops", "2500", "--global-batch", "64", "--json").output)
    assert doc["tiers"]["scale_up"]["bandwidth_GBps"] == 700.0 and doc["tiers"]["scale_up"]["source"].startswith(
        "baseline")
    # no -i, no --domain: the run's own topology (one rack of 18 trays x 4)
    doc = json.loads(invoke("plan", *DENSE, "--layout", "tp=8,pp=2,dp=4", "--measured", measured["nvl72-rack"],
                            "--peak-tflops", "2500", "--global-batch", "64", "--json").output)
    assert doc["domains"]["cards"] == [72] and doc["domains"]["hosts_of"] == [4]


@pytest.mark.parametrize("args, says", [
    (["--measured", "{tmp}/x.txt"], "a run directory or a baseline (sncheck baseline make) is not valid JSON"),
    (["--design", "scale_up=fast@3us", "--domain", "8"], "--design 'scale_up=fast@3us'"),
    (["--design", "scale_up=900GB/s@3us"], "needs the scale-up domain"),
    (["--design", "scale_up=900GB/s@3us", "--domain", "8", "--global-batch", "3"], "global batch"),
    (["--measured", "{tmp}"], "not a run directory"),
])
def test_bad_input_exits_2(tmp_path, args, says) -> None:
    (tmp_path / "x.txt").write_text("hello")
    r = invoke("plan", *DENSE, "--layout", "tp=8,dp=2", *[a.format(tmp=tmp_path) for a in args])
    assert r.exit_code == 2, r.output
    assert says in r.output and "Traceback" not in r.output
