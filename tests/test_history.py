"""History in the state store: summaries per run, `sncheck history`, `sncheck diff`,
the slow-drift detector, baselines from history and evidence bundles (issue 13)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.summaries import Summary
from sncheck.store.state import MIGRATIONS, SCHEMA_VERSION, StateStore

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
CARD = "node003/gpu2"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def night(tmp: Path, n: int, factor: float | None, state: Path, playbook: str = "post-delivery"):
    args = ["run", playbook, "-i", DEMO, "--backend", "mock", "--seed", n, "--out", tmp / f"night{n}",
            "--state-dir", state, "-q"]
    if factor is not None:
        plan = tmp / f"faults{n}.yaml"
        plan.write_text(f"faults: [{{type: slow_card, target: {CARD}, factor: {factor}}}]\n")
        args += ["--faults", plan]
    r = invoke(*args)
    return r, json.loads((tmp / f"night{n}" / "results.json").read_text())


@pytest.fixture(scope="module")
def three_nights(tmp_path_factory):
    """Healthy, then slow_card 0.97, then 0.94: inside every per-run bar."""
    tmp = tmp_path_factory.mktemp("nights")
    state = tmp / "state"
    out = [night(tmp, n, f, state) for n, f in ((1, None), (2, 0.97), (3, 0.94))]
    return tmp, state, out


def test_per_run_bars_flag_nothing_at_0_94_without_history(tmp_path):
    r = invoke("run", "post-delivery", "-i", DEMO, "--backend", "mock", "--seed", 3, "--out", tmp_path / "r",
               "-q", "--faults", _plan(tmp_path, 0.94))
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert r.exit_code == 0, r.output
    # Nothing gates. Since 1506617 a card inside its bar by less than its noise (this 0.94
    # card: 0.937 of its peers on 3 pairs, the bar 0.93) is re-measured until clear of the
    # bar: here inside it, released, an info finding saying so; nothing else is named.
    [f] = results["findings"]
    assert (f["entity"], f["severity"], f["evidence"]["near_bar"]["bar"]) == (CARD, "info", 0.93), f
    assert [(d["entity"], d["action"]) for d in results["isolation"]] == [(CARD, "quarantine"), (CARD, "release")]


def _plan(tmp: Path, factor: float) -> Path:
    p = tmp / "plan.yaml"
    p.write_text(f"faults: [{{type: slow_card, target: {CARD}, factor: {factor}}}]\n")
    return p


def test_third_night_warns_of_drift_naming_the_card(three_nights):
    _tmp, _state, out = three_nights
    (r1, res1), (r2, res2), (r3, res3) = out
    assert res1["findings"] == [] and res2["findings"] == []
    assert r1.exit_code == 0 and r2.exit_code == 0
    drift = [f for f in res3["findings"] if f["rule"] == "p2p-bandwidth-drift"]
    assert [f["entity"] for f in drift] == [CARD]
    assert drift[0]["severity"] == "warning"
    ev = drift[0]["evidence"]
    assert ev["runs"] == 3 and ev["ratio_to_first"] < 0.95
    assert all(f["entity"] == CARD for f in res3["findings"])  # nothing else
    assert r3.exit_code == 1  # post-delivery gates on warnings


def test_diff_lists_the_drifting_card_and_the_new_finding(three_nights):
    tmp, state, out = three_nights
    ids = [res["run_id"] for _r, res in out]
    r = invoke("diff", ids[0], ids[2], "--state-dir", state, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    moved = {(m["kind"], m["entity"]) for m in d["moved"]}
    assert ("card", CARD) in moved
    assert {m["entity"] for m in d["moved"] if m["kind"] == "card"} == {CARD}  # nothing else beyond noise
    assert [f["entity"] for f in d["findings"]["new"]] == [CARD]
    assert d["findings"]["resolved"] == []
    tiers = {(a["entity"], a["metric"]) for a in d["aggregates"] if a["kind"] == "tier"}
    assert ("scale_up", "p2p_bandwidth") in tiers
    # Run directories work as well as run ids, and the text form names the card.
    r = invoke("diff", tmp / "night1", tmp / "night3")
    assert r.exit_code == 0 and CARD in r.output and "findings new: 1" in r.output


def test_history_shows_the_card_over_time(three_nights):
    _tmp, state, out = three_nights
    r = invoke("history", CARD, "--state-dir", state, "--json")
    assert r.exit_code == 0, r.output
    h = json.loads(r.output)
    levels = [run["metrics"]["card:p2p_bandwidth/scale_up"]["value"] for run in h["runs"]]
    assert len(levels) == 3 and levels[0] > levels[1] > levels[2]
    assert h["runs"][2]["findings"][0]["rule"] == "p2p-bandwidth-drift"
    r = invoke("history", CARD, "--state-dir", state)
    assert r.exit_code == 0 and "p2p-bandwidth-drift" in r.output
    r = invoke("history", "scale_up", "--state-dir", state, "--json")
    assert len(json.loads(r.output)["runs"]) == 3


def test_unknown_run_and_missing_store_are_usage_errors(tmp_path, three_nights):
    _tmp, state, _out = three_nights
    r = invoke("diff", "nosuchrun", "alsonot", "--state-dir", state)
    assert r.exit_code == 2 and "no such run" in r.output
    r = invoke("diff", "nosuchrun", "alsonot")
    assert r.exit_code == 2 and "needs --state-dir" in r.output
    r = invoke("history", CARD, "--state-dir", tmp_path / "empty")
    assert r.exit_code == 2 and "no state store" in r.output


def test_baseline_from_state_goes_to_the_store_and_a_file(three_nights, tmp_path):
    _tmp, state, _out = three_nights
    out = tmp_path / "b.json"
    r = invoke("baseline", "make", "--from-state", state, "--last", 2, "--passed-only", "--out", out)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["schema"] == "sncheck.baseline/1" and len(data["runs"]) == 2
    assert CARD in data["metrics"]["p2p_bandwidth"]["card"]["scale_up"]
    with StateStore(state) as st:
        assert st.load_baseline("b")["runs"] == data["runs"]
    from sncheck.health.baseline import load_baseline

    assert load_baseline(str(out))["metrics"]["p2p_bandwidth"]["tier"]  # a valid --baseline file too
    r = invoke("baseline", "make", "--from-state", tmp_path / "nothing", "--out", out)
    assert r.exit_code == 2


def test_a_version_1_store_is_migrated_and_stays_readable(tmp_path):
    db = sqlite3.connect(tmp_path / "state.db")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for statement in MIGRATIONS[1]:
        db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("INSERT INTO runs (run_id, verdict, started) VALUES ('old-run', 'pass', '2026-01-01T00:00:00Z')")
    db.execute("INSERT INTO findings (run_id, entity, entity_kind, ts) VALUES ('old-run', 'n1', 'host', 'x')")
    db.commit()
    db.close()
    with StateStore(tmp_path) as st:
        assert st.schema_version == SCHEMA_VERSION == 3  # 3: the isolation journal (issue 30)
        assert st.open_txns() == []
        assert [r["run_id"] for r in st.runs()] == ["old-run"]
        assert st.findings_for("n1")[0]["run_id"] == "old-run"
        assert st.run_summaries("old-run") == {}
        st.record_summaries("old-run", [Summary("card", "n1/gpu0", "m", 1.5, 0.1, 3)])
        assert st.run_summaries("old-run") == {("card", "n1/gpu0", "m"): (1.5, pytest.approx(0.1), 3)}
    r = invoke("history", "n1", "--state-dir", tmp_path)
    assert r.exit_code == 0 and "old-run" in r.output


def test_summaries_share_one_key_list_across_runs(tmp_path):
    with StateStore(tmp_path) as st:
        for i in range(3):
            st.record_summaries(f"r{i}", [Summary("card", f"n/gpu{c}", "bw", 100.0 + i, 1.0, 5) for c in range(8)])
        assert st.count("summary_keys") == 1 and st.count("summaries") == 3
        assert st.run_summaries("r2")[("card", "n/gpu7", "bw")][0] == 102.0
def test_report_has_the_trend_and_the_change_since_last_run(three_nights):
    tmp, _state, out = three_nights
    res3 = out[2][1]
    assert res3["history"]["new"][0]["entity"] == CARD
    html = (tmp / "night3" / "report.html").read_text()
    assert 'id="changes"' in html and CARD in html
    assert "sparkline" in html
    assert len(res3["history"]["runs"]) == 3  # the two nights before, and this one
    scale_up = res3["history"]["series"]["scale_up p2p_bandwidth"]
    assert len(scale_up) == 3 and all(v > 400 for v in scale_up)


def test_every_finding_links_to_evidence_files_that_exist(tmp_path):
    out = tmp_path / "run"
    invoke("run", "pre-upgrade-gate", "-i", DEMO, "--backend", "mock", "--seed", 1, "-q",
           "--faults", ROOT / "fixtures/faults/demo-mixed.yaml", "--out", out)
    results = json.loads((out / "results.json").read_text())
    assert results["findings"]
    html = (out / "report.html").read_text()
    for f in results["findings"]:
        files = f["evidence"]["files"]
        assert any(p.endswith(".json") for p in files) and any(p.endswith("rows.jsonl") for p in files), f
        for p in files:
            assert (out / p).is_file() and (out / p).stat().st_size > 0
            assert f'href="{p}"' in html
        rows = [json.loads(line) for line in (out / files[0]).read_text().splitlines()] if files[0].endswith(
            "rows.jsonl") else []
        if f["entity_kind"] == "card" and rows:
            host = f["entity"].rsplit("/", 1)[0]  # its pairs and ranks, and its host's facts and groups
            assert all(f["entity"] in json.dumps(r) or host in json.dumps(r) for r in rows if "note" not in r)
            assert any(f["entity"] in json.dumps(r) for r in rows)


def test_first_screen_words_and_actions():
    from sncheck.report.firstscreen import actions, first_screen, sparkline, verdict_state
    from sncheck.store.results import from_json

    LAYER = {"layers": [{"name": "connectivity"}]}  # the layer that measured the findings (H10)

    warn = {"entity": "n1/gpu0", "entity_kind": "card", "layer": "connectivity", "rule": "p2p-bandwidth-drift",
            "severity": "warning", "message": "m",
            "evidence": {"measured": 420.0, "expected": 450.0, "unit": "GB/s", "files": ["evidence/n1_gpu0/README.txt"]}}
    assert verdict_state(from_json({**LAYER, "findings": []})) == "pass"
    # One set of verdict words: a pass with warnings below a critical gate is the pass the
    # gate decided, shown with its caveat, never a fourth word of the report's own.
    assert verdict_state(from_json({**LAYER, "findings": [warn]})) == "pass"
    top = first_screen(from_json({**LAYER, "gate": "critical", "findings": [warn]}))
    assert top["verdict_word"] == "PASS" and top["verdict_mark"] == "!"
    assert top["verdict_caveats"] == ["1 finding below the gate"]
    assert first_screen(from_json({**LAYER, "findings": []}))["verdict_mark"] == "\u2713"
    assert verdict_state(from_json({**LAYER, "gate": "warning", "findings": [warn]})) == "fail"
    error = from_json({**LAYER, "error": "the harness could not run"})
    assert verdict_state(error) == "error" and first_screen(error)["verdict_word"] == "ERROR"
    a = actions(from_json({**LAYER, "findings": [warn], "isolation": []}))[0]
    assert (a["measured"], a["expected"], a["evidence"]) == ("420 GB/s", "450 GB/s", "evidence/n1_gpu0/README.txt")
    assert "falling run after run" in a["action"]
    flat = sparkline([450.0, 449.0, 450.5], "t")
    ys = [float(p.split(",")[1]) for p in flat.split('points="')[1].split('"')[0].split()]
    assert max(ys) - min(ys) < 3  # a 0.3% wobble is drawn nearly flat, not as a cliff
    assert sparkline([1.0], "t") == ""
