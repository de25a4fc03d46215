"""The Huawei Ascend vendor plug-in: npu-smi / hccn_tool facts, hccl_test, torch_npu (npu + hccl)."""

from __future__ import annotations

from sncheck.vendors.base import CollectiveTool, Platform, Vendor
from sncheck.vendors.ascend import asys, checks, collected, hccl_test, hccn_tool, npu_smi, sweep

CM384 = Platform(
    name="ascend-cm384", vendor="ascend",
    description="Huawei CloudMatrix384: 48 nodes x 8 Ascend 910C (16 dies) on one Unified Bus; RoCE scale-out",
    cards_per_host=16, devices_per_package=2, domain_hosts=48,
    # UB: about 392 GB/s per 910C package a direction, 196 GB/s per die; RoCE 400 Gb/s
    # per package, 200 Gb/s per die.
    design={"scale_up": ("196 GB/s", "3 us"), "scale_out": ("200 Gb/s", "10 us")},
    checks=("info", "health", "ecc", "topo", "spod", "roce_link", "roce_net_health", "roce_optical", "roce_fec"),
    params={"hbm_MB": 65536, "super_pod_size": 384},
    card_memory_GiB=64.0,  # 910C: 128 GB per package, two devices (ranks) per package
)

VENDOR = Vendor(
    name="ascend",
    commands=checks.COMMANDS,
    facts=checks.FACTS,
    parsers={
        "npu-smi": npu_smi.parse_info,
        "npu-smi-fields": npu_smi.parse_fields,
        "npu-smi-health": npu_smi.parse_health,
        "npu-smi-ecc": npu_smi.parse_ecc,
        "npu-smi-hbm": npu_smi.parse_hbm,
        "npu-smi-spod": npu_smi.parse_spod,
        "npu-smi-topo": npu_smi.parse_topo,
        "npu-smi-mapping": npu_smi.parse_mapping,
        "npu-smi-help": npu_smi.parse_help,
        "hccn-net-health": hccn_tool.parse_net_health,
        "hccn-link": hccn_tool.parse_link,
        "hccn-optical": hccn_tool.parse_optical,
        "hccn-fec": hccn_tool.parse_fec,
        "hccn-stat": hccn_tool.parse_stat,
        "hccn-link-stat": hccn_tool.parse_link_stat,
        "hccn-lldp": hccn_tool.parse_lldp,
        "hccn-ip": hccn_tool.parse_ip,
        "hccn-route": hccn_tool.parse_route,
        "hccn-status": hccn_tool.parse_status,
        "hccn-hw-stats": hccn_tool.parse_hw_stats,
        "hccn-ping": hccn_tool.parse_ping,
        "hccn-conf": hccn_tool.parse_hccn_conf,
        "ascend-sweep": sweep.parse_sweep,
        "ascend-collected": collected.parse_collected,
        "hccl-test": hccl_test.parse_hccl_test,
        "asys": asys.parse_asys,
        "ascend-dmi": asys.parse_ascend_dmi,
    },
    platforms={CM384.name: CM384},
    default_checks=CM384.checks,
    collective=CollectiveTool("hccl_test", {"all_reduce": "all_reduce_test", "all_to_all": "alltoall_test",
                                            "sendrecv": "send_recv_test"}, hccl_test.parse_hccl_test),
    torch_device="npu", dist_backend="hccl", torch_module="torch_npu",
    visible_devices_env="ASCEND_RT_VISIBLE_DEVICES",  # logical device ids, the dies npu-smi lists
    domain_check=checks.domain_check,
)
