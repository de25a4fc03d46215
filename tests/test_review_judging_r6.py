"""Review of last session's judging landings (issues 29, 31): the inputs that made them
name the wrong entity or release a real fault, each found by an adversarial case.

Mock backend through the CLI (as tests/test_confirm_symptoms.py), and hand-built retest
frames under the mock's cost model (tests/test_explain.py's cells_of)."""

from pathlib import Path

import pytest

from sncheck.health.culprits import explain_cells, kind_of
from sncheck.health.metrics import DetectContext
from test_confirm_symptoms import CONNECTIVITY, DEMO, decisions, finding, run
from test_explain import RULES, cells_of, findings, topo_of

ROOT = Path(__file__).resolve().parent.parent


def slow_host(host: str, factor: float, cards: int = 4, transient: bool = False) -> list[str]:
    extra = ", transient: true" if transient else ""
    return [f"{{type: slow_card, target: {host}/gpu{i}, factor: {factor}{extra}}}" for i in range(cards)]


# ------------------------------------------------------------------ a host retest's own level
@pytest.mark.parametrize("seed", [1, 2])
def test_a_host_slowed_whole_is_confirmed_by_its_retest_not_released(tmp_path, seed):
    """Before: a host whose four cards all run at 0.9 (inside the 0.8 pair bar, beyond the
    card bar's 0.93 of its peers) was found (p2p-bandwidth-card-slow, factor 0.90 over 112
    pairs) and then released as healthy: its retest measures its four cards with five
    controls, so 4 x 5 of the tier's 30 pair summaries are its own and the tier's level (the
    peers' level) was the host itself: 1.0 of it, "inside the bar by more than the measured
    noise". The controls' pairs are the level now; the fault is persistent, so confirmed."""
    code, res = run(tmp_path, DEMO, slow_host("node003", 0.9), playbook=CONNECTIVITY, seed=seed)
    f = finding(res, "node003")
    assert f["evidence"].get("confirmed") is True, f["message"]
    assert ("node003", "isolate") in decisions(res) and ("node003", "release") not in decisions(res)
    assert code == 1


def test_a_transient_slow_host_is_still_released(tmp_path):
    """The guard the other way: the same host slow only until the retest is released."""
    code, res = run(tmp_path, DEMO, slow_host("node003", 0.9, transient=True), playbook=CONNECTIVITY, seed=1)
    assert ("node003", "release") in decisions(res) and ("node003", "isolate") not in decisions(res)
    assert code == 0


def retest_cells(topo, suspect: list[str], controls: list[str], speed: dict, repeats: int = 2, seed: int = 0):
    """A retest's p2p frame: the suspect's cards and its controls, every pair of them on the
    tier, ``repeats`` times (sncheck.run.confirm.Window._p2p)."""
    group = [*suspect, *controls]
    pairs = [(a, b) for i, a in enumerate(group) for b in group[i + 1:]
             if topo.tier(a, b) == "scale_up"] * repeats
    return cells_of(topo, speed=speed, pairs=pairs, noise=0.02, seed=seed)


def test_a_retest_reads_its_level_from_the_controls_not_the_suspect():
    """The explanation over one host's retest frame, the host the retest's subject: named,
    as it is over the whole domain; without a subject (the old reading) the host's 20 pairs
    of 30 were the tier's level and nothing was named."""
    demo = topo_of("demo-2sn")
    host = demo.cards_of_host("node003")
    controls = ["node001/gpu0", "node002/gpu0", "node004/gpu0", "node005/gpu0", "node006/gpu0"]
    cells = retest_cells(demo, host, controls, {c: 0.9 for c in host}, seed=1)
    rules = [r for r in RULES.rules if r.metric == "p2p_bandwidth" and kind_of(r)]
    subject = DetectContext(demo, dict(demo.inventory.design), known=frozenset({("node003", "host")}),
                            subject="node003")
    got = {(f.entity, f.entity_kind) for f in explain_cells(cells, rules, subject)}
    assert got == {("node003", "host")}
    # a healthy host's retest names nothing (its controls and it measure alike)
    clean = retest_cells(demo, host, controls, {}, seed=1)
    assert explain_cells(clean, rules, subject) == []


# ------------------------------------------------------------------ a near suspect's sibling bars
def test_a_near_cards_retest_keeps_a_baseline_regression_it_finds_as_a_new_fault():
    """a9631b6 judges every same-metric rule the retest finds a near suspect beyond on its
    samples against its controls' level (nearbar.siblings). A bar against a stored reference
    is no such level: a near card (p2p-bandwidth-card-slow) that its retest finds below its
    baseline (0.85 of it: a real regression) measures level with its controls, so the baseline
    bar (0.9) read "inside the bar, clear of the noise" and the regression was dropped, the
    card released on its card bar. Only level bars (design, peers) are siblings now; the
    baseline finding stays the retest's new fault (it confirms). A peers bar still is one."""
    from sncheck.model import EntityKind, Finding, Severity
    from sncheck.run.nearbar import siblings

    demo = topo_of("demo-2sn")
    card = "node003/gpu1"
    controls = ["node001/gpu1", "node002/gpu1", "node004/gpu1", "node005/gpu1", "node006/gpu1"]
    cells = retest_cells(demo, [card], controls, {}, repeats=8, seed=2)
    p2p = cells.assign(kind="p2p", status="ok", bw_GBps=cells["value"], bw_rev_GBps=cells["value"])
    by_name = {r.name: r for r in RULES.rules}
    near = [(by_name["p2p-bandwidth-card-slow"], "scale_up")]

    def on_card(rule: str) -> Finding:
        return Finding(card, EntityKind.CARD, "connectivity", rule, Severity.WARNING, rule, {"tier": "scale_up"})

    found = [on_card("p2p-bandwidth-below-baseline"), on_card("p2p-bandwidth-below-peers")]
    got = siblings(found, card, near, {"p2p-bandwidth-card-slow"}, by_name, {}, p2p,
                   DetectContext(demo, dict(demo.inventory.design)))
    assert "p2p-bandwidth-below-baseline" not in got, got
    assert got["p2p-bandwidth-below-peers"][0] is False  # level with its controls: clear inside that bar


# ------------------------------------------------------------------ a host slower than its faint domain
@pytest.mark.parametrize("seed", [1, 3, 5])
def test_a_faint_domain_with_a_slower_host_in_it_is_the_domain(seed):
    """09ece4e's wider() keeps the host where it measures slower than its mates (told apart),
    but its mates are then the faint domain on their own: demo-2sn at 0.928 (the 0.93 domain
    bar), node003 at 0.9 in it, seed 5: the host was named, the domain's median of card
    medians then 0.9301 by a hair and the domain not named, its other 28 cards left near
    their card bar and quarantined. The domain alone explains every pair within its bars
    (node003 is 0.97 of it, inside the card bar): the domain is named, first; the host is
    then judged against it."""
    demo = topo_of("demo-2sn")
    speed = {c: 0.928 for c in demo.cards_of_supernode("sn0")}
    speed.update({c: 0.9 for c in demo.cards_of_host("node003")})
    out = findings(cells_of(demo, speed=speed, noise=0.02, seed=seed), demo)
    assert {(f.entity, f.entity_kind) for f in out if not f.evidence.get("near_bar")} == {("sn0", "supernode")}
    assert not [f.entity for f in out if f.evidence.get("near_bar") and f.entity in speed]  # none of sn0's cards


# ------------------------------------------------------------------ a faint leaf
@pytest.mark.parametrize("factor", [0.88, 0.85])
def test_a_faint_leaf_is_the_switch_and_its_retest_confirms_it(tmp_path, factor):
    """hgx-2su with leaf:su0-rail3 at 0.88 (inside the 0.8 pair bar, every NIC behind it
    beyond the 0.93 card bar) was named as its eight NICs, hgx01/nic3 ... hgx08/nic3: a card
    exception's candidates were its card, NIC, host and domain, never its leaf, which only
    a pair beyond a pair bar put forward (at 0.75 the switch is named). Named, its retest
    then released it: every retest pair touches a NIC behind it, so they were the tier's
    level. The leaf is a candidate of its NICs' exceptions, and a switch's NICs' pairs set no
    level in its retest (DetectContext.subject_cards): one switch finding, isolated."""
    inv = str(ROOT / "fixtures/inventories/hgx-2su.yaml")
    code, res = run(tmp_path, inv, [f'{{type: slow_switch, target: "leaf:su0-rail3", factor: {factor}}}'],
                    playbook=str(ROOT / "playbooks/post-delivery.yaml"), seed=1)
    assert {(f["entity"], f["entity_kind"]) for f in res["findings"]} == {("leaf:su0-rail3", "switch")}
    assert finding(res, "leaf:su0-rail3")["evidence"].get("confirmed") is True
    assert ("leaf:su0-rail3", "isolate") in decisions(res) and code == 1


def test_a_leaf_is_named_only_where_every_nic_behind_it_is_slow():
    """The guard: six of a leaf's eight NICs at 0.85 are six NICs (the leaf would predict
    the other two slow: contradicted); all eight are the one leaf."""
    hgx = topo_of("hgx-2su")
    behind = [c for c in hgx.card_ids if c.endswith("/gpu3") and hgx.by_id[c].supernode <= "hgx08"]
    six = findings(cells_of(hgx, nic={c: 0.85 for c in behind[:6]}, noise=0.02, seed=1), hgx)
    assert {f.entity for f in six} == {c.replace("/gpu3", "/nic3") for c in behind[:6]}
    eight = findings(cells_of(hgx, nic={c: 0.85 for c in behind}, noise=0.02, seed=1), hgx)
    assert {(f.entity, f.entity_kind) for f in eight} == {("leaf:su0-rail3", "switch")}


# ------------------------------------------------------------------ a host's step time beside a near card
def test_a_hosts_step_time_is_not_folded_into_a_card_only_near_its_bar():
    """8902762 folds a host's golden-step-time-regression into a culprit named on the host
    before one only near its bar, but with only a near card there it still folded into it:
    the card's retest then re-measures the golden model on that card alone (a card's golden
    retest is its solo group, never the host's cards), so a host slow on another card was
    released with it; and under ``confirm: false`` the measured regression hid inside a
    finding not judged (exit 4, nearbar.clear_fault: another entity's fold never decides).
    A near card is a suspect, not a culprit: the host's step time stays its own finding."""
    from sncheck.health.findings import merge_findings
    from sncheck.model import Finding

    near_card = Finding("mi02/gpu3", "card", "connectivity", "p2p-bandwidth-card-slow", "warning", "near",
                        {"near_bar": {"ratio": 0.935, "bar": 0.93, "beyond": 0}})
    slow = Finding("mi02", "host", "golden", "golden-step-time-regression", "warning", "step time 2x")
    merged = merge_findings([near_card, slow])
    assert not near_card.folded and {(f.entity, f.rule) for f in merged} == {
        ("mi02/gpu3", "p2p-bandwidth-card-slow"), ("mi02", "golden-step-time-regression")}


def test_p2p_rows_written_with_no_tier_are_judged_in_their_pairs_tier():
    """review2: a p2p row with no tier (rows.p2p_row writes None where the job names no
    supernode for a host of the pair; a run-store part whose tier column is all null passes
    the type check) crashed judging: "'<' not supported between 'str' and 'float'" from the
    pair summaries' sorted tiers, a traceback. Such a row of two inventory cards is judged
    in its pair's tier under the inventory: the same findings as the same rows with tiers."""
    import pandas as pd

    from sncheck.health.rules import evaluate

    topo = topo_of("demo-2sn")
    ids = topo.card_ids

    def rows(blank: bool) -> pd.DataFrame:
        out = []
        for i, a in enumerate(ids):
            for j in range(i + 1, len(ids)):
                b, tier = ids[j], topo.tier(a, ids[j])
                slow = 0.5 if ids[3] in (a, b) else 1.0
                bw = (45.0 if tier == "scale_out" else 440.0) * slow
                out.append({"kind": "p2p", "src": a, "dst": b, "tier": None if blank and (i + j) % 3 == 0 else tier,
                            "status": "ok", "bw_GBps": bw, "bw_rev_GBps": bw, "lat_us": 3.0, "lat_p99_us": 3.5,
                            "checksum_ok": True})
        return pd.DataFrame(out)

    def named(blank: bool) -> list[tuple[str, str, str]]:
        found = evaluate(RULES.rules, rows(blank), DetectContext(topo, dict(topo.inventory.design)))
        return sorted((f.entity, f.rule, f.severity.value) for f in found)

    assert named(True) == named(False) and (ids[3], "p2p-bandwidth-below-design", "critical") in named(False)
