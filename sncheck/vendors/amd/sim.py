"""MI300X tool output for the simulator, from real captures, with ``xgmi_link_down`` acted
out: the card's XGMI link to its neighbour (gpu N <-> gpu N^1) is gone, so
``rocm-smi --showtopo`` shows that pair over PCIE, 3 hops, weight 52 (the values of the
real PCIe-only capture amd/16). Captures: amd-smi monitor (amd/05), ecc blocks (amd/09),
metric (amd/04, the blog author's "[output truncated]" marker dropped), rocm-smi
--showtopo (amd/13), ibstat (ib/04)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sncheck.vendors.captures import capture
from sncheck.vendors.sim import HostState, ToolOutput

SHOWTOPO = "amd/13_rocm-smi_showtopo_mi308x_8gpu_xgmi_lowpower_warning.txt"
_PCIE = {"Weight": "52", "Hops": "3", "Link Type": "PCIE"}


def showtopo(down: Sequence[tuple[int, int]] = ()) -> str:
    """``rocm-smi --showtopo`` with the XGMI links ``down`` (GPU index pairs) over PCIe."""
    out = []
    table = None
    for line in capture(SHOWTOPO).splitlines():
        if "between two GPUs" in line:
            table = line.strip("= ").split(" between")[0]
        cells = line.split()
        if table in _PCIE and cells and re.fullmatch(r"GPU\d+", cells[0]) and len(cells) > 2:
            row = int(cells[0][3:])
            for a, b in down:
                if row in (a, b):
                    cells[(b if row == a else a) + 1] = _PCIE[table]
            line = cells[0].ljust(7) + "".join(c.ljust(13) for c in cells[1:]).rstrip()
        out.append(line)
    return "\n".join(out) + "\n"


def outputs(host: str, index: int, faults: Sequence[Any], down_in_domain: Sequence[int] = ()) -> dict[str, str]:
    down = []
    for f in faults:
        if f.type == "xgmi_link_down":
            gpu = int(f.target.rsplit("gpu", 1)[1])
            down.append((gpu, gpu ^ 1))
    return {
        "monitor": capture("amd/05_amd-smi_monitor_putm_mi300x_8gpu_blog.txt"),
        "showtopo": showtopo(down),
        "ecc_blocks": capture("amd/09_amd-smi_metric_ecc_blocks_all_zero_incl_xgmi_wafl_changelog.txt"),
        "metric": capture("amd/04_amd-smi_metric_mi300x_blog_truncated.txt").replace("[output truncated]\n", ""),
        "ibstat": capture("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt"),
    }


def render(command: str, state: HostState) -> ToolOutput | None:
    """The output of fact command ``command`` on the MI300X host ``state`` (:mod:`sncheck.vendors.sim`),
    or None for a command it does not run."""
    out = outputs(state.host, state.index, state.faults, state.down_in_domain).get(command)
    return None if out is None else ToolOutput(0, out)
