"""The Huawei Ascend vendor plug-in: npu-smi / hccn_tool facts, hccl_test, torch_npu (npu + hccl)."""

from __future__ import annotations

from sncheck.vendors.base import CollectiveTool, Platform, Vendor, View
from sncheck.vendors.listing import FIELDS, Listing
from sncheck.vendors.ascend import asys, checks, collected, hccl_test, hccn_tool, npu_smi, sweep

CM384 = Platform(
    name="ascend-cm384", vendor="ascend",
    description="Huawei CloudMatrix384: 48 nodes x 8 Ascend 910C (16 dies) on one Unified Bus; RoCE scale-out",
    cards_per_host=16, devices_per_package=2, domain_hosts=48,
    # UB: about 392 GB/s per 910C package a direction, 196 GB/s per die; RoCE 400 Gb/s
    # per package, 200 Gb/s per die.
    design={"scale_up": ("196 GB/s", "3 us"), "scale_out": ("200 Gb/s", "10 us")},
    checks=("info", "health", "ecc", "board", "topo", "spod", "roce_link", "roce_net_health", "roce_optical", "roce_fec"),
    params={"hbm_MB": 65536, "super_pod_size": 384},
    card_memory_GiB=64.0,  # 910C: 128 GB per package, two devices (ranks) per package
    # CloudMatrix384: about 300 PFLOP/s dense BF16 over 768 dies (ranks); no FP8 on the 910C
    peak_tflops={"bf16": 390.6, "fp16": 390.6},
)

VENDOR = Vendor(
    name="ascend",
    commands=checks.COMMANDS,
    facts=checks.FACTS,
    # `sncheck parse` views and what one record of each is
    views={
        "npu-smi": View(npu_smi.parse_info, Listing("chip", ("chips",), ident=("npu", "chip"), cards=True)),
        "npu-smi-fields": View(npu_smi.parse_fields, Listing("chip", ("chips",))),
        "npu-smi-health": View(npu_smi.parse_health, Listing("field", (FIELDS,))),
        "npu-smi-ecc": View(npu_smi.parse_ecc),
        "npu-smi-hbm": View(npu_smi.parse_hbm, Listing("field", (FIELDS,))),
        "npu-smi-spod": View(npu_smi.parse_spod, Listing(
            "field", (FIELDS,), required=("super_pod_size", "super_pod_id"))),  # the 950 prints no SDID
        "npu-smi-topo": View(npu_smi.parse_topo, Listing("NPU", ("devices", "matrix"), square=("matrix",))),
        "npu-smi-mapping": View(npu_smi.parse_mapping, Listing("chip", ("chips",), ident=("npu", "chip"))),
        "npu-smi-help": View(npu_smi.parse_help),
        "hccn-net-health": View(hccn_tool.parse_net_health),
        "hccn-link": View(hccn_tool.parse_link),
        "hccn-optical": View(hccn_tool.parse_optical),
        "hccn-fec": View(hccn_tool.parse_fec),
        "hccn-stat": View(hccn_tool.parse_stat),
        "hccn-link-stat": View(hccn_tool.parse_link_stat),
        "hccn-lldp": View(hccn_tool.parse_lldp, Listing("TLV", ("tlvs",))),
        "hccn-ip": View(hccn_tool.parse_ip),
        "hccn-route": View(hccn_tool.parse_route, Listing("route", ("routes",))),
        "hccn-status": View(hccn_tool.parse_status, Listing("field", (FIELDS,))),
        "hccn-hw-stats": View(hccn_tool.parse_hw_stats, Listing("counter", ("counters",))),
        "hccn-ping": View(hccn_tool.parse_ping),
        "hccn-conf": View(hccn_tool.parse_hccn_conf, Listing("device", ("devices",))),
        "ascend-sweep": View(sweep.parse_sweep, Listing("device", ("devices",), cards=True)),
        "ascend-collected": View(collected.parse_collected, Listing("command", ("sections",), nested="sections")),
        "hccl-test": View(hccl_test.parse_hccl_test, Listing("row", ("rows",))),
        "asys": View(asys.parse_asys, Listing("report", ("reports",))),
        "ascend-dmi": View(asys.parse_ascend_dmi, Listing(
            "result", ("bandwidth", "compute"), ("matrices", "matrices.*"), square=("matrices.*",))),
    },
    platforms={CM384.name: CM384},
    default_checks=CM384.checks,
    collective=CollectiveTool("hccl_test", {"all_reduce": "all_reduce_test", "all_to_all": "alltoall_test",
                                            "sendrecv": "send_recv_test"}, hccl_test.parse_hccl_test),
    torch_device="npu", dist_backend="hccl", torch_module="torch_npu",
    visible_devices_env="ASCEND_RT_VISIBLE_DEVICES",  # logical device ids, the dies npu-smi lists
    domain_check=checks.domain_check,
)
