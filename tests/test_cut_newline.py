"""A paste cut inside a line that then ends with a newline (the reporter's fence or editor adds it) is
never whole (issue 28, reviews15 #2 and #3): a value outside its printer's vocabulary or form is its line
cut short, an error naming it (exit 1), never a value. Each case read as whole, errors [], before cuts15."""

from __future__ import annotations

from pathlib import Path

import pytest

from sncheck.vendors.parsers import failures, parse_text

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"


def _capture(glob: str) -> str:
    """The one capture ``glob`` names: 'h24/...' under harvest24, 'h14/...' under harvest14."""
    harvest, _, rest = glob.partition("/")
    [path] = sorted((REAL / f"harvest{harvest[1:]}").glob(rest))
    return path.read_text(encoding="utf-8")


def cut(text: str, upto: str) -> str:
    """``text`` up to the end of its last ``upto``, a newline after: a paste cut mid-line, ending cleanly."""
    at = text.rindex(upto) + len(upto)
    assert text[at] != "\n", "the cut must fall inside a line"
    return text[:at] + "\n"


@pytest.mark.parametrize("view, glob, upto, said", [
    # ibv_devinfo's last device cut after its phys_port_cnt key: its ports were lost, read as none
    ("ibv-devinfo", "h24/ibv-devinfo/01_*", "phys_port_cnt:   ", "phys_port_cnt ''"),
    ("ibv-devinfo", "h24/ibv-devinfo/01_*", "link_layer:             Infini", "link_layer 'Infini'"),
    # the next device's first line cut short: that device lost
    ("ibv-devinfo", "h24/ibv-devinfo/01_*", "\nhca", "'hca': a device's 'hca_id:' line cut short"),
    ("ibstat", "h24/ibstat/02_*", "Link layer: I", "link_layer 'I'"),
    ("mlxlink", "h24/mlxlink/01_*", "Recommendation                     : N", "Recommendation 'N' (Status Opcode 0)"),
    # 'Link 17:' read as link 17 inactive: a fault made of a cut
    ("nvlink-status", "h24/nvlink-status/01_*", "Link 17:", "'Link 17:' is no link state"),
    ("nvlink-status", "h24/nvlink-status/01_*", "Link 17: 53.1", "'Link 17: 53.1' is no link state"),
    ("nvlink-status", "h24/nvlink-status/01_*", "\nGPU 6", "'GPU 6': a GPU's line cut short"),
    # amd-smi monitor's last cell cut: the memory cell without its unit, one cell split in two, a bare number
    ("amd-smi-monitor", "h24/amd-smi-monitor/01_*", "0.0/37", "GTT_USAGE '0.0/37' without the unit"),
    ("amd-smi-monitor", "h24/amd-smi-monitor/01_*", "0.0/376.7", "GTT_USAGE '0.0/376.7' without the unit"),
    ("amd-smi-monitor", "h14/amd-smi-monitor/04_*", "283 MB   19", "VRAM_TOTAL '19' without the unit"),
    ("amd-smi-monitor", "h14/amd-smi-monitor/04_*", "283 M", "VRAM_USED '283' without the unit"),
    ("amd-smi-monitor", "h14/amd-smi-monitor/03_*", "  26", "PCIE_BW '26' without the unit"),
    ("amd-smi-monitor", "h14/amd-smi-monitor/03_*", "GPU   PCIE_B", "no row under the header"),
])
def test_a_line_cut_then_a_newline_is_an_error(view: str, glob: str, upto: str, said: str) -> None:
    whole = _capture(glob)
    assert not parse_text(view, whole)["errors"]
    data = parse_text(view, cut(whole, upto))
    assert failures(data) and any(said in e for e in data["errors"]), data["errors"]


def test_a_cut_state_is_no_fault() -> None:
    """nvlink -s's 'Link 17:' cut is an error, never 'link 17 inactive' (a fault the output does not show)."""
    data = parse_text("nvlink-status", cut(_capture("h24/nvlink-status/01_*"), "Link 17:"))
    assert not [f for f in data.get("faults", []) if "link 17" in f], data["faults"]
    assert [ln["link"] for ln in data["gpus"][-1]["links"]] == list(range(17))


@pytest.mark.parametrize("view, text", [
    # the printers' other values stay values: ibv_devinfo's older 'IB' link layer, nvlink -s's '<inactive>',
    # monitor's 'N/A Mb/s' and its unit-less ECC counts, mlxlink's 'No issue was observed.'
    ("ibv-devinfo", "hca_id:\tmlx4_0\n\ttransport:\t\t\tInfiniBand (0)\n\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n"
                    "\t\t\tstate:\t\t\tPORT_DOWN (1)\n\t\t\tlink_layer:\t\tIB\n"),
    ("nvlink-status", "GPU 0: A100-PCIE-40GB (UUID: GPU-1)\n\t Link 0: <inactive>\n\t Link 1: <inactive>\n"),
    ("amd-smi-monitor", "GPU  POWER  SINGLE_ECC  DOUBLE_ECC   PCIE_BW\n  0  199 W           0           3  N/A Mb/s\n"),
])
def test_the_printers_other_values_are_no_cut(view: str, text: str) -> None:
    assert not [e for e in parse_text(view, text)["errors"] if "cut short" in e]
