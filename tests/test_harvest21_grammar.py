"""Harvest 21's first-try misses, each read now by its tool's grammar (README "Harvest 21").

Each case is written from the tool's source (the line it prints), not from the capture that
showed it: NCCL's ``ncclDebugLog`` lines quoted without their prefix, a net plugin's name with a
blank (init.cc 'Using network %s', net.cc 'via NET/%s/%d'), graph/connect.cc's ring listing."""

from __future__ import annotations

from sncheck.vendors.nccl.debug_log import parse_nccl_debug


def test_a_warn_quoted_without_its_prefix_is_ncclS() -> None:
    """'NCCL WARN MSG' with nothing before the level (a report quoting the line) read as no NCCL
    line at all: a parse error, the completion error it names lost."""
    out = parse_nccl_debug("NCCL WARN NET/IB : Got completion from peer 10.0.0.7 with error 4, opcode 0, "
                           "len 0, vendor err 81 (Send)\n")
    assert [(c["peer"], c["status"], c["vendor_err"], c["type"]) for c in out["completion_errors"]] == [
        ("10.0.0.7", 4, 81, "Send")]
    assert len(out["warnings"]) == 1 and out["warnings"][0]["host"] is None and out["faults"]
    info = parse_nccl_debug("NCCL INFO Using network IB\nNCCL INFO NCCL version 2.27.5+cuda12.9\n")
    assert info["net"]["network"] == "IB" and info["faults"] == [] and info["lines"] == 2


def test_a_net_plugin_name_with_a_blank_and_ring_listings() -> None:
    """aws-ofi-nccl names its net 'AWS Libfabric': 'Using network AWS Libfabric' read as 'AWS' and the
    connections 'via NET/AWS Libfabric/0' as NET/AWS; graph's 'Channel 00/02 :    0   1' (a ring's
    ranks) was counted as a connection."""
    pre = "h1:7614:7691 [0] NCCL INFO "
    out = parse_nccl_debug("".join(pre + m + "\n" for m in (
        "Using network AWS Libfabric", "Channel 00/02 :    0   1", "Channel 01/02 :    0   1",
        "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/AWS Libfabric/0",
        "Channel 00/0 : 0[0] -> 1[0] [send] via NET/AWS Libfabric/0/GDRDMA",
        "Channel 01/0 : 0[1] -> 1[1] via P2P/CUMEM/read")))
    assert out["net"]["network"] == "AWS Libfabric"
    assert out["transports"] == {"NET/AWS Libfabric": 2, "P2P/CUMEM": 1}
    assert out["channels"] == 3


def test_nccl_tests_reads_the_banner_ncclS_info_level_prints() -> None:
    """showVersion prints 'NCCL version X+cudaY' as an INFO line when NCCL_DEBUG=INFO: nccl_release
    stayed null (the bare banner alone was read)."""
    from sncheck.vendors.nccltests.parse import parse_nccl_tests
    text = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid     21 on w0 device  0 [0x00] "
            "NVIDIA A10G\nw0:21:21 [0] NCCL INFO NCCL version 2.22.3+cuda12.2\n#\n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
            "(us)  (GB/s)  (GB/s)\n           8             2     float     sum      -1     3.51    0.00    0.00      "
            "0     0.11    0.07    0.00      0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n#\n")
    out = parse_nccl_tests(text, collective="all_reduce")
    assert out["nccl_release"] == "2.22.3" and out["errors"] == []


def test_a_yes_no_flag_with_another_value_is_an_error_not_a_pass() -> None:
    """nvidia-smi -q prints the row remapper's Pending as Yes or No (or N/A). A reader's marker after it,
    'Yes                      <===', read as unknown: a remap pending on a GPU with an uncorrectable
    error row passed (exit 0)."""
    from sncheck.vendors.nvidia.smi_query import parse_query
    head = ("==============NVSMI LOG==============\n\nDriver Version                            : 550.90.07\n\n"
            "Attached GPUs                             : 1\nGPU 00000000:52:00.0\n    Remapped Rows\n"
            "        Correctable Error                 : 0\n        Uncorrectable Error               : 1\n")
    tail = ("        Remapping Failure Occurred        : No\n        Bank Remap Availability Histogram\n"
            "            Max                           : 2559 bank(s)\n            High                          : 1 bank(s)\n"
            "            Partial                       : 0 bank(s)\n            Low                           : 0 bank(s)\n"
            "            None                          : 0 bank(s)\n")
    marked = parse_query(head + "        Pending                           : Yes                      <===\n" + tail)
    assert any("Pending is 'Yes" in e for e in marked["errors"])
    plain = parse_query(head + "        Pending                           : Yes\n" + tail)
    assert plain["errors"] == [] and plain["gpus"][0]["remapped_rows"]["pending"] is True
    # an NVML error string in the flag's place (a container without the NVML privilege): still not read,
    # said as the tool's (reviews13: 'a value the tool does not print' misled)
    for shown in ("Insufficient Permissions", "[GPU requires reset]"):
        denied = parse_query(head + f"        Pending                           : {shown}\n" + tail)
        assert any(f"nvidia-smi could not read it (NVML: {shown.strip('[]')}), not read" in e
                   for e in denied["errors"]), denied["errors"]


def test_amd_smi_version_line_above_a_view_is_read() -> None:
    """'amd-smi version' prints 'AMDSMI Tool: V | AMDSMI Library version: V | ROCm version: V'
    (amdsmi_commands.py version); run before 'amd-smi list' it was an unrecognised line (exit 1)."""
    from sncheck.vendors.amd.amd_smi import parse_amd_smi
    out = parse_amd_smi("AMDSMI Tool: 26.2.2+e1a6bc5663 | AMDSMI Library version: 26.2.2 | ROCm version: 7.2.1 | "
                        "amdgpu version: 6.16.13 | hsmp version: N/A\nGPU: 0\n    BDF: 0000:05:00.0\n"
                        "    UUID: d4ff74a1-0000-1000-80b1-dbb1e6a69543\n")
    assert out["errors"] == [] and out["version"]["amdgpu version"] == "6.16.13"
    assert out["version"]["ROCm version"] == "7.2.1" and out["gpus"][0]["BDF"] == "0000:05:00.0"
    later = parse_amd_smi("GPU: 0\n    BDF: 0000:05:00.0\nAMDSMI Tool: 26.2.2 | AMDSMI Library version: 26.2.2\n")
    assert later["errors"]  # among a device's lines it is no line of the view


def test_a_long_blank_run_after_the_net_name_reads_a_bounded_kind() -> None:
    """reviews13: 'via NET/a<4000 blanks>b' was matched by a lazy name before '\\s*$' (quadratic in the
    line) and kept the whole run as the kind; 'Using network a<blanks>b' the same. The text after 'via' is
    split, the name bounded (a plugin's name is short): the kind is NET/a, no network is named."""
    pre = "h1:1:1 [0] NCCL INFO "
    out = parse_nccl_debug(pre + "Channel 00/0 : 0[0] -> 1[0] [send] via NET/a" + " " * 4000 + "b\n"
                           + pre + "Using network a" + " " * 4000 + "b\n")
    assert out["transports"] == {"NET/a": 1} and out["net"] is None
