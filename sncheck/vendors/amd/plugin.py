"""The AMD vendor plug-in: amd-smi / rocm-smi facts, rccl-tests, torch on ROCm (cuda + rccl)."""

from __future__ import annotations

from sncheck.vendors.base import CopyBench, Platform, Vendor
from sncheck.vendors.infiniband.scaleout import SCALE_OUT
from sncheck.vendors.nccltests import parse as nccl_tests  # rccl-tests prints the nccl-tests layout
from sncheck.vendors.nccltests.tool import RCCL_TESTS
from sncheck.vendors.amd import amd_smi, checks, rocm_smi, transferbench

MI300X = Platform(
    name="amd-mi300x", vendor="amd",
    description="8x AMD Instinct MI300X (OAM) per host on an XGMI full mesh; RoCE/IB scale-out",
    cards_per_host=8, domain_hosts=1,
    # XGMI: 7 links per GPU, 64 GB/s a direction each (one link per GPU pair);
    # scale-out one 400 Gb/s NIC per GPU.
    design={"scale_up": ("64 GB/s", "3 us"), "scale_out": ("400 Gb/s", "5 us")},
    checks=("monitor", "showtopo", "ecc_blocks", "metric", "ibstat"),
    # p2p_GBps: TransferBench p2p's unidirectional GPU->GPU copy of a healthy MI300X (AMD's
    # acceptance guide prints a 48.44 GB/s average; fixtures/real/amd/22_...), judged at 80 %.
    params={"xgmi_links_per_gpu": 7, "xgmi_bit_rate_Gbps": 32.0, "pcie_width": 16, "p2p_GBps": 48.0},
    card_memory_GiB=192.0,  # MI300X: 192 GB HBM3
)

# TransferBench's peer-to-peer preset: every GPU pair's copy, against the platform's p2p_GBps.
TRANSFERBENCH = CopyBench(
    "transferbench", ("TransferBench", "p2p"), transferbench.parse_transferbench,
    lambda host, parsed, d2d, params: (checks.check_transferbench_p2p(host, parsed, pair_GBps=params["p2p_GBps"])
                                       if params.get("p2p_GBps") else []),
    "transferbench_p2p")

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
    collective=RCCL_TESTS,
    torch_device="cuda", dist_backend="nccl",  # ROCm builds of torch: HIP behind torch.cuda, RCCL behind "nccl"
    visible_devices_env="HIP_VISIBLE_DEVICES",
    scale_out=SCALE_OUT, copy_bench=TRANSFERBENCH,
)
