"""NVL72 tool output for the simulator (:mod:`sncheck.vendors.sim`'s ``render``), rendered from real captures with the platform
faults acted out in it: ``fabric_incomplete`` (every GPU of the tray "In Progress", as the
gpu-operator capture shows it), ``fabric_degraded`` (a GPU's Health Bandwidth "Limited
Capacity"), ``clique_split`` (the tray in CliqueId 3 while its rack is in 2),
``imex_down`` (the tray's node UNAVAILABLE in every tray's ``nvidia-imex-ctl -N``, its
row and column N). The checks that judge these are the plug-in's own.

Captures used: the GB200 tray's ``nvidia-smi -q -x`` (nvl72/04), ``nvidia-imex-ctl -N``
of an 18-node domain (nvl72/01), ibstat (ib/04), dcgmi diag (dcgmi-diag/01). No GB200
capture of ``--query-gpu`` or ``nvlink -s`` is stored: they are written in the layout of
the real captures from the -q -x capture's GPUs and the platform's 18 links x 53.125 GB/s;
``nvlink -e`` and ``topo -m`` are the tray's 4 GPUs in the H100 layout (:mod:`.sim`'s, as an
8-GPU capture or a 1-GPU excerpt is a listing the run does not judge for a 4-GPU tray).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from sncheck.vendors.captures import capture
from sncheck.vendors.sim import HostState, ToolOutput
from sncheck.vendors.nvidia import fabric
from sncheck.vendors.infiniband import sim as infiniband_sim

PLATFORM = "nvidia-nvl72"
ACTED: dict[str | None, dict[str, str]] = {PLATFORM: {
    "ecc_uncorrectable": "nvidia-smi -q -x: the GPU block's volatile and aggregate dram_uncorrectable = count; "
                         "--query-gpu's ECC column",
    "remap_pending": "nvidia-smi -q -x: the GPU block's remapped_row_pending Yes (one correctable row)",
    "nvlink_down": "nvidia-smi nvlink -s: the GPU's last `links` of 18 links `<inactive>`",
    "ib_port_down": "ibstat: the rail's InfiniBand CA (`mlx5_<port-1>`, one per GPU) State Down, Physical state Polling",
    "thermal_throttle": "nvidia-smi -q -x: the GPU block's hw_slowdown and hw_thermal_slowdown Active",
    "fabric_incomplete": "nvidia-smi -q -x: every GPU's Fabric State In Progress, Status/CliqueId/ClusterUUID N/A",
    "fabric_degraded": "nvidia-smi -q -x: the GPU block's Fabric Health Bandwidth Limited Capacity",
    "clique_split": "nvidia-smi -q -x: every GPU of the tray in CliqueId 3, its rack in 2",
    "imex_down": "nvidia-imex-ctl -N on every tray: the tray's node UNAVAILABLE, its row and column N",
}}
RENDERED_CARDS: dict[str | None, int | None] = {PLATFORM: 4}  # the GB200 tray capture lists 4 GPUs

QX = "nvl72/04_nvidia_smi_qx_gb200_real_tray.xml.txt"
IMEX = "nvl72/01_imex_ctl_N_18node_p6e_gb200.txt"
_UUID = "00000001-0000-0000-0000-000000000001"


LIMITED = "<bandwidth>Limited Capacity</bandwidth>"
FULL = "<bandwidth>Full</bandwidth>"
LINKS = 18  # NVLink 5 links per GB200


def _gpu_blocks(text: str) -> tuple[str, list[str], str]:
    """(head, one text per ``<gpu id=...>...</gpu>`` block, tail) of a -q -x output."""
    parts = re.split(r"(?=\t<gpu id=)", text)
    head, blocks = parts[0], parts[1:]
    last, sep, tail = blocks[-1].partition("</gpu>\n")
    blocks[-1] = last + sep
    return head, blocks, tail


def _set(block: str, tag: str, value: str, within: str | None = None) -> str:
    """``block`` with the text of every ``<tag>`` (inside ``<within>`` when given) set to ``value``."""
    def put(text: str) -> str:
        new, n = re.subn(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", text)
        if not n:
            raise LookupError(f"no <{tag}> in the capture's GPU block")
        return new
    if within is None:
        return put(block)
    m = re.search(rf"<{within}>.*?</{within}>", block, re.S)
    if m is None:
        raise LookupError(f"no <{within}> in the capture's GPU block")
    return block[:m.start()] + put(m.group(0)) + block[m.end():]


def _act_out(block: str, index: int, faults: Sequence[Any], host: str) -> str:
    """A GPU block with the card faults on card ``index`` acted out, as nvidia-smi -q -x
    prints them: Limited Capacity, uncorrectable ECC, a pending remap, a thermal slowdown."""
    mine = [f for f in faults if f.target == f"{host}/gpu{index}"]
    kinds = {f.type for f in mine}
    if "fabric_degraded" in kinds:
        block = block.replace(FULL, LIMITED)
    count = sum(int(f.count or 1) for f in mine if f.type == "ecc_uncorrectable")
    if count:
        for part in ("volatile", "aggregate"):
            block = _set(block, "dram_uncorrectable", str(count), within=part)
    if "remap_pending" in kinds:  # the A100 capture's pending remap: one correctable row, pending
        block = _set(block, "remapped_row_corr", "1", within="remapped_rows")
        block = _set(block, "remapped_row_pending", "Yes", within="remapped_rows")
    if "thermal_throttle" in kinds:
        for tag in ("clocks_event_reason_hw_slowdown", "clocks_event_reason_hw_thermal_slowdown"):
            block = _set(block, tag, "Active", within="clocks_event_reasons")
    return block


def tray_qx(tray: int, *, clique: int = 2, in_progress: bool = False, limited_gpus: Sequence[int] = (),
            faults: Sequence[Any] = (), host: str = "") -> str:
    """The real -q -x capture as tray ``tray`` (its tray_index), with faults acted out:
    ``limited_gpus`` (indices) at Limited Capacity, and ``faults`` (card faults on
    ``host``'s cards) in each GPU's own block."""
    text = capture(QX).replace("<tray_index>4</tray_index>", f"<tray_index>{tray}</tray_index>")
    text = text.replace("<cliqueId>2</cliqueId>", f"<cliqueId>{clique}</cliqueId>")
    if in_progress:
        text = text.replace("<state>Completed</state>", "<state>In Progress</state>")
        text = text.replace("<status>Success</status>", "<status>N/A</status>")
        text = text.replace(f"<cliqueId>{clique}</cliqueId>", "<cliqueId>N/A</cliqueId>")
        text = text.replace(f"<clusterUuid>{_UUID}</clusterUuid>", "<clusterUuid>N/A</clusterUuid>")
    head, blocks, tail = _gpu_blocks(text)
    for gpu in set(limited_gpus):
        if not 0 <= gpu < len(blocks):
            raise LookupError(f"GPU {gpu}: the tray lists {len(blocks)} GPUs")
        blocks[gpu] = blocks[gpu].replace(FULL, LIMITED)
    blocks = [_act_out(b, i, faults, host) for i, b in enumerate(blocks)]
    return head + "".join(blocks) + tail


@cache
def tray_bus_ids() -> tuple[str, ...]:
    """The bus ids of the GB200 tray capture's GPUs (parsed once: every tray renders them)."""
    return tuple(g["bus_id"] for g in fabric.parse_query_xml(capture(QX))["gpus"])


def query_gpu_csv(faults: Sequence[Any] = (), host: str = "") -> str:
    out = []
    for i, bus_id in enumerate(tray_bus_ids()):
        ecc = sum(int(f.count or 1) for f in faults if f.type == "ecc_uncorrectable" and f.target == f"{host}/gpu{i}")
        out.append(f"{i}, NVIDIA GB200, GPU-0000000{i}-0000-0000-0000-000000000000, {bus_id}, 189471 MiB, "
                   f"580.173.02, 5, 5, 16, 16, 30, 150.00 W, {ecc}\n")
    return "".join(out)


def nvlink_status(gpus: int = 4, links: int = LINKS, faults: Sequence[Any] = (), host: str = "") -> str:
    """``nvidia-smi nvlink -s`` of a tray; ``nvlink_down`` (links k) makes the card's last k
    links ``<inactive>``, as the real status prints an inactive link."""
    out = []
    for i in range(gpus):
        down = sum(int(f.links or 1) for f in faults if f.type == "nvlink_down" and f.target == f"{host}/gpu{i}")
        out.append(f"GPU {i}: NVIDIA GB200 (UUID: GPU-0000000{i}-0000-0000-0000-000000000000)\n")
        out += [f"\t Link {k}: {'<inactive>' if k >= links - down else '53.125 GB/s'}\n" for k in range(links)]
    return "".join(out)


def imex(down: Sequence[int] = (), addresses: Sequence[str | None] = (), nodes: int = 18) -> str:
    """The ``nvidia-imex-ctl -N`` of a domain of ``nodes`` trays (at most the capture's 18:
    its first ``nodes`` node lines and the matrix's first ``nodes`` rows and columns, as the
    daemon lists the nodes of its nodes_config, a domain of 9 trays 9 of them) with nodes
    ``down`` (0-based) not READY; node #k listed at ``addresses[k]`` where that is given (the
    inventory's imex_address of the k-th host), else at the capture's address."""
    lines = []
    for line in capture(IMEX).splitlines():
        m = re.match(r"^(Node #(\d+)\s+- )(\S+)(\s+- )READY(\s+- Version)", line)
        if m and int(m.group(2)) >= nodes:
            continue
        address = addresses[int(m.group(2))] if m and int(m.group(2)) < len(addresses) else None
        if m and address:
            line = f"{m.group(1)}{address + ' ':<16}- {line[m.end(4):]}"
        if m and int(m.group(2)) in down:
            line = line.replace("READY      ", "UNAVAILABLE", 1)
        cells = line.split()
        if cells[:2] == ["Nodes", "From\\To"]:
            line = " Nodes From\\To  " + "".join(f"{k:<4}" for k in range(nodes)).rstrip()
        if cells and cells[0].isdecimal() and len(cells) == 19:
            row = int(cells[0])
            if row >= nodes:
                continue
            vals = ["N" if (row in down or j in down) else c for j, c in enumerate(cells[1:nodes + 1])]
            line = f"{cells[0]:>8}        " + "   ".join(vals)
        lines.append(line)
    return "\n".join(lines) + "\n"


def _outputs(host: str, index: int, faults: Sequence[Any], down_in_domain: Sequence[int] = (),
             addresses: Sequence[str | None] = (), cards: int = 4, domain_hosts: int = 18) -> dict[str, Callable[[], str]]:
    """Command name -> the output of an NVL72 tray, rendered when called (a read asks for one
    command at a time): ``index`` is its place in the rack (0-based); ``faults`` are the fault
    plan's faults on this host; ``down_in_domain`` the rack indices of trays with ``imex_down``
    (every tray's IMEX view shows them); ``domain_hosts`` the trays of its domain (IMEX nodes)."""
    return {
        "query_gpu": lambda: query_gpu_csv(faults, host),
        "nvlink_status": lambda: nvlink_status(faults=faults, host=host),
        "query_fabric": lambda: tray_qx(index + 1, clique=3 if any(f.type == "clique_split" for f in faults) else 2,
                                        in_progress=any(f.type == "fabric_incomplete" for f in faults),
                                        faults=faults, host=host),
        "imex": lambda: imex(down_in_domain, addresses, domain_hosts),
        # one InfiniBand adapter per GPU (rail-aligned), ib_port_down acted out on its rail
        "ibstat": lambda: infiniband_sim.render_ibstat(HostState(host, cards, PLATFORM, tuple(faults))),
        "dcgmi_diag": lambda: capture("dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt"),
    }


def render(command: str, state: HostState) -> ToolOutput | None:
    """The output of fact command ``command`` on the NVL72 tray ``state`` (its place in the
    rack is ``state.index``), or None for a command a tray does not run."""
    out = _outputs(state.host, state.index, state.faults, state.down_in_domain, state.domain_addresses,
                   state.cards, state.domain_hosts or 18).get(command)
    return None if out is None else ToolOutput(0, out())
