"""Round 8 (README "Scenarios r8"): what the new scenarios and round 7's open ones showed, mended
by the cost model.

A tier of one pair (r7-41): a 2-card host whose one pair reads 0.5 cannot tell its card from its
link by the pair, and the host was named "card or link, not localised". The model tells them apart
by the launch skew: a slow card starts ``(1/s - 1) 50 us`` late against 2 us of noise, a link slows
no card's start. But ``collective-straggler`` is a robust z across cards, and over two ranks the z
of either is +-0.6745 whatever the gap. With fewer cards than ``min_peers`` each card is judged
against the others' median in units of the cards' own sample spread (``ops.few_cards``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.ops import few_cards

ROOT = Path(__file__).resolve().parent.parent
LONE_PAIR = ROOT / "tests/data/scenarios-r7/inv-lone-pair.yaml"


class _Rule:
    name, layer, summary, metric = "collective-straggler", "stress", "starts collectives late", "rank_skew"
    severity = "warning"
    params = {"method": "robust_z", "above": 5.0, "min_excess": 5.0, "min_peers": 3}


def _frame(values: dict[str, float], spread: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame({"entity": list(values), "kind": "card", "value": list(values.values()),
                         "spread": spread})


def test_two_cards_judged_by_their_own_sample_spread():
    late = _frame({"p1/gpu0": 0.0, "p1/gpu1": 49.7})
    [f] = few_cards(late, late, late.iloc[:0], _Rule())
    assert (f.entity, f.evidence["measured"], f.evidence["expected"]) == ("p1/gpu1", 49.7, 0.0)
    # on time within the noise, or late by less than min_excess, or in a noise as wide as the gap
    assert few_cards(_frame({"p1/gpu0": 0.3, "p1/gpu1": 0.0}), _frame({"a/gpu0": 0.3}), _frame({})[:0], _Rule()) == []
    assert few_cards(_frame({"p1/gpu0": 0.0, "p1/gpu1": 4.0}, 0.1), _frame({}), _frame({})[:0], _Rule()) == []
    assert few_cards(_frame({"p1/gpu0": 0.0, "p1/gpu1": 49.7}, 20.0), _frame({}), _frame({})[:0], _Rule()) == []


def _gate(tmp_path: Path, faults: list[str], seed: int = 1) -> tuple[int, dict]:
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:" + ("".join(f"\n  - {f}" for f in faults) or " []") + "\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "pre-upgrade-gate", "-i", str(LONE_PAIR), "--backend", "mock", "--faults",
                                  str(plan), "--seed", str(seed), "--out", str(out), "-q", "--force"])
    return r.exit_code, json.loads((out / "results.json").read_text())


def test_the_slow_card_of_the_one_pair_cluster_is_the_card(tmp_path):
    # r7-41: p1/gpu1 at 0.5 on the cluster's only pair. Before: host p1 "card or link, not
    # localised", isolated whole; now the card, told from its host by its launch skew, isolated.
    code, res = _gate(tmp_path, ["{type: slow_card, target: p1/gpu1, factor: 0.5}"])
    assert code == 1
    graded = {(f["entity"], f["entity_kind"]) for f in res["findings"] if f["severity"] in ("warning", "critical")}
    assert graded == {("p1/gpu1", "card")}
    assert {e["entity"]: e["action"] for e in res["isolation"]}["p1/gpu1"] == "isolate"
    assert "p1" not in {e["entity"] for e in res["isolation"]}


def test_the_one_pair_cluster_clean_gives_nothing(tmp_path):
    code, res = _gate(tmp_path, [])
    assert code == 0 and res["findings"] == []


SHARED_SPINE = ROOT / "tests/data/scenarios-r8/inv-shared-spine.yaml"


def _connectivity(tmp_path: Path, faults: list[str], seed: int = 1) -> dict:
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:" + "".join(f"\n  - {f}" for f in faults) + "\n")
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["connectivity", "-i", str(SHARED_SPINE), "--backend", "mock", "--faults", str(plan),
                                  "--seed", str(seed), "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_a_nic_whose_every_path_crosses_a_named_spine_is_retested_through_it(tmp_path):
    # r8-20: spine x at 0.7 and pa1's rail-0 NIC at 0.6; every scale-out pair of pa1/nic0 crosses x
    # (rail 0 goes over x inside pod P too). Its retest refused every far control as behind x and
    # it stayed quarantined "not re-measured"; the controls behind x share x's level alike.
    res = _connectivity(tmp_path, ["{type: slow_switch, target: 'spine:x', factor: 0.7}",
                                   "{type: slow_nic, target: pa1, port: 1, factor: 0.6}"])
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"pa1/nic0": "isolate", "spine:x": "isolate"}


def test_a_nic_behind_a_named_spine_is_released_when_only_the_spine_is_slow_at_its_retest(tmp_path):
    # the same NIC slow until the retest: through x its pairs then read x's level, as the
    # controls': x's finding there is x's own symptom, never the NIC's again
    res = _connectivity(tmp_path, ["{type: slow_switch, target: 'spine:x', factor: 0.7}",
                                   "{type: slow_nic, target: pa1, port: 1, factor: 0.6, transient: true}"])
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {"pa1/nic0": "release", "spine:x": "isolate"}
