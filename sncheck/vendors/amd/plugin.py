"""The AMD vendor plug-in: amd-smi / rocm-smi facts, rccl-tests, torch on ROCm (cuda + rccl)."""

from __future__ import annotations

from sncheck.vendors.base import CollectiveTool, Platform, Vendor
from sncheck.vendors.nvidia import nccl_tests  # rccl-tests prints the nccl-tests layout
from sncheck.vendors.amd import amd_smi, checks, rocm_smi, transferbench

MI300X = Platform(
    name="amd-mi300x", vendor="amd",
    description="8x AMD Instinct MI300X (OAM) per host on an XGMI full mesh; RoCE/IB scale-out",
    cards_per_host=8, domain_hosts=1,
    # XGMI: 7 links per GPU, 64 GB/s a direction each (one link per GPU pair);
    # scale-out one 400 Gb/s NIC per GPU.
    design={"scale_up": ("64 GB/s", "3 us"), "scale_out": ("400 Gb/s", "5 us")},
    checks=("monitor", "showtopo", "ecc_blocks", "metric", "ibstat"),
    params={"xgmi_links_per_gpu": 7, "xgmi_bit_rate_Gbps": 32.0, "pcie_width": 16},
)

VENDOR = Vendor(
    name="amd",
    commands=checks.COMMANDS,
    facts=checks.FACTS,
    parsers={
        "amd-smi": amd_smi.parse_amd_smi,
        "amd-smi-json": amd_smi.parse_amd_smi_json,
        "amd-smi-monitor": amd_smi.parse_amd_smi_monitor,
        "amd-smi-topology": amd_smi.parse_amd_smi_topology,
        "amd-smi-xgmi": amd_smi.parse_amd_smi_xgmi,
        "rocm-smi": rocm_smi.parse_concise,
        "rocm-smi-showtopo": rocm_smi.parse_showtopo,
        "rocm-smi-showpids": rocm_smi.parse_showpids,
        "transferbench": transferbench.parse_transferbench,
        "rccl-tests": nccl_tests.parse_rccl_tests,
    },
    platforms={MI300X.name: MI300X},
    default_checks=MI300X.checks,
    collective=CollectiveTool("rccl-tests", {"all_reduce": "all_reduce_perf", "all_to_all": "alltoall_perf",
                                             "sendrecv": "sendrecv_perf"}, nccl_tests.parse_rccl_tests),
    torch_device="cuda", dist_backend="nccl",  # ROCm builds of torch: HIP behind torch.cuda, RCCL behind "nccl"
    visible_devices_env="HIP_VISIBLE_DEVICES",
)
