"""Harvest 26's first-try misses, each read now by its tool's grammar (README "Harvest 26").

Each case is written from what the tool's source prints, not from the capture that showed it:
nvbandwidth's matrix printer (common.h's ``operator<<`` of PeerValueMatrix, from the first tag v0.1)
ends every matrix with a blank line and ``SUM KEY VALUE``, so a matrix without it was cut whatever the
version; a reporter's markdown quote may sit on the ``Running`` line alone (GitHub's lazy continuation)."""

from __future__ import annotations

from sncheck.vendors.parsers import parse_text


def _nvbandwidth_test(name: str, values: list[float], sum_line: bool, quote: str = "") -> list[str]:
    title = "memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)"
    header = " " + "".join(f"{i:>10}" for i in range(len(values)))
    row = "0" + "".join(f"{v:>10.2f}" for v in values)
    return [f"{quote}Running {name}.", title, header, row, ""] + ([f"SUM {name} {sum(values):.2f}", ""] if sum_line else [])


def test_nvbandwidth_matrix_without_its_sum_line_is_cut_without_a_version_line() -> None:
    """A paste of testcases with no version header: was read as a pre-v0.5 output (no SUM then) and whole
    (exit 0); every version prints the SUM line, so a matrix without it was cut."""
    whole = _nvbandwidth_test("host_to_device_memcpy_sm", [35.19, 35.25], True)
    out = parse_text("nvbandwidth", "\n".join(whole) + "\n")
    assert out["errors"] == [] and out["tests"]["host_to_device_memcpy_sm"]["sum"] == 70.44
    cut = _nvbandwidth_test("host_to_device_memcpy_sm", [35.19, 35.25], False)
    out = parse_text("nvbandwidth", "\n".join(cut) + "\n")
    assert out["errors"] == ["host_to_device_memcpy_sm: no 'SUM host_to_device_memcpy_sm' line after the matrix (cut short)"]
    old = ["nvbandwidth Version: v0.4", "Built from Git version: v0.4", ""] + cut
    assert parse_text("nvbandwidth", "\n".join(old) + "\n")["errors"]  # v0.4 printed it too


def test_nvbandwidth_running_line_quoted_alone_keeps_its_test_name() -> None:
    """'> Running NAME.' with the matrix unquoted under it (and no SUM line to name it): was an
    'untitled_0' matrix, its values under no test's name."""
    text = _nvbandwidth_test("device_to_host_memcpy_sm", [52.77, 52.78], False, quote="> ")
    out = parse_text("nvbandwidth", "\n".join(text) + "\n")
    assert list(out["tests"]) == ["device_to_host_memcpy_sm"]
    assert out["tests"]["device_to_host_memcpy_sm"]["matrix"]["0"]["1"] == 52.78
    assert out["errors"] == ["device_to_host_memcpy_sm: no 'SUM device_to_host_memcpy_sm' line after the matrix (cut short)"]
