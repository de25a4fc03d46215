"""A counter the earlier read did not hold grew by an unknown amount: not judged (a finding,
never a pass, never a fail by assumption), as the cabling check judges a switch port's
counters (``read only now: the growth is unknown``). It was read as growth by its whole
value (fabric._counters: ``a - (b or 0)``), so a port or NVLink link up only after the run
failed on what it had ever counted, and ``parse ibqueryerrors --since`` said of one port both
'grew +14' and 'not judged'."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.model import Basis
from sncheck.rows import host_fact_row
from test_kernel_counters import judge, nvlink_row, topo

SYSFS = "/sys/class/infiniband/mlx5_0/ports/1/counters/{}:{}\n"


def _sysfs(tmp_path: Path, name: str, **counters: int) -> Path:
    path = tmp_path / name
    path.write_text("".join(SYSFS.format(c, v) for c, v in counters.items()) + "# end of counters\n")
    return path


def test_a_counter_not_in_the_earlier_read_is_not_judged_never_its_value_as_growth(tmp_path: Path) -> None:
    earlier = _sysfs(tmp_path, "before.txt", link_downed=0)
    r = CliRunner().invoke(main, ["parse", "ib-counters", str(_sysfs(tmp_path, "after.txt", symbol_error=7, link_downed=0)),
                                  "--since", str(earlier)])
    assert r.exit_code == 1 and "not judged: IB port error counters were not in the earlier read: their growth is " \
        "unknown: mlx5_0 port 1 symbol_error ? -> 7" in r.output, r.output
    assert "+7" not in r.output and "grew during the run" not in r.output, r.output
    judged = json.loads(r.stdout)["judged"]
    assert [c["growth"] for j in judged for c in j["counters"]] == [None], judged
    # at 0 now it cannot have grown (as the cabling check): judged, a pass
    zero = CliRunner().invoke(main, ["parse", "ib-counters", str(_sysfs(tmp_path, "zero.txt", symbol_error=0,
                                                                         link_downed=0)), "--since", str(earlier)])
    assert zero.exit_code == 0 and "not judged" not in zero.output, zero.output


def test_one_entity_says_each_reason_its_growth_is_unknown(tmp_path: Path) -> None:
    """A counter that went down and one the earlier read lacked, on one port: one not-judged
    finding naming both; a counter that grew beside them still fails as growth."""
    r = CliRunner().invoke(main, ["parse", "ib-counters",
                                  str(_sysfs(tmp_path, "after.txt", symbol_error=3, link_downed=2, port_rcv_errors=9)),
                                  "--since", str(_sysfs(tmp_path, "before.txt", symbol_error=500, port_rcv_errors=1))])
    assert r.exit_code == 1, r.output
    assert "not judged: IB port error counters went down during the run (reset, wrapped, or another port read), or " \
        "were not in the earlier read: their growth is unknown: mlx5_0 port 1 link_downed ? -> 2, mlx5_0 port 1 " \
        "symbol_error 500 -> 3" in r.output, r.output
    assert "grew during the run: mlx5_0 port 1 port_rcv_errors +8 (1 -> 9)" in r.output, r.output


def test_an_nvlink_link_read_only_after_the_run_is_not_judged(tmp_path: Path) -> None:
    """A run's own reads: link 5 of card 1 is in the read after the traffic and not in the one
    before (a link trained during the run); its 300 replays are no growth the run measured."""
    t = topo(tmp_path)
    after = nvlink_row("n1", 0, 1)
    after["value"]["gpus"][0]["links"]["5"] = {"replay_errors": 300, "crc_errors": 0}
    found = [f for f in judge([nvlink_row("n1", 0, None), after], t) if f.entity == "n1/gpu1"]
    assert [(f.rule, f.basis) for f in found] == [("nvlink-errors-grew", Basis.NOT_JUDGED)], found
    assert "GPU 1 link 5 replay_errors ? -> 300" in found[0].message and found[0].evidence["counters"] == \
        [{"device": "GPU 1 link 5", "counter": "replay_errors", "before": None, "after": 300, "growth": None}]


def test_an_nvlink_link_read_before_the_run_and_not_after_it_is_not_judged(tmp_path: Path) -> None:
    """The reads swapped: link 5 of card 1, with 3 replays before the traffic, is missing from
    the read after it (a link gone down, a read cut short): no growth was measured, so it is
    not judged (as the cabling check's "read before and not now"), never a pass. A run that
    read once has no after to miss: its counters stay as they were (no finding of growth)."""
    t = topo(tmp_path)
    before = nvlink_row("n1", 0, None)
    before["value"]["gpus"][0]["links"]["5"] = {"replay_errors": 3, "crc_errors": 0}
    found = [f for f in judge([before, nvlink_row("n1", 0, 1)], t) if f.entity == "n1/gpu1"
             and f.rule != "fabric-errors-before-run"]  # (the info finding of what it read before: as ever)
    assert [(f.rule, f.basis) for f in found] == [("nvlink-errors-grew", Basis.NOT_JUDGED)], found
    assert "were read before and not after" in found[0].message, found[0].message
    assert "GPU 1 link 5 crc_errors 0 -> ?, GPU 1 link 5 replay_errors 3 -> ?" in found[0].message, found[0].message
    assert {"device": "GPU 1 link 5", "counter": "replay_errors", "before": 3, "after": None, "growth": None} in \
        found[0].evidence["counters"], found[0].evidence
    once = [f for f in judge([before], t) if f.entity == "n1/gpu1" and f.rule == "nvlink-errors-grew"]
    assert once == [], once


def test_a_host_whose_read_after_the_run_is_missing_is_not_judged_when_another_host_read_twice(
        tmp_path: Path) -> None:
    """The run read the NVLink counters twice on n1 (before and after the traffic) but only
    once on n2 (down by the second read, or its read failed): n2's counters have no after to
    judge, so they are not judged, never a pass. `reread` was per (host, fact): n2 read once
    looked like a run that read once and gave no finding. A run that read every host once
    still judges nothing of growth."""
    t = topo(tmp_path)
    rows = [nvlink_row("n1", 0, None), nvlink_row("n1", 0, 1), nvlink_row("n2", 4, None)]
    found = [f for f in judge(rows, t) if f.rule == "nvlink-errors-grew"]
    assert [(f.entity, f.basis) for f in found] == [("n2/gpu1", Basis.NOT_JUDGED)], found
    assert "were read before and not after" in found[0].message and "GPU 1 link 2 replay_errors 4 -> ?" in \
        found[0].message, found[0].message
    # the IB port counters alike, fact by fact: n2's IB ports read twice are judged as ever
    ib = {"ports": [{"device": "mlx5_0", "port": 1, "rail": 0, "counters": {"symbol_error": 2}}],
          "error_counters": ["symbol_error"]}
    ib_rows = [host_fact_row(h, "ib_counters", {**ib, "read": n}, None, True, tool="sysfs")
               for h in ("n1", "n2") for n in (0, 1)]
    assert [f.entity for f in judge(rows + ib_rows, t) if f.rule == "nvlink-errors-grew"] == ["n2/gpu1"]
    lost = [f for f in judge(ib_rows[:3], t) if f.basis == Basis.NOT_JUDGED]
    assert [f.entity for f in lost] == ["n2/nic0"], lost
    once = [f for f in judge([nvlink_row("n1", 0, None), nvlink_row("n2", 4, None)], t)
            if f.rule == "nvlink-errors-grew"]
    assert once == [], once


def test_a_host_read_only_after_the_run_is_judged_as_counters_not_in_the_earlier_read(tmp_path: Path) -> None:
    """n2's read before the run failed and its read after it holds (read 1; n1 read 0 and 1):
    its counters are the after read's, not a read before the run missing after it. One at or
    under the bar now cannot have grown past it (judged); one above it now has unknown growth
    ("not in the earlier read"), never "read before and not after"."""
    t = topo(tmp_path)
    after = nvlink_row("n2", 0, 1)
    after["value"]["gpus"][0]["links"]["5"] = {"replay_errors": 60, "crc_errors": 0}
    found = [f for f in judge([nvlink_row("n1", 0, None), nvlink_row("n1", 0, 1), after], t)
             if f.entity.startswith("n2")]
    assert [(f.rule, f.basis) for f in found] == [("nvlink-errors-grew", Basis.NOT_JUDGED)], found
    assert "were not in the earlier read" in found[0].message and "before and not after" not in found[0].message
    assert [c["counter"] for c in found[0].evidence["counters"]] == ["replay_errors"], found[0].evidence
