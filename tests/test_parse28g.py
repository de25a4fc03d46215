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


_CLOCK = "harvest12/amd-smi/03_amd_smi_metric_clock_rocm_6.1.1_one_gpu_gfx_0_to_7_113mhz_mem_0_900mhz_vclk_dclk_0_to_3_clk_locked_deep_sleep_whole_amdsmi-changelog.txt"
_ECC = "amd/09_amd-smi_metric_ecc_blocks_all_zero_incl_xgmi_wafl_changelog.txt"
_PROCESS = "harvest14/amd-smi/10_amd_smi_process_sudo_rocm_6.2.0_gpu0_transferbench_pid_1693982_vram_10.1_gb_whole_amdsmi-changelog.txt"


def test_amd_smi_a_fixed_record_cut_between_its_lines_is_cut_short() -> None:
    """A clock's record (CLK, MIN_CLK, MAX_CLK, CLK_LOCKED, DEEP_SLEEP), an ECC block's counts, a
    process's MEMORY_USAGE: amd-smi prints each as one dict of fixed keys (amdsmi_commands.py and
    amdsmi_interface.py, rocm-5.5.0 to 7.1.0: sncheck/vendors/amd/amd_smi_records.py). Cut at a line
    boundary inside the last such record, the output read whole (exit 0: the random cuts' class 'one
    device's entries'); now cut short. The whole captures, and every version's whole record (5.7's
    three clock keys, 6.1's two counts), still read clean."""
    from sncheck.vendors.parsers import failures, parse_text, strip_source_header

    # (capture, the last record's first line, its lines the cut may stop after: a prefix no version prints whole)
    for rel, first, cuts in ((_CLOCK, "            CLK: 22 MHz\n", 4), (_ECC, "            CORRECTABLE_COUNT", 1),
                             (_PROCESS, "            GTT_MEM", 2)):
        body = strip_source_header((REPO / "fixtures/real" / rel).read_text(encoding="utf-8"))
        assert not failures(parse_text("amd-smi", body)), rel
        at = body.rindex(first)
        for _ in range(cuts):
            at = body.index("\n", at) + 1
            got = parse_text("amd-smi", body[:at])
            assert any("record's fields" in e and "cut short" in e for e in got["errors"]), (rel, body[:at][-120:])
    for whole in ("GPU: 0\n    CLOCK:\n        GFX_0:\n            CUR_CLK: 1 MHz\n            MAX_CLK: 2 MHz\n"
                  "            MIN_CLK: 1 MHz\n",
                  "GPU: 0\n    ECC_BLOCKS:\n        UMC:\n            CORRECTABLE_COUNT: 0\n            UNCORRECTABLE_COUNT: 0\n"):
        assert parse_text("amd-smi", whole)["errors"] == [], whole


def test_ib_counters_a_line_that_is_no_counter_line_is_not_read() -> None:
    """sncheck's sysfs read prints 'path:value' lines and its end line, nothing else; a paste wrapped at
    its width broke a long line in two: its head read a wrong value ('port_xmit_packets:11134960737' of
    111349607370), its tail ('0') was dropped silently, exit 0 (the delivery matrix's 'hard wrap 80'
    cell). Any other line before the end is now said with its line: exit 1."""
    from sncheck.cli.main import main  # noqa: F401 -- the view registry
    from sncheck.vendors.infiniband.counters import END_MARKER
    from sncheck.vendors.parsers import failures, parse_text

    root = "/sys/class/infiniband/mlx5_0/ports/1/counters/"
    whole = f"{root}port_rcv_errors:0\n{root}port_xmit_packets:111349607370\n{END_MARKER}\n"
    assert failures(parse_text("ib-counters", whole)) == []
    wrapped = "\n".join(ln[i:i + 70] for ln in whole.splitlines() for i in range(0, len(ln), 70)) + "\n"
    got = parse_text("ib-counters", wrapped)
    assert any(e.startswith("line 3 is no '<dev>/ports/<n>/counters/<name>:<value>' line ('607370'") for e in got["errors"]), got
    assert failures(got)
    # a prompt the reporter pasted, and lines after the end, are no line of the read's either way
    assert failures(parse_text("ib-counters", "$ \n" + whole + "$ exit\n")) == []


def test_an_indented_paste_of_labelled_lines_loses_both() -> None:
    """A labelled log pasted indented (a markdown list's code block, a quoted mail): the shared
    indentation hid the labels ('    nid005113 out: ...', Fabric's host label), which stayed on every
    line: rocm-smi's Concise Info read no table, exit 1 (the delivery matrix's rocm-smi x 4-space indent).
    The labels behind the indentation are taken as they are without it."""
    from sncheck.vendors.delivery import unwrap

    plain = "GPU 0: ok\nGPU 1: failed\n"
    for label in ("nid005113 out: ", "0: ", "[1,0]<stdout>:", "node07: "):
        pasted = "".join(f"    {label}{ln}\n" for ln in plain.splitlines())
        assert unwrap(pasted) == plain, label
    # indentation alone, no label behind it: the tool's own relative indentation stays
    assert unwrap("    GPU: 0\n        BDF: 0000:05:00.0\n") == "GPU: 0\n    BDF: 0000:05:00.0\n"


def test_nvlink_a_gpu_line_that_ends_inside_its_uuid_is_not_whole() -> None:
    """'GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-...)' wrapped at 80 columns: the name read as 'NVIDIA
    A100-PCIE-40GB (UUID: GPU-3fb1...' and the tail line was dropped, exit 0 on another name (the delivery
    matrix's nvlink-status x hard wrap 80). nvidia-smi closes the UUID's parenthesis on the line."""
    from sncheck.vendors.parsers import failures, parse_text

    line = "GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-3fb142e7-7102-c7ac-bd5a-fc829e11ed84)"
    links = "".join(f"\t Link {k}: 25 GB/s\n" for k in range(12))
    nvml = "\tNVML: Unable to retrieve NVLink information as all links are inActive\n"  # a bridgeless PCIe board's
    for under in (links, nvml):
        assert failures(parse_text("nvlink-status", line + "\n" + under)) == []
        for cut in (70, 60):
            got = parse_text("nvlink-status", line[:cut] + "\n" + line[cut:] + "\n" + under)
            assert any("ends inside its '(UUID: ...)'" in e for e in got["errors"]), got


_IQE = "r4/ib-counters/01_ibqueryerrors_sx6036_switch_linkdowned48_symbolerr65535_xmitdiscards15854_quoted_linux-rdma-2021-03-16.txt"


def test_ibqueryerrors_a_port_line_broken_in_two_is_not_whole() -> None:
    """ibqueryerrors prints a port's counts on its 'GUID ... port N:' line; wrapped at 80 or 120 columns
    its head lost the counts past the width and its tail ('7295]', 'L15Dropped == 5] [...]') was
    dropped: exit 0 on fewer counts (the delivery matrix's ibqueryerrors x hard wrap 80/120). A port
    line ending inside a count, or counts on a line of no port, are said: exit 1."""
    from sncheck.vendors.parsers import failures, parse_text, strip_source_header

    body = strip_source_header((REPO / "fixtures/real" / _IQE).read_text(encoding="utf-8"))
    assert failures(parse_text("ibqueryerrors", body)) == []
    for width in (80, 120):
        wrapped = "\n".join(ln[i:i + width] for ln in body.splitlines() for i in range(0, len(ln), width) or [0]) + "\n"
        got = parse_text("ibqueryerrors", wrapped)
        assert any("its line ends inside a count" in e or "counts with no port" in e for e in got["errors"]), width
    # wrapped between two counts: the tail begins with '['
    line = "GUID 0x2c903006e29b0 port 4: [LinkDownedCounter == 8] [PortRcvSwitchRelayErrors == 2] [PortXmitWait == 2]"
    assert line in body
    cut = body.replace(line, line.replace(" [PortXmitWait", "\n>    [PortXmitWait"))
    assert any("counts with no port" in e for e in parse_text("ibqueryerrors", cut)["errors"])


# ROCm 6.4-7.1's `amd-smi xgmi --link-status` (amdsmi_commands.py xgmi at ROCm 7.1.0: the header
# '     '.ljust(7) + 'bdf'.ljust(14) + 'link_status'.ljust(20), per GPU 'GPU%d'.ljust(7) + bdf.ljust(14) and
# its ports' states .ljust(3) from amdsmi_get_gpu_xgmi_link_status; then the Legend. CHANGELOG 6.4.0's example)
_LEGEND = ("\n\nLegend:\n  SELF = Current GPU\n  N/A = Not supported\n  U / D / X = Link is Up / Down / Disabled\n"
           "  Read / Write = GPU Metric Accumulated Read / Write\n")


def _ports_table(rows: list[list[str]]) -> str:
    bdfs = [f"0000:{0x08 + 0x1c * g:02x}:00.0" for g in range(len(rows))]
    return ("\nXGMI LINK STATUS:\n" + ("     ".ljust(7) + "bdf".ljust(14) + "link_status".ljust(20)).rstrip() + "\n"
            + "".join((f"GPU{g}".ljust(7) + bdfs[g].ljust(14) + "".join(s.ljust(3) for s in row)).rstrip() + "\n"
                      for g, row in enumerate(rows)) + _LEGEND)


def test_amd_smi_xgmi_reads_rocm_6_4_to_7_1_s_per_port_link_status() -> None:
    """6.4-7.1 print XGMI LINK STATUS per XGMI port (U up, D down, X disabled), its header naming no
    peer; the view (harvest 20's 7.x grammar) zipped the states with the header's peers, none, so every
    GPU read 'no row in the LINK STATUS table: not measured' and a port down was no fault. Now a GPU
    with no per-peer row is judged by its ports; a port X (MI300X: one more port than peers) is no link."""
    from sncheck.vendors.amd import amd_smi_xgmi, checks
    from sncheck.vendors.facts import Expect

    healthy = _ports_table([["U"] * 7 + ["X"] for _ in range(8)])
    got = amd_smi_xgmi.parse_amd_smi_xgmi(healthy)
    assert got["errors"] == [] and got["faults"] == [], got["errors"]
    row = checks.check_xgmi_status("n1", got, Expect(cards=8))[0]
    assert row["ok"] is True and "56/56 links up" in row["message"], row["message"]
    down = amd_smi_xgmi.parse_amd_smi_xgmi(_ports_table([["U", "U", "U", "U", "D", "U", "D", "X"]] + [["U"] * 7 + ["X"]] * 7))
    assert down["faults"] == ["GPU0 -> port 4 D: XGMI link not up", "GPU0 -> port 6 D: XGMI link not up"], down
    assert checks.check_xgmi_status("n1", down, Expect(cards=8))[0]["ok"] is False
    # a port the library could not read: not measured, never up (N/A .ljust(3) runs into the next: 'N/AN/A')
    na = amd_smi_xgmi.parse_amd_smi_xgmi(_ports_table([["N/A"] * 8] + [["U"] * 7 + ["X"]] * 7))
    assert any("GPU0: link status to port 0 N/A" in e for e in na["errors"]), na["errors"]
