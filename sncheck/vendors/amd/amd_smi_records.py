"""The fixed records amd-smi prints inside a section: a dict of the same keys in the same order
each time, read in amd-smi's source (the dict literals of amdsmi_cli/amdsmi_commands.py and
py-interface/amdsmi_interface.py, ROCm/amdsmi rocm-5.5.0 to amd-staging of Oct 2024 and ROCm
7.1.0's CLI; round 15: static's ASIC, BUS, BOARD, VBIOS/IFWI, LIMIT and cache dicts and metric's USAGE,
PCIE, POWER and TEMPERATURE at the tags rocm-5.7.0, 6.0.0, 6.1.0, 6.2.2 and amd-staging 2024-10-23,
and where a later version added a key, AMD's own changelog and PR captures in fixtures/real, named
beside each). A section at the end of the output whose keys begin such a record and stop short of
every record they begin, equal to none, was cut between two of its lines: the one place a cut at a
line boundary shows in amd-smi's text (a section's number of entries is stated nowhere). A section
whose keys vary by option, device or version (PARTITION, RAS, THROTTLE, the baseboard's sensors)
has no record: a cut there, or between two whole sections, reads as a shorter output.
"""

from __future__ import annotations

from typing import Any

RECORDS: tuple[tuple[str, ...], ...] = (
    # metric --clock, each clock's dict (GFX_0, MEM_0, VCLK_0, ...)
    ("CUR_CLK", "AVG_CLK", "MIN_CLK", "MAX_CLK"),  # rocm-5.5.0 amdsmi_interface.py
    ("CUR_CLK", "MAX_CLK", "MIN_CLK"),  # rocm-5.7.0
    ("CUR_CLK", "MAX_CLK", "MIN_CLK", "SLEEP_CLK"),  # rocm-6.0.0 amdsmi_commands.py
    ("CLK", "MAX_CLK", "MIN_CLK", "SLEEP_CLK"),  # rocm-6.1.0
    ("CLK", "MIN_CLK", "MAX_CLK", "CLK_LOCKED", "DEEP_SLEEP"),  # rocm-6.2.0 to 7.1.0
    # metric --ecc-blocks, each block's counts (UMC, SDMA, XGMI_WAFL, ...)
    ("CORRECTABLE_COUNT", "UNCORRECTABLE_COUNT"),  # rocm-5.5.0 to 6.1.x
    ("CORRECTABLE_COUNT", "UNCORRECTABLE_COUNT", "DEFERRED_COUNT"),  # rocm-6.2.0 to 7.1.0
    # process, each process's MEMORY_USAGE
    ("GTT_MEM", "CPU_MEM", "VRAM_MEM"),  # rocm-5.5.0 to 7.1.0
    # list, each GPU's (AmdSmiCommands.list's store_output calls, in order)
    ("BDF", "UUID"),  # rocm-6.0.0 to 6.2.2
    ("BDF", "UUID", "KFD_ID", "NODE_ID", "PARTITION_ID"),  # from 3b7f661 + c9a489d (2024-09-20; ROCm 6.3.0) to 7.1.0
    # static --asic (amdsmi_get_gpu_asic_info's dict, printed as is to 6.2.2; the CLI's asic_dict after)
    ("MARKET_NAME", "VENDOR_ID", "SUBVENDOR_ID", "DEVICE_ID", "REV_ID", "ASIC_SERIAL"),  # rocm-5.7.0
    ("MARKET_NAME", "VENDOR_ID", "VENDOR_NAME", "SUBVENDOR_ID", "DEVICE_ID", "REV_ID", "ASIC_SERIAL",
     "XGMI_PHYSICAL_ID"),  # rocm-6.0.0
    ("MARKET_NAME", "VENDOR_ID", "VENDOR_NAME", "SUBVENDOR_ID", "DEVICE_ID", "REV_ID", "ASIC_SERIAL",
     "OAM_ID"),  # rocm-6.1.0 to 6.2.2
    ("MARKET_NAME", "VENDOR_ID", "VENDOR_NAME", "SUBVENDOR_ID", "DEVICE_ID", "SUBSYSTEM_ID", "REV_ID", "ASIC_SERIAL",
     "OAM_ID", "NUM_COMPUTE_UNITS", "TARGET_GRAPHICS_VERSION"),  # amd-staging Oct 2024 (asic_dict) to ROCm 7.0
    ("MARKET_NAME", "VENDOR_ID", "VENDOR_NAME", "SUBVENDOR_ID", "DEVICE_ID", "SUBSYSTEM_ID", "REV_ID", "ASIC_SERIAL",
     "OAM_ID", "NUM_COMPUTE_UNITS", "TARGET_GRAPHICS_VERSION", "FLAGS"),  # MI350X, rocm-systems PR 2987 (harvest9)
    # static --board (amdsmi_get_gpu_board_info's dict)
    ("MODEL_NUMBER", "PRODUCT_SERIAL", "FRU_ID", "PRODUCT_NAME"),  # rocm-6.0.0 (the 6.0 README's Navi 21)
    ("MODEL_NUMBER", "PRODUCT_SERIAL", "FRU_ID", "PRODUCT_NAME", "MANUFACTURER_NAME"),  # rocm-6.1.0 to Oct 2024
    ("MODEL_NUMBER", "PRODUCT_SERIAL", "FRU_ID", "MANUFACTURER_NAME", "PRODUCT_NAME"),  # 6.3 on (changelog captures)
    # static --vbios and --ifwi (amdsmi_get_gpu_vbios_info, rocm-6.0.0 on); static --driver's, kept whole as they
    # stand: both begin with NAME, and a driver's NAME, VERSION begins no record it is not
    ("NAME", "BUILD_DATE", "PART_NUMBER", "VERSION"),
    ("NAME", "VERSION"), ("NAME", "VERSION", "OS_KERNEL_VERSION"),
    ("DRIVER_NAME", "DRIVER_VERSION"), ("DRIVER_NAME", "DRIVER_VERSION", "DRIVER_DATE"),
    # static --bus (the CLI's bus_info)
    ("BDF", "MAX_PCIE_SPEED", "MAX_PCIE_LANES", "PCIE_INTERFACE_VERSION", "SLOT_TYPE"),  # rocm-6.0.0
    ("BDF", "MAX_PCIE_WIDTH", "MAX_PCIE_SPEED", "PCIE_INTERFACE_VERSION", "SLOT_TYPE"),  # rocm-6.1.0 to Oct 2024
    ("BDF", "MAX_PCIE_WIDTH", "MAX_PCIE_SPEED", "PCIE_LEVELS", "PCIE_INTERFACE_VERSION", "SLOT_TYPE"),  # 26.2.1 (harvest20)
    # metric --usage (amdsmi_get_gpu_activity renamed, then with the metrics' VCN/JPEG and XCP busy lists)
    ("GFX_USAGE", "MEM_USAGE", "MM_IP_USAGE"),  # rocm-6.0.0
    ("GFX_ACTIVITY", "UMC_ACTIVITY", "MM_ACTIVITY", "VCN_ACTIVITY"),  # the MI300X blog's (fixtures/real/amd/04)
    ("GFX_ACTIVITY", "UMC_ACTIVITY", "MM_ACTIVITY", "VCN_ACTIVITY", "JPEG_ACTIVITY"),  # rocm-6.1.0 to 6.2.2
    ("GFX_ACTIVITY", "UMC_ACTIVITY", "MM_ACTIVITY", "VCN_ACTIVITY", "JPEG_ACTIVITY", "GFX_BUSY_INST", "JPEG_BUSY",
     "VCN_BUSY", "GFX_BUSY_ACC"),  # amd-staging Oct 2024 on
    # metric --pcie (the CLI's pcie_dict)
    ("WIDTH", "SPEED", "REPLAY_COUNT", "L0_TO_RECOVERY_COUNT", "REPLAY_ROLL_OVER_COUNT", "NAK_SENT_COUNT",
     "NAK_RECEIVED_COUNT", "CURRENT_BANDWIDTH_SENT", "CURRENT_BANDWIDTH_RECEIVED", "MAX_PACKET_SIZE"),  # rocm-6.1.0
    ("WIDTH", "SPEED", "BANDWIDTH", "REPLAY_COUNT", "L0_TO_RECOVERY_COUNT", "REPLAY_ROLL_OVER_COUNT", "NAK_SENT_COUNT",
     "NAK_RECEIVED_COUNT", "CURRENT_BANDWIDTH_SENT", "CURRENT_BANDWIDTH_RECEIVED", "MAX_PACKET_SIZE"),  # rocm-6.2.x
    ("WIDTH", "SPEED", "BANDWIDTH", "REPLAY_COUNT", "L0_TO_RECOVERY_COUNT", "REPLAY_ROLL_OVER_COUNT", "NAK_SENT_COUNT",
     "NAK_RECEIVED_COUNT", "CURRENT_BANDWIDTH_SENT", "CURRENT_BANDWIDTH_RECEIVED", "MAX_PACKET_SIZE",
     "LC_PERF_OTHER_END_RECOVERY"),  # amd-staging Oct 2024 on
    # static --limit (the CLI's limit_info, each key set in turn)
    ("MAX_POWER", "CURRENT_POWER", "SLOWDOWN_EDGE_TEMPERATURE", "SLOWDOWN_HOTSPOT_TEMPERATURE",
     "SLOWDOWN_VRAM_TEMPERATURE", "SHUTDOWN_EDGE_TEMPERATURE", "SHUTDOWN_HOTSPOT_TEMPERATURE",
     "SHUTDOWN_VRAM_TEMPERATURE"),  # rocm-6.0.0
    ("MAX_POWER", "SOCKET_POWER", "SLOWDOWN_EDGE_TEMPERATURE", "SLOWDOWN_HOTSPOT_TEMPERATURE",
     "SLOWDOWN_VRAM_TEMPERATURE", "SHUTDOWN_EDGE_TEMPERATURE", "SHUTDOWN_HOTSPOT_TEMPERATURE",
     "SHUTDOWN_VRAM_TEMPERATURE"),  # rocm-6.1.x
    ("MAX_POWER", "MIN_POWER", "SOCKET_POWER", "SLOWDOWN_EDGE_TEMPERATURE", "SLOWDOWN_HOTSPOT_TEMPERATURE",
     "SLOWDOWN_VRAM_TEMPERATURE", "SHUTDOWN_EDGE_TEMPERATURE", "SHUTDOWN_HOTSPOT_TEMPERATURE",
     "SHUTDOWN_VRAM_TEMPERATURE"),  # rocm-6.2.0 to Oct 2024
    # metric --power (the CLI's power_dict) and --temperature (its temperatures)
    ("CURRENT_POWER", "CURRENT_GFX_VOLTAGE", "CURRENT_SOC_VOLTAGE", "CURRENT_MEM_VOLTAGE", "POWER_LIMIT",
     "POWER_MANAGEMENT", "THROTTLE_STATUS"),  # rocm-6.0.0
    ("SOCKET_POWER", "GFX_VOLTAGE", "SOC_VOLTAGE", "MEM_VOLTAGE", "POWER_MANAGEMENT", "THROTTLE_STATUS"),  # rocm-6.1.x
    ("SOCKET_POWER", "GFX_VOLTAGE", "SOC_VOLTAGE", "MEM_VOLTAGE", "THROTTLE_STATUS", "POWER_MANAGEMENT"),  # 6.2.0 on
    ("EDGE", "HOTSPOT", "MEM"),  # rocm-6.0.0 to Oct 2024
    # static --cache, each cache's dict (amdsmi_get_gpu_cache_info)
    ("CACHE_PROPERTIES", "CACHE_SIZE", "CACHE_LEVEL", "MAX_NUM_CU_SHARED", "NUM_CACHE_INSTANCE"),  # rocm-6.1.0 on
    ("CACHE_ACRONYM", "CACHE_PROPERTIES", "CACHE_SIZE", "CACHE_LEVEL", "MAX_NUM_CU_SHARED", "NUM_CACHE_INSTANCE",
     "TOTAL_CACHE_SIZE"),  # amdsmi 10.0 changelog (harvest17 06)
)


def cut_records(open_sections: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The sections still open at the output's end (name, its entries) whose entries are a record
    of RECORDS cut short: a proper prefix of a record, and whole as none."""
    out = []
    for name, entries in open_sections:
        keys = tuple(entries)
        begun = [r for r in RECORDS if r[: len(keys)] == keys]
        if keys and begun and keys not in RECORDS:
            missing = min(begun, key=len)[len(keys):]
            out.append(f"{name}: {len(keys)} of its record's fields, {', '.join(missing)} missing: cut short")
    return out
