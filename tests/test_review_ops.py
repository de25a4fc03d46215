"""Review of the session's non-judging landings (reviewops, 2026-12-06): each defect found,
as a test that fails on the commit it reviews."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_an_error_beside_an_allowed_skip_is_not_swallowed_by_the_allowance() -> None:
    """868f743: dcgmi printing an all-pass table with one test skipped (allowed by name in the
    rules), then an Error row or a non-zero exit: the row is 'not measured' only for the skip,
    so the allowance passes it and the error is said nowhere the gate reads. dcgmi exits
    non-zero only for a failed test (DCGM's dcgmi/Diag.cpp, Diag::GetFailureResult: a Skip
    is no failure), so an allowed skip with a clean exit still passes."""
    from sncheck.health.invariants import _allowed
    from sncheck.health.rules import AllowedSkip
    from sncheck.vendors.facts import Expect
    from sncheck.vendors.nvidia.gpu_checks import check_dcgmi

    parsed = {"result": "Pass", "tests": [{"name": "Memory", "result": "Pass"},
                                          {"name": "Targeted Power", "result": "Skip"}],
              "errors": ["exit 226: no error text"]}
    [row] = check_dcgmi("n1", parsed, Expect(cards=0))
    allowance = AllowedSkip(tool="dcgmi", test="Targeted Power", why="no power capping on this SKU")
    swallowed = row["status"] == "not_measured" and bool(_allowed(row["tool"], row.get("skipped"), (allowance,)))
    assert row["ok"] is False and not swallowed, row
    [clean] = check_dcgmi("n1", {**parsed, "errors": []}, Expect(cards=0))
    assert clean["status"] == "not_measured" and _allowed(clean["tool"], clean.get("skipped"), (allowance,)), clean


def test_a_host_name_refused_for_its_length_is_told_the_bound() -> None:
    """6bc84fb: a 256-character name of letters is refused for the 255 bound, but the line
    gave only the characters rule ('letters, digits, ...'), which the name keeps: the reason
    it was refused was said nowhere."""
    from sncheck.config.hostlist import check_name
    from sncheck.errors import ConfigError

    with pytest.raises(ConfigError, match="at most 255 characters"):
        check_name("n" * 256)
    longest = ".".join(["n" * 63] * 4)  # 255 characters in labels of at most 63 (RFC 1123; hostile r15's H15-13)
    assert check_name(longest) == longest


def test_an_nccl_log_read_for_its_mnnvl_lines_keeps_a_job_line_that_is_not_utf8() -> None:
    """fce0218: NUL or non-UTF-8 bytes make a tool's own table not whole, but a log holds
    other programs' text (LOG_VIEWS). ``nccl-mnnvl`` reads the same NCCL_DEBUG=INFO log as
    ``nccl-debug`` (a log to READS_ELISION too) and was left out of LOG_VIEWS: a training
    script's one line in GBK made the log 'not whole' under nccl-mnnvl and read under
    nccl-debug."""
    from sncheck.vendors.parsers import parse_text

    log = ("node1:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.8\n"
           "node1:1:1 [0] NCCL INFO MNNVL 1 cliqueId 2 cliqueSize 72 cliqueRank 0\n"
           + b"epoch 1 \xd1\xb5\xc1\xb7 loss 2.31\n".decode("utf-8", "replace")
           + "node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 72 nNodes 18 localRanks 4 localRank 0 MNNVL 1\n")
    said = [e for view in ("nccl-debug", "nccl-mnnvl") for e in parse_text(view, log).get("errors") or []
            if "not UTF-8" in e]
    assert said == [], said
    assert parse_text("nccl-mnnvl", log)["mnnvl"] is True


def test_a_switch_port_counter_read_only_now_under_its_bar_is_judged_as_the_hosts_are() -> None:
    """The cabling check 2322675 took its rule from: a switch port counter the saved read
    lacked, at or under every bar on it now, cannot have grown past one (port_xmit_discards:
    the shipped bar is more than 100); it was not judged at any value above 0. Above the
    lowest bar, or with no rule on it, it stays not judged."""
    from sncheck.health.cabling import counter_growth_findings, growth_bars
    from sncheck.health.rules import load_rules

    bars = growth_bars(load_rules().rules)

    def found(**now: int) -> list:
        return [(f.rule, f.not_judged) for f in counter_growth_findings(
            {"leaf:x[7]": {"port_rcv_errors": 0}}, {"leaf:x[7]": {"port_rcv_errors": 0, **now}}, None, bars)]

    assert found(port_xmit_discards=40) == [] and found(port_xmit_discards=100) == []
    assert [j for _, j in found(port_xmit_discards=101)] == [True]
    assert [j for _, j in found(symbol_error=1)] == [True]  # its bar is 0
