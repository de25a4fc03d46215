"""Issue 29, the near-bar retest policy completed (sncheck.run.nearbar): a link within the
noise of its pair bar and a card named beyond its card bar by less than its noise are
re-measured as a near card is; with no retest allowed (``confirm: false``) a near suspect
is not judged: inconclusive, never released as healthy, never isolated on noise."""

from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import pandas as pd

from mock_gate import actions, mock_gate
from sncheck.backends.mock import MockBackend
from sncheck.health.rules import load_rules
from sncheck.layers.base import LayerContext
from sncheck.model import ExitCode, Finding, Verdict, link_id
from sncheck.run import isolation
from sncheck.run.inputs import load_faults, load_inventory, load_playbook_text
from sncheck.run.nearbar import NEAR_SAMPLES, NOT_RETESTED, judge_samples
from sncheck.topology import Topology
from test_explain import cells_of, findings

ROOT = Path(__file__).resolve().parent.parent
POD = load_inventory(ROOT / "fixtures/inventories/mi300x-pod.yaml")
RULES = {r.name: r for r in load_rules("default").rules}
LINK = link_id("mi02/gpu3", "mi02/gpu5")


def gate(tmp_path: Path, fault: str, seed: int, confirm: bool = True):
    playbook = load_playbook_text("name: conn\nlayers:\n  - connectivity: {}\ngate: warning\n"
                                  + ("" if confirm else "confirm: false\n"))
    outcome = mock_gate(tmp_path, POD, [fault], seed, playbook)
    return outcome.results, actions(outcome.results), outcome.exit_code


def test_a_link_inside_its_bar_measured_just_beyond_it_is_re_measured_not_isolated(tmp_path):
    """main: a 0.81 link (inside the 0.8 pair bars) measured beyond p2p-bandwidth-below-peers
    on seed 2, named 'between two otherwise healthy cards', and the one look of its retest
    confirmed it: isolated on noise."""
    res, actions, _ = gate(tmp_path, f'{{type: degraded_link, target: "{LINK}", factor: 0.81}}', seed=2)
    [f] = [f for f in res["findings"] if f["entity"] == LINK]
    near = f["evidence"]["near_bar"]
    assert near["beyond"] == 1 and near["bar"] - 2 * near["se"] < near["ratio"] < near["bar"], near
    assert "inside the bar, clear of the noise" in f["evidence"]["retest"], f["evidence"]["retest"]
    assert actions == {LINK: ["quarantine", "release"]}, actions
    assert f["severity"] == "info" and res["verdict"] == "pass"


def test_a_card_named_just_beyond_its_bar_gets_the_near_bar_re_measurement(tmp_path):
    """main: a 0.935 card (inside the 0.93 card bar) measured beyond it on seed 2, and the old
    retest isolated it, 'still within the measured noise (2.0%) of the bar'."""
    res, actions, _ = gate(tmp_path, "{type: slow_card, target: mi02/gpu3, factor: 0.935}", seed=2)
    [f] = [f for f in res["findings"] if f["entity"] == "mi02/gpu3"]
    near = f["evidence"]["near_bar"]
    assert near["beyond"] == 1 and near["bar"] == 0.93 and near["ratio"] < 0.93, near
    assert "not clear of it; the retest re-measures it until it is" in f["message"]
    assert "inside the bar, clear of the noise" in f["evidence"]["retest"], f["evidence"]["retest"]
    assert actions == {"mi02/gpu3": ["quarantine", "release"]}, actions


def test_with_no_retest_allowed_a_near_card_is_not_judged(tmp_path):
    """main: quarantined, the gate failing, its message promising a retest that never ran.
    Now: not judged (inconclusive, exit 4), quarantined, neither released nor isolated, and
    its message says so."""
    res, actions, code = gate(tmp_path, "{type: slow_card, target: mi02/gpu3, factor: 0.925}", seed=3, confirm=False)
    [f] = [f for f in res["findings"] if f["entity"] == "mi02/gpu3"]
    assert f["evidence"]["near_bar"] and f["evidence"]["inconclusive"] == NOT_RETESTED
    assert f["message"].endswith(NOT_RETESTED) and "the retest re-measures" not in f["message"], f["message"]
    assert f["not_judged"] and f["severity"] == "warning"
    assert actions == {"mi02/gpu3": ["quarantine"]}, actions
    assert res["verdict"] == Verdict.INCONCLUSIVE and code == ExitCode.INCONCLUSIVE == 4


def test_with_no_retest_allowed_a_clear_fault_folded_under_a_near_lead_decides(tmp_path):
    """Review of 7595f0b: a link beyond its bandwidth bar by less than its noise led its merged
    finding, and under confirm: false the whole finding was not judged (exit 4), though the
    link's latency, 3x design, was folded into it clear of its bar. The clear fault decides
    (exit 1); only the near part is not judged."""
    faults = (f'{{type: degraded_link, target: "{LINK}", factor: 0.795}}\n'
              f'  - {{type: high_latency_link, target: "{LINK}", factor: 3}}')
    res, actions, code = gate(tmp_path, faults, seed=3, confirm=False)
    [f] = [f for f in res["findings"] if f["entity"] == LINK]
    assert f["evidence"]["near_bar"] and "p2p-latency-above-design" in [r["rule"] for r in f["evidence"]["related"]]
    assert "inconclusive" not in f["evidence"] and not f["not_judged"], f
    assert "its near part not judged" in f["message"] and "the retest re-measures" not in f["message"], f["message"]
    assert actions == {LINK: ["quarantine"]}, actions
    assert res["verdict"] == Verdict.FAIL and code == ExitCode.FAIL == 1


def near_link_retest(tmp_path: Path, factor: float, declared: float, seed: int = 1) -> tuple[list[str], Finding]:
    """LINK at ``factor`` of its design on the mock, the inventory's design declared at
    ``declared`` of it, detected within the noise of its design bar: its retest's isolation
    steps and the finding (its retest_symptoms)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(f'faults:\n  - {{type: degraded_link, target: "{LINK}", factor: {factor}}}\n')
    topo, rows = Topology(POD), []
    design = {t: replace(d, bandwidth_GBps=d.bandwidth_GBps * declared) for t, d in POD.design.items()}
    ctx = LayerContext(topo, MockBackend(topo, load_faults(str(plan), topo), seed=seed), rows.append, design,
                       rules=load_rules("default"), rows=rows)
    near = {"ratio": 0.805, "se": 0.004, "pairs": 1, "bar": 0.8, "ref": "design", "beyond": 0}
    f = Finding(LINK, "link", "connectivity", "p2p-bandwidth-below-design", "critical",
                f"link {LINK}: 0.805 of design, inside the bar by less than its noise",
                {"tier": "intra_host", "near_bar": near})
    steps = isolation.isolation_steps([f], ctx, True, lambda e: None, datetime.now(timezone.utc))
    return [s.action.value for s in steps if s.entity == LINK], f


def test_a_near_suspects_retest_keeps_a_sibling_bar_it_is_clear_beyond(tmp_path):
    """Review of 7595f0b: a near suspect's retest dropped its own findings under a sibling bar
    however far beyond it they were. Detection saw a link within the noise of its design bar;
    the inventory's design is conservative (the fleet runs at 1/0.6 of it) and the link at half
    its peers' speed: 0.83 of design, clear inside that bar, so the near verdict released it,
    the 0.5 of its peers under p2p-bandwidth-below-peers dropped. That clear fault confirms."""
    actions, f = near_link_retest(tmp_path, 0.5, 0.6)
    outcome = {s["rule"]: s["outcome"] for s in f.evidence["retest_symptoms"]}
    assert outcome == {"p2p-bandwidth-below-design": False, "p2p-bandwidth-below-peers": True}, outcome
    assert actions == ["quarantine", "isolate"], (actions, f.evidence["retest"])


def test_a_near_suspects_sibling_bar_is_judged_on_its_samples_not_its_last_look(tmp_path):
    """Review of b750c98: a retest finding on the near suspect under a sibling bar of its
    metric counted as clear beyond that bar when one look carried no ``near_bar`` (attached
    only where the level is precise), and was dropped unjudged when it did. Both are judged
    like the near bar, on all the suspect's samples against the noise (nearbar.near_verdict).
    A link at 0.795 of design, the design declared at 0.97 of it: 0.82 of design, clear inside
    that bar, and about 0.80 of its peers: one look below p2p-bandwidth-below-peers isolated
    it (seed 3), 0.005 from a bar whose 3-se band is ~0.014; its samples, up to the bound, find
    it beyond its peers' bar (0.795 < 0.8) clear of the noise: isolated on them. A link at 0.79 of a 0.95 design, one look near its peers' bar and beyond it
    (seed 2), was released on the design bar alone; its samples are clear beyond the peers'
    bar: isolated."""
    def outcomes(f: Finding) -> dict[str, object]:
        return {s["rule"]: s["outcome"] for s in f.evidence["retest_symptoms"]}

    actions, f = near_link_retest(tmp_path, 0.795, 0.97, seed=3)
    assert outcomes(f) == {"p2p-bandwidth-below-design": False, "p2p-bandwidth-below-peers": True}, outcomes(f)
    assert actions == ["quarantine", "isolate"], (actions, f.evidence["retest"])
    assert "beyond the bar, clear of the noise" in f.evidence["retest_symptoms"][1]["note"]
    actions, f = near_link_retest(tmp_path, 0.79, 0.95, seed=2)
    assert outcomes(f) == {"p2p-bandwidth-below-design": False, "p2p-bandwidth-below-peers": True}, outcomes(f)
    assert actions == ["quarantine", "isolate"], (actions, f.evidence["retest"])
    assert "beyond the bar, clear of the noise" in f.evidence["retest_symptoms"][1]["note"]


def link_cells(ratio: float, samples: int, seed: int = 0, noise: float = 0.014) -> pd.DataFrame:
    """A link's retest frame of one tier (design 100): the link measured ``samples`` times,
    its ends and 3 controls as often among themselves."""
    rng = np.random.default_rng(seed)
    cards = ["h/gpu0", "h/gpu1", "h/gpu2", "h/gpu3", "h/gpu4"]
    rows = [("h/gpu0", "h/gpu1", 100 * ratio)] * samples
    rows += [(cards[k % 5], cards[(k + 2) % 5], 100.0) for k in range(4 * samples)]
    return pd.DataFrame([{"src": a, "dst": b, "value": v * (1 + noise * rng.standard_normal()), "failed": False,
                          "design": 100.0} for a, b, v in rows])


def test_a_links_retest_decides_on_its_one_pair_against_its_rules_reference():
    design, peers = RULES["p2p-bandwidth-below-design"], RULES["p2p-bandwidth-below-peers"]
    link = link_id("h/gpu0", "h/gpu1")
    for rule in (design, peers):
        assert judge_samples(rule, link_cells(0.7, 48), link)[0] is True
        assert judge_samples(rule, link_cells(0.9, 48), link)[0] is False
        assert judge_samples(rule, link_cells(0.79, NEAR_SAMPLES), link)[0] is True
        assert judge_samples(rule, link_cells(0.81, NEAR_SAMPLES), link)[0] is False
        for seed in range(20):  # one batch never tells 0.795 or 0.805 from 0.8, and never the wrong way
            assert judge_samples(rule, link_cells(0.795, 8, seed), link)[0] is None
            assert judge_samples(rule, link_cells(0.805, 8, seed), link)[0] is None
    # against design, the controls' level does not move the link's ratio: a fleet at 0.9 of
    # design and a link at 0.79 of it is beyond the design bar, inside the peers' one
    slow = link_cells(0.79, NEAR_SAMPLES).assign(value=lambda c: c["value"] * np.where(c["src"] + c["dst"] == "h/gpu0h/gpu1",
                                                                            1.0, 0.9))
    assert judge_samples(design, slow, link)[0] is True and judge_samples(peers, slow, link)[0] is False


def test_detection_names_links_and_cards_within_the_noise_of_their_bars_and_only_those():
    """Every pair of an MI300X pod at 1.4% noise: a 0.805 link inside the 0.8 pair bars and a
    0.797 one beyond them are near (re-measured), a 0.70 link and a 0.88 card are clear
    beyond (named as before), a 0.85 link is clear inside (nothing); a 0.925 card is named
    beyond the 0.93 card bar, within its noise."""
    pod = Topology(POD)
    links = {link_id("mi01/gpu0", "mi01/gpu1"): 0.805, link_id("mi03/gpu2", "mi03/gpu6"): 0.797,
             link_id("mi04/gpu0", "mi04/gpu7"): 0.70, link_id("mi06/gpu1", "mi06/gpu2"): 0.85}
    cells = cells_of(pod, speed={"mi07/gpu4": 0.925, "mi08/gpu5": 0.88}, noise=0.014, seed=5)
    exact = cells["link"].isin(links).to_numpy()  # the links' own pairs exactly at their factor
    cells.loc[exact, "value"] = cells.loc[exact, "design"] * cells.loc[exact, "link"].map(links)
    got = {f.entity: f.evidence.get("near_bar") for f in findings(cells, pod)}
    near = {e: (n["beyond"], n["ref"] if "ref" in n else "card") for e, n in got.items() if n}
    want = {e: (0 if links[e] > 0.8 else 1) for e in links if abs(links[e] - 0.8) < 0.01}
    assert {e: b for e, (b, _) in near.items() if "<->" in e} == want, got
    assert near.get("mi07/gpu4") == (1, "card"), got
    assert got.get(link_id("mi04/gpu0", "mi04/gpu7"), 1) is None and got.get("mi08/gpu5", 1) is None, got
    assert link_id("mi06/gpu1", "mi06/gpu2") not in got, got
    # on a tier as noisy as a shared CPU machine's (20%) a pair within the noise is the noise
    host = [f"mi01/gpu{k}" for k in range(8)]
    for seed in range(5):
        noisy = cells_of(pod, link={link_id(*host[:2]): 0.85}, noise=0.2, seed=seed,
                         pairs=[(x, y) for i, x in enumerate(host) for y in host[i + 1:]])
        assert not any(f.evidence.get("near_bar") and f.entity_kind == "link" for f in findings(noisy, pod))


def test_hard_evidence_folded_under_a_near_bar_lead_still_isolates_without_a_retest() -> None:
    """Review of 7595f0b: a near-bar card finding leading a merge left its entity out of the hard
    evidence, so a critical Xid (a `confirm: none` rule) folded into it went to a retest of the
    card's pairs and could be released. The near finding's own rule is no hard evidence; the
    folded one still is."""
    from types import SimpleNamespace

    from sncheck.model import EntityKind, Finding, Severity
    from sncheck.run.isolation import hard_of

    xid = Finding("n1/gpu0", EntityKind.CARD, "connectivity", "kernel-xid", Severity.CRITICAL, "Xid 79",
                  {"confirm": "none"})
    lead = Finding("n1/gpu0", EntityKind.CARD, "connectivity", "card-slow", Severity.CRITICAL, "near its bar",
                   {"near_bar": {"ratio": 0.93}}, folded=[xid])
    alone = Finding("n2/gpu0", EntityKind.CARD, "connectivity", "card-slow", Severity.CRITICAL, "near its bar",
                    {"near_bar": {"ratio": 0.93}, "confirm": "none"})
    ctx = SimpleNamespace(rules=SimpleNamespace(rules=[SimpleNamespace(name="kernel-xid", confirm="none")]))
    assert hard_of([lead, alone], {"n1/gpu0", "n2/gpu0"}, ctx) == {"n1/gpu0": "kernel-xid"}  # type: ignore[arg-type]


def test_a_pair_of_a_named_card_is_not_also_a_near_link() -> None:
    """CI at 420a9b5 (test_slow_card_is_the_card_not_its_links, a busy machine): a card at
    half speed, and one of its pairs measured a little slower still, inside the pair bar by
    less than the pair noise. That pair's residual carries the card's factor's error: the
    card's retest re-measures it; it is no link of its own. A like pair of two healthy cards
    is still a near link."""
    pod = Topology(POD)
    card, mate = "mi07/gpu4", "mi07/gpu3"
    beside, healthy = link_id(card, mate), link_id("mi03/gpu2", "mi03/gpu6")
    cells = cells_of(pod, speed={card: 0.5}, noise=0.014, seed=5)
    for link, f in ((beside, 0.5 * 0.805), (healthy, 0.805)):
        at = (cells["link"] == link).to_numpy()
        cells.loc[at, "value"] = cells.loc[at, "design"] * f
    got = {f.entity: f.entity_kind for f in findings(cells, pod)}
    assert got.get(card) == "card" and healthy in got, got
    assert beside not in got, got


@pytest.mark.parametrize("seed", [5, 6])
def test_a_pair_of_a_near_card_can_still_be_a_near_link(seed) -> None:
    """Reviewer's finding on e72b258: a near card is no culprit whose factor the pair's
    residual is divided by, so a pair at 0.805 on it is a near link in its own right (it hid
    the link, and a full gate then isolated the card on the link's pair). Only a pair a
    culprit's factor scales is left to that culprit's retest."""
    pod = Topology(POD)
    card, mate = "mi07/gpu4", "mi07/gpu3"
    beside = link_id(card, mate)
    cells = cells_of(pod, speed={card: 0.935}, noise=0.014, seed=seed)
    at = (cells["link"] == beside).to_numpy()
    cells.loc[at, "value"] = cells.loc[at, "design"] * 0.805
    got = {f.entity: f.evidence.get("near_bar") for f in findings(cells, pod)}
    assert got.get(beside), got


def test_with_no_retest_allowed_only_a_fold_on_the_suspect_as_severe_as_it_decides():
    """Review of 862fe54: any folded finding of warning or worse decided a near lead under
    confirm: false, but the finding then gates at the lead's severity: a critical near link
    with only a clear warning folded into it was a measured critical (exit 1 under ``gate:
    critical``), and a fold from another entity (a host's step time merged into a card on it)
    decided for the suspect. Only a fold on the suspect at least as severe decides; else the
    whole finding is not judged."""
    from sncheck.health.findings import fold, merge_findings
    from sncheck.model import Severity
    from sncheck.run.nearbar import not_retested

    def near_lead(*folds: Finding) -> Finding:
        f = Finding(LINK, "link", "connectivity", "p2p-bandwidth-below-design", "critical", f"link {LINK}: near",
                    {"tier": "intra_host", "near_bar": {"ratio": 0.805, "se": 0.004, "bar": 0.8, "beyond": 0}})
        for g in folds:
            fold(f, g, named=g.entity != f.entity)
        not_retested(f)
        return f

    warning = Finding(LINK, "link", "connectivity", "p2p-bandwidth-below-peers", "warning", "below its peers")
    step = Finding("mi02", "host", "golden", "golden-step-time-regression", "critical", "step time 2x")
    latency = Finding(LINK, "link", "connectivity", "p2p-latency-above-design", "critical", "latency 3x")
    for weak in (near_lead(warning), near_lead(step)):
        assert weak.inconclusive and weak.not_judged and weak.message.endswith(NOT_RETESTED), weak
        assert weak.gates(Severity.CRITICAL)  # gates, but as not judged: exit 4, never a measured critical
    strong = near_lead(warning, step, latency)
    assert not strong.inconclusive and not strong.not_judged and "p2p-latency-above-design folded" in strong.message

    # the host's step time folds into the culprit named on the host, not a card only near its bar
    near_card = Finding("mi02/gpu3", "card", "connectivity", "p2p-card-below-peers", "critical", "near",
                        {"near_bar": {"ratio": 0.935, "bar": 0.93, "beyond": 0}})
    culprit = Finding("mi02/gpu5", "card", "connectivity", "p2p-card-below-peers", "warning", "0.5 of its peers")
    slow = Finding("mi02", "host", "golden", "golden-step-time-regression", "warning", "step time 2x")
    merged = merge_findings([near_card, culprit, slow])
    assert [g.rule for g in culprit.folded] == ["golden-step-time-regression"] and not near_card.folded, merged
    assert {f.entity for f in merged} == {"mi02/gpu3", "mi02/gpu5"}
