"""Harvest 19's first-try misses, each read now by its tool's grammar (README "Harvest 19").

Each case is written from the tool's source (the line it prints), not from the capture that
showed it: RCCL's RAS banner (projects/rccl src/ras/client_support.cc), the ncclras client's
own failures (src/ras/client.cc), a job summary whose header blanks a page re-rendered, mlx5's
vport counters grep-ed out of ``ethtool -S`` (en_stats.c vport_stats_desc), and an npu-smi
border cut mid-line (npucli closes every border with its '+')."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import ParseError
from sncheck.vendors import nccl_ras
from sncheck.vendors.ascend.npu_smi import parse_info
from sncheck.vendors.infiniband.ethtool import parse_ethtool_stats
from sncheck.vendors.infiniband.ibnetdiscover import parse_iblinkinfo, parse_ibnetdiscover

# rasClientRunComms's group table (header lines and '%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s'), then the two sections
_GROUP = "%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s" % (0, 1, 1, "8", 8, 8, "RUNNING", "OK")
_REPORT = "\n".join(("Communicators... (0.00s)", "=============", "",
                     "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors",
                     "    #  in group  per comm  per node  per comm  in group", _GROUP, "",
                     "Errors", "======", "", "Warnings", "========", ""))


def test_rccl_banner_is_read_as_the_reports_version() -> None:
    """RCCL 2.28's rasClientRunInit prints 'RCCL version %s compiled with ROCm <build>' and 'HIP runtime
    version %d, amdgpu driver version %d' where NCCL prints its CUDA lines: both were dropped (null)."""
    text = ('RCCL version 2.28.3 compiled with ROCm "7.2.0.0-43-fc0010cf6a"\n'
            "HIP runtime version 70226015, amdgpu driver version 70226015\n\n" + _REPORT)
    out = nccl_ras.parse(text)
    assert out["nccl_version"] == "2.28.3" and out["library"] == "RCCL"
    assert out["rocm_compiled"] == "7.2.0.0-43-fc0010cf6a"
    assert (out["hip_runtime"], out["amdgpu_driver"]) == (70226015, 70226015)
    assert out["errors"] == []


def test_an_nccl_banner_is_not_taken_for_rccls() -> None:
    out = nccl_ras.parse("NCCL version 2.30.7 compiled with CUDA 12.8\n"
                         "CUDA runtime version 12080, driver version 13000\n\n" + _REPORT)
    assert out["nccl_version"] == "2.30.7" and out["cuda_driver"] == 13000 and "library" not in out


@pytest.mark.parametrize("header", [
    # NCCL's own (client_support.cc) and the same words with the blanks a page re-rendered (NCCL 2.30.7's RAS
    # example README shows them so)
    ("  Nodes  Processes         GPUs  Processes     GPUs\n(total)   per node  per process    (total)  (total)\n"),
    ("  Nodes    Processes          GPUs  Processes      GPUs\n  (total)   per node   per process    (total)   (total)\n"),
])
def test_the_job_summary_is_read_by_its_header_words(header: str) -> None:
    text = "Job summary\n===========\n\n" + header + "      2            4             1          8         8\n\n" + _REPORT
    assert nccl_ras.parse(text)["job"] == {"nodes": 2, "processes_per_node": 4, "gpus_per_process": 1,
                                           "processes": 8, "gpus": 8}


@pytest.mark.parametrize("failure", [
    "read socket: Connection reset by peer",
    "Connecting to 127.0.0.1:28028: Connection refused\nFailed to connect to the NCCL RAS service!\n"
    "Please make sure that the NCCL job has the RAS service enabled and that\n"
    "the RAS client was started on a node where the NCCL job is running.",
    "NCCL unexpectedly closed the connection",
    "Connection timed out; retrying...\nConnection timed out",
])
def test_the_clients_own_failure_is_not_measured_not_refused(failure: str, tmp_path) -> None:
    """client.cc prints these instead of a report: they were refused as 'not NCCL RAS output' (no JSON
    out, no line naming what failed); now kept in client_failed, exit 1, nothing measured."""
    f = tmp_path / "ras.txt"
    f.write_text(failure + "\n")
    r = CliRunner().invoke(main, ["parse", "nccl-ras", str(f), "--json"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["client_failed"] and doc["records"] == [] and "not measured" in doc["errors"][0]


def test_other_text_is_still_refused() -> None:
    with pytest.raises(ParseError):
        nccl_ras.parse("Connection timed out; retrying...\nsomething else\n")


def test_an_mlx5_ports_vport_counters_grep_ed_are_read() -> None:
    """'ethtool -S eth0 | grep rdma' keeps the vport group's RoCE counters alone: no header and no
    _phy line, and it was refused as not an mlx5 port's. Read, but none of its counters is an error
    counter: not judged (stop 46's review), never a clean port."""
    out = parse_ethtool_stats("# ethtool -S eth01 | grep -i rdma\n"
                              "     rx_vport_rdma_unicast_packets: 439107945\n"
                              "     tx_vport_rdma_unicast_bytes: 147370719852\n")
    assert out["counters"] == {"rx_vport_rdma_unicast_packets": 439107945,
                               "tx_vport_rdma_unicast_bytes": 147370719852}
    assert out["faults"] == [] and [e for e in out["errors"] if e.startswith("not judged: ")] == out["errors"] != []


def test_another_drivers_counters_are_still_refused() -> None:
    with pytest.raises(ParseError):
        parse_ethtool_stats("     rx_unicast: 5\n     tx_unicast: 7\n")


_NPU = """+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc1                 Version: 24.1.rc1                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 97.6        52                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3525 / 65536         |
"""


def test_an_npu_smi_border_cut_mid_line_is_a_cut() -> None:
    """A paste that breaks off inside the border under the last chip, then goes on with another
    command, read whole (exit 0): npucli ends every border with '+'."""
    whole = parse_info(_NPU + "+===========================+===============+" + "=" * 52 + "+\n")
    assert whole["errors"] == []
    cut = parse_info(_NPU + "+===========================+===============+=============================\n"
                     "cat /data/ascend_toolkit_install.info\n")
    assert any("border cut mid-line" in e for e in cut["errors"])


def test_a_report_without_communicators_is_whole_only_with_its_warnings() -> None:
    """rasClientRunComms prints 'No communicator data collected!' and then the Errors and Warnings
    sections as always: a paste cut after it (before a DEAD block) was read whole, exit 0 (harvest 19's
    random cuts of NCCL 2.30.7's RAS example)."""
    head = "Communicators... (0.002s)\n=============\n\nNo communicator data collected!\n\nErrors\n======\n\n"
    whole = nccl_ras.parse(head + "DEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
                           "  Process 3748990 on node node1 managing GPU 3\n\nWarnings\n========\n")
    assert whole["complete"] and whole["records"][0]["state"] == "DEAD"
    cut = nccl_ras.parse(head)
    assert not cut["complete"] and any("cut short" in e for e in cut["errors"])


_CA_PORT = ('CA: centos-data-200 HCA-1:\n'
            '    0x0002c903000d81f9      4    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>       2    3[  ] '
            '"Infiniscale-IV Mellanox Technologies" ( )\n')


@pytest.mark.parametrize("command", ["$ iblinkinfo", "root@n01:~# sudo iblinkinfo --ca", "[root@n01 HPL]# iblinkinfo"])
def test_iblinkinfos_pasted_command_line_is_the_reporters(command: str) -> None:
    """'$ iblinkinfo' above the output was 'a line the grammar does not hold' (exit 1 on a whole
    listing): the command line is delivery's (delivery.command_line), as every view reads it."""
    out = parse_iblinkinfo(command + "\n" + _CA_PORT)
    assert out["errors"] == [] and out["ports"][0]["remote"]["port"] == 3


def test_a_label_or_a_command_after_a_record_is_still_an_error() -> None:
    assert parse_iblinkinfo("link info:\n" + _CA_PORT)["errors"]
    assert parse_iblinkinfo(_CA_PORT + "$ iblinkinfo\n")["errors"]


def test_ibnetdiscovers_pasted_command_line_is_the_reporters() -> None:
    report = ("CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )\n"
              "SW  1719 10 0x7cfe9003009ce5b0 4x EDR - CA   134  1 0x7cfe9003003b4bde ( 'ib-i1l1s01' - 'o0001 HCA-1' )\n")
    assert parse_ibnetdiscover("$ sudo ibnetdiscover -p\n" + report) == parse_ibnetdiscover(report)


def test_a_link_to_a_port_its_listed_node_does_not_hold_is_a_cut() -> None:
    """harvest7's SB7700 listing stops at switch port 18 while a CA names its link to port 36: that
    capture exited 1 only for its pasted command line; with the command line read, the listing read
    whole. print_node prints every port of a node it prints, so the switch's listing is cut."""
    sw = ('Switch: 0x7cfe9003009ce5b0 MF0;SB7700:MSB7700/U1:\n'
          '           2    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       4    1[  ] "n02 HCA-1" ( )\n')
    ca = ('CA: n02 HCA-1:\n      0xec0d9a03003d62be      4    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       2 '
          '%4d[  ] "MF0;SB7700:MSB7700/U1" ( )\n')
    assert parse_iblinkinfo(ca % 1 + sw)["errors"] == []
    assert any("does not hold (cut short?)" in e for e in parse_iblinkinfo(ca % 36 + sw)["errors"])
    assert parse_iblinkinfo(ca % 36)["errors"] == []  # the far switch not listed at all: a partial scan's
