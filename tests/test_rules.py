"""Rules as data: loading, validation with file:line, each op as a pure function."""

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ConfigError
from sncheck.health.metrics import METRICS, DetectContext
from sncheck.health.ops import OPS, robust_z
from sncheck.health.rules import load_rules, load_rules_text
from sncheck.config.inventory import TierDesign
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology, link_id

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))
CTX = DetectContext(TOPO, {"scale_up": TierDesign(450.0, 3.0), "scale_out": TierDesign(50.0, 15.0)})


def rule(text: str):
    return load_rules_text("rules:\n" + text).rules[0]


def p2p_rows(values: dict[tuple[str, str], float], default: float = 450.0, host: str = "node001") -> pd.DataFrame:
    cards = [f"{host}/gpu{i}" for i in range(4)] + [f"node002/gpu{i}" for i in range(4)]
    rows = []
    for i, a in enumerate(cards):
        for b in cards[i + 1:]:
            bw = values.get((a, b), default)
            rows.append({"kind": "p2p", "layer": "connectivity", "src": a, "dst": b, "link": link_id(a, b),
                         "tier": TOPO.tier(a, b), "bw_GBps": bw, "bw_rev_GBps": bw, "lat_us": 3.0,
                         "lat_p99_us": 3.1, "checksum_ok": True, "status": "ok"})
    return pd.DataFrame(rows)


def test_shipped_rules_load_and_cover_every_op():
    for path in (ROOT / "fixtures/rules").glob("*.yaml"):
        rs = load_rules(str(path))
        assert rs.rules
    used = {r.op for path in (ROOT / "fixtures/rules").glob("*.yaml") for r in load_rules(str(path)).rules}
    assert used == set(OPS)  # every op is used by some shipped rules file


def test_ratio_to_design_names_a_link():
    r = rule("  - {name: bw, op: ratio_to_design, metric: p2p_bandwidth, below: 0.8, severity: critical}")
    rows = p2p_rows({("node001/gpu0", "node001/gpu1"): 200.0})
    found = OPS[r.op].fn(rows, r, CTX)
    assert [(f.entity, f.entity_kind, f.rule) for f in found] == [("node001/gpu0<->node001/gpu1", "link", "bw")]
    assert found[0].evidence["measured"] == 200.0 and found[0].evidence["expected"] == 450.0
    assert found[0].evidence["unit"] == "GB/s"


def test_ratio_to_design_names_a_card_from_its_row():
    r = rule("  - {name: bw, op: ratio_to_design, metric: p2p_bandwidth, below: 0.8, severity: critical}")
    bad = {(a, b): 250.0 for a, b in [("node001/gpu0", f"node001/gpu{i}") for i in (1, 2, 3)]
           + [("node001/gpu0", f"node002/gpu{i}") for i in range(4)]}
    found = OPS[r.op].fn(p2p_rows(bad), r, CTX)
    assert [(f.entity, f.entity_kind) for f in found] == [("node001/gpu0", "card")]


def test_peer_outlier_per_card_finds_a_faint_card():
    r = rule("  - {name: faint, op: peer_outlier, metric: p2p_bandwidth, per: card, scope: card, below: 0.93, severity: warning}")
    bad = {(a, b): 400.0 for a, b in [("node002/gpu1", "node002/gpu2"), ("node002/gpu1", "node002/gpu3")]
           + [(f"node001/gpu{i}", "node002/gpu1") for i in range(4)] + [("node002/gpu0", "node002/gpu1")]}
    found = OPS[r.op].fn(p2p_rows(bad), r, CTX)
    assert [(f.entity, f.entity_kind, f.severity) for f in found] == [("node002/gpu1", "card", "warning")]
    # every one of its pairs is above 0.8 of design, so the design rule says nothing
    design = rule("  - {name: bw, op: ratio_to_design, metric: p2p_bandwidth, below: 0.8, severity: critical}")
    assert OPS[design.op].fn(p2p_rows(bad), design, CTX) == []


def test_peer_outlier_robust_z_on_entities():
    r = rule("  - {name: skew, op: peer_outlier, metric: rank_skew, method: robust_z, above: 5, min_excess: 5, severity: warning, scope: card}")
    rows = pd.DataFrame([{"kind": "rank", "layer": "stress", "group": "host:node001", "card": f"node001/gpu{i}",
                          "skew_us": s} for i, s in enumerate([1.0, 2.0, 1.5, 40.0])] * 3)
    found = OPS[r.op].fn(rows, r, CTX)
    assert [f.entity for f in found] == ["node001/gpu3"] and found[0].evidence["unit"] == "us"


def test_robust_z_formula():
    z = robust_z(pd.Series([1.0, 2.0, 3.0, 4.0, 100.0]))
    assert z.iloc[2] == 0 and z.iloc[4] == pytest.approx(0.6745 * 97 / 1.0)


def test_counter_nonzero_and_threshold_and_missing():
    rows = p2p_rows({})
    rows.loc[rows["src"].eq("node001/gpu2") | rows["dst"].eq("node001/gpu2"), "checksum_ok"] = False
    corrupt = rule("  - {name: data, op: counter_nonzero, metric: p2p_checksum_failures, severity: critical}")
    assert [f.entity for f in OPS[corrupt.op].fn(rows, corrupt, CTX)] == ["node001/gpu2"]
    rows.loc[rows["link"] == "node002/gpu0<->node002/gpu1", "lat_p99_us"] = 30.0
    spikes = rule("  - {name: tail, op: threshold, metric: p2p_latency_tail, above: 3, severity: warning}")
    assert [f.entity for f in OPS[spikes.op].fn(rows, spikes, CTX)] == ["node002/gpu0<->node002/gpu1"]
    nr = pd.DataFrame([{"kind": "not_run", "layer": "stress", "entity": "node009", "entity_kind": "host",
                        "status": "timeout", "message": "node009: all_reduce_perf timed out"}])
    miss = rule("  - {name: not-run, op: missing, metric: missing, severity: critical}")
    found = OPS[miss.op].fn(nr, miss, CTX)
    assert [(f.entity, f.rule, f.layer) for f in found] == [("node009", "not-run-timeout", "stress")]


def test_baseline_regression_per_card():
    r = rule("  - {name: base, op: baseline_regression, metric: p2p_bandwidth, key: card, below: 0.9, severity: warning}")
    baseline = {"metrics": {"p2p_bandwidth": {"tier": {"intra_host": 450.0, "scale_up": 450.0},
                                              "card": {t: {c.id: 450.0 for c in TOPO.cards}
                                                       for t in ("intra_host", "scale_up")}}}}
    ctx = DetectContext(TOPO, CTX.design, baseline=baseline)
    rows = p2p_rows({(a, "node002/gpu3"): 380.0 for a in [f"node001/gpu{i}" for i in range(4)]
                     + [f"node002/gpu{i}" for i in range(3)]})
    assert [f.entity for f in OPS[r.op].fn(rows, r, ctx)] == ["node002/gpu3"]
    assert OPS[r.op].fn(rows, r, CTX) == []  # no baseline, no verdict


BAD_RULES = {
    "unknown_op": ("  - {name: x, op: ratio_to_sky, metric: p2p_bandwidth, below: 1, severity: critical}", 2, "unknown op"),
    "unknown_metric": ("  - {name: x, op: threshold, metric: p2p_bandwith, below: 1, severity: critical}", 2, "unknown metric"),
    "bad_severity": ("  - {name: x, op: threshold, metric: p2p_bandwidth, below: 1, severity: fatal}", 2, "rules.x.severity: must be one of"),
    "missing_bound": ("  - name: x\n    op: threshold\n    metric: p2p_bandwidth\n    severity: critical", 2, "exactly one of below, above"),
    "unknown_field": ("  - name: x\n    op: threshold\n    metric: p2p_bandwidth\n    belwo: 3\n    severity: critical", 5, "did you mean 'below'"),
    "wrong_type": ("  - name: x\n    op: threshold\n    metric: p2p_bandwidth\n    below: lots\n    severity: critical", 5, "rules.x.below: must be int or float, got 'lots'"),
    "wrong_shape": ("  - {name: x, op: golden_band, metric: p2p_bandwidth, severity: critical}", 2, "does not take metric"),
    "bad_choice": ("  - {name: x, op: peer_outlier, metric: p2p_bandwidth, method: zscore, below: 1, severity: critical}", 2, "rules.x.method: must be one of ratio, robust_z"),
    "duplicate": ("  - {name: x, op: counter_nonzero, metric: pair_wrong, severity: critical}\n"
                  "  - {name: x, op: counter_nonzero, metric: pair_wrong, severity: critical}", 3, "duplicate rule name"),
}


@pytest.mark.parametrize("case", sorted(BAD_RULES))
def test_bad_rules_name_file_and_line(tmp_path, case):
    text, line, needle = BAD_RULES[case]
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n" + text + "\n")
    r = CliRunner().invoke(main, ["rules", "check", str(path)])
    assert r.exit_code == 2, r.output
    assert f"{path}:{line}:" in r.output and needle in r.output, r.output
    assert "Traceback" not in r.output


def test_rules_list_comes_from_the_registry():
    r = CliRunner().invoke(main, ["rules", "list"])
    assert r.exit_code == 0
    for name in OPS:
        assert f"  {name}:" in r.output
    for name in METRICS:
        assert f"  {name} (" in r.output
    assert "min_excess" in r.output and "robust_z" in r.output


def test_rules_check_shipped_and_run_with_custom_rules(tmp_path):
    r = CliRunner().invoke(main, ["rules", "check", str(ROOT / "fixtures/rules/default.yaml")])
    shipped = (ROOT / "fixtures/rules/default.yaml").read_text().count("\n  - name: ")
    assert r.exit_code == 0 and f"ok: {shipped} rules" in r.output
    strict = tmp_path / "strict.yaml"
    strict.write_text("rules:\n  - {name: any-bw-dip, op: ratio_to_design, metric: p2p_bandwidth, below: 1.5, severity: warning}\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(ROOT / "fixtures/inventories/nvl72.yaml"), "--backend", "mock",
                                  "--rules", str(strict), "--out", str(out), "-q"])
    assert r.exit_code == 1  # every pair is below 1.5x design: the rule fires, proving --rules is used
    assert {f["rule"] for f in json.loads((out / "results.json").read_text())["findings"]} == {"any-bw-dip"}


def test_missing_rules_file_is_a_config_error():
    with pytest.raises(ConfigError):
        load_rules("/nonexistent/rules.yaml")


def test_baseline_make_and_use(tmp_path):
    inv = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
    runs = []
    for seed in (1, 2):
        out = tmp_path / f"good{seed}"
        r = CliRunner().invoke(main, ["connectivity", "-i", inv, "--backend", "mock", "--seed", str(seed), "--out", str(out), "-q"])
        assert r.exit_code == 0, r.output
        runs.append(str(out))
    base = tmp_path / "base.json"
    r = CliRunner().invoke(main, ["baseline", "make", *runs, "--out", str(base)])
    assert r.exit_code == 0, r.output
    data = json.loads(base.read_text())
    assert data["metrics"]["p2p_bandwidth"]["tier"]["scale_up"] == pytest.approx(450, rel=0.03)
    assert data["metrics"]["p2p_bandwidth"]["tier"]["scale_out"] == pytest.approx(50, rel=0.03)
    assert len(data["metrics"]["p2p_bandwidth"]["card"]["scale_up"]) == 64
    bad_run = tmp_path / "bad"
    (tmp_path / "f.yaml").write_text("faults:\n  - {type: corrupt_card, target: node001/gpu0}\n")
    CliRunner().invoke(main, ["connectivity", "-i", inv, "--backend", "mock", "--faults", str(tmp_path / "f.yaml"),
                              "--out", str(bad_run), "-q"])
    r = CliRunner().invoke(main, ["baseline", "make", str(bad_run), "--out", str(tmp_path / "b2.json")])
    assert r.exit_code == 2 and "known-good" in r.output


def test_a_run_compares_cards_with_their_baseline(tmp_path):
    inv = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
    good = []
    for seed in (5, 6):
        out = tmp_path / f"good{seed}"
        assert CliRunner().invoke(main, ["connectivity", "-i", inv, "--backend", "mock", "--seed", str(seed),
                                         "--out", str(out), "-q"]).exit_code == 0
        good.append(str(out))
    assert CliRunner().invoke(main, ["baseline", "make", *good, "--out", str(tmp_path / "base.json")]).exit_code == 0
    only_baseline = tmp_path / "rules.yaml"
    only_baseline.write_text("rules:\n  - {name: below-own-history, op: baseline_regression, metric: p2p_bandwidth,"
                             " key: card, below: 0.9, severity: warning}\n")
    (tmp_path / "f.yaml").write_text("faults:\n  - {type: slow_card, target: node009/gpu2, factor: 0.85}\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", inv, "--backend", "mock", "--faults", str(tmp_path / "f.yaml"),
                                  "--rules", str(only_baseline), "--baseline", str(tmp_path / "base.json"),
                                  "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    found = json.loads((out / "results.json").read_text())["findings"]
    assert [(f["entity"], f["rule"]) for f in found] == [("node009/gpu2", "below-own-history")]
