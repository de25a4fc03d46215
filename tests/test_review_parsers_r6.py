"""Review of the parser landings of issue 28 (ibnetdiscover -p, rocm-smi --json, amd-smi summary,
npu-smi process rows, torch-nccl, perfquery -E/-D, elision) and the five small gaps known from
the last stop: each case an input that fell short on main before its fix."""

from __future__ import annotations

from sncheck.health.cabling import counter_growth_findings, growth_bars
from sncheck.health.rules import load_rules_text
from sncheck.health.rules import load_rules


def _bars(text: str | None = None):
    return growth_bars((load_rules_text(text) if text else load_rules()).rules)


# ---------------------------------------------------------------- gap 1: fabric check --since's bars

def test_fabric_growth_is_judged_by_the_rules_bars_and_severities():
    """A switch port's discards grew by 5 (the shipped ib-port-discards-grew allows 100): no
    finding; port_rcv_errors grew by 1 (ib-port-errors-grew: above 0, critical): critical, as a
    run judges its NICs' reads (main: a warning for both, whatever the rules said)."""
    before = {"leaf:a[1]": {"port_xmit_discards": 10, "port_rcv_errors": 0},
              "leaf:a[2]": {"port_xmit_discards": 10, "port_rcv_errors": 0}}
    after = {"leaf:a[1]": {"port_xmit_discards": 15, "port_rcv_errors": 0},
             "leaf:a[2]": {"port_xmit_discards": 500, "port_rcv_errors": 1}}
    (f,) = counter_growth_findings(before, after, None, _bars())
    assert f.entity == "leaf:a[2]" and str(f.severity) == "critical" and not f.not_judged
    assert f.evidence["counters"] == {"port_xmit_discards": {"before": 10, "after": 500, "growth": 490},
                                      "port_rcv_errors": {"before": 0, "after": 1, "growth": 1}}
    assert f.evidence["rules"] == ["ib-port-discards-grew", "ib-port-errors-grew"]
    assert "port_xmit_discards 10 -> 500 (over ib-port-discards-grew +100)" in f.message


def test_fabric_growth_no_rule_judges_is_not_judged_never_a_pass():
    rules = ("rules:\n  - {name: only-discards, op: counter_growth, metric: fabric_counters, "
             "counters: [port_xmit_discards], above: 100, severity: warning, scope: nic, summary: discards}\n")
    before, after = {"leaf:a[1]": {"symbol_error": 0}}, {"leaf:a[1]": {"symbol_error": 7}}
    (f,) = counter_growth_findings(before, after, None, _bars(rules))
    assert f.not_judged and "no rule judges the growth of symbol_error" in f.message
    gone = counter_growth_findings({"leaf:a[1]": {"symbol_error": 0}, "leaf:a[2]": {"symbol_error": 0}},
                                   {"leaf:a[1]": {"symbol_error": 0}}, None, _bars())
    assert [(g.entity, g.not_judged) for g in gone] == [("leaf:a[2]", True)]   # a port read before and not now
    (new,) = counter_growth_findings({"leaf:a[1]": {"symbol_error": 0}},
                                     {"leaf:a[1]": {"symbol_error": 0, "link_downed": 4}}, None, _bars())
    assert new.not_judged and "link_downed=4 read only now" in new.message   # a counter the earlier file lacked



def test_fabric_check_rules_judge_growth_and_need_since(tmp_path):
    """--rules R: R's bars judge the growth (a discards bar of 1000 lets +490 pass); --rules
    without --since judges nothing: refused, exit 2."""
    from click.testing import CliRunner  # noqa: PLC0415

    from sncheck.cli.fabric import growth_findings  # noqa: PLC0415
    from sncheck.cli.main import main  # noqa: PLC0415
    from sncheck.fabric import Cabling  # noqa: PLC0415
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {name: lax-discards, op: counter_growth, metric: fabric_counters, "
                     "counters: [port_xmit_discards], above: 1000, severity: warning, scope: nic, summary: d}\n")
    before, after = {"leaf:a[2]": {"port_xmit_discards": 10}}, {"leaf:a[2]": {"port_xmit_discards": 500}}
    assert growth_findings(before, after, Cabling({}, {}), "before.json", str(rules)) == []
    assert [f.severity for f in growth_findings(before, after, Cabling({}, {}), "before.json", "default")] == ["warning"]
    inv = tmp_path / "inv.yaml"
    inv.write_text("name: t\nsupernodes:\n  - {name: a, hosts: h01, cards_per_host: 1}\n")
    result = CliRunner().invoke(main, ["fabric", "check", "-i", str(inv), "--rules", str(rules)])
    assert result.exit_code == 2 and "give --since FILE" in result.output, result.output

# ---------------------------------------------------------------- gap 2: torch-nccl wrapped narrow

def _watchdog_log() -> tuple[list[str], int, int]:
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415
    sys.path.insert(0, str(Path(__file__).parent))
    from grammars.nccl_logs import _PG, _PROGRESS, _glog  # noqa: PLC0415 -- the generator's own lines
    seq, ran = 4242, 600017
    return [_glog("2.4", 3, 1709, 0) + _PG["2.4"].format(r=3) + "Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for {ran} "
            "milliseconds before timing out.",
            _glog("2.2", 3, 1709, 1) + _PG["2.4"].format(r=3) + _PROGRESS["2.2"].format(s=seq, e=seq + 12, c=seq - 1)], \
        seq, ran


def _wrap_misses(widths: range, word: bool) -> list[str]:
    import textwrap  # noqa: PLC0415

    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    logical, seq, ran = _watchdog_log()
    wrong = []
    for width in widths:
        pieces = [p for ln in logical for p in (textwrap.wrap(ln, width) if word else
                                                 [ln[i:i + width] for i in range(0, len(ln), width)])]
        data = parse_text("torch-nccl", "\n".join(pieces) + "\n")
        got = ([(t["rank"], t["pg"], t["seq"], t["ran_ms"]) for t in data["timeouts"]],
               [(p["rank"], p["pg"], p["failed_seq"], p["last_enqueued"], p["last_completed"]) for p in data["progress"]],
               data["errors"])
        if got != ([(3, "0", seq, ran)], [(3, "0", seq, seq + 12, seq - 1)], []):
            wrong.append(f"width {width}: {got}")
    return wrong


def test_a_watchdog_log_hard_wrapped_narrower_than_60_columns_reads_its_numbers():
    """A terminal 20 to 59 columns wide (main: nothing joined below 60, 'without its numbers')."""
    assert not (wrong := _wrap_misses(range(20, 141), word=False)), "\n".join(wrong[:5])


def test_a_watchdog_log_word_wrapped_reads_its_rank_group_and_time():
    """A reporter's word wrap drops the blank it breaks at: '[PG 0' / '(default_pg) Rank 3]' lost the
    group and the progress's rank, 'ran for 600017' / 'milliseconds' the time it ran, at 80 columns
    too (main). Word wraps narrower than 31 columns (a piece shorter than 20) are not joined."""
    assert not (wrong := _wrap_misses(range(31, 141), word=True)), "\n".join(wrong[:5])


# ---------------------------------------------------------------- gap 3: rocm-smi's N/A partitions

ROCM_PARTITIONED = """\
========================================= ROCm System Management Interface =========================================
=================================================== Concise Info ===================================================
Device  Node  IDs              Temp        Power     Partitions          SCLK     MCLK     Fan  Perf    PwrCap   VRAM%  GPU%
              (DID,     GUID)  (Junction)  (Socket)  (Mem, Compute, ID)
==============================================================================================================================
0       2     0x75a0,   24959  60.0°C      319.0W    NPS1, DPX, 0        2203Mhz  1900Mhz  0%   manual  1000.0W  0%     0%
1       3     0x75a0,   20862  N/A         N/A       N/A, N/A, 1         N/A      N/A      0%   n/a     N/A      0%     N/A
==============================================================================================================================
=============================================== End of ROCm SMI Log ================================================
"""


def test_rocm_smi_keeps_a_partition_cell_of_n_a_as_printed():
    """showAllConcise prints getMemoryPartition, getComputePartition, getPartitionId joined by ', ',
    'N/A' where the library cannot read one: a secondary partition's 'N/A, N/A, 1' (harvest's MI355X
    capture) was read as null (main), its ID lost."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    data = parse_text("rocm-smi", ROCM_PARTITIONED)
    assert [g["partitions"] for g in data["gpus"]] == ["NPS1, DPX, 0", "N/A, N/A, 1"] and not data["errors"]


# ---------------------------------------------------------------- gap 4: the PCIe width's bar

def test_the_pcie_width_bar_is_the_max_the_card_and_system_report(tmp_path):
    """Not a gap (no change): NVML's max link width is 'the maximum PCIe link width possible with
    this device and system' (an x16 card in an x8 slot reports 8), and the check's bar is that
    reported max, never a fixed x16. harvest8's T4 and P2000 (both x16 cards) report 16x and run
    8x: trained narrower than card and slot allow, a fault; the same card reporting 8x passes."""
    from pathlib import Path  # noqa: PLC0415

    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    t4 = next((Path(__file__).parents[1] / "fixtures/real/harvest8/nvidia-smi-qx").glob("06_*tesla_t4*"))
    text = t4.read_text()
    assert parse_text("nvidia-smi-qx", text)["faults"] == [
        "PCIe link width: 0/1 GPUs fine; GPU 00000000:00:1E.0: PCIe x8 of x16"]
    slot8 = parse_text("nvidia-smi-qx", text.replace("<max_link_width>16x", "<max_link_width>8x"))
    assert not slot8.get("faults") and not slot8["errors"] and slot8["gpus"][0]["pcie"]["width_current"] == 8


# ---------------------------------------------------------------- gap 5: elision lines in fences

def test_an_elision_inside_a_markdown_fence_is_named_by_the_file_s_line():
    """The reporter's prose and fence are lines of the file: main numbered the '...' by the
    fenced body (line 3 for the file's line 6)."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    text = ("# source: test\nHere is ibstat:\n\n```\nCA 'mlx5_0'\n\tCA type: MT4123\n...\n"
            "\tNumber of ports: 1\n```\nand more prose\n```text\n...\n```\n")
    said = [e for e in parse_text("ibstat", text)["errors"] if "reporter's" in e]
    assert [e.split(" is ")[0] for e in said] == ["line 7", "line 12"], said


def test_an_elision_under_launcher_tags_regrouped_is_named_by_the_file_s_line():
    """srun --label's tasks regrouped task by task: the '...' keeps the line it had in the file."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    text = "1: CA 'mlx5_1'\n0: CA 'mlx5_0'\n1: \tCA type: MT4123\n...\n0: \tCA type: MT4123\n"
    said = [e for e in parse_text("ibstat", text)["errors"] if "reporter's" in e]
    assert [e.split(" is ")[0] for e in said] == ["line 4"], said


# ---------------------------------------------------------------- f1c4920: ibnetdiscover -p

PORTS_REPORT = """\
SW     1  2 0x0002c90000000001 4x EDR                                    'leaf1'
SW     1  1 0x0002c90000000001 4x EDR - CA     2  1 0x0002c90000000002 ( 'leaf1' - 'h01 mlx5_0' )
CA     2  1 0x0002c90000000002 4x EDR - SW     1  1 0x0002c90000000001 ( 'h01 mlx5_0' - 'leaf1' )
"""


def test_fabric_refuses_a_ports_report_as_its_topology(tmp_path):
    """A whole 'ibnetdiscover -p' report given as --topology read as a fabric of no node
    (main: check 'h01: no adapter of it in the fabric', a critical cabling finding; discover an
    empty fabric, exit 0): refused, exit 3, naming the -p report."""
    from click.testing import CliRunner  # noqa: PLC0415

    from sncheck.cli.main import main  # noqa: PLC0415
    topo, inv = tmp_path / "ports.txt", tmp_path / "inv.yaml"
    topo.write_text(PORTS_REPORT)
    inv.write_text("name: t\nsupernodes:\n  - {name: a, hosts: h01, cards_per_host: 1}\n")
    for argv in (["fabric", "check", "-i", str(inv)], ["fabric", "discover"]):
        result = CliRunner().invoke(main, [*argv, "--topology", str(topo)])
        assert result.exit_code == 3 and "ports report" in result.output, (argv, result.output)


# ---------------------------------------------------------------- 8f6a603 / 1741e57: npu-smi info

NPU_HEADER = ("+------------------------------------------------------------------------------------------------+\n"
              "| npu-smi 23.0.5                   Version: 23.0.5                                               |\n"
              "+---------------------------+---------------+----------------------------------------------------+\n"
              "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|\n"
              "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |\n"
              "+===========================+===============+====================================================+\n")


def test_npu_smi_info_cut_before_its_first_npu_row_is_cut(tmp_path):
    """The banner and the header alone (a paste cut before the first NPU's rows) read as a whole
    table of no NPU, exit 0 (main): npu-smi info lists every NPU it found."""
    from click.testing import CliRunner  # noqa: PLC0415

    from sncheck.cli.main import main  # noqa: PLC0415
    header = NPU_HEADER
    for cut in (header, "\n".join(header.split("\n")[:3]) + "\n"):
        f = tmp_path / "npu.txt"
        f.write_text(cut)
        result = CliRunner().invoke(main, ["parse", "npu-smi", str(f)])
        assert result.exit_code == 1 and "no NPU row" in result.output, result.output


# ---------------------------------------------------------------- 5ba3dd1: torch-nccl NCCL errors

def test_an_nccl_error_with_an_unknown_or_suffixed_version_is_kept():
    """getNcclVersion prints 'Unknown NCCL version' where ncclGetVersion failed and appends '.'
    NCCL_SUFFIX where NCCL was built with one: the first dropped the error (and its rank) with no
    word (main), the second read the version as '2.21.5.' (a dot and nothing)."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    text = ("[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
            "NCCL version 2.21.5.meta1\n"
            "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
            "NCCL version Unknown NCCL version\n")
    data = parse_text("torch-nccl", text)
    assert [(e["result"].split(" (")[0], e["version"]) for e in data["nccl_errors"]] == [
        ("unhandled system error", "2.21.5.meta1"), ("unhandled cuda error", None)]
    assert data["ranks"] == [0, 1] and data["nccl_version"] == "2.21.5.meta1"


# ---------------------------------------------------------------- 37daf33: rocm-smi --json

def test_rocm_smi_json_cards_with_nothing_read_are_not_a_pass(tmp_path):
    """formatJson writes each card as an object of its metrics: a card of another value, an empty
    one, read as no GPU at all and exit 0 (main)."""
    from click.testing import CliRunner  # noqa: PLC0415

    from sncheck.cli.main import main  # noqa: PLC0415
    for doc, said in (('{"card0": 5}', "card0: not an object of metrics"),
                      ('{"card0": {}}', "card0: no metric in its object"),
                      ('{"card0": {"Temperature (Sensor edge) (C)": "45.0"}, "card1": []}', "card1: not an object")):
        f = tmp_path / "r.json"
        f.write_text(doc + "\n")
        result = CliRunner().invoke(main, ["parse", "rocm-smi", str(f)])
        assert result.exit_code == 1 and said in result.output, (doc, result.output)


# ---------------------------------------------------------------- a01f8a2 / 47dfc5b: ibqueryerrors' end

def test_ibqueryerrors_cut_before_its_suppressed_line_is_cut(tmp_path):
    """print_summary prints the summary, the ports line, the thresholds, the PMA query failures
    (only above zero), then report_suppressed's '## Suppressed:' always: a paste cut after the
    thresholds had lost the failures line and read whole, its counters judged, exit 0 (main)."""
    from click.testing import CliRunner  # noqa: PLC0415

    from sncheck.cli.main import main  # noqa: PLC0415
    whole = ('Errors for "sw1"\n   GUID 0x1 port 3: [LinkDownedCounter == 2]\n\n'
             "## Summary: 4 nodes checked, 1 bad nodes found\n"
             "##          43 ports checked, 1 ports have errors beyond threshold\n## Thresholds: \n"
             "##          2 PMA query failures\n## Suppressed:\n")
    f = tmp_path / "iqe.txt"
    for text, code, said in ((whole.replace("##          2 PMA query failures\n", ""), 0, None),
                             (whole, 1, "2 PMA query failures"),
                             ("\n".join(whole.split("\n")[:6]) + "\n", 1, "no '## Suppressed:' line")):
        f.write_text(text)
        result = CliRunner().invoke(main, ["parse", "ibqueryerrors", str(f)])
        assert result.exit_code == code and (said is None or said in result.output), result.output


# ---------------------------------------------------------------- ibv_devinfo: a port cut in its lines

IBV = ("hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.39.1002\n"
       "\tnode_guid:\t\t\tb83f:d203:00a1:b200\n\tsys_image_guid:\t\t\tb83f:d203:00a1:b200\n"
       "\tvendor_id:\t\t\t0x02c9\n\tvendor_part_id:\t\t\t4129\n\thw_ver:\t\t\t\t0x0\n"
       "\tboard_id:\t\t\tMT_0000000838\n\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n"
       "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t4096 (5)\n"
       "\t\t\tsm_lid:\t\t\t1\n\t\t\tport_lid:\t\t10\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tInfiniBand\n\n")


def test_ibv_devinfo_cut_inside_a_port_is_cut():
    """devinfo.c prints every port's state .. port_lmc, link_layer, and under -v (a device printing
    max_mr_size) its lines on to active_speed, phys_state on IB: a -v paste cut between link_layer
    and phys_state read whole (main, after 3e17a2e's link_layer end: 29 of 615 cuts of the
    generator's variants exited 0 with values lost; 17 now, each at a port's or a device's end,
    which the count of devices (--expect, the inventory) judges)."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    assert parse_text("ibv-devinfo", IBV)["errors"] == []
    cut = IBV[:IBV.index("\t\t\tmax_mtu")]
    assert any("no link_layer line" in e for e in parse_text("ibv-devinfo", cut)["errors"])
    verbose = IBV.replace("\tphys_port_cnt", "\tmax_mr_size:\t\t\t0xffffffffffffffff\n\tphys_port_cnt") + \
        "\t\t\tmax_msg_sz:\t\t0x40000000\n"
    verbose = verbose.replace("InfiniBand\n\n\t\t\tmax_msg_sz", "InfiniBand\n\t\t\tmax_msg_sz")
    for text in (verbose, verbose[:verbose.index("\t\t\tmax_msg_sz")]):
        assert any("-v's lines end before its active_speed" in e for e in parse_text("ibv-devinfo", text)["errors"])


# ---------------------------------------------------------------- one parser, one judgement

def test_a_cut_npu_smi_info_fails_the_run_s_host_facts_as_it_fails_parse():
    """The run's fact check reads npu-smi info's stdout with the view's parser: the cut before the
    first NPU row that sncheck parse now refuses is no pass of the host's facts either."""
    from sncheck.vendors.ascend.checks import COMMANDS  # noqa: PLC0415
    from sncheck.vendors.facts import Expect, outcome as fact_outcome  # noqa: PLC0415
    from sncheck.vendors.hostjudge import bind  # noqa: PLC0415
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    header = NPU_HEADER
    assert parse_text("npu-smi", header)["errors"]
    _, rows = fact_outcome("cm01", bind(COMMANDS["info"]), Expect(cards=16), exit_code=0, stdout=header)
    assert rows and not any(r["ok"] for r in rows), [(r["fact"], r["ok"], r["message"][:120]) for r in rows]


# ---------------------------------------------------------------- 2057450: amd-smi's summary UEC

def test_amd_smi_summary_judges_its_uncorrectable_ecc_count():
    """UEC is amdsmi_get_gpu_total_ecc_count's uncorrectable_count (subcommands/default.py): a GPU
    with UEC 5 read as a whole summary, exit 0 (main), while amd-smi metric's ECC blocks and
    nvidia-smi's Volatile Uncorr. ECC above zero fail."""
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415
    sys.path.insert(0, str(Path(__file__).parent))
    from grammars import variants  # noqa: PLC0415
    from test_grammars import outcome  # noqa: PLC0415
    v = next(v for v in variants("amd-smi") if v.name == "summary 4 GPUs")
    assert outcome("amd-smi", v.text, v)[0] == 0
    row = next(ln for ln in v.text.split("\n") if ln.startswith("| 0000:25:00.0"))
    sick = v.text.replace(row, row.replace("°C   0 ", "°C   5 "))
    code, data = outcome("amd-smi", sick, v)
    assert code == 1 and data["faults"] == ["GPU 1 (0000:25:00.0): 5 uncorrectable ECC errors (UEC)"], data


# ---------------------------------------------------------------- d5e7f2c / a01f8a2: rocm-smi identity cells

def test_rocm_smi_identity_cells_of_n_a_keep_the_power_in_its_place(tmp_path):
    """getNodeId, getDRMDeviceId and getGUID print 'N/A' where the library cannot say: a row
    '1  N/A  N/A,  N/A  41.0°C  156.0W ...' was read with Temp's cell at 1, and its power lost
    (null, exit 0: main); the header says the identity cells are there."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    row = "1       N/A   N/A,      N/A    41.0°C      156.0W    NPS1, SPX, 0        91Mhz   900Mhz  0%   auto  650.0W  0%     0%"
    text = ROCM_PARTITIONED.replace(ROCM_PARTITIONED.split("\n")[6], row)
    (g,) = [g for g in parse_text("rocm-smi", text)["gpus"] if g["device"] == 1]
    assert (g["node"], g["did"], g["guid"], g["temp_C"], g["power_W"], g["pwrcap_W"], g["sclk_MHz"]) == \
        (None, None, None, 41.0, 156.0, 650.0, 91)


# ---------------------------------------------------------------- d331417: perfquery's unread counter sets

def test_perfquery_an_unread_counter_set_is_one_error_not_a_headerless_port():
    """common_func's per-VL / per-SL sets are named and not read: their field lines became a
    headerless port 1 of VL counters (main), said 'cut short' twice over (its last counter, and the
    counters every other port has)."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415
    block = ("# Port counters: Lid 1719 port 1 (CapMask: 0x1600)\nPortSelect:......................1\n"
             "CounterSelect:...................0x0000\nSymbolErrorCounter:..............0\nLinkErrorRecoveryCounter:........0\n"
             "LinkDownedCounter:...............0\nPortRcvErrors:...................0\nPortRcvRemotePhysicalErrors:.....0\n"
             "PortRcvSwitchRelayErrors:........0\nPortXmitDiscards:................0\nPortXmitConstraintErrors:........0\n"
             "PortRcvConstraintErrors:.........0\nCounterSelect2:..................0x00\n"
             "LocalLinkIntegrityErrors:........0\nExcessiveBufferOverrunErrors:....0\nQP1Dropped:......................0\n"
             "VL15Dropped:.....................0\nPortXmitData:....................16480432\nPortRcvData:.....................16480432\n"
             "PortXmitPkts:....................232\nPortRcvPkts:.....................232\nPortXmitWait:....................239508\n")
    assert parse_text("perfquery", block)["errors"] == []
    vl = ("# PortVLOpPackets counters: Lid 1719 port 1\nPortSelect:......................1\n"
          "CounterSelect:...................0x0000\nVLOpPackets0:....................12\nVLOpPackets1:....................0\n")
    data = parse_text("perfquery", block + vl)
    assert data["errors"] == ["a PortVLOpPackets block (perfquery's per-VL or per-SL counters): not read"]
    assert [p["port"] for p in data["ports"]] == [1]


def test_npu_smi_a_process_row_it_cannot_read_is_said():
    """A row counted in 'processes' that the row grammar does not hold (its memory '85 MB', a layout
    not met) was kept nowhere, its pid and name lost with no word (main): processes 2, rows 1."""
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415
    sys.path.insert(0, str(Path(__file__).parent))
    from grammars import variants  # noqa: PLC0415
    from test_grammars import outcome  # noqa: PLC0415
    v = next(v for v in variants("npu-smi") if "Process id in container" in v.text and not v.fails)
    lines = v.text.split("\n")
    i = next(i for i, ln in enumerate(lines) if ln.startswith("| ") and ln.count("|") >= 5
             and ln.split("|")[2].strip().isdigit())
    odd = lines[i].rsplit("|", 2)[0].rstrip()[:-2] + " MB |"
    code, data = outcome("npu-smi", "\n".join(lines[:i] + [odd] + lines[i + 1:]), v)
    assert code == 1 and any("a process row the grammar does not hold" in e for e in data["errors"]), data


def test_rocm_smi_json_with_a_number_where_a_clock_level_text_goes_is_read_not_a_crash():
    """final review: rocm-smi --json's card objects hold any JSON type; a 'sclk clock level'
    given as a number reached the level's text pattern and raised TypeError (a traceback).
    A value that is not the level's text is kept as printed and gives no clock."""
    from sncheck.vendors.amd.rocm_smi_log import parse_log_form

    got = parse_log_form('{"card0": {"GPU[0]": 1, "sclk clock level": 2}}')
    assert got["gpus"][0]["sclk_MHz"] is None and got["gpus"][0]["metrics"]["sclk clock level"] == 2


def test_nccl_ras_json_with_a_key_given_twice_is_refused_not_the_last_kept():
    """final review: the key-twice check (hostile round 8, H8-08) covered the views reading
    through jsonprefix.load; NCCL RAS's JSON went through json.loads and kept the last of a
    key given twice (two outputs spliced), silently. It reads through jsonprefix.loads now."""
    import pytest

    from sncheck.errors import ParseError
    from sncheck.vendors.nccl_ras import parse as parse_nccl_ras

    with pytest.raises(ParseError, match="given twice"):
        parse_nccl_ras('{"nccl_version": "2.26.2", "nccl_version": "2.27.3", "communicators": []}')
