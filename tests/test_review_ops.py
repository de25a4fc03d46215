"""Review of the session's non-judging landings (reviewops, 2026-12-06): each defect found,
as a test that fails on the commit it reviews."""

from __future__ import annotations

from pathlib import Path

from test_kernel_counters import judge, nvlink_row, topo


def test_a_counter_read_only_now_at_or_under_its_bar_cannot_have_grown_past_it(tmp_path: Path) -> None:
    """2322675: a counter the earlier read lacked grew by at most what it reads now (a counter
    starts at 0 or more), so one reading no more than the rule's ``above`` cannot have grown
    beyond it: judged, a pass. It was 'not judged' at any value above 0, so an NVLink link
    trained during the run with 3 recovery events (the shipped bar: more than 10) failed the
    gate at critical. Above the bar it stays not judged."""
    t = topo(tmp_path)

    def found(replays: int) -> list:
        after = nvlink_row("n1", 0, 1)
        after["value"]["gpus"][0]["links"]["5"] = {"replay_errors": replays, "crc_errors": 0}
        return [(f.rule, f.basis.value) for f in judge([nvlink_row("n1", 0, None), after], t) if f.entity == "n1/gpu1"]

    assert found(3) == [] and found(10) == []
    assert found(11) == [("nvlink-errors-grew", "not_judged")]
