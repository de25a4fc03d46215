"""Issue 29, one retest policy: a link released "explained by" an end card its retest named
holds only while that card ends confirmed (sncheck.run.withdraw). On main the link's release
stood whatever became of the card: a card released by its own retest (its slowness passed) or
never decided left the link's measured fault a pass, with no finding. Now the release is
withdrawn: the link is retested again without the card as its explanation, or, with no retest
left, stays quarantined (never a pass)."""

from datetime import datetime, timezone
from pathlib import Path

from sncheck.backends.mock import MockBackend
from sncheck.errors import HarnessError
from sncheck.health.rules import load_rules
from sncheck.layers.base import LayerContext
from sncheck.model import Finding, link_id
from sncheck.run import isolation
from sncheck.run.inputs import load_faults, load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
CARD = "mi02/gpu3"
LINK = link_id(CARD, "mi02/gpu5")
# a link just beyond its 0.8 design bar (a real fault) beside a card slow at 0.8: on seed 17 the
# link's retest reads the link's pair as the card's and names the card alone
FAULTS = [f'{{type: degraded_link, target: "{LINK}", factor: 0.797}}', f"{{type: slow_card, target: {CARD}, factor: 0.8}}"]


def steps_of(tmp_path: Path, monkeypatch, after_first_retest, faults: list[str] = FAULTS) -> tuple[Finding, list]:
    """The near link suspect (as tests/test_nearbar_bound.py builds it) through the isolation
    policy on the mock, ``after_first_retest(backend)`` called once the link's retest (the
    first wave) has run: what happens to the card between its naming and its own retest."""
    pod = load_inventory(ROOT / "fixtures/inventories/mi300x-pod.yaml")
    plan = tmp_path / "plan.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {line}\n" for line in faults))
    topo, rows = Topology(pod), []
    backend = MockBackend(topo, load_faults(str(plan), topo), seed=17)
    ctx = LayerContext(topo, backend, rows.append, pod.design, rules=load_rules("default"), rows=rows)
    f = Finding(LINK, "link", "connectivity", "p2p-bandwidth-below-design", "critical",
                f"link {LINK}: 0.797 of design, beyond the bar by less than its noise",
                {"tier": "intra_host", "near_bar": {"ratio": 0.797, "se": 0.004, "pairs": 1, "bar": 0.8,
                                                    "ref": "design", "beyond": 1}})
    real, calls = isolation.confirm, []

    def confirm(c, suspects):
        calls.append([g.entity for g in suspects])
        if len(calls) == 2:
            after_first_retest(backend)
        return real(c, suspects)

    monkeypatch.setattr(isolation, "confirm", confirm)
    steps = isolation.isolation_steps([f], ctx, True, lambda e: None, datetime.now(timezone.utc))
    # the card a finding of its own, retested in the next wave (if there is one)
    assert calls[:2] == [[LINK], [CARD]][:isolation.WAVES], calls
    return f, [(s.entity, s.action.value, s.reason) for s in steps]


def last(steps: list) -> dict[str, str]:
    return {e: a for e, a, _ in steps}


def card_passes(backend: MockBackend) -> None:
    """The card's slowness has passed by its own retest (a transient the link's retest caught)."""
    backend._act([g for g in backend._faults_now if g.target != CARD])


def test_a_link_explained_by_a_transient_card_is_retested_again_and_isolated(tmp_path, monkeypatch):
    """The card's slowness passes between the link's retest and its own: the card is released,
    so nothing explains the link's pair. main: the link released too, its 0.797 fault a pass."""
    f, steps = steps_of(tmp_path, monkeypatch, card_passes)
    assert last(steps)[CARD] == "release", steps
    assert last(steps)[LINK] == "isolate", steps
    assert f.severity == "critical" and f.evidence["confirmed"] is True
    [w] = f.evidence["withdrawn"]
    assert w["explained_by"] == CARD and w["card"] == "released by its own retest", w
    assert "explained by card mi02/gpu3" in w["retest"], w
    assert f.evidence["retest"].startswith(f"retested again (release withdrawn: card {CARD}"), f.evidence["retest"]
    # the withdrawn release is no release step: the link was quarantined again and retested
    mine = [(a, r) for e, a, r in steps if e == LINK]
    assert [a for a, _ in mine] == ["quarantine", "quarantine", "quarantine", "isolate"], mine
    assert mine[1][1].startswith(f"release withdrawn: card {CARD}") and "retested again" in mine[1][1], mine


def test_a_link_explained_by_a_card_its_own_retest_never_decided_is_never_a_pass(tmp_path, monkeypatch):
    """The card's own retest could not run (it stays quarantined, undecided): the link's release
    rested on nothing. main: the link released, a measured fault with no finding."""
    def retest_fails(backend):
        def cut(*args, **kwargs):
            raise HarnessError("the simulated fabric went away")
        backend.p2p = cut
        backend.collectives = cut

    f, steps = steps_of(tmp_path, monkeypatch, retest_fails)
    assert last(steps)[CARD] == "quarantine", steps
    assert last(steps)[LINK] != "release", steps
    assert f.severity == "critical" and f.evidence["withdrawn"][0]["explained_by"] == CARD
    assert "not confirmed by its own retest" in f.evidence["withdrawn"][0]["card"], f.evidence["withdrawn"]


def test_a_healthy_link_explained_by_a_transient_card_is_released_by_its_own_retest_again(tmp_path, monkeypatch):
    """The withdrawal costs a healthy link nothing but a retest: the card passes, the link (no
    fault of its own) is retested again and released on its own measurement, its record saying so."""
    f, steps = steps_of(tmp_path, monkeypatch, card_passes, faults=FAULTS[1:])
    assert last(steps) == {LINK: "release", CARD: "release"}, steps
    assert f.severity == "info" and f.evidence["withdrawn"][0]["explained_by"] == CARD
    assert f.evidence["retest"].startswith(f"retested again (release withdrawn: card {CARD}"), f.evidence["retest"]
    assert not any(p.get("explained_by") for p in f.evidence["retest_symptoms"]), f.evidence["retest_symptoms"]


def test_with_no_retest_left_a_withdrawn_near_link_stays_quarantined_not_judged():
    """No wave left (or withdrawn once already): the link is quarantined again, its severity back,
    and a near one is not judged (inconclusive, exit 4 where only such findings gate)."""
    from sncheck.model import IsolationStep
    from sncheck.run.withdraw import withdrawn

    f = Finding(LINK, "link", "connectivity", "p2p-bandwidth-below-design", "info",
                f"link {LINK}: 0.797 of design (not reproduced by the confirmation retest; released)",
                {"near_bar": {"ratio": 0.797, "bar": 0.8, "beyond": 1}, "severity_before_retest": "critical",
                 "retest": "peer-to-peer pairs: not reproduced: explained by card ...",
                 "retest_symptoms": [{"rule": "p2p-bandwidth-below-design", "outcome": False,
                                      "note": "explained by ...", "explained_by": CARD}]})
    steps = [IsolationStep(LINK, "link", "quarantine", "q"), IsolationStep(LINK, "link", "release", "r"),
             IsolationStep(CARD, "card", "quarantine", "q"), IsolationStep(CARD, "card", "quarantine", "undecided")]
    assert withdrawn([f], steps, {CARD}, left=True) == []  # the card not decided yet: nothing
    assert withdrawn([f], steps, set(), left=False) == []  # decided, not confirmed, no wave left
    assert [s.action.value for s in steps] == ["quarantine", "quarantine", "quarantine", "quarantine"]
    assert steps[1].reason.startswith(f"release withdrawn: card {CARD}") and "stays quarantined" in steps[1].reason
    assert f.severity == "critical" and f.not_judged and f.inconclusive and not f.message.endswith("released)")


def test_a_link_released_again_with_no_symptoms_is_not_withdrawn_again_by_its_old_explanation(tmp_path, monkeypatch):
    """The withdrawn link's second retest releases it with no symptom records (a retest that
    says not reproduced and lists none): the first retest's records, which named the card,
    were kept, so the card's release withdrew the link's genuine release a second time and left
    it quarantined. Now a retest with no symptoms leaves none of the earlier one's."""
    from sncheck.run.confirm import Retest

    real, calls = isolation.confirm, []

    def confirm(c, suspects):
        calls.append([g.entity for g in suspects])
        if len(calls) == 3:  # the link's retest again, the card no longer its explanation
            assert calls[-1] == [LINK], calls
            return {LINK: Retest(False, "peer-to-peer pairs", "not reproduced")}
        return real(c, suspects)

    monkeypatch.setattr(isolation, "confirm", confirm)
    f, steps = steps_of(tmp_path, monkeypatch, card_passes)
    assert last(steps) == {LINK: "release", CARD: "release"}, steps
    assert [w["explained_by"] for w in f.evidence["withdrawn"]] == [CARD], f.evidence["withdrawn"]
    assert "retest_symptoms" not in f.evidence, f.evidence["retest_symptoms"]


def test_a_link_explained_by_a_card_raised_in_the_last_wave_says_the_card_was_never_retested(tmp_path, monkeypatch):
    """The card is raised in the last wave's retest (here the only wave): quarantined, with no
    wave left to retest it. The link's release is withdrawn saying so, not that the card's own
    retest did not confirm it (it had none)."""
    monkeypatch.setattr(isolation, "WAVES", 1)
    f, steps = steps_of(tmp_path, monkeypatch, card_passes)
    assert last(steps)[CARD] == "quarantine" and last(steps)[LINK] == "quarantine", steps
    [w] = f.evidence["withdrawn"]
    assert w["explained_by"] == CARD and w["card"] == "never retested", w
    assert f"card {CARD}, named in its retest as what explains its pair, was never retested" in f.evidence["retest"]
