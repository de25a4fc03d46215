"""Issue 29, the sweep's 5183 seed 4 (pod-384): two links of a card inside its bars (0.95,
the generator's inside_bar) named slow on small messages at detection were each isolated on
one look of their retest. A pair collective's symptom is a per-link median over its sized
looks against a bar of the tier median; at a latency-bound size one look is mostly its
ranks' launch skew (a 0.95 card starts 2.6 us late: 17% of its all-to-all looks at 8 KiB
read over twice the median). Its retest now repeats the collectives (retestbar.pair_repeats),
so the link's median is over ten looks: its level, not one draw of the skew."""

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mock_gate import ends, mock_gate, named
from sncheck.backends.mock import MockBackend
from sncheck.health.rules import load_rules
from sncheck.layers.base import LayerContext
from sncheck.model import Finding, link_id
from sncheck.run import isolation
from sncheck.run.inputs import load_faults, load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
POD = load_inventory(ROOT / "fixtures/inventories/pod-384.yaml")
TOPO = Topology(POD)
LINK = link_id("host016/gpu2", "host022/gpu6")
SAYS = {"collective-pair-latency": "slow on small messages", "collective-pair-slow": "slow in pairwise collectives"}


def retest(tmp_path: Path, fault: str, rule: str, seed: int) -> tuple[str, Finding]:
    """LINK named by ``rule`` as detection names it (scale-up, between two otherwise healthy
    cards), the mock acting ``fault``: how its retest ends, and the finding."""
    plan = tmp_path / f"plan-{seed}.yaml"
    plan.write_text(f"faults:\n  - {fault}\n")
    rows: list = []
    ctx = LayerContext(TOPO, MockBackend(TOPO, load_faults(str(plan), TOPO), seed=seed), rows.append, POD.design,
                       rules=load_rules("default"), rows=rows)
    f = Finding(LINK, "link", "stress", rule, "critical",
                f"link {LINK}: {SAYS[rule]} (scale_up) between two otherwise healthy cards",
                {"tier": "scale_up", "factor": 0.48})
    steps = isolation.isolation_steps([f], ctx, True, lambda e: None, datetime.now(timezone.utc))
    return [s.action.value for s in steps if s.entity == LINK][-1], f


@pytest.mark.parametrize("seed", [19, 20, 21, 22, 23])
def test_a_link_of_a_card_inside_its_bars_is_not_confirmed_by_one_look_of_its_skew(tmp_path, seed):
    """main: seed 21 isolated the link, "reproduced: ... slow on small messages (scale_up)
    between two otherwise healthy cards" (1 of 80 seeds; a card has ~9 such links in a
    pod-384 gate)."""
    end, f = retest(tmp_path, "{type: slow_card, target: host016/gpu2, factor: 0.95}", "collective-pair-latency", seed)
    assert end == "release", f.evidence["retest"]


@pytest.mark.parametrize("seed", [19, 21])
@pytest.mark.parametrize("fault, rule", [
    ('{type: high_latency_link, target: "host016/gpu2<->host022/gpu6", factor: 3}', "collective-pair-latency"),
    ('{type: degraded_link, target: "host016/gpu2<->host022/gpu6", factor: 0.6}', "collective-pair-slow")])
def test_a_link_slow_in_pair_collectives_is_still_confirmed(tmp_path, fault, rule, seed):
    """The guard: a link whose latency is 3x (its small-message time ~2.2x the median, near
    the 2.0 bar) or whose bandwidth is 0.6x is confirmed on the median of its looks."""
    end, f = retest(tmp_path, fault, rule, seed)
    assert end == "isolate" and f"reproduced: {rule}" in f.evidence["retest"], f.evidence["retest"]


def test_the_sweeps_5183_seed_4_names_only_its_planted_culprits(tmp_path):
    """The whole gate of 5183 seed 4 (pod-384: a 0.95 card inside its bars, a faint-latency
    card, a corrupting card). main: links host016/gpu2<->host019/gpu1 and
    host016/gpu2<->host022/gpu6 isolated beside the two planted cards."""
    res = mock_gate(tmp_path, POD, ["{type: slow_card, target: host016/gpu2, factor: 0.95}",
                                    "{type: high_latency_card, target: host038/gpu6, factor: 1.75}",
                                    "{type: corrupt_card, target: host021/gpu2}"], seed=4).results
    found = {e for e, _ in named(res)}
    assert found == {"host038/gpu6", "host021/gpu2"}, found
    last = ends(res)
    assert {e: a for e, a in last.items() if a != "release"} == {"host038/gpu6": "isolate", "host021/gpu2": "isolate"}
