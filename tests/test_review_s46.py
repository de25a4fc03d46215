"""Stop 46's review (task "reviews"): what landed this stop let two inputs through as a pass; each test failed on main before its fix."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text


def test_an_aer_report_whose_severity_no_kernel_prints_is_said_not_dropped() -> None:
    """980d707 made aer.c's six severity strings the only ones read: a report whose severity is cut
    to a bare 'Uncorrected' (no kernel prints it) then gave no event and no error, so its
    uncorrectable bit (CmpltTO) passed with exit 0 (b4a1061 read it as fatal). It is said, by its line."""
    log = ("[ 1234.567900] nvidia 0000:05:00.0: AER: PCIe Bus Error: severity=Uncorrected, type=Transaction Layer, "
           "(Requester ID)\n"
           "[ 1234.567910] nvidia 0000:05:00.0: AER:   device [10de:2330] error status/mask=00004000/00000000\n"
           "[ 1234.567920] nvidia 0000:05:00.0: AER:    [14] CmpltTO                (First)\n")
    data = parse_text("kernel-log", log)
    assert [e for e in data["errors"] if "line 1: an AER report whose severity 'Uncorrected' aer.c never prints" in e], data
    whole = log.replace("severity=Uncorrected,", "severity=Uncorrected (Non-Fatal),")
    read = parse_text("kernel-log", whole)  # the same report with aer.c's string: read, no such error
    assert not read["errors"] and [e["class"] for e in read["events"]] == ["non-fatal"], read


def test_a_grep_ed_ethtool_paste_holding_no_error_counter_is_not_a_pass() -> None:
    """70d58a4 read `ethtool -S eth0 | grep rdma` (vport traffic counters only) with no fault and no
    error: nothing was judged, yet it read as a clean port. Its counters are kept and it is not judged."""
    text = "".join(f"     {d}x_vport_rdma_unicast_{u}: 1234\n" for d in "rt" for u in ("packets", "bytes"))
    data = parse_text("ethtool-mlx5", text)
    assert data["counters"]["rx_vport_rdma_unicast_packets"] == 1234
    assert [e for e in data["errors"] if e.startswith("not judged: the paste holds none of mlx5's error counters")]
    with_errors = text + "     rx_crc_errors_phy: 0\n"  # one error counter in the paste: judged, clean
    assert parse_text("ethtool-mlx5", with_errors)["errors"] == []
