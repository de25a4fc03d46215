"""Harvest 17's misses (issue 28's measure, fixtures/real/harvest17): each a line or value the tool's own
source prints that the view did not read, held here as a capture-shaped text. Each test failed on main
before its fix."""

from __future__ import annotations

import json

from sncheck.vendors.amd.amd_smi import parse_amd_smi
from sncheck.vendors.nccl_ras import parse_text as ras_text
from sncheck.vendors.parsers import failures, parse_text

# NCCL RAS -f json (NCCL 2.28.7+, the user guide's sample of 2.29.1): the document's head, then the comms
_RAS_JSON = {"nccl_version": "2.29.1", "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
             "timestamp": "2025-12-19 13:06:53", "communicators_count": 1,
             "communicators": [{"hash": "0xae94423cfbb2ef4a", "size": 2, "ranks_count": 2, "missing_ranks_count": 0,
                                "ranks": [{"rank": r, "host": "172.16.64.245", "pid": 1524344 + r, "cuda_dev": r,
                                           "nvml_dev": r, "status": {"init_state": 0, "async_error": 0},
                                           "collective_counts": {"AllReduce": 7}} for r in (0, 1)],
                                "missing_ranks": []}],
             "ras": {"collection_time_sec": 0.0, "timeouts_count": 0}}


def test_ras_json_keeps_its_head_and_says_a_timeout() -> None:
    """The JSON report's head (rasClientRunJson: the NCCL version, CUDA runtime and driver, the
    timestamp) had been dropped: the text view keeps the same values from its version lines. Its
    'ras.timeouts_count' is the text's TIMEOUT block: above zero a failure, as that block is."""
    data = parse_text("nccl-ras", json.dumps(_RAS_JSON, indent=2))
    assert (data["nccl_version"], data["cuda_runtime"], data["cuda_driver"], data["timestamp"]) == \
        ("2.29.1", 13000, 13000, "2025-12-19 13:06:53"), data
    assert data["timeouts"] == 0 and not failures(data), data
    timed_out = parse_text("nccl-ras", json.dumps({**_RAS_JSON, "ras": {"timeouts_count": 2}}))
    assert any("2 communication timeout" in f for f in failures(timed_out)), timed_out


# the RAS docs' excerpt (troubleshooting/ras.rst, 'Similar effects ... during communicator initialization or
# tear-down'): the group table, the docs' '[...]' where the Warnings heading was, then the MISMATCH block
_RAS_GAP = """Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       1-2        32        32  FINALIZE  MISMATCH

[...]

#0-0 (9e17999afaa87dbb) MISMATCH
  Communicator ranks have different status
  26 ranks have status UNKNOWN
  4 ranks have status RUNNING
  Rank 0 -- GPU 0 managed by process 507285 on node 172.16.64.210
  Rank 8 -- GPU 0 managed by process 1598388 on node 172.16.64.212
  2 ranks have status FINALIZE
  Rank 4 -- GPU 4 managed by process 507289 on node 172.16.64.210
"""


def test_ras_block_after_a_left_out_heading_is_read_with_each_rank_s_status() -> None:
    """A '#G-C (hash) MISMATCH' block after the group table whose 'Warnings' heading a paste left out had
    been dropped with its ranks (records: none). Its state says its section (rasClientRunComms), so it is
    read; the '[...]' is still said (not whole). Each rank named under 'N ranks have status S' has S (its
    detail), and those count lines are no block's 'missing' count (26, then 4, then 2 had been kept)."""
    data = parse_text("nccl-ras", _RAS_GAP)
    assert [(r["rank"], r["node"]) for r in data["records"]] == \
        [(0, "172.16.64.210"), (8, "172.16.64.212"), (4, "172.16.64.210")], data
    assert data["records"][2]["detail"].endswith("status FINALIZE") and \
        data["records"][0]["detail"].endswith("status RUNNING"), data["records"]
    assert data["comms"][0]["missing"] is None, data["comms"]
    assert any("[...]" in f for f in failures(data)), failures(data)
    nocomm = parse_text("nccl-ras", _RAS_GAP.replace("status UNKNOWN", "status NOCOMM")
                        .replace("4 ranks have status RUNNING", "4 ranks have status NOCOMM"))
    assert [r["state"] for r in nocomm["records"]][:2] == ["NOCOMM", "NOCOMM"], nocomm["records"]


def test_ras_mismatch_counts_are_no_missing_count_and_incomplete_ones_are() -> None:
    """'26 ranks have launched up to operation 6650' had been read as 26 missing; 'Missing communicator data
    from 1 rank' and '1 job process is considered dead' are the counts a block's missing holds."""
    text = ("Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
            "    #  in group  per comm  per node  per comm  in group\n"
            "    0         1         4         8        32        32   RUNNING  INCOMPLETE,MISMATCH\n\n"
            "Errors\n======\n\nDEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
            "  Process 3487984 on node 172.16.64.213 managing GPU 5\n\n"
            "#0-0 (cf264af53edbe986) INCOMPLETE\n  Missing communicator data from 1 rank\n  The missing rank: 21\n\n"
            "Warnings\n========\n\n#0-0 (cf264af53edbe986) MISMATCH\n"
            "  Communicator ranks have different collective operation counts\n"
            "  26 ranks have launched up to operation 6650\n  6 ranks have launched up to operation 6649\n")
    data = parse_text("nccl-ras", text)
    assert [(c["state"], c["missing"]) for c in data["comms"]] == \
        [("DEAD", 1), ("INCOMPLETE", 1), ("MISMATCH", None)], data["comms"]


def test_ras_2_24_s_collective_operation_counts_name_no_operation() -> None:
    """2.24/2.25 print 'Communicator ranks have different collective operation counts' (every operation
    together; 2.26 on names one: 'different AllGather operation counts'): 'collective' had been kept as the
    operation's name."""
    text = ("Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
            "    #  in group  per comm  per node  per comm  in group\n"
            "    0         1         4         8        32        32   RUNNING  MISMATCH\n\nWarnings\n========\n\n"
            "#0-0 (27a079b828ff1a75) MISMATCH\n  Communicator ranks have different {} operation counts\n"
            "  26 ranks have launched up to operation 6650\n  6 ranks have launched up to operation 6649\n")
    assert parse_text("nccl-ras", text.format("collective"))["comms"][0]["collective"] is None
    assert parse_text("nccl-ras", text.format("AllGather"))["comms"][0]["collective"] == "AllGather"


def test_inspector_v4_2_keeps_the_algorithm_and_protocol() -> None:
    """Format v4.2 adds coll_algo and coll_proto to coll_perf (the Inspector's change note and README):
    they had been dropped; older records have neither (null)."""
    rec = {"header": {"id": "0x7f8c496ae9f661", "rank": 2, "n_ranks": 8, "nnodes": 1},
           "metadata": {"inspector_output_format_version": "v4.2", "hostname": "h", "pid": 1},
           "coll_perf": {"coll": "AllReduce", "coll_algo": "RING", "coll_proto": "LL", "coll_sn": 1407,
                         "coll_msg_size_bytes": 17179869184, "coll_exec_time_us": 61974,
                         "coll_algobw_gbs": 277.210914, "coll_busbw_gbs": 485.119099}}
    got = parse_text("nccl-inspector", json.dumps(rec))["records"][0]
    assert (got["algo"], got["proto"]) == ("RING", "LL"), got
    rec["coll_perf"] = {k: v for k, v in rec["coll_perf"].items() if k not in ("coll_algo", "coll_proto")}
    got = parse_text("nccl-inspector", json.dumps(rec))["records"][0]
    assert (got["algo"], got["proto"]) == (None, None), got


def _port(lid: int) -> str:
    return (f"# Port info: Lid {lid} port 1\nLinkState:.......................Active\n"
            "PhysLinkState:...................LinkUp\nLinkWidthActive:.................4X\n"
            "LinkSpeedActive:.................10.0 Gbps\nProtectBits:.....................0\n")


def test_ibportstate_keeps_the_disable_note_it_prints() -> None:
    """main() prints 'Disable may be irreversible' for disable/off between the initial block and 'After
    PortInfo set:' (ibportstate.c): it had been passed over unread; it is kept in warnings, not judged."""
    text = ("Initial CA/RT PortInfo:\n" + _port(3) + "Disable may be irreversible\n\nAfter PortInfo set:\n" + _port(3))
    data = parse_text("ibportstate", text)
    assert data["warnings"] == ["Disable may be irreversible"] and not failures(data), data


# LIMIT before the profiles: a LIMIT record at the output's end that stops after MAX_POWER is a cut one
# (amd_smi_records, round 15), and this excerpt is about the list
_PROFILE = """GPU: 0
    LIMIT:
        MAX_POWER: 750 W
    POWER_PROFILE:
        CURRENT: COMPUTE
        NUM_PROFILES: 3
        PROFILES:
            CUSTOM
            COMPUTE
            BOOTUP_DEFAULT
"""


def test_amd_smi_a_list_of_scalars_is_its_key_s_items() -> None:
    """amdsmi_logger yaml-dumps a list and makes its '- ' markers indentation: 'static --profile' (ROCm 7.12)
    prints PROFILES' items one a line under it. They had been 'unrecognised line's and the section read
    empty (exit 1 on a whole output); they are the key's list now, and a bare line anywhere else is still
    refused."""
    data = parse_text("amd-smi", _PROFILE)
    assert data["gpus"][0]["POWER_PROFILE"]["PROFILES"] == ["CUSTOM", "COMPUTE", "BOOTUP_DEFAULT"], data
    assert data["gpus"][0]["LIMIT"]["MAX_POWER"] == "750 W" and not failures(data), data
    stray = parse_text("amd-smi", _PROFILE.replace("        CURRENT: COMPUTE\n", "        CURRENT: COMPUTE\n        STRAY\n"))
    assert any("unrecognised line: STRAY" in f for f in failures(stray)), stray


def test_amd_smi_monitor_list_cells_are_one_cell_each() -> None:
    """monitor -V (ROCm 7.0) prints a list a cell, one value an XCC ('[0 %, 0 %, ...]'): its blanks had split
    it into cells, so every row had too many and none was read (gpus: [])."""
    head = "GPU  XCP  PVIOL  TVIOL  TVIOL_ACTIVE  GFXCLK_PVIOL                                  LOW_UTILVIOL"
    row = "  {g}    0    0 %    0 %         False  [0 %, 0 %, 0 %, 0 %]  [100 %, 100 %, N/A, N/A]"
    data = parse_text("amd-smi-monitor", "\n".join([head, row.format(g=0), row.format(g=1)]) + "\n")
    assert [g["gpu"] for g in data["gpus"]] == [0, 1] and not failures(data), data
    assert data["gpus"][1]["LOW_UTILVIOL"] == "[100 %, 100 %, N/A, N/A]", data["gpus"][1]


def test_amd_smi_a_list_short_of_its_count_is_cut() -> None:
    """A list printed under its NUM_<KEY> count ('NUM_PROFILES: 3', then PROFILES' items) cut after an item
    had read as a shorter whole list: fewer items than the count is a cut."""
    cut = _PROFILE[:_PROFILE.index("            BOOTUP_DEFAULT")]
    data = parse_text("amd-smi", cut)
    assert any("2 of its 3 items: cut short" in f for f in failures(data)), data


def test_amd_smi_monitor_a_list_cell_cut_before_its_bracket_is_cut() -> None:
    """A row cut inside its last list cell ('[100 %, 1') has as many cells as columns: the cell's missing ']'
    says the cut."""
    head = "GPU  XCP  PVIOL  LOW_UTILVIOL"
    data = parse_text("amd-smi-monitor", head + "\n  0    0    0 %  [100 %, 100 %]\n  1    0    0 %  [100 %, 1")
    assert [g["gpu"] for g in data["gpus"]] == [0] and any("without its ']'" in f for f in failures(data)), data


def test_ibportstate_a_ca_s_block_after_a_change_ends_at_protectbits_too() -> None:
    """main() shows the changed port again after 'After PortInfo set:'; for a CA that block ends with the
    M_Key lines, ProtectBits last, as the initial one does. Cut before ProtectBits it had read whole (harvest
    17's reset and disable captures, found by their random cuts)."""
    text = "Initial CA/RT PortInfo:\n" + _port(6) + "\nAfter PortInfo set:\n" + _port(6)
    assert not failures(parse_text("ibportstate", text))
    cut = text[:text.rindex("ProtectBits")]
    assert any("ProtectBits" in f for f in failures(parse_text("ibportstate", cut))), parse_text("ibportstate", cut)


# reviewr's attacks on this harvest's fixes (each failed on main a749b05)
AMD_LOST_VALUE = """GPU: 0
    POWER:
        SOCKET_POWER: 120 W
    CLOCK:
        GFX_0
        MEM_0: 1300 MHz

"""


def test_amd_smi_a_line_without_its_value_under_a_section_loses_nothing_silently():
    # reviewr: 5a3090c: 'GFX_0' (its ': value' lost) is taken for a list of scalars; CLOCK becomes
    # ['GFX_0'] and 'MEM_0: 1300 MHz' goes into the orphaned dict: dropped, errors [], exit 0
    out = parse_amd_smi(AMD_LOST_VALUE)
    clock = out["gpus"][0]["CLOCK"]
    assert out["errors"] or (isinstance(clock, dict) and clock.get("MEM_0") == "1300 MHz")


RAS_TWO_GROUPS = """Warnings
========

#0-0 (9e17999afaa87dbb) MISMATCH
  Communicator ranks have different status
  29 ranks have status RUNNING
  3 ranks have status NOCOMM
  Rank 4 -- GPU 4 managed by process 507289 on node 172.16.64.210
  Rank 20 -- GPU 4 managed by process 3500075 on node 172.16.64.213
  Rank 21 -- GPU 5 managed by process 3500076 on node 172.16.64.213
  Communicator ranks have different collective operation counts
  31 ranks have launched up to operation 6650
  Rank 7 has launched up to operation 6649 -- GPU 7 managed by process 507292 on node 172.16.64.210

"""


def test_nccl_ras_a_status_group_ends_where_the_operation_counts_begin():
    # rasClientRunComms prints the status breakdown, then 'Communicator ranks have different
    # collective operation counts' and its groups in the same MISMATCH block: rank 7 lags (in the
    # communicator, RUNNING); 5a3090c's group_status carries NOCOMM onto it
    lag = [r for r in ras_text(RAS_TWO_GROUPS)["records"] if r.rank == 7]
    assert len(lag) == 1 and lag[0].state == "MISMATCH" and "NOCOMM" not in lag[0].detail, lag


def test_nccl_ras_a_single_rank_keeps_its_own_status():
    # a group of one prints 'Rank R has status S -- ...' (no 'N ranks have status' line): its S, not the last group's
    text = RAS_TWO_GROUPS.replace("  Communicator ranks have different collective operation counts\n"
                       "  31 ranks have launched up to operation 6650\n"
                       "  Rank 7 has launched up to operation 6649 -- GPU 7 managed by process 507292 on node 172.16.64.210\n",
                       "  Rank 9 has status FINALIZE -- GPU 1 managed by process 507282 on node 172.16.64.210\n")
    one = [r for r in ras_text(text)["records"] if r.rank == 9]
    assert len(one) == 1 and one[0].state != "NOCOMM" and "status NOCOMM" not in one[0].detail, one


