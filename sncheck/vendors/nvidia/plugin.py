"""The NVIDIA vendor plug-in: fact commands, parsers, platforms, nccl-tests, torch cuda+nccl."""

from __future__ import annotations

from sncheck.vendors.base import CardListing, CopyBench, Platform, Vendor, View
from sncheck.vendors.infiniband.scaleout import SCALE_OUT
from sncheck.vendors.listing import Listing
from sncheck.vendors.nccltests.tool import NCCL_TESTS
from sncheck.vendors.nvidia import buses, checks, dcgmi, fabric, fabric_checks, nvbandwidth, nvidia_smi, smi_table

NVL72 = Platform(
    name="nvidia-nvl72", vendor="nvidia",
    description="GB200/GB300 NVL72 rack: 18 compute trays x 4 GPUs on one NVLink domain (MNNVL, IMEX)",
    cards_per_host=4, domain_hosts=18,
    # NVLink 5: 18 links x 50 GB/s a direction per GPU (nvidia-smi lists 53.125 GB/s raw);
    # scale-out one 400 Gb/s ConnectX-7/8 NIC per GPU.
    design={"scale_up": ("900 GB/s", "3 us"), "scale_out": ("400 Gb/s", "5 us")},
    checks=("query_gpu", "topo", "nvlink_status", "nvlink_errors", "query_fabric", "imex", "ibstat",
            "dcgmi_diag"),
    params={"nvlinks_per_gpu": 18, "nvlink_GBps": 53.125, "fabric_retry_s": 300.0, "fabric_retry_every_s": 10.0},
    card_memory_GiB=186.0,  # GB200: 186 GiB HBM3e usable per GPU
    # GB200 NVL72: 180 PFLOP/s dense BF16 a rack (360 with sparsity), 2.5 PFLOP/s a GPU; FP8 twice that
    peak_tflops={"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0},
)
HGX = Platform(
    name="nvidia-hgx", vendor="nvidia",
    description="HGX H100/H200/B200 8-GPU board: NVSwitch inside the host, fabric manager required",
    cards_per_host=8, domain_hosts=1,
    design={"scale_up": ("450 GB/s", "3 us"), "scale_out": ("400 Gb/s", "5 us")},
    checks=("query_gpu", "topo_sanity", "nvlink_status", "nvlink_errors", "query", "fabric_manager", "ibstat",
            "dcgmi_diag"),
    params={"nvlinks_per_gpu": 18, "nvlink_GBps": 26.562, "nic_per_gpu": True},
    # H100/H200 SXM: 989.4 TFLOP/s dense BF16, FP8 twice that (a B200 board: --peak-tflops 2250)
    peak_tflops={"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
)

# The copy-engine matrices inside a host, against the scale-up design (host-to-device
# against the platform's h2d_GBps where it names one).
NVBANDWIDTH_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce")
NVBANDWIDTH = CopyBench(
    "nvbandwidth", ("nvbandwidth", "-t", *NVBANDWIDTH_TESTS), nvbandwidth.parse_nvbandwidth,
    lambda host, parsed, d2d, params: nvbandwidth.check_nvbandwidth(host, parsed, d2d_GBps=d2d,
                                                                    h2d_GBps=params.get("h2d_GBps")),
    "nvbandwidth_d2d", ("nvbandwidth_h2d",))

VENDOR = Vendor(
    name="nvidia",
    commands=checks.COMMANDS,
    facts=checks.FACTS,
    # `sncheck parse` views and what one record of each is (nccl-tests and ibstat: the shared
    # tools' views, in vendors/parsers.py)
    views={
        "nvidia-smi": View(smi_table.parse_smi_table, Listing("GPU", ("gpus",), ident=("bus_id",), cards=True)),
        "nvidia-smi-topo": View(nvidia_smi.parse_topo, Listing("GPU", ("gpus",), ("matrix",), cards=True)),
        "nvidia-smi-q": View(nvidia_smi.parse_query, Listing("GPU", ("gpus",), ident=("bus_id",), cards=True)),
        "nvidia-smi-qx": View(fabric.parse_query_xml, Listing("GPU", ("gpus",), ident=("bus_id",), cards=True)),
        "nvidia-smi-fabric": View(fabric.parse_fabric, Listing("GPU", ("gpus",))),
        "nvlink-status": View(nvidia_smi.parse_nvlink_status, Listing("GPU", ("gpus",), ident=("index",), cards=True)),
        # every link's counters (the three to driver 580, NVLink 5's from 595): the parser checks them
        "nvlink-errors": View(nvidia_smi.parse_nvlink_errors, Listing("GPU", ("gpus",), ident=("index",), cards=True)),
        "nvlink-info": View(fabric.parse_nvlink_info, Listing("GPU", ("gpus",), ident=("index",))),
        "nvidia-smi-query-gpu": View(nvidia_smi.parse_query_gpu_csv,
                                     Listing("GPU", ("gpus",), ident=("index",), cards=True,
                                             unique=("pci.bus_id", "uuid"))),
        "imex-ctl": View(fabric.parse_imex_ctl, Listing("node", ("nodes",), ("matrix",))),
        "nccl-mnnvl": View(fabric.parse_nccl_mnnvl),
        "dcgmi-diag": View(dcgmi.parse_dcgmi_diag, Listing("GPU", ("gpus",))),
        # a testcase's matrix is one CPU row or a row per GPU, by its title: not compared between testcases
        "nvbandwidth": View(nvbandwidth.parse_nvbandwidth, Listing("testcase", ("tests",), ("tests.*.matrix",),
                                                                   optional=("matrix",), closing=nvbandwidth.CLOSING)),
    },
    platforms={p.name: p for p in (NVL72, HGX)},
    default_checks=checks.DEFAULT_CHECKS,
    collective=NCCL_TESTS,
    torch_device="cuda", dist_backend="nccl",
    card_listing=CardListing("query_gpu", lambda parsed: len(parsed.get("gpus") or [])),
    scale_out=SCALE_OUT, copy_bench=NVBANDWIDTH, bus_listing=buses.BUS_LISTING,
    domain_check=fabric_checks.domain_check,
    kernel_log_words=("NVRM", "Xid", "XID", "nvidia"),
)
