"""The AMD vendor plug-in: amd-smi / rocm-smi facts, rccl-tests, torch on ROCm (cuda + rccl)."""

from __future__ import annotations

from sncheck.vendors.base import CopyBench, Platform, Vendor, View
from sncheck.vendors.infiniband.scaleout import SCALE_OUT
from sncheck.vendors.listing import Listing
from sncheck.vendors.nccltests.tool import RCCL_TESTS
from sncheck.vendors.amd import amd_smi, amd_smi_xgmi, buses, checks, rocm_smi, transferbench

MI300X = Platform(
    name="amd-mi300x", vendor="amd",
    description="8x AMD Instinct MI300X (OAM) per host on an XGMI full mesh; RoCE/IB scale-out",
    cards_per_host=8, domain_hosts=1,
    # XGMI: 7 links per GPU, 64 GB/s a direction each (one link per GPU pair);
    # scale-out one 400 Gb/s NIC per GPU.
    design={"scale_up": ("64 GB/s", "3 us"), "scale_out": ("400 Gb/s", "5 us")},
    checks=("list", "monitor", "showtopo", "ecc_blocks", "metric", "ibstat"),
    # p2p_GBps: TransferBench p2p's unidirectional GPU->GPU copy of a healthy MI300X (AMD's
    # acceptance guide prints a 48.44 GB/s average; fixtures/real/amd/22_...), judged at 80 %.
    params={"xgmi_links_per_gpu": 7, "xgmi_bit_rate_Gbps": 32.0, "pcie_width": 16, "p2p_GBps": 48.0},
    card_memory_GiB=192.0,  # MI300X: 192 GB HBM3
    peak_tflops={"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},  # MI300X dense matrix TFLOP/s (AMD's data sheet)
)

# TransferBench's peer-to-peer preset: every GPU pair's copy, against the platform's p2p_GBps.
TRANSFERBENCH = CopyBench(
    "transferbench", ("TransferBench", "p2p"), transferbench.parse_transferbench,
    lambda host, parsed, _d2d, params: (checks.check_transferbench_p2p(host, parsed, pair_GBps=params["p2p_GBps"])
                                       if params.get("p2p_GBps") else []),
    "transferbench_p2p")

VENDOR = Vendor(
    name="amd",
    commands=checks.COMMANDS,
    facts=checks.FACTS,
    # `sncheck parse` views and what one record of each is (rccl-tests: the shared nccl-tests
    # layout's view, in vendors/parsers.py)
    views={
        "amd-smi": View(amd_smi.parse_amd_smi, Listing("GPU", ("gpus",), ident=("gpu",), cards=True)),
        "amd-smi-json": View(amd_smi.parse_amd_smi_json, Listing("GPU", ("gpus",), ident=("gpu",))),
        "amd-smi-monitor": View(amd_smi.parse_amd_smi_monitor, Listing("GPU", ("gpus",), ident=("gpu",), cards=True)),
        "amd-smi-topology": View(amd_smi.parse_amd_smi_topology, Listing("GPU", ("tables.*",), square=("tables.*",))),
        "amd-smi-xgmi": View(amd_smi_xgmi.parse_amd_smi_xgmi, Listing("GPU", ("gpus",), ident=("gpu",))),
        "rocm-smi": View(rocm_smi.parse_concise, Listing("GPU", ("gpus",))),
        "rocm-smi-showtopo": View(rocm_smi.parse_showtopo, Listing(
            "GPU", ("gpus", "weight", "hops", "link_type", "numa"), square=("weight", "hops", "link_type", "numa"),
            cards=True)),
        "rocm-smi-showpids": View(rocm_smi.parse_showpids, Listing("process", ("processes",))),
        # a Test's executors and transfers are its config line's (its Aggregate line ends it), not the other Tests'
        "transferbench": View(transferbench.parse_transferbench, Listing(
            "test", ("tests",), ("matrices", "matrices.*.rows", "scaling.rows"), square=("matrices.*.rows",),
            stated=("executors", "transfers"))),
    },
    platforms={MI300X.name: MI300X},
    default_checks=MI300X.checks,
    collective=RCCL_TESTS,
    torch_device="cuda", dist_backend="nccl",  # ROCm builds of torch: HIP behind torch.cuda, RCCL behind "nccl"
    visible_devices_env="HIP_VISIBLE_DEVICES",
    scale_out=SCALE_OUT, copy_bench=TRANSFERBENCH, bus_listing=buses.BUS_LISTING,
    kernel_log_words=("amdgpu",),
)
