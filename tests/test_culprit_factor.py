"""A culprit explains a pair or a group only as far as its own measured factor does (sncheck/health/within.py,
groups.beyond_culprits for every explained group, stress's narrowing at the size beyond it).

review18 #9: under a critical gate a NIC named at 0.85 (warning) "explained" the cross group a 0.3x
scale-out link from its card made slow above 128 MiB (the rerun without the card was quiet: the link left
with it), and the pair step dropped the link's pair as the NIC's card's: exit 0 with the link critical alone.
review18 h3keep f1: a transient intra-host link at 0.4 named at connectivity explained its host group, a
0.3x link beside it above 128 MiB was narrowed at 16 and 64 MiB only: the host was isolated, not the link.
Each gate exits 0 (or isolates the host) before; ~3 s of mock each."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.metrics import DetectContext
from sncheck.health.within import within_culprits
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology
from tests.test_scenarios_r10 import TOR

CRITICAL = "name: cs-crit\ndescription: connectivity and stress, critical gate\nlayers: [connectivity, stress]\n" \
           "gate: critical\n"
THREE = """name: three
design:
  intra_host: {bandwidth: "300 GB/s", latency: "2 us"}
  scale_up:  {bandwidth: "300 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "12 us"}
supernodes:
  - {name: sa, hosts: "a[1-2]", cards_per_host: 3}
  - {name: sb, hosts: "b[1-2]", cards_per_host: 3}
backend:
  type: mock
"""


def _gate(tmp_path: Path, inventory: str, faults: list[str], gate: str = "critical") -> tuple[int, dict]:
    inv, plan, book, out = tmp_path / "inv.yaml", tmp_path / "faults.yaml", tmp_path / "pb.yaml", tmp_path / "run"
    inv.write_text(inventory)
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    book.write_text(CRITICAL.replace("gate: critical", f"gate: {gate}"))
    r = CliRunner().invoke(main, ["run", str(book), "-i", str(inv), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r.exit_code, json.loads((out / "results.json").read_text())


def _ends(res: dict) -> dict[str, str]:
    return {s["entity"]: s["action"] for s in res["isolation"]}


def _failed(tmp_path: Path, inventory: str, faults: list[str], gate: str = "warning") -> tuple[dict, dict, dict]:
    """A gate that must fail: each entity's last isolation step, the stress summary, the results."""
    code, res = _gate(tmp_path, inventory, faults, gate)
    ends = _ends(res)
    assert code == 1, ends
    return ends, next(layer["summary"] for layer in res["layers"] if layer["name"] == "stress"), res


LINK = "{type: degraded_link, target: 'pb1/gpu0<->pd1/gpu0', factor: 0.3, above: 128M}"


@pytest.mark.parametrize("nic", [0.85, 0.6], ids=["warning-nic", "critical-nic"])
def test_a_nic_explains_its_cards_pairs_only_as_far_as_its_own_factor(tmp_path: Path, nic: float) -> None:
    """review18 #9 (half-size inv-tor): the NIC named at connectivity, the 0.3x link from its card is named
    and isolated too, and the cross group the link made slow is the link's, not four supernodes'."""
    ends, stress, _ = _failed(tmp_path, TOR, [f"{{type: slow_nic, target: pb1, port: 1, factor: {nic}}}", LINK],
                              gate="critical")
    assert ends["pb1/gpu0<->pd1/gpu0"] == "isolate", ends
    assert ends["pb1/nic0"] == "isolate", ends
    assert set(ends) == {"pb1/gpu0<->pd1/gpu0", "pb1/nic0"}, ends
    beyond = stress["beyond_culprits"]["cross:gpu0"]
    assert beyond["entity"] == "pb1/nic0" and beyond["measured"] < 0.8 * beyond["factor"], beyond
    assert max(stress["narrowing_sizes"]) > 128 << 20, stress  # measured where the link acts


def test_a_transient_nic_explains_no_link_slower_than_itself(tmp_path: Path) -> None:
    """release18's nic-hides-a-link (test_released_rejudged before): a transient NIC at 0.5 and a 0.3x link from its
    card above 128 MiB. The cross group, 0.3x, is beyond the NIC's factor at the stress layer: the link is named
    there, not only once the NIC is released."""
    ends, stress, _ = _failed(tmp_path, TOR, ["{type: slow_nic, target: pb1, port: 1, factor: 0.5, transient: true}",
                                              "{type: degraded_link, target: 'pb1/gpu0<->pc1/gpu0', factor: 0.3, above: 128M}"])
    assert ends == {"pb1/gpu0<->pc1/gpu0": "isolate", "pb1/nic0": "release"}, ends
    assert stress["beyond_culprits"]["cross:gpu0"]["entity"] == "pb1/nic0" and "explained" not in stress, stress


def test_a_transient_link_explains_its_host_group_only_as_far_as_its_factor(tmp_path: Path) -> None:
    """review18 h3keep f1: the persistent link beside the transient one is named and isolated; the host
    (its group explained by that link once named) is not."""
    ends, _, _ = _failed(tmp_path, THREE, ["{type: degraded_link, target: 'a1/gpu0<->a1/gpu1', factor: 0.4, transient: true}",
                                           "{type: degraded_link, target: 'a1/gpu1<->a1/gpu2', factor: 0.3, above: 128M}"])
    assert ends == {"a1/gpu0<->a1/gpu1": "release", "a1/gpu1<->a1/gpu2": "isolate"}, ends


def test_a_transient_card_explains_nothing_of_its_link_once_healthy(tmp_path: Path) -> None:
    """release18 LEFT (half-size inv-tor, two-card hosts): a transient card at 0.7 and a 0.3x link to its mate
    above 128 MiB. The link, named in the stress narrowing, was released by its retest: the card's pairs
    were the card's there, though the card was healthy again (its other pairs in the retest say so)."""
    ends, _, res = _failed(tmp_path, TOR, ["{type: slow_card, target: pb1/gpu0, factor: 0.7, transient: true}",
                                           "{type: degraded_link, target: 'pb1/gpu0<->pb1/gpu1', factor: 0.3, above: 128M}"])
    assert ends["pb1/gpu0"] == "release", ends
    # retested once the card was released (isolation._after_their_culprits), beside the card's latency symptom on
    # pb1/gpu0<->pb2/gpu0 (raised in the card's retest): with pb2's cards suspects, no intra-host pair but its own
    # sets the level, and a level of its own is no release (retestbar.too_few_partners): it stays quarantined
    link = next(f for f in res["findings"] if f["entity"] == "pb1/gpu0<->pb1/gpu1")
    assert ends["pb1/gpu0<->pb1/gpu1"] in ("isolate", "quarantine") and link["gates"], (ends, link["evidence"])


def test_what_a_culprit_leaves_of_a_pair_is_judged() -> None:
    """Pairs through a culprit with a measured factor are divided by what it predicts (the lower end's factor,
    times a path's); through one with none, or failed through one, they are its symptom, left out."""
    topo = Topology(load_inventory(Path(__file__).parent / "data" / "scenarios-r10" / "inv-tor.yaml"))
    cells = pd.DataFrame({"src": ["pb1/gpu0", "pb1/gpu0", "pb1/gpu0", "pa1/gpu0", "pa1/gpu1", "pc1/gpu0"],
                          "dst": ["pd1/gpu0", "pc2/gpu0", "pb1/gpu1", "pa2/gpu0", "pa2/gpu1", "pd1/gpu0"],
                          "tier": ["scale_out", "scale_out", "intra_host", "scale_up", "scale_up", "scale_out"],
                          "value": [0.3, 0.85, 1.0, 0.5, 0.2, 0.9], "failed": [False, False, False, False, False, True]})
    known = frozenset({("pb1/nic0", "nic"), ("pa1/gpu0<->pa2/gpu0", "link"), ("pa1/gpu1", "card"),
                       ("pc1/gpu0", "card")})
    ctx = DetectContext(topo, {}, known=known, factors={"pb1/nic0": 0.85, "pa1/gpu0<->pa2/gpu0": 0.5})
    out = within_culprits(cells, ctx)
    got = dict(zip(out["src"] + "-" + out["dst"], out["value"].round(3)))
    # the link's excess left; the NIC's own pair healthy; its card's intra-host pair no NIC's (as measured);
    # the named link's pair healthy; a card named with no factor, and a failed pair: left out
    assert got == {"pb1/gpu0-pd1/gpu0": np.round(0.3 / 0.85, 3), "pb1/gpu0-pc2/gpu0": 1.0, "pb1/gpu0-pb1/gpu1": 1.0,
                   "pa1/gpu0-pa2/gpu0": 1.0}, got
    # a culprit whose own pairs (three or more through no other) measure it healthy now explains nothing of them
    more = pd.DataFrame({"src": ["pa1/gpu1"] * 3, "dst": ["pb1/gpu1", "pb2/gpu1", "pa2/gpu0"], "tier": ["scale_up"] * 3,
                         "value": [1.0, 0.99, 1.01], "failed": [False] * 3})
    ctx.factors["pa1/gpu1"] = 0.7
    out = within_culprits(pd.concat([cells, more], ignore_index=True), ctx)
    got = dict(zip(out["src"] + "-" + out["dst"], out["value"].round(3)))
    assert got["pa1/gpu1-pa2/gpu1"] == round(0.2 / 0.995, 3), got  # its pairs' median, not its finding's 0.7
    assert got["pa1/gpu1-pb1/gpu1"] == round(1.0 / 0.995, 3), got
    # with no factor (a retest's context before this change, a dead culprit) every pair through them goes, as before
    assert list(within_culprits(cells, DetectContext(topo, {}, known=known))["src"]) == []  # (all through them)


def test_a_cards_speed_explains_its_scale_out_pairs_only_through_its_nics_cap() -> None:
    """card-hides-its-leaf (test_released_rejudged): a card named at 0.7 whose pairs inside read 0.5 and whose
    scale-out pairs read 0.5 under a slow leaf. Over scale-out a card at s moves min(1, s / cap) of the design
    (cap: 50 over 300 GB/s): the card explains none of that 0.5, which is left to be judged; before, its factor
    read there (0.5) divided them to 1.0 and the leaf was contradicted."""
    inv = load_inventory(Path(__file__).parent / "data" / "scenarios-r10" / "inv-tor.yaml")
    cells = pd.DataFrame({"src": ["pb1/gpu0"] * 6, "dst": ["pa1/gpu0", "pc1/gpu0", "pd1/gpu0", "pb1/gpu1", "pb2/gpu0",
                                                           "pb2/gpu1"],
                          "tier": ["scale_out"] * 3 + ["intra_host", "scale_up", "scale_up"],
                          "value": [0.5, 0.51, 0.49, 0.5, 0.49, 0.51], "failed": [False] * 6})
    ctx = DetectContext(Topology(inv), inv.design, known=frozenset({("pb1/gpu0", "card")}), factors={"pb1/gpu0": 0.7})
    got = dict(zip(within_culprits(cells, ctx)["dst"], within_culprits(cells, ctx)["value"].round(3)))
    assert [got[c] for c in ("pa1/gpu0", "pc1/gpu0", "pd1/gpu0")] == [0.5, 0.51, 0.49], got  # as measured
    assert [got[c] for c in ("pb1/gpu1", "pb2/gpu0", "pb2/gpu1")] == [1.0, 0.98, 1.02], got  # its own speed, 0.5
    # without a design (no cap known) the card's factor is read on each side as before
    ctx = DetectContext(Topology(inv), {}, known=frozenset({("pb1/gpu0", "card")}), factors={"pb1/gpu0": 0.7})
    assert within_culprits(cells, ctx)["value"].round(2).tolist() == [1.0, 1.02, 0.98, 1.0, 0.98, 1.02]


def test_a_failed_group_a_released_culprit_sat_on_is_run_again(tmp_path: Path) -> None:
    """release18's t27 (half-size inv-tor): a cable leaf:tor-a[6]<->spine:x2 down for a moment failed the one cross
    group, the only group whose pairs cross leaf tor-d, slow at 0.4 above 256 MiB alone; the cable was named and
    released, and nothing measured the group again: exit 0. Now the retest's release runs it again
    (rejudge._rerun_failed), slow from 512 MiB, narrowed there: the leaf is named and isolated."""
    ends, stress, _ = _failed(tmp_path, TOR, ["{type: switch_port_down, target: 'leaf:tor-a[6]', transient: true}",
                                              "{type: slow_switch, target: 'leaf:tor-d', factor: 0.4, above: 256M}"])
    assert ends == {"leaf:tor-a[6]<->spine:x2[1]": "release", "leaf:tor-d": "isolate"}, ends
    assert stress["rerun_failed"] == ["cross:gpu0", "cross:gpu1"] and max(stress["rejudge_sizes"]) > 256 << 20, stress
