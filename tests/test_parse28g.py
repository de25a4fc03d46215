"""Issue 28, task parse28g: grammars from the newest sources. Each test failed on main before its fix."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# fragments whose keys only amd-smi of ROCm 6.4 to 7.1 prints (grep-ed, so no 'GPU: n' line to hold them up)
_NEWER_AMD_SMI = (
    # static --ras, ROCm 7.1 (amdsmi_commands.py l.771: ras_dict's bad_page_threshold, ..._exceeded)
    "BAD_PAGE_THRESHOLD: 128\nBAD_PAGE_THRESHOLD_EXCEEDED: False\n",
    # static --partition, ROCm 7.1 (static_dict['partition'] = {"accelerator_partition": ...})
    "ACCELERATOR_PARTITION: CPX\n",
    # metric --throttle, ROCm 7.0+ (the gfx_clk_below_host_limit violation counters)
    "GFX_CLK_BELOW_HOST_LIMIT_POWER_ACCUMULATED: 0\nGFX_CLK_BELOW_HOST_LIMIT_POWER_VIOLATION_STATUS: NOT ACTIVE\n",
    # metric -b, ROCm 7.1 (values_dict['base_board'] = {'temperature': ...}; the sensor names come at run time)
    "GPU: 0\n    BASE_BOARD:\n        UBB_FRONT: 55\n",
)


def test_amd_smi_reads_the_keys_rocm_6_4_to_7_1_print() -> None:
    """The key vocabulary stopped at amdsmi's Oct 2024 source (ROCm 6.2/6.3-staging): a grep of amd-smi
    7.1's bad-page threshold or accelerator partition was refused as another tool's text (exit 1). The
    vocabulary is now read from ROCm 6.3-7.0.2's py-interface and ROCm 7.1's CLI as well (scripts/amd-smi-keys.py)."""
    from sncheck.vendors.amd.amd_smi_keys import KEYS
    from sncheck.vendors.parsers import parse_text

    for text in _NEWER_AMD_SMI:
        got = parse_text("amd-smi", text)
        assert got["errors"] == [] and got["gpus"], (text, got)
    assert {"BAD_PAGE_THRESHOLD", "ACCELERATOR_PARTITION", "XGMI_LINK_STATUS", "CREATOR_ID"} <= KEYS
    # the header names every source it was read from, the newest included
    head = (REPO / "sncheck/vendors/amd/amd_smi_keys.py").read_text().split('"""')[1]
    assert "rocm-6.2.2" in head and "7.0.2" in head and "base/amdsmi" in head, head
