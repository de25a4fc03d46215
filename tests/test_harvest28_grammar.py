"""Harvest 28's first-try miss, read now by its tool's grammar (README "Harvest 28").

Written from what nvbandwidth prints, not from the capture that showed it: from v0.6 ``main()``
ends with ``Output::printInfo()`` (NVIDIA/nvbandwidth output.cpp @ v0.6, v0.7, v0.8), two NOTE
lines and a blank, the last of them ``Performance can vary with software drivers, hardware
clocks, and system topology.``. A file that ends in that line, whole, without its newline lost
only the newline (an editor, a paste): the output is whole. A cut inside the line leaves a prefix
of it, which stays a cut."""

from __future__ import annotations

from sncheck.vendors.nvidia.nvbandwidth import CLOSING
from sncheck.vendors.parsers import failures, parse_text

_RUN = ("nvbandwidth Version: v0.8\nBuilt from Git version: v0.8\n\nCUDA Runtime Version: 12080\n"
        "CUDA Driver Version: 12080\nDriver Version: 572.83\n\nDevice 0: NVIDIA GeForce RTX 3050 Laptop GPU "
        "(00000000:01:00)\n\nRunning host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth "
        "(GB/s)\n           0\n 0     12.98\n\nSUM host_to_device_memcpy_ce 12.98\n\n"
        "NOTE: The reported results may not reflect the full capabilities of the platform.\n")


def test_a_run_ending_in_the_whole_footer_line_without_its_newline_is_whole() -> None:
    """It read 'the output ends mid-line (... topology.', no newline): cut short', exit 1."""
    out = parse_text("nvbandwidth", _RUN + CLOSING[0])
    assert failures(out) == []
    assert out["tests"]["host_to_device_memcpy_ce"]["sum"] == 12.98


def test_a_cut_inside_the_footer_line_stays_a_cut() -> None:
    out = parse_text("nvbandwidth", _RUN + CLOSING[0][:-9])
    assert any("ends mid-line" in e for e in failures(out))


# PyTorch's desync report (torch/csrc/distributed/c10d/TraceUtils.h retrieveDesyncReport, TORCH_NCCL_DESYNC_DEBUG=1)
# and WorkNCCL::printTraceback's frames: written from the source, the lines as it prints them
_DESYNC = ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, NumelIn=4, "
           "NumelOut=4, Timeout(ms)=60000) ran for 60012 milliseconds before timing out.\n"
           "\t - [0] Timeout at collective: BROADCAST, #8\n"
           "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
           "\t   - [2] joined but didn't finish collective #7 (count from 1)\n"
           "\t     [1, 3] finished collective #7, but didn't join collective #8 (count from 1)\n"
           "\t - Snapshot of ranks' latest states:\n\t   #7 started ranks:\n\t     [2] started BROADCAST\n"
           "Stack trace of the failed collective:\n#2 step from train.py:41\n#3 <module> from train.py:90\n")


def test_the_desync_report_names_the_lagging_ranks() -> None:
    """The report's lines were not read at all; the bare 'Stack trace of the failed collective:' was skipped."""
    out = parse_text("torch-nccl", _DESYNC)
    assert out["desync"] == [{"rank": 0, "op": "BROADCAST", "seq": 8, "never_joined": [], "joined_not_finished": [2],
                              "finished_not_joined": [1, 3], "lag_seq": 7}]
    assert out["flight_recorder"]["frames"] == ["#2 step from train.py:41", "#3 <module> from train.py:90"]
    assert any("ranks [1, 3] finished #7 but did not join #8" in f for f in failures(out))


def test_a_report_of_ranks_that_never_joined() -> None:
    out = parse_text("torch-nccl", "\t - [3] Timeout at collective: ALLGATHER, #1\n\t - To our best knowledge, ranks "
                     "[5, 6] are the lagging ranks that caused this timeout. They never joined any collectives\n")
    assert out["desync"][0]["never_joined"] == [5, 6]
    assert failures(out) == ["rank 3: desync report at ALLGATHER #1: ranks [5, 6] never joined any collective"]


def test_an_older_drivers_xid_pid_without_a_name_is_read() -> None:
    """'Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: ...' (510.73.08): pid null, the 'pid=1896, ' left in the message."""
    out = parse_text("kernel-log", "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for "
                     "remapping, reset gpu to activate.\n")
    event = out["events"][0]
    assert (event["pid"], event["process"], event["message"]) == \
        ("1896", None, "Row Remapper: New row marked for remapping, reset gpu to activate.")
