"""The views of what a job and a port print (issue 28 item 3): nccl-debug, torch-nccl,
nccl-inspector, mlxlink, ibportstate, ibv-devinfo, ethtool-mlx5, nvidia-smi and the amdgpu
lines of kernel-log, each held to its grammar (the module docstrings) on lines written the
way the tool's source prints them, through ``sncheck parse`` (exit 0 whole and healthy, 1 on
a failure or a cut). The real captures are in fixtures/real/ (test_conformance)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main


def parse(tmp_path: Path, view: str, text: str) -> tuple[int, dict]:
    f = tmp_path / "log.txt"
    f.write_text(text, encoding="utf-8")
    r = CliRunner().invoke(main, ["parse", view, str(f), "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}


# NCCL's own line layouts (src/debug.cc), oldest first
NCCL_INFO = "node1:2301:2301 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" \
            "node1:2301:2350 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ib0:10.1.0.1<0>\n" \
            "node1:2301:2350 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n" \
            "node1:2301:2350 [0] NCCL INFO Channel 00/0 : 1[1] -> 8[0] [send] via NET/IB/1/GDRDMA\n" \
            "node1:2301:2350 [0] NCCL INFO comm 0x55d1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 " \
            "commId 0x9a - Init COMPLETE\n"
COMPLETIONS = [
    ("NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129", 12, None),            # <= 2.9
    ("NET/IB : Got completion from peer 10.1.0.2<50121> with error 12, opcode 0, len 0, vendor err 129",
     12, "10.1.0.2<50121>"),                                                                          # 2.11-2.17
    ("NET/IB : Got completion from peer 10.1.0.2<50121> with status=12 opcode=0 len=0 vendor err 129 "
     "(Send)", 12, "10.1.0.2<50121>"),                                                                # 2.20
    ("NET/IB: Got completion from peer 10.1.0.2<50121> with status=5 opcode=1 len=0 vendor err 249 (Recv) "
     "localGid ::ffff:10.1.0.1 remoteGids::ffff:10.1.0.2 hca mlx5_3", 5, "10.1.0.2<50121>"),           # 2.22-2.28
    ("NET/IB: Got completion from peer 10.1.0.2<50121> with status=IBV_WC_RETRY_EXC_ERR(12) "
     "opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_3", 12, "10.1.0.2<50121>"),                       # 2.29+
]


def test_nccl_debug_reads_the_init_lines_and_passes_a_clean_log(tmp_path):
    code, d = parse(tmp_path, "nccl-debug", NCCL_INFO)
    assert code == 0, d
    assert (d["nccl_version"], d["cuda_version"], d["nranks"]) == ("2.18.3", "12.2", 16)
    assert d["net"]["devices"][1] == {"index": 1, "device": "mlx5_3", "port": 1, "link": "IB"}
    assert d["net"]["oob"] == "ib0:10.1.0.1<0>" and d["transports"] == {"P2P/IPC": 1, "NET/IB": 1}
    assert d["ranks"][0]["bus_id"] == "18000" and d["ranks"][0]["nvml_dev"] == 0


@pytest.mark.parametrize("message, status, peer", COMPLETIONS)
def test_every_completion_error_layout_is_a_failure_with_its_status(tmp_path, message, status, peer):
    stamp = "[2025-03-01 10:00:00] " if "hca" in message else ""
    warn = f"\n{stamp}node1:2301:2399 [1] transport/net_ib.cc:1696 NCCL WARN {message}\n"
    code, d = parse(tmp_path, "nccl-debug", NCCL_INFO + warn)
    assert code == 1
    (c,) = d["completion_errors"]
    assert (c["status"], c["peer"], c["vendor_err"]) == (status, peer, int(message.split("err")[-1].split()[0]
                                                                                .strip("=")))
    assert d["warnings"][0]["device"] == 1 and d["warnings"][0]["line"] == 1696


def test_nccl_debug_result_strings_and_a_2_30_warn_with_its_function(tmp_path):
    warn = "node2:77:80 [3] misc/socket.cc:480 (ncclSocketConnect) NCCL WARN socket connect to 10.0.0.9<4000> " \
           "failed: Connection refused\nncclSystemError: System call (e.g. socket, malloc) or external library " \
           "call failed or device error.\n"
    code, d = parse(tmp_path, "nccl-debug", warn)
    assert code == 1
    assert d["warnings"][0]["func"] == "ncclSocketConnect" and d["nccl_errors"] == ["unhandled system error"]


def test_nccl_debug_refuses_text_that_is_not_nccl(tmp_path):
    code, d = parse(tmp_path, "nccl-debug", "Epoch 1: loss 0.3\nINFO all good\n")
    assert code == 1 and d == {}  # parse failed: no JSON, never a pass


WATCHDOG_24 = (
    "[rank0]:[E709 17:05:38.1 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600048 milliseconds before timing out.\n"
    "[rank0]:[E709 17:05:38.1 ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID 0(default_pg) Rank 0]  failure detected "
    "by watchdog at work sequence id: 20585 PG status: last enqueued work: 20589, last completed work: 20584\n"
    "[rank1]:[E709 17:05:38.4 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump "
    "signal due to a collective timeout from  rank 0 and we will try our best to dump the debug info. Last "
    "enqueued NCCL work: 20589, last completed NCCL work: 20589.This is most likely caused by ...\n")
WATCHDOG_113 = ("[E ProcessGroupNCCL.cpp:828] [Rank 3] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=7, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800520 milliseconds before "
                "timing out.\n[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to "
                "the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                "corrupted/incomplete data.\n[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are "
                "taking the entire process down.\n")


def test_torch_watchdog_layouts_of_each_era(tmp_path):
    code, d = parse(tmp_path, "torch-nccl", WATCHDOG_24)
    assert code == 1 and d["ranks"] == [0, 1] and d["timeout_ms"] == 600000
    assert d["progress"] == [{"rank": 0, "pg": "0", "failed_seq": 20585, "last_enqueued": 20589,
                              "last_completed": 20584}]
    assert d["dump_signals"][0]["from"] == "rank 0" and d["dump_signals"][0]["last_completed"] == 20589
    code, d = parse(tmp_path, "torch-nccl", WATCHDOG_113)
    assert code == 1 and d["timeouts"][0]["numel_in"] is None and d["timeouts"][0]["ran_ms"] == 1800520
    assert d["process_down"] == 1
    code, d = parse(tmp_path, "torch-nccl", "Epoch 3 done\n")
    assert code == 1 and d == {}


def test_a_timeout_restated_by_the_terminated_thread_is_one_timeout(tmp_path):
    """The watchdog thread's exception restates the timeout it caught (vLLM issue 6042's Ray log):
    one work, one timeout, its PG from whichever line names it; another work stays its own."""
    caught = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
              "WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, Timeout(ms)=600000) ran for "
              "600027 milliseconds before timing out.\n")
    restated = ("[rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 1 Rank 1] Process group watchdog thread terminated with "
                "exception: " + caught.split("] ", 1)[1])
    code, d = parse(tmp_path, "torch-nccl", caught + restated)
    assert code == 1 and d["terminated"] == 1
    assert [(t["rank"], t["seq"], t["pg"]) for t in d["timeouts"]] == [(1, 158046, "1")]
    other = caught.replace("SeqNum=158046", "SeqNum=158047")
    code, d = parse(tmp_path, "torch-nccl", caught + restated + other)
    assert [(t["rank"], t["seq"]) for t in d["timeouts"]] == [(1, 158046), (1, 158047)]
    code, d = parse(tmp_path, "torch-nccl", caught + caught.replace("[rank1]", "[rank2]").replace("[Rank 1]", "[Rank 2]"))
    assert [t["rank"] for t in d["timeouts"]] == [1, 2]  # the same work on two ranks: two timeouts


def test_a_ranks_own_line_after_a_long_one_is_never_joined_to_it(tmp_path):
    """A paste's wrapped lines are joined again (044db82), but a line that names a rank of its
    own (torch's '  what():  [PG 0 (default_pg) Rank 1] ...' under rank 0's long heartbeat
    line) starts a line: it was glued to rank 0's and its timeout blamed on rank 0."""
    heartbeat = ("[rank0]:[E1204 10:00:00.000000 123 ProcessGroupNCCL.cpp:1375] [PG 0 (default_pg) Rank 0] "
                 "Heartbeat monitor timed out! Process will be terminated after dumping debug info. "
                 "workMetaList_.size()=1\n")
    what = ("  what():  [PG 0 (default_pg) Rank 1] Process group watchdog thread terminated with exception: "
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n")
    code, d = parse(tmp_path, "torch-nccl", heartbeat + what)
    assert code == 1 and d["ranks"] == [0, 1], d
    assert [(t["rank"], t["seq"]) for t in d["timeouts"]] == [(1, 7)]


INSPECTOR = ('{"header": {"id": "0x7f", "rank": 0, "n_ranks": 2, "nnodes": 1}, "metadata": {'
             '"inspector_output_format_version": "v4.0", "hostname": "h1", "pid": 9}, "coll_perf": {"coll": '
             '"AllReduce", "coll_sn": 3, "coll_msg_size_bytes": 1048576, "coll_exec_time_us": 50, '
             '"coll_timing_source": "kernel_gpu", "coll_algobw_gbs": 20.9, "coll_busbw_gbs": 20.9}}\n'
             '{"header": {"id": "0x7f", "rank": 1, "n_ranks": 2, "nnodes": 1}, "metadata": {}, "p2p_perf": {'
             '"p2p": "Send", "p2p_sn": 4, "p2p_peer": 0, "p2p_msg_size_bytes": 4096, "p2p_exec_time_us": 9, '
             '"p2p_algobw_gbs": 0.4, "p2p_busbw_gbs": 0.4}}\n')


def test_inspector_stream_coll_and_p2p_and_a_cut_record(tmp_path):
    code, d = parse(tmp_path, "nccl-inspector", INSPECTOR)
    assert code == 0 and [r["kind"] for r in d["records"]] == ["coll", "p2p"]
    assert d["records"][1]["peer"] == 0 and d["records"][0]["busbw_GBps"] == 20.9 and d["ranks"] == 2
    code, d = parse(tmp_path, "nccl-inspector", INSPECTOR[: INSPECTOR.rindex('"p2p_busbw_gbs"')])
    assert code == 1 and len(d["records"]) == 1 and "cut short" in d["errors"][0]


def test_watch_reads_inspector_through_the_same_reader(tmp_path):
    from sncheck.watch import dumps

    p = tmp_path / "inspector-rank0.log"
    p.write_text(INSPECTOR)
    dump = dumps.read_dump(p)
    assert isinstance(dump, dumps.Dump) and dump.format == "nccl_inspector"
    rows = dumps.inspector_rows(dump)
    assert [(r["collective"], r["busbw_GBps"]) for r in rows] == [("AllReduce", 20.9)]  # p2p is not a collective


def _mlx(rows: dict[str, dict[str, str]]) -> str:
    out = []
    for title, records in rows.items():
        out += ["", title, "-" * len(title)] + [f"{k:<37}: {v}" for k, v in records.items()]
    return "\n".join(out) + "\n"


MLX_OK = {"Operational Info": {"State": "Active", "Physical state": "LinkUp", "Speed": "IB-NDR", "Width": "4x",
                               "FEC": "Standard LL RS-FEC - RS(271,257)", "Loopback Mode": "No Loopback",
                               "Auto Negotiation": "ON"},
          "Troubleshooting Info": {"Status Opcode": "0", "Group Opcode": "N/A",
                                   "Recommendation": "No issue was observed"},
          "Physical Counters and BER Info": {"Time Since Last Clear [Min]": "120", "Effective Physical Errors": "0",
                                             "Effective Physical BER": "15E-255", "Link Down Counter": "0",
                                             "Link Error Recovery Counter": "0"}}


def test_mlxlink_text_json_and_their_failures(tmp_path):
    code, d = parse(tmp_path, "mlxlink", _mlx(MLX_OK))
    assert code == 0 and (d["state"], d["speed"], d["counters"]["effective_ber"]) == ("Active", "IB-NDR", "15E-255")
    down = {**MLX_OK, "Operational Info": {**MLX_OK["Operational Info"], "State": "Polling"},
            "Troubleshooting Info": {"Status Opcode": "1024", "Group Opcode": "PHY FW",
                                     "Recommendation": "Cable is unplugged"}}
    code, d = parse(tmp_path, "mlxlink", _mlx(down))
    assert code == 1 and d["status_opcode"] == 1024 and any("Polling" in f for f in d["faults"])
    code, d = parse(tmp_path, "mlxlink", _mlx(MLX_OK).split("Troubleshooting Info")[0])
    assert code == 1  # Operational Info only: cut before the troubleshooting section
    doc = {"result": {"output": {t: dict(r) for t, r in MLX_OK.items()}}, "status": {"code": 0, "message": "success"}}
    code, d = parse(tmp_path, "mlxlink", json.dumps(doc))
    assert code == 0 and d["format"] == "json" and d["counters"]["link_down"] == 0
    code, d = parse(tmp_path, "mlxlink", json.dumps(doc)[:-40])
    assert code == 1
    # pasted with its command line and pretty-printed, then cut: the sections before the cut are read
    pretty = "#mlxlink -d /dev/mst/mt4119_pciconf0 -p 1 --json\n" + json.dumps(doc, indent=3)
    cut = pretty[: pretty.index('"Troubleshooting Info"')]
    code, d = parse(tmp_path, "mlxlink", cut)
    assert code == 1 and d["state"] == "Active" and d["speed"] == "IB-NDR" and "cut short" in d["errors"][0]
    assert parse(tmp_path, "mlxlink", pretty)[0] == 0


def test_mlxlink_tool_information_ends_at_its_package_version_and_long_options_abbreviate(tmp_path):
    """runningVersion prints Tool Information's records ending with PKG_NAME ' Version' (MFT or
    mstflint); getopt_long takes a unique prefix of a long option ('--show_mo': harvest 9's capture)."""
    tool = {"Tool Information": {"Firmware Version": "28.46.3048", "amBER Version": "6.4", "MFT Version": "4.35.0-159"}}
    whole = _mlx({**MLX_OK, **tool})
    assert parse(tmp_path, "mlxlink", whole)[0] == 0
    assert parse(tmp_path, "mlxlink", whole.replace("MFT Version", "mstflint Version"))[0] == 0
    for last in ("amBER Version", "MFT Version"):  # cut before either record: Tool Information not whole
        code, d = parse(tmp_path, "mlxlink", whole[: whole.index(last)])
        assert code == 1 and "Tool Information" in d["errors"][-1], last
    module = {"Module Info": {"Identifier": "OSFP", "Tx Adaptive EQ Fault [per lane]": "0,0,0,0"}}
    asked = "$ sudo mlxlink -d mlx5_0 --show_mo\n" + _mlx({**MLX_OK, **tool, **module})
    assert parse(tmp_path, "mlxlink", asked)[0] == 0
    code, d = parse(tmp_path, "mlxlink", asked[: asked.index("Module Info")])
    assert code == 1 and "asks -m" in d["errors"][-1]
    # '--show_m' is also --show_multi_port_info's prefix: not taken for Module Info
    assert parse(tmp_path, "mlxlink", asked.replace("--show_mo", "--show_m")[: asked.index("Module Info") - 1])[0] == 0


def test_mlxlink_show_ber_monitor_asks_its_section_or_the_hcas_refusal(tmp_path):
    """Harvest 12: a loop of 'mlxlink --show_ber_monitor' on 8 HCAs, each run ending in mlxlink's
    '-E- "--show_ber_monitor" option is not supported for HCA'; cut after the first run's
    Troubleshooting Info it read as a whole output (exit 0). The option asks showBerMonitorInfo's
    'BER Monitor Info' section (mstflint mlxlink_commander.cpp), or that refusal in its place."""
    tool = {"Tool Information": {"Firmware Version": "20.36.1010", "MFT Version": "mft 4.24.0-72"}}
    cmd = "$ sudo mlxlink -d /dev/mst/mt4123_pciconf0 --show_ber_monitor\n"
    refused = cmd + _mlx({**MLX_OK, **tool}) + ' \n-E- "--show_ber_monitor" option is not supported for HCA\n'
    code, d = parse(tmp_path, "mlxlink", refused)
    assert code == 1 and d["errors"] == ['-E- "--show_ber_monitor" option is not supported for HCA']
    code, d = parse(tmp_path, "mlxlink", refused[: refused.index("Tool Information")])
    assert code == 1 and "asks --show_ber_monitor" in d["errors"][-1]
    monitor = {"BER Monitor Info": {"BER Monitor State": "Normal", "BER Monitor Type": "Post FEC/No FEC BER monitoring"}}
    switch = cmd + _mlx({**MLX_OK, **tool, **monitor})
    assert parse(tmp_path, "mlxlink", switch)[0] == 0
    code, d = parse(tmp_path, "mlxlink", switch[: switch.index("BER Monitor Type")])
    assert code == 1 and "'BER Monitor Info' ends before its 'BER Monitor Type'" in d["errors"][-1]


DEVINFO = ("hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.39.1002\n"
           "\tnode_guid:\t\t\tb83f:d203:00a1:3c10\n\tvendor_part_id:\t\t\t4129\n\tboard_id:\t\t\tMT_0000000838\n"
           "\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
           "\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t4096 (5)\n\t\t\tsm_lid:\t\t\t1\n"
           "\t\t\tport_lid:\t\t17\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tInfiniBand\n\n")


def test_ibv_devinfo_port_states_and_a_device_cut_before_its_ports(tmp_path):
    code, d = parse(tmp_path, "ibv-devinfo", DEVINFO)
    assert code == 0 and d["devices"][0]["ports"][0]["port_lid"] == 17 and d["devices"][0]["vendor_part_id"] == 4129
    code, d = parse(tmp_path, "ibv-devinfo", DEVINFO.replace("PORT_ACTIVE (4)", "PORT_DOWN (1)"))
    assert code == 1 and d["devices"][0]["ports"][0]["state_code"] == 1
    code, d = parse(tmp_path, "ibv-devinfo", DEVINFO.split("\t\tport:")[0])
    assert code == 1 and "cut short" in d["errors"][0]
    assert parse(tmp_path, "ibv-devinfo", "No IB devices found\n")[0] == 1
    # an excerpt that starts inside a port (-v): its lines are kept and judged, the start said cut away
    tail = "\t\t\tactive_width:\t\t4X (2)\n\t\t\tphys_state:\t\tDISABLED (3)\n\n" + DEVINFO
    code, d = parse(tmp_path, "ibv-devinfo", tail)
    assert code == 1 and d["devices"][0]["name"] is None and d["devices"][0]["ports"][0]["phys_state"] == "DISABLED"
    assert d["faults"] == ["the port before the first hca_id: physical state DISABLED"]
    assert d["errors"] == ["port lines before any 'hca_id:' line: the start of the output is cut away"]
    # a port is whole through its link_layer line (print_hca_cap: every port, after port_lmc): a cut
    # at any line end between its state and its link_layer is cut short (harvest 9's random cuts)
    start, stop = DEVINFO.index("\t\t\tmax_mtu"), DEVINFO.index("\t\t\tlink_layer")
    for at in [i + 1 for i, ch in enumerate(DEVINFO) if ch == "\n" and start <= i + 1 <= stop]:
        code, d = parse(tmp_path, "ibv-devinfo", DEVINFO[:at])
        assert code == 1 and "no link_layer line" in d["errors"][0], at


PORTSTATE = ("CA/RT PortInfo:\n# Port info: Lid 17 port 1\nLinkState:.......................Active\n"
             "PhysLinkState:...................LinkUp\nLid:.............................17\n"
             "SMLid:...........................1\nLMC:.............................0\n"
             "LinkWidthSupported:..............1X or 4X\nLinkWidthEnabled:................1X or 4X\n"
             "LinkWidthActive:.................4X\nLinkSpeedSupported:..............2.5 Gbps or 5.0 Gbps or 10.0 Gbps\n"
             "LinkSpeedEnabled:................2.5 Gbps or 5.0 Gbps or 10.0 Gbps\n"
             "LinkSpeedActive:.................10.0 Gbps\nLinkSpeedExtSupported:...........14.0625 Gbps\n"
             "LinkSpeedExtEnabled:.............14.0625 Gbps\nLinkSpeedExtActive:..............14.0625 Gbps\n"
             "Mkey:............................<not displayed>\nMkeyLeasePeriod:.................0\n"
             "ProtectBits:.....................0\n")


def test_ibportstate_states_peer_warnings_and_cuts(tmp_path):
    code, d = parse(tmp_path, "ibportstate", PORTSTATE)
    assert code == 0 and (d["ports"][0]["lid"], d["ports"][0]["speed"], d["ports"][0]["width"]) == \
        (17, "14.0625 Gbps", "4X")
    code, d = parse(tmp_path, "ibportstate", PORTSTATE.replace("....Active", "....Down").replace("LinkUp", "Polling"))
    assert code == 1 and len(d["faults"]) == 2
    code, _ = parse(tmp_path, "ibportstate", PORTSTATE.split("Mkey:")[0])
    assert code == 1
    warn = "ibwarn: [8136] main: Peer ports operating at active speed 1 rather than 4 (10.0 Gbps)\n"
    assert parse(tmp_path, "ibportstate", PORTSTATE + warn)[0] == 1


MLNX_EXT = ("# MLNX ext Port info: Lid 17 port 1\nStateChangeEnable:...............0x00\n"
            "LinkSpeedSupported:..............0x01\nLinkSpeedEnabled:................0x01\n"
            "LinkSpeedActive:.................0x00\n")


def test_ibportstate_blocks_in_the_order_main_prints_them(tmp_path):
    """ibportstate.c main(): the port's block, its MLNX ext block, then a change's 'After
    PortInfo set:' block or an Active switch port's peer. Each part missing at the end is a
    cut; an MLNX ext block first means the start was cut away."""
    assert parse(tmp_path, "ibportstate", PORTSTATE + MLNX_EXT)[0] == 0
    for cut in (PORTSTATE + MLNX_EXT.rsplit("LinkSpeedActive", 1)[0],  # MLNX block short
                MLNX_EXT,  # its port block cut away
                PORTSTATE.replace("CA/RT PortInfo", "Initial CA/RT PortInfo"),  # a change, no After block
                PORTSTATE.replace("CA/RT PortInfo", "Initial CA/RT PortInfo") + "\nAfter PortInfo set:\n",
                PORTSTATE.replace("CA/RT PortInfo", "Switch PortInfo").split("Mkey:")[0]):  # Active, no peer
        code, d = parse(tmp_path, "ibportstate", cut)
        assert code == 1 and any("cut" in e for e in d["errors"]), (cut[-80:], d["errors"])
    change = PORTSTATE.replace("CA/RT PortInfo", "Initial CA/RT PortInfo")
    assert parse(tmp_path, "ibportstate", change + "\nAfter PortInfo set:\n" + PORTSTATE.split("\n", 1)[1])[0] == 0
    assert parse(tmp_path, "ibportstate", change + "Port is already in enable state\n")[0] == 0
    switch = PORTSTATE.replace("CA/RT PortInfo", "Switch PortInfo").split("Mkey:")[0]
    peer = "Peer PortInfo:\n" + PORTSTATE.split("\n", 1)[1]
    assert parse(tmp_path, "ibportstate", switch + peer)[0] == 0


def test_mlxlink_as_new_as_4_18_is_cut_without_its_tool_information(tmp_path):
    """showPddr calls runningVersion (Tool Information) since mstflint 4.18 (121a3904, which also added
    --amber_collect); 'Physical state : N/A' is PR 1103's (2025). Harvest 12's random cuts of harvest 9's
    NVLink capture ('mlxlink ... --amber_collect ...') cut before Tool Information read as whole (exit 0).
    An output that does not show it is that new (SONiC's 2018 mlxlink) may still end at Troubleshooting Info."""
    tool = {"Tool Information": {"Firmware Version": "36.2014.1676", "MFT Version": "mft 4.32.0-120"}}
    amber = "/usr/bin/mlxlink -d /dev/mst/netir10497_00.cc.00_gpu7 --amber_collect /tmp/mlx96.csv\n"
    assert parse(tmp_path, "mlxlink", amber + _mlx({**MLX_OK, **tool}))[0] == 0
    code, d = parse(tmp_path, "mlxlink", amber + _mlx(MLX_OK))
    assert code == 1 and "Tool Information" in d["errors"][-1]
    na = {**MLX_OK, "Operational Info": {**MLX_OK["Operational Info"], "Physical state": "N/A"}}
    code, d = parse(tmp_path, "mlxlink", _mlx(na))
    assert code == 1 and "since mstflint 4.18" in d["errors"][-1]
    assert parse(tmp_path, "mlxlink", _mlx(MLX_OK))[0] == 0  # nothing says how new: an older mlxlink's whole output


def test_ibportstate_before_1_5_cannot_tell_a_switch_port_cut_before_its_peer(tmp_path):
    """Decision (harvest 12) on harvest 11's named exception in test_random_cuts: infiniband-diags
    1.4.3's ibportstate.c main() prints 'PortInfo:' and get_port_info()'s block (the port states,
    widths and speeds) for a CA and a switch alike; is_switch, from get_node_info(), is printed
    nowhere, and only an Active switch port other than 0 then prints 'Peer PortInfo:'. So a switch
    port's old output cut before its peer is, byte for byte, a CA port's whole output: no grammar
    can tell them, and the exception stays. From 1.5 the line names the node ('Switch PortInfo:'),
    and the same cut exits 1."""
    block = ("# Port info: Lid 2 port 15\nLinkState:.......................Active\n"
             "PhysLinkState:...................LinkUp\nLinkWidthSupported:..............1X or 4X\n"
             "LinkWidthEnabled:................1X or 4X\nLinkWidthActive:.................4X\n"
             "LinkSpeedSupported:..............2.5 Gbps or 5.0 Gbps or 10.0 Gbps\n"
             "LinkSpeedEnabled:................2.5 Gbps or 5.0 Gbps or 10.0 Gbps\n"
             "LinkSpeedActive:.................10.0 Gbps\n")
    peer = "Peer PortInfo:\n" + block.replace("Lid 2 port 15", "Lid 2 DR path slid 65535; dlid 65535; 0,15 port 16")
    assert parse(tmp_path, "ibportstate", "PortInfo:\n" + block + peer)[0] == 0  # a 1.4 switch port, whole
    assert parse(tmp_path, "ibportstate", "PortInfo:\n" + block)[0] == 0  # a 1.4 CA port whole = that switch port cut
    code, d = parse(tmp_path, "ibportstate", "Switch PortInfo:\n" + block)  # 1.5+: the node is named
    assert code == 1 and any("Peer PortInfo" in e for e in d["errors"]), d["errors"]


def test_ethtool_mlx5_error_counters_fail_drops_are_kept(tmp_path):
    text = ("NIC statistics:\n     rx_packets: 1200\n     rx_out_of_buffer: 7\n     rx_discards_phy: 3\n"
            "     rx_crc_errors_phy: 0\n     rx_symbol_err_phy: 0\n     link_down_events_phy: 0\n"
            "     rx_corrected_bits_phy: 512\n     rx_err_lane_0_phy: 512\n")
    code, d = parse(tmp_path, "ethtool-mlx5", text)
    assert code == 0 and d["drops"] == {"rx_discards_phy": 3, "rx_out_of_buffer": 7} and d["lanes"] == {"0": 512}
    code, d = parse(tmp_path, "ethtool-mlx5", text.replace("rx_crc_errors_phy: 0", "rx_crc_errors_phy: 61219013"))
    assert code == 1 and d["errors_nonzero"] == {"rx_crc_errors_phy": 61219013}


SMI = """Tue Mar 12 10:00:00 2024
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.154.05             Driver Version: 535.154.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |
| N/A   27C    P0              69W / 700W |      4MiB / 81559MiB |      0%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  | 00000000:2A:00.0 Off |                    0 |
| N/A   29C    P0              71W / 700W |      4MiB / 81559MiB |      0%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    1   N/A  N/A     41235      C   python3                                   1024MiB |
+---------------------------------------------------------------------------------------+
"""


def test_nvidia_smi_table_values_cuts_and_failures(tmp_path):
    code, d = parse(tmp_path, "nvidia-smi", SMI)
    assert code == 0 and d["driver_version"] == "535.154.05" and d["cuda_version"] == "12.2"
    assert [(g["index"], g["bus_id"], g["power_W"], g["memory_total_MiB"], g["mig_mode"]) for g in d["gpus"]] == \
        [(0, "00000000:18:00.0", 69, 81559, "Disabled"), (1, "00000000:2A:00.0", 71, 81559, "Disabled")]
    assert d["processes"][0]["pid"] == 41235 and d["processes"][0]["memory_MiB"] == 1024
    cut = SMI.split("| N/A   29C")[0]
    assert parse(tmp_path, "nvidia-smi", cut)[0] == 1  # GPU 1's block has its first line only
    # cut at a block's rule: no Processes box follows (nvidia-smi prints one under every table), and
    # the inventory's count tells too (--expect)
    one = SMI.split("|   1  NVIDIA")[0]
    assert parse(tmp_path, "nvidia-smi", one)[0] == 1
    assert "no Processes box" in parse(tmp_path, "nvidia-smi", one)[1]["errors"][0]
    assert parse(tmp_path, "nvidia-smi", SMI.split("\n+---------------------------------------------------------------"
                                                   "------------------------+\n| Processes:")[0])[0] == 1
    f = tmp_path / "one.txt"
    f.write_text(one)
    assert CliRunner().invoke(main, ["parse", "nvidia-smi", str(f), "--expect", "2"]).exit_code == 1
    code, d = parse(tmp_path, "nvidia-smi", SMI.replace("|                    0 |\n| N/A   29C",
                                                        "|                    2 |\n| N/A   29C"))
    assert code == 1 and "2 volatile uncorrected ECC" in d["faults"][0]
    code, d = parse(tmp_path, "nvidia-smi", SMI.replace("69W / 700W", "ERR! / 700W"))
    assert code == 1
    lost = "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n"
    code, d = parse(tmp_path, "nvidia-smi", lost)
    assert code == 1 and d["unreachable"] == [{"bus_id": "0000:3B:00.0", "reason": "Unknown Error"}]
    gone = "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU\n"
    assert parse(tmp_path, "nvidia-smi", gone)[1]["unreachable"][0]["reason"].startswith("GPU is lost")
    assert parse(tmp_path, "nvidia-smi", SMI.split("|    1   N/A")[0])[0] == 1  # Processes not closed
    # a file saved without the last newline (gpud's test data): the closing rule is as wide as the
    # table's other rules, so whole; the same rule cut short is narrower than all of them
    assert parse(tmp_path, "nvidia-smi", SMI.rstrip("\n"))[0] == 0
    assert parse(tmp_path, "nvidia-smi", SMI.rstrip("\n")[:-12])[0] == 1


def test_kernel_log_reads_amdgpu_counts_of_each_kernel_era(tmp_path):
    text = ("[  10.1] amdgpu 0000:0b:00.0: 3 correctable hardware errors detected in umc block\n"
            "[  10.2] amdgpu 0000:0c:00.0: amdgpu: no uncorrectable hardware errors detected in umc block\n"
            "[  10.3] amdgpu 0000:0d:00.0: amdgpu: {7}socket: 1, die: 0, 2 new uncorrectable hardware errors "
            "detected in umc block\n"
            "[  10.4] amdgpu 0000:0d:00.0: amdgpu: {7}socket: 1, die: 0, 5 uncorrectable hardware errors detected "
            "in total in umc block\n")
    code, d = parse(tmp_path, "kernel-log", text)
    amd = [(e["class"], e["bus_id"], e["count"], e["total"]) for e in d["events"]]
    assert amd == [("correctable", "0000:0b:00", 3, None), ("uncorrectable", "0000:0d:00", 2, 5)]
    assert code == 1 and d["faults"] == ["amdgpu 2 uncorrectable errors in umc on 0000:0d:00"]
    assert parse(tmp_path, "kernel-log", text.split("[  10.3]")[0])[0] == 0  # correctable only: counted


def test_kernel_log_nvlink5_xids_name_unit_severity_and_link(tmp_path):
    """Xid 144-150 (GSP-composed: 'UNIT Fatal|Nonfatal XC0 i0 Link N (words)'): unit, class, link."""
    text = ("[ 10.0] NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 "
            "0x00000001 0x00000000 0x00100000 0x00000004)\n"
            "[ 11.0] NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 "
            "0x00000000 0x00000000 0x00000000)\n"
            "[ 12.0] NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error\n")
    code, d = parse(tmp_path, "kernel-log", text)
    nonfatal, fatal, ecc = d["events"]
    assert code == 1 and (nonfatal["unit"], nonfatal["class"], nonfatal["link"]) == ("RLW_RXPIPE", "non-fatal", 13)
    assert (fatal["unit"], fatal["class"], fatal["link"], fatal["status"][0]) == ("NETIR", "fatal", -1, "0x000fe406")
    assert "unit" not in ecc and ecc["class"] is None and ecc["process"] == "python3"


def test_mlxlink_cut_after_a_section_title_is_cut_short():
    """The whole suite's random cuts (harvest 9's NVLink mlxlink capture cut right after its
    'Tool Information' title, before the '----' rule under it): the title was no record and
    no section, so the output read as whole, exit 0. A last line that is a title with no rule
    under it is a cut; a shell prompt pasted after the output is not."""
    from sncheck.vendors.infiniband.mlxlink import parse_mlxlink

    body = ("Operational Info\n----------------\nState                              : Active\n\n"
            "Troubleshooting Info\n--------------------\nStatus Opcode                      : 0\n"
            "Recommendation                     : No issue was observed\n\n")
    tool = "Tool Information\n----------------\nFirmware Version                   : 36.2014.1676\n" \
           "MFT Version                        : mft 4.32.0-120\n\n"
    assert parse_mlxlink(body + tool)["errors"] == []
    assert parse_mlxlink(body + tool + "user@gpu1:~$ \n")["errors"] == []
    cut = parse_mlxlink(body + "Tool Information\n")["errors"]
    assert cut and "'Tool Information', a section title with no '----' rule under it: cut short" in cut[0], cut


def test_nccl_merged_ib_devices_are_read_with_their_members() -> None:
    """Harvest 12 (nccl-tests issue 373): NCCL_IB_MERGE_NICS prints a merged device as
    '[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}' (net_ib.cc ncclIbInit, from 2.19); each was read
    as a device named '={'. A plain device after a merged one keeps its own reading."""
    from sncheck.vendors.nccl.debug_log import parse_nccl_debug

    line = ("bigo:1884:2298 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} "
            "[1]={[2] mlx5_0:1/RoCE, [3] mlx5_1:1/RoCE} [2]mlx5_4:1/IB [RO]; OOB bond0.526:169.136.106.9<0>\n")
    net = parse_nccl_debug(line)["net"]
    assert [(d["index"], d["device"], d["port"], d["link"]) for d in net["devices"]] == [
        (0, "mlx5_2+mlx5_3", None, "RoCE"), (1, "mlx5_0+mlx5_1", None, "RoCE"), (2, "mlx5_4", 1, "IB")]
    assert net["devices"][1]["members"] == [{"index": 2, "device": "mlx5_0", "port": 1, "link": "RoCE"},
                                            {"index": 3, "device": "mlx5_1", "port": 1, "link": "RoCE"}]
    assert net["oob"] == "bond0.526:169.136.106.9<0>"


def test_nccl_2_7_direct_pointer_and_direct_shared_memory_are_their_transports(tmp_path):
    """p2p.cc prints 'via P2P/direct pointer%s' (useReadStr '/read' or empty) and 2.4-2.8's shm.cc 'via direct
    shared memory' (the transport later printed SHM/direct/direct). Harvest 16's nccl-issue 644 read them as
    'P2P/direct' and 'direct': the transport's name cut at its first blank."""
    lines = ["h:1:2 [4] NCCL INFO Channel 00 : 4[84000] -> 3[9000] via direct shared memory",
             "h:1:3 [1] NCCL INFO Channel 00 : 1[5000] -> 0[4000] via P2P/direct pointer",
             "h:1:3 [1] NCCL INFO Channel 01 : 1[5000] -> 2[8000] via P2P/direct pointer/read",
             "h:1:4 [2] NCCL INFO Ring 00 : 2[2] -> 3[3] via direct shared memory"]
    code, doc = parse(tmp_path, "nccl-debug", "\n".join(lines) + "\n")
    assert code == 0, doc
    assert doc["transports"] == {"SHM/direct": 2, "P2P/direct pointer": 2} and doc["channels"] == 4


def test_a_watchdog_message_cut_inside_its_first_words_is_that_message_cut(tmp_path):
    """Harvest 16 (LlamaFactory-issue 8261): the paste ends inside '[Rank 5] Watchdog caught collective operati',
    glued after a progress bar, its month unpadded ('E602'): the view refused it as holding no watchdog message.
    A ProcessGroupNCCL.cpp error line cut (no newline) inside the first words of a failure message is that
    message cut: its rank kept, exit 1. A warning line or other words stay not the view's."""
    head = "[1763]   1%|          | 24/1752 [01:08<1:22:56,  2.88s/it][rank5]:[E602 11:17:52.185053341 " \
           "ProcessGroupNCCL.cpp:632] [Rank 5] "
    for cut in ("Watchdog caught collective operati", "Heartbeat monitor ti", ""):
        code, doc = parse(tmp_path, "torch-nccl", "[1762]   1%|          | 23/1752\n" + head + cut)
        assert code == 1 and doc["ranks"] == [5] and any("cut" in e for e in doc["errors"]), (cut, doc)
    for other in (head.replace("[E602", "[W602") + "Watchdog caught", head + "TORCH_NCCL_AVOID_RECORD_STREAMS is"):
        code, doc = parse(tmp_path, "torch-nccl", other)
        assert code == 1 and doc == {}, (other, code, doc)  # refused: no JSON


def test_the_mig_devices_box_pasted_alone_is_an_nvidia_smi_excerpt(tmp_path):
    """Harvest 16 (nvitop-PR 8): the '| MIG devices: |' box pasted without the GPU table above it was refused
    as not nvidia-smi's; it is nvidia-smi's box: no GPUs, an error naming the excerpt, exit 1. The words
    outside a box line stay not the view's."""
    box = ("+-----------------------------------------------------------------------------+\n"
           "| MIG devices:                                                                |\n"
           "+------------------+----------------------+-----------+-----------------------+\n"
           "|  1    3   0   0  |  14366MiB / 19968MiB | 28      0 |  2   0    1    0    0 |\n"
           "+------------------+----------------------+-----------+-----------------------+\n")
    code, doc = parse(tmp_path, "nvidia-smi", box)
    assert code == 1 and doc["gpus"] == [] and "MIG devices table alone" in doc["errors"][0]
    assert parse(tmp_path, "nvidia-smi", "MIG devices: none configured\n") == (1, {})
