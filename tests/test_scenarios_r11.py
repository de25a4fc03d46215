"""Round 11 (README "Scenarios r11"): what the first try of tests/data/scenarios-r11 got wrong.

r11-23: h200-06/gpu0's reductions wrong (``collective_corruption``) and a scale-out link slow only
above 256 MiB, which only the stress layer's cross group (gpu0 of every host) crosses there. The
cross group held h200-06/gpu0, a suspect its wrong results showed, and a slow group holding such a
suspect was taken for that suspect's symptom, so its cards were never narrowed at the size it was
slow at and the link went unnamed. A wrong value costs no time in the cost model: only a group that
failed or was slow at the narrowing's own sizes explains a group's slowness.

r11-32: the one NVLink-tier pair of a lone 2-card host dead, both cards' scale-out pairs healthy.
The search took a card with its NVLinks down (its scale-out factor read from its pairs there) as
measured in more than that pair when the reading was 0.99 (noise), and named either card on one
seed and the link on another; and the stress layer, whose narrowing pair of that host failed
through the link connectivity had named, named the host "card or link, not localised" again.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from tests.test_scenarios_r9 import TRIO  # three one-host supernodes of two cards (h1, h2, h3)


def _run(tmp_path: Path, how: list[str], faults: list[str], seed: int = 1) -> dict:
    """A mock run of TRIO (``how``: a layer, or ``run`` and a playbook), exit 1: its results."""
    inv, plan, out = tmp_path / "trio.yaml", tmp_path / "faults.yaml", tmp_path / "run"
    inv.write_text(TRIO)
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    r = CliRunner().invoke(main, [*how, "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", str(seed), "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_wrong_reductions_in_a_group_do_not_explain_its_slowness_at_a_large_size(tmp_path):
    # before: h3/gpu0's wrong results explained cross:gpu0's slowness from 512 MiB; nothing was narrowed
    # there, h3/gpu0 was named as the link h3/gpu0<->h3/gpu1 and the three supernodes 'not localised'
    res = _run(tmp_path, ["stress"], ["{type: collective_corruption, target: h3/gpu0}",
                                      "{type: degraded_link, target: 'h1/gpu0<->h2/gpu0', factor: 0.3, above: 256M}"])
    summary = res["layers"][0]["summary"]
    assert summary["slow_groups"] == {"cross:gpu0": 512 << 20} and 512 << 20 in summary["narrowing_sizes"]
    named = {(f["entity"], f["rule"]) for f in res["findings"] if f["severity"] in ("warning", "critical")}
    assert named == {("h3/gpu0", "collective-wrong-results"), ("h1/gpu0<->h2/gpu0", "collective-pair-slow")}
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"h3/gpu0": "isolate", "h1/gpu0<->h2/gpu0": "isolate"}


DEAD = "{type: dead_link, target: 'h1/gpu0<->h1/gpu1'}"  # h1 alone in its supernode: its one inside pair


def _named(res: dict) -> set[tuple[str, str]]:
    return {(f["entity"], f["rule"]) for f in res["findings"] if f.get("about") != "check"}


def test_a_lone_hosts_one_inside_pair_dead_is_the_link_whatever_noise_its_cards_scale_out_pairs_read(tmp_path):
    # before: seed 1 named the card h1/gpu0 ("1 of 1 pair tests (intra_host)"), its scale-out pairs at 0.99
    res = _run(tmp_path, ["connectivity"], [DEAD])
    assert _named(res) == {("h1/gpu0<->h1/gpu1", "p2p-bandwidth-below-design")}


def test_a_pair_through_a_link_an_earlier_layer_named_says_nothing_of_its_host(tmp_path):
    # before: seed 4's stress layer named host h1 "card or link, not localised" beside connectivity's link
    (tmp_path / "pb.yaml").write_text("name: connectivity-stress\nlayers: [connectivity, stress]\ngate: warning\n")
    res = _run(tmp_path, ["run", str(tmp_path / "pb.yaml")], [DEAD], seed=4)
    assert _named(res) == {("h1/gpu0<->h1/gpu1", "p2p-bandwidth-below-design")}
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"h1/gpu0<->h1/gpu1": "isolate"}
