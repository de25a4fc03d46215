"""The fixed records amd-smi prints inside a section: a dict of the same keys in the same order
each time, read in amd-smi's source (the dict literals of amdsmi_cli/amdsmi_commands.py and
py-interface/amdsmi_interface.py, ROCm/amdsmi rocm-5.5.0 to amd-staging of Oct 2024 and ROCm
7.1.0's CLI). A section at the end of the output whose keys begin such a record and stop short
of every record they begin, equal to none, was cut between two of its lines: the one place a
cut at a line boundary shows in amd-smi's text (a section's number of entries is stated nowhere).
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
