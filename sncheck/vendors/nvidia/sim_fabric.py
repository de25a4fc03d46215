"""NVL72 tool output for the simulator (:mod:`sncheck.vendors.sim`'s ``render``), rendered from real captures with the platform
faults acted out in it: ``fabric_incomplete`` (every GPU of the tray "In Progress", as the
gpu-operator capture shows it), ``fabric_degraded`` (a GPU's Health Bandwidth "Limited
Capacity"), ``clique_split`` (the tray in CliqueId 3 while its rack is in 2),
``imex_down`` (the tray's node UNAVAILABLE in every tray's ``nvidia-imex-ctl -N``, its
row and column N). The checks that judge these are the plug-in's own.

Captures used: the GB200 tray's ``nvidia-smi -q -x`` (nvl72/04), ``nvidia-imex-ctl -N``
of an 18-node domain (nvl72/01), ibstat (ib/04), dcgmi diag (dcgmi-diag/01), nvlink -e
(nvidia-smi-nvlink/04), topo -m (nvidia-smi-topo/01, recorded only on NVL72). No GB200
capture of ``--query-gpu`` or ``nvlink -s`` is stored: they are written in the layout of
the real captures from the -q -x capture's GPUs and the platform's 18 links x 53.125 GB/s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sncheck.vendors.captures import capture
from sncheck.vendors.sim import HostState, ToolOutput
from sncheck.vendors.nvidia import fabric

PLATFORM = "nvidia-nvl72"

QX = "nvl72/04_nvidia_smi_qx_gb200_real_tray.xml.txt"
IMEX = "nvl72/01_imex_ctl_N_18node_p6e_gb200.txt"
_UUID = "00000001-0000-0000-0000-000000000001"


def tray_qx(tray: int, *, clique: int = 2, in_progress: bool = False, limited_gpus: Sequence[int] = ()) -> str:
    """The real -q -x capture as tray ``tray`` (its tray_index), with faults acted out."""
    text = capture(QX).replace("<tray_index>4</tray_index>", f"<tray_index>{tray}</tray_index>")
    text = text.replace("<cliqueId>2</cliqueId>", f"<cliqueId>{clique}</cliqueId>")
    if in_progress:
        text = text.replace("<state>Completed</state>", "<state>In Progress</state>")
        text = text.replace("<status>Success</status>", "<status>N/A</status>")
        text = text.replace(f"<cliqueId>{clique}</cliqueId>", "<cliqueId>N/A</cliqueId>")
        text = text.replace(f"<clusterUuid>{_UUID}</clusterUuid>", "<clusterUuid>N/A</clusterUuid>")
    for gpu in sorted(set(limited_gpus)):
        parts = text.split("<bandwidth>Full</bandwidth>")
        if gpu + 1 < len(parts):
            parts[gpu] += "<bandwidth>Limited Capacity</bandwidth>" + parts.pop(gpu + 1)
            text = "<bandwidth>Full</bandwidth>".join(parts)
    return text


def query_gpu_csv() -> str:
    p = fabric.parse_query_xml(capture(QX))
    return "".join(f"{i}, NVIDIA GB200, GPU-0000000{i}-0000-0000-0000-000000000000, {g['bus_id']}, 189471 MiB, "
                   f"580.173.02, 5, 5, 16, 16, 30, 150.00 W, 0\n" for i, g in enumerate(p["gpus"]))


def nvlink_status(gpus: int = 4, links: int = 18) -> str:
    return "".join(f"GPU {i}: NVIDIA GB200 (UUID: GPU-0000000{i}-0000-0000-0000-000000000000)\n"
                   + "".join(f"\t Link {k}: 53.125 GB/s\n" for k in range(links)) for i in range(gpus))


def imex(down: Sequence[int] = (), addresses: Sequence[str | None] = ()) -> str:
    """The 18-node ``nvidia-imex-ctl -N`` with nodes ``down`` (0-based) not READY; node #k
    listed at ``addresses[k]`` where that is given (the inventory's imex_address of the
    k-th host), else at the capture's address."""
    lines = []
    for line in capture(IMEX).splitlines():
        m = re.match(r"^(Node #(\d+)\s+- )(\S+)(\s+- )READY(\s+- Version)", line)
        if m and int(m.group(2)) < len(addresses) and addresses[int(m.group(2))]:
            line = f"{m.group(1)}{addresses[int(m.group(2))] + ' ':<16}- {line[m.end(4):]}"
        if m and int(m.group(2)) in down:
            line = line.replace("READY      ", "UNAVAILABLE", 1)
        cells = line.split()
        if cells and cells[0].isdigit() and len(cells) == 19:
            row = int(cells[0])
            vals = ["N" if (row in down or j in down) else c for j, c in enumerate(cells[1:])]
            line = f"{cells[0]:>8}        " + "   ".join(vals)
        lines.append(line)
    return "\n".join(lines) + "\n"


def outputs(host: str, index: int, faults: Sequence[Any], down_in_domain: Sequence[int] = (),
            addresses: Sequence[str | None] = ()) -> dict[str, str]:
    """Command name -> output of an NVL72 tray: ``index`` is its place in the rack (0-based);
    ``faults`` are the fault plan's faults on this host; ``down_in_domain`` the rack
    indices of trays with ``imex_down`` (every tray's IMEX view shows them)."""
    limited = [int(f.target.rsplit("gpu", 1)[1]) for f in faults if f.type == "fabric_degraded"]
    qx = tray_qx(index + 1, clique=3 if any(f.type == "clique_split" for f in faults) else 2,
                 in_progress=any(f.type == "fabric_incomplete" for f in faults), limited_gpus=limited)
    return {
        "query_gpu": query_gpu_csv(),
        "topo": capture("nvidia-smi-topo/01_h100_8gpu_nv18_no_nics_spaces.txt"),
        "nvlink_status": nvlink_status(),
        "nvlink_errors": capture("nvidia-smi-nvlink/04_errors_h100_18links_elided.txt"),
        "query_fabric": qx,
        "imex": imex(down_in_domain, addresses),
        "ibstat": capture("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt"),
        "dcgmi_diag": capture("dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt"),
    }


def render(command: str, state: HostState) -> ToolOutput | None:
    """The output of fact command ``command`` on the NVL72 tray ``state`` (its place in the
    rack is ``state.index``), or None for a command a tray does not run."""
    out = outputs(state.host, state.index, state.faults, state.down_in_domain, state.domain_addresses).get(command)
    return None if out is None else ToolOutput(0, out)
