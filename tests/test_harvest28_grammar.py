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
