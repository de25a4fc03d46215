"""A retest or a scoped run decides a release only where it measured the symptom against
known-good controls (run/isolation.py's policy; reviews19 #11, #6, #8's addendum)."""

from pathlib import Path

import pandas as pd

from sncheck.health.rules import load_rules
from sncheck.model import EntityKind, Finding, Severity
from sncheck.run.inputs import load_inventory
from sncheck.run.retestbar import too_few_partners
from sncheck.run.scope import cards_of
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
RULES = {r.name: r for r in load_rules().rules}
DUALRAIL = Topology(load_inventory(ROOT / "tests/data/scenarios-r11/inv-dualrail.yaml"))


def _pair_rows(pairs: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"kind": "collective", "group_kind": "pair", "group": f"pair:{a}<->{b}", "status": "ok",
                          "collective": "all_reduce", "size_bytes": 1 << 24, "busbw_GBps": 20.0}
                         for a, b in pairs])


def test_a_switch_s_stress_retest_with_no_control_pair_cannot_release_it():
    """reviews19 #11: spine:y1 carries every card of inv-dualrail; its stress retest's pairs all had
    an end of its own, so pair_busbw's level was the slow pairs' own median, the spine read 1.0 of it
    ("inside the bar by more than the measured noise (0.0%)") and a persistent 0.4 spine was released,
    rc=0. A peer bar with no pair beside the subject's own has no level: not judged, never a release."""
    rule = RULES["collective-pair-slow"]
    f = Finding("spine:y1", EntityKind.SWITCH, "stress", rule.name, Severity.CRITICAL, "", {})
    scope = set(cards_of(f, DUALRAIL))
    own = _pair_rows([("a1/gpu0", "c3/gpu1"), ("a2/gpu0", "b1/gpu1"), ("c1/gpu0", "a3/gpu0")])
    assert "no pair on its tier beside the suspect's own" in too_few_partners(rule, own, f, DUALRAIL, None, scope)
    # a card's retest with control pairs among its peers has a level: judged
    card = Finding("a1/gpu0", EntityKind.CARD, "stress", rule.name, Severity.CRITICAL, "", {})
    with_controls = _pair_rows([("a1/gpu0", "a2/gpu0"), ("a2/gpu0", "a3/gpu0"), ("a1/gpu0", "a3/gpu0")])
    assert too_few_partners(rule, with_controls, card, DUALRAIL, None, {"a1/gpu0"}) is None


def test_a_scoped_run_that_never_measured_the_symptom_keeps_the_quarantine(tmp_path):
    """reviews19 #6: a golden-only scoped run (--targets) released a card quarantined by connectivity for
    critical p2p latency ("measured it and found nothing"), put it back in service, exit 0. It ran no
    layer that measures p2p latency: the quarantine stays, and the run says why."""
    import json

    import yaml
    from click.testing import CliRunner

    from sncheck.cli.main import main

    conn, golden, faults = tmp_path / "conn.yaml", tmp_path / "golden.yaml", tmp_path / "faults.yaml"
    conn.write_text(yaml.safe_dump({"name": "conn", "layers": ["connectivity"], "gate": "warning", "confirm": False}))
    golden.write_text(yaml.safe_dump({"name": "golden", "layers": ["golden"], "gate": "warning"}))
    faults.write_text(yaml.safe_dump({"faults": [{"type": "high_latency_card", "target": "node002/gpu2",
                                                  "factor": 4.0}]}))
    state, inv = tmp_path / "state", tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump({
        "name": "scoped", "design": {"scale_up": {"bandwidth": "450 GB/s", "latency": "3 us"},
                                     "scale_out": {"bandwidth": "400 Gb/s", "latency": "15 us"}},
        "supernodes": [{"name": "sn0", "hosts": "node[001-003]", "cards_per_host": 4}], "backend": {"type": "mock"}}))

    def run(playbook, seed, *extra):
        return CliRunner().invoke(main, ["run", str(playbook), "-i", str(inv), "--backend", "mock", "--faults",
                                         str(faults), "--seed", str(seed), "--out", str(tmp_path / f"r{seed}"), "-q",
                                         "--state-dir", str(state), *extra])

    assert run(conn, 1).exit_code == 1
    r = run(golden, 2, "--targets", "node002/gpu2")
    assert r.exit_code == 0, r.output
    steps = json.loads((tmp_path / "r2" / "results.json").read_text())["isolation"]
    assert [(s["entity"], s["action"]) for s in steps] == [("node002/gpu2", "quarantine")], steps
    assert "not the connectivity layer that found it" in steps[0]["reason"]
    st = json.loads(CliRunner().invoke(main, ["status", "--state-dir", str(state), "--json"]).output)["status"]
    assert [(q["entity"], q["action"], q["evidence"]["layer"]) for q in st] == \
        [("node002/gpu2", "quarantine", "connectivity")]


def test_a_host_s_golden_step_time_confirms_nothing_about_one_link():
    """reviews19 #8's addendum: link node007/gpu0<->node007/gpu1 (a slow card's) carried its host's folded
    golden-step-time symptom; the retest's golden step reproduced on host node007 and "confirmed" the link,
    while its own stress symptom was not reproduced. Another entity kind's symptom decides nothing of a link."""
    from sncheck.run.confirm import Symptom
    from sncheck.run.retestbar import of_another_kind

    link = Finding("node007/gpu0<->node007/gpu1", EntityKind.LINK, "stress", "collective-pair-slow",
                   Severity.CRITICAL, "", {})
    syms = [Symptom("stress", "collective-pair-slow", {}, kind="link"),
            Symptom("golden", "golden-step-time-regression", {}, kind="host")]
    per = [{"rule": "collective-pair-slow", "outcome": False, "note": "inside the bar"},
           {"rule": "golden-step-time-regression", "outcome": True, "note": "host node007: 1.99 x golden"}]
    out = of_another_kind(link, syms, per)
    assert [p["outcome"] for p in out] == [False, None] and "confirms nothing about one link" in out[1]["note"]
    card = Finding("node007/gpu1", EntityKind.CARD, "stress", "collective-pair-slow", Severity.CRITICAL, "", {})
    assert of_another_kind(card, syms, per) == per  # a card's host symptom is for its own retest to weigh
