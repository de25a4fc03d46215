"""The delivery matrix's hard wraps that read as other values (issue 28; README "Deliveries"):
each view now tells, by its grammar, a line wrapped inside a value or a row, and refuses it
(exit 1, naming the line) instead of reading other values; never a pass where the whole output
fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from grammars import variants
from grammars.delivery import TRANSFORMS, judge, outcome

from sncheck.vendors.amd import kernel_ras
from sncheck.vendors.parsers import parse_text, strip_source_header

ROOT = Path(__file__).resolve().parents[1]
WRAP = {t.name: t for t in TRANSFORMS if t.name.startswith("hard wrap")}


def _generated(view: str, name: str) -> str:
    return next(v.text for v in variants(view) if v.name == name)


def _real(rel: str) -> str:
    return strip_source_header((ROOT / "fixtures" / "real" / rel).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("view", "text", "width"), [
    ("nvidia-smi-fabric", lambda: _generated("nvidia-smi-fabric", "-q 1 GPUs Completed/Success/Limited Capacity"), 80),
    ("npu-smi-topo", lambda: _generated("npu-smi-topo", "A3 16 NPUs"), 80),
    ("npu-smi-topo", lambda: _generated("npu-smi-topo", "A3 16 NPUs"), 120),
    ("nccl-mnnvl", lambda: _generated("nccl-mnnvl", "2.27.3 on 72 ranks"), 80),
    ("nccl-mnnvl", lambda: _generated("nccl-mnnvl", "2.28.9 off 4 ranks"), 80),
    ("nccl-mnnvl", lambda: _generated("nccl-mnnvl", "2.27.3 broken 8 ranks"), 80),
    ("rccl-tests", lambda: _real("harvest/rccl-tests/01_all_reduce_perf_ainic_2GiB_to_16GiB_busbw_360_asterisk_note_"
                                 "collective_test_concluded_rccl-pr2078.txt"), 80),
    ("kernel-log", lambda: _real("harvest/kernel-log/01_dmesg_amdgpu_erREVENT_athub_aca_banks_mi300x_rocm6.2.3_"
                                 "rocm-issue4021_head.txt"), 80),
])
def test_a_hard_wrap_reads_the_same_values_or_is_refused(view: str, text, width: int) -> None:
    """Each read other values before (a cut UUID, columns shifted by a wrapped header, a row's head
    read as a row of another layout, a cut ACA STATUS read as corrected: exit 0 where the whole
    output exits 1 for two of them)."""
    whole = text()
    assert judge(view, whole, WRAP[f"hard wrap {width}"]) is None
    code, data = outcome(view, WRAP[f"hard wrap {width}"].apply(whole))
    assert code == 1, data


def test_the_refusals_name_the_line_and_why() -> None:
    fabric = parse_text("nvidia-smi-fabric", WRAP["hard wrap 80"].apply(_generated(
        "nvidia-smi-fabric", "-q 1 GPUs Completed/Success/Limited Capacity")).decode())
    assert any("stops short of NVML's 'GPU-' and 36 characters" in e for e in fabric["errors"]), fabric["errors"]
    topo = parse_text("npu-smi-topo", WRAP["hard wrap 120"].apply(_generated("npu-smi-topo", "A3 16 NPUs")).decode())
    assert topo["errors"][0].startswith("line 1: device names with no 'CPU Affinity'"), topo["errors"]
    assert any(re.match(r"line \d+: no device's row inside the matrix", e) for e in topo["errors"]), topo["errors"]
    mnnvl = parse_text("nccl-mnnvl", WRAP["hard wrap 80"].apply(_generated("nccl-mnnvl", "2.28.9 off 4 ranks")).decode())
    assert mnnvl["errors"][0].startswith("line 3: an MNNVL word on no NCCL log line ('lRanks 4 localRank 0 MNNVL 0')")


def test_redacted_uuids_and_whole_outputs_are_read_as_before() -> None:
    text = _generated("nvidia-smi-fabric", "-q 1 GPUs Completed/Success/Limited Capacity")
    redacted = re.sub(r"GPU-[0-9a-f-]{36}", "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", text)
    assert parse_text("nvidia-smi-fabric", redacted)["errors"] == []
    for view, name in (("npu-smi-topo", "A3 16 NPUs"), ("nccl-mnnvl", "2.27.3 on 72 ranks")):
        assert parse_text(view, _generated(view, name))["errors"] == []


def test_an_aca_register_short_of_16_digits_is_not_read_and_a_cut_fatal_line_is_fatal() -> None:
    head = "amdgpu 0000:1b:00.0: {1}[Hardware Error]: "
    dump = kernel_ras.event(head + "Accelerator Check Architecture events logged", None)
    assert dump is not None and dump["class"] == "aca"
    assert kernel_ras.event(head + "aca entry[00].STATUS=0xbaa0000", dump) is None
    assert dump["status_class"] is None and kernel_ras.is_fault(dump)  # not 'correctable' from 7 digits
    kernel_ras.event(head + "aca entry[00].STATUS=0x000000000000080b", dump)
    assert dump["status_class"] == "correctable" and not kernel_ras.is_fault(dump)
    cut = kernel_ras.event("amdgpu 0000:dd:00.0: {1}uncorrectable hardware error(ERREVENT_ATH", None)
    assert cut is not None and (cut["class"], cut["block"]) == ("fatal", None)
    whole = kernel_ras.event("amdgpu 0000:dd:00.0: {1}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
                             None)
    assert whole is not None and whole["block"] == "ERREVENT_ATHUB_INTERRUPT"


@pytest.mark.parametrize("cells", [12, 9])
def test_a_row_wrapped_before_its_na_check_cells_is_refused(cells: int) -> None:
    """A -c 0 run prints #wrong as N/A: a row wrapped after its 12th (or 9th) cell leaves 'N/A'
    (or '34.25 0.00 0.00 N/A') on a line of its own. 0e2a4ae's one-condition tail check counted
    no N/A as a number and read the head as a row with other columns, exit 0 (reviews13)."""
    text = _harvest16_na()
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["32"])
    head, tail = lines[at].split()[:cells], lines[at].split()[cells:]
    lines[at:at + 1] = ["   ".join(head), "   " + "   ".join(tail)]
    whole = "\n".join(lines) + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0125 \n#\n"
    data = parse_text("nccl-tests", whole)
    assert any("numbers with no row's size, count and type" in e for e in data["errors"]), data["errors"]


def _harvest16_na() -> str:
    [path] = (ROOT / "fixtures/real/harvest16/nccl-tests").glob("05_*")
    return strip_source_header(path.read_text(encoding="utf-8"))
