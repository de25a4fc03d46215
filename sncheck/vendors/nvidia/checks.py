"""NVIDIA host facts: the fact commands and what each fact checks.

``COMMANDS`` holds every NVIDIA fact command; a platform (:mod:`.plugin`) picks the ones
that apply. ``FACTS`` lists each fact with the command that yields it and what makes it
fail. The checks that turn parsed output into ``host_fact`` rows live in
:mod:`.gpu_checks` (per GPU) and :mod:`.fabric_checks` (fabric, IMEX, fabric manager,
and the rack-wide step).
"""

from __future__ import annotations

from typing import Any

from sncheck.vendors.facts import command
from sncheck.vendors.infiniband.checks import IB_FACTS, IBSTAT
from sncheck.vendors.nvidia import dcgmi, fabric, nvidia_smi
from sncheck.vendors.nvidia.fabric_checks import (check_fabric, check_fabric_manager, check_imex,
                                                  fabric_in_progress, parse_systemctl_active)
from sncheck.vendors.nvidia.gpu_checks import (check_card_count, check_dcgmi, check_nvlink, check_nvlink_errors,
                                               check_query, check_topology, check_topology_platform)


# --------------------------------------------------------------------------- registry

COMMANDS: dict[str, Any] = {c.name: c for c in (
    command("query_gpu", "nvidia-smi", nvidia_smi.query_gpu_command(), nvidia_smi.parse_query_gpu_csv,
            check_card_count, "card_count", "gpu_uuid"),
    command("topo", "nvidia-smi", ["nvidia-smi", "topo", "-m"], nvidia_smi.parse_topo, check_topology,
            "gpu_topology"),
    command("topo_sanity", "nvidia-smi", ["nvidia-smi", "topo", "-m"], nvidia_smi.parse_topo,
            check_topology_platform, "gpu_topology", "topo_sanity"),
    command("nvlink_status", "nvidia-smi", ["nvidia-smi", "nvlink", "-s"], nvidia_smi.parse_nvlink_status,
            check_nvlink, "nvlink"),
    command("nvlink_errors", "nvidia-smi", ["nvidia-smi", "nvlink", "-e"], nvidia_smi.parse_nvlink_errors,
            check_nvlink_errors, "nvlink_errors", counters=nvidia_smi.NVLINK_COUNTERS),
    command("query", "nvidia-smi", ["nvidia-smi", "-q"], nvidia_smi.parse_query, check_query,
            "gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages", "clock_reasons"),
    command("query_fabric", "nvidia-smi", ["nvidia-smi", "-q", "-x"], fabric.parse_query_xml, check_fabric,
            "gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages", "clock_reasons",
            "fabric_state", "fabric_health", "fabric_clique", "platform_info", retry_while=fabric_in_progress),
    command("imex", "nvidia-imex-ctl", ["nvidia-imex-ctl", "-N"], fabric.parse_imex_ctl, check_imex,
            "imex_domain"),
    command("fabric_manager", "systemctl", ["systemctl", "is-active", "nvidia-fabricmanager"],
            parse_systemctl_active, check_fabric_manager, "fabric_manager"),
    IBSTAT,
    # Level 1: the quick deployment checks (seconds); -r 2/3 take minutes per host.
    command("dcgmi_diag", "dcgmi", ["dcgmi", "diag", "-r", "1"], dcgmi.parse_dcgmi_diag, check_dcgmi,
            "dcgmi_diag"),
)}

# The commands for a host whose inventory names no platform (sncheck before platforms).
DEFAULT_CHECKS = ("query_gpu", "topo", "nvlink_status", "nvlink_errors", "query", "ibstat", "dcgmi_diag")

FACTS: dict[str, tuple[str, str]] = {
    # fact: (command, what makes it fail)
    "reachable": ("", "SSH connect, host key or login failed (one row, status unreachable)"),
    "card_count": ("query_gpu", "GPUs listed by --query-gpu differ from the inventory's cards"),
    "gpu_uuid": ("query_gpu", "never: each GPU's UUID is recorded (the Prometheus card series' UUID label)"),
    "gpu_topology": ("topo", "never: the link type of each GPU pair is recorded"),
    "topo_sanity": ("topo_sanity", "a GPU pair not over NVLink (SYS, PHB...), a GPU without a NIC at PIX/PXB"),
    "nvlink": ("nvlink_status", "an inactive link, fewer links or a lower speed than the platform's design, "
                                "an NVML error"),
    "nvlink_errors": ("nvlink_errors", "an NVML error; the counters are recorded, and the rules judge their "
                                       "growth during the run (sncheck.health.fabric)"),
    "gpu_report": ("query", "nvidia-smi -q printed errors or fewer GPUs than attached"),
    "pcie_width": ("query", "a link narrower than its max width"),
    "pcie_gen": ("query", "never: gen below max is recorded (idle GPUs downshift)"),
    "ecc": ("query", "volatile uncorrectable ECC errors, SRAM threshold exceeded"),
    "remapped_rows": ("query", "a pending row remap or a remapping failure"),
    "retired_pages": ("query", "a pending page retirement"),
    "clock_reasons": ("query", "HW Slowdown, HW Thermal, HW Power Brake or SW Thermal slowdown active"),
    "fabric_state": ("query_fabric", "State not Completed or Status not Success on a GPU (In Progress past "
                                     "the retry window; Not Supported on GB200/GB300)"),
    "fabric_health": ("query_fabric", "Summary not Healthy, Bandwidth not Full (Limited Capacity), or a "
                                      "health row True"),
    "fabric_clique": ("query_fabric", "ClusterUUID or CliqueId zero or N/A, or a tray's GPUs in two cliques"),
    "platform_info": ("query_fabric", "GPUs of a tray name different chassis/slot/tray, or peer type not "
                                      "Switch Connected"),
    "fabric_domain": ("(whole rack)", "the rack's trays are not one (ClusterUUID, CliqueId) group of the "
                                      "expected trays and GPUs: a split clique, named half by half"),
    "tray_identity": ("(whole rack)", "two trays report the same chassis:slot:tray"),
    "imex_node": ("(whole rack)", "this tray's IMEX node is not READY in most trays' nvidia-imex-ctl -N views "
                                  "(the tray by its inventory imex_address or address; when no tray has "
                                  "that address, node #k is the supernode's k-th host)"),
    "imex_domain": ("imex", "a pair of READY nodes not Connected, versions differ, Domain not UP with every "
                            "node READY, or fewer IMEX nodes than hosts"),

    "fabric_manager": ("fabric_manager", "nvidia-fabricmanager not active (HGX only)"),
    **IB_FACTS,
    "dcgmi_diag": ("dcgmi_diag", "a Fail result or a DCGM error"),
}
