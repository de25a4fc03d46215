"""Round 13 (README "Scenarios r13"): what the first try of tests/data/scenarios-r13 got wrong.

r13-27 (hgx-h200-3su): leaf sua-r4 at 0.85 and h200-02/nic4 under it at 0.4. The search took the NIC
first (its ten pairs the most exceptions) at 0.34, its pairs' level with the leaf's share in it; the
leaf, tried next, then "contradicted" that NIC (its pairs 1.18 of the 0.29 both predicted) and each of
the leaf's four other NICs was named on its own (both seeds). An end culprit's factor is its pairs over
the shared culprits on their paths, also when the shared one is found after it
(``separation.refit``).

r13-39 (inv-skew): both cards of the 2-card host s4 at 0.6 and their one inside pair at 0.3. The host's
factor was read per tier, 0.18 on intra_host (that one pair) and 0.6 on scale_up, so one host
"explained" the link; its cards' speed acts alike on every NVLink tier (``separation.capped``).
"""

from __future__ import annotations

from tests.test_scenarios_r10 import _ends, _run  # TOR: four 2-host supernodes of 2 cards, a leaf a supernode


def _factors(res: dict) -> dict[str, float]:
    return {f["entity"]: f["evidence"]["factor"] for f in res["findings"]}


def test_a_nic_found_before_the_mild_leaf_above_it_is_read_again_over_that_leaf(tmp_path):
    # before: pa1/nic0 at 0.34, and the leaf's three other NICs named one by one instead of tor-a (seed 1)
    res = _run(tmp_path, "connectivity", ["{type: slow_switch, target: 'leaf:tor-a', factor: 0.85}",
                                          "{type: slow_nic, target: pa1, port: 1, factor: 0.4}"])
    named = _factors(res)
    assert set(named) == {"pa1/nic0", "leaf:tor-a"}
    assert abs(named["pa1/nic0"] - 0.4) < 0.05 and abs(named["leaf:tor-a"] - 0.85) < 0.05  # its own, over the leaf's
    assert {f["entity"]: f["severity"] for f in res["findings"]} == {"pa1/nic0": "critical", "leaf:tor-a": "warning"}
    assert _ends(res) == {"pa1/nic0": "isolate", "leaf:tor-a": "isolate"}


def test_a_slow_hosts_slower_inside_link_is_a_link_of_its_own_not_the_host_at_two_speeds(tmp_path):
    # before: host pb2 alone, factor 0.18 (its one intra_host pair) beside 0.6 on scale_up (seed 1)
    res = _run(tmp_path, "connectivity", [*(f"{{type: slow_card, target: pb2/gpu{c}, factor: 0.6}}" for c in (0, 1)),
                                          "{type: degraded_link, target: 'pb2/gpu0<->pb2/gpu1', factor: 0.3}"])
    named = _factors(res)
    assert set(named) == {"pb2", "pb2/gpu0<->pb2/gpu1"}
    assert abs(named["pb2"] - 0.6) < 0.05 and abs(named["pb2/gpu0<->pb2/gpu1"] - 0.3) < 0.05
    assert _ends(res) == {"pb2": "isolate", "pb2/gpu0<->pb2/gpu1": "isolate"}
