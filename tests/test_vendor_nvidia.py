"""NVL72 / HGX views of the NVIDIA plug-in on real captures: fabric, IMEX, nvlink -info,
NCCL MNNVL, nvbandwidth, ib_write_bw; the per-tray checks and the rack-wide clique step."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from parser_checks import only_parse_error_or_json

from sncheck.errors import ParseError
from sncheck.vendors import facts as hf
from sncheck.vendors import registry
from sncheck.vendors.infiniband import perftest
from sncheck.vendors.nvidia import checks as nv
from sncheck.vendors.nccltests import parse as nccl_tests
from sncheck.vendors.nvidia import fabric, fabric_checks, gpu_checks, nvbandwidth, nvidia_smi
from sncheck.vendors.nvidia import sim as nvidia_sim
from sncheck.vendors.sim import HostState, own_ids
from sncheck.vendors.parsers import parsers, strip_source_header
from sncheck.transport.result import Result

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
NVL72 = registry.platform("nvidia-nvl72")
XML = "nvl72/04_nvidia_smi_qx_gb200_real_tray.xml.txt"


def real(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text(encoding="utf-8"))


def by_fact(rows: list[dict]) -> dict[str, dict]:
    return {r["fact"]: r for r in rows}


def expect(cards: int = 4, hosts: int = 18) -> hf.Expect:
    return hf.Expect(cards=cards, platform=NVL72, domain_hosts=hosts)


# --------------------------------------------------------------------------- parsers

def test_gb200_qx_xml_has_every_section_of_every_gpu() -> None:
    p = fabric.parse_query_xml(real(XML))
    assert (p["driver_version"], p["cuda_version"], p["attached_gpus"], p["errors"]) == ("580.173.02", "13.0", 4, [])
    assert p["gpus"][0]["bus_id"] == "00000000:29:00.0"
    g0 = p["gpus"][0]
    assert g0["product_name"] == "NVIDIA GB200"
    assert g0["fabric"] == {"state": "Completed", "status": "Success", "clique_id": 2,
                            "cluster_uuid": "00000001-0000-0000-0000-000000000001",
                            "health": {"summary": "Healthy", "bandwidth": "Full", "route_recovery_in_progress": "False",
                                       "route_unhealthy": "False", "access_timeout_recovery": "False",
                                       "incorrect_configuration": None, "partition_assigned": None}}
    assert g0["platform"] == {"chassis_serial": "1820000000001", "slot": 14, "tray": 4, "host_id": 1,
                              "peer_type": "Switch Connected", "module_id": 2}
    assert g0["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16,
                          "replays_since_reset": 0, "below_max": []}
    assert g0["ecc"]["volatile"]["DRAM Uncorrectable"] == 0
    assert g0["ecc"]["aggregate"]["SRAM Threshold Exceeded"] is False
    assert g0["remapped_rows"]["pending"] is False and g0["remapped_rows"]["histogram"]["Max"] == 3968
    assert g0["clock_reasons"]["active"] == ["Idle"]
    assert len({g["bus_id"] for g in p["gpus"]}) == 4
    assert {g["fabric"]["clique_id"] for g in p["gpus"]} == {2}


def test_truncated_xml_keeps_what_was_read_and_says_so() -> None:
    text = real(XML)
    second = text.index("<gpu", text.index("</gpu>"))
    p = fabric.parse_query_xml(text[: second + 200])
    whole = fabric.parse_query_xml(text)
    assert p["gpus"][0] == whole["gpus"][0] and any("truncated" in e for e in p["errors"])
    assert len(p["gpus"]) == 2 and p["gpus"][1]["bus_id"] == whole["gpus"][1]["bus_id"]  # the cut one, as far as read
    # cut before any GPU closed: the header's versions and the cut GPU's first fields are kept
    first = fabric.parse_query_xml(text[: text.index("</uuid>") + 7])
    assert first["driver_version"] == whole["driver_version"] and first["gpus"][0]["uuid"] == whole["gpus"][0]["uuid"]
    with pytest.raises(ParseError):
        fabric.parse_query_xml("<nvidia_smi_log")
    with pytest.raises(ParseError):
        fabric.parse_query_xml('<nvidia_smi_log><!DOCTYPE x [<!ENTITY a "b">]>')


@pytest.mark.parametrize("rel, state, status, clique, uuid, summary, bandwidth", [
    ("nvl72/05_nvidia_smi_fabric_completed_but_unhealthy_dra-driver-626.txt", "Completed", "Success", 2,
     "dc6e40c4-d722-4357-9ba6-5291dd461278", "Unhealthy", "Full"),
    ("nvl72/06_nvidia_smi_fabric_insufficient_resources_azhpc-images-pr506.txt", "Completed",
     "Insufficient Resources", 0, "00000000-0000-0000-0000-000000000000", None, None),
    ("nvl72/07_nvidia_smi_fabric_in_progress_gpu-operator-2511.txt", "In Progress", None, None, None, None, None),
    ("nvl72/08_gpud_fabric_state_gb200_not_supported_pr1108.txt", "Not Supported", "Success", 0, None,
     "Not Supported", "Not Supported"),
])
def test_fabric_excerpts_seen_in_the_wild(rel, state, status, clique, uuid, summary, bandwidth) -> None:
    p = fabric.parse_fabric(real(rel))
    (g,) = p["gpus"]
    f = g["fabric"]
    assert (f["state"], f["status"], f["clique_id"], f["cluster_uuid"]) == (state, status, clique, uuid)
    health = f["health"] or {}
    assert (health.get("summary"), health.get("bandwidth")) == (summary, bandwidth)


def test_imex_ctl_18_nodes_ready_domain_up() -> None:
    p = fabric.parse_imex_ctl(real("nvl72/01_imex_ctl_N_18node_p6e_gb200.txt"))
    assert len(p["nodes"]) == 18 and p["domain_state"] == "UP" and p["errors"] == []
    assert p["nodes"][17] == {"index": 17, "address": "172.31.56.47", "state": "READY", "version": "570.172"}
    assert len(p["matrix"]) == 18 and {c for row in p["matrix"].values() for c in row.values()} == {"C"}
    rows = fabric_checks.check_imex("tray01", p, expect())
    assert rows[0]["ok"] and rows[0]["value"]["ready"] == 18 and "version 570.172" in rows[0]["message"]
    assert rows[0]["value"]["nodes"][8] == [8, "172.31.52.239", "READY"]


def test_imex_node_down_and_version_mismatch_fail() -> None:
    text = real("nvl72/01_imex_ctl_N_18node_p6e_gb200.txt")
    text = text.replace("Node #9   - 172.31.53.80    - READY                - Version: 570.172",
                        "Node #9   - 172.31.53.80    - UNAVAILABLE          - Version: 570.148")
    text = re.sub(r"(?m)^(\s+9\s+)C", r"\1N", text).replace("Domain State: UP", "Domain State: DEGRADED")
    r = fabric_checks.check_imex("tray01", fabric.parse_imex_ctl(text), expect())[0]
    assert r["ok"] is False and r["value"]["ready"] == 17
    for part in ("node #9 172.31.53.80 UNAVAILABLE", "versions differ: 570.148, 570.172"):
        assert part in r["message"], part
    # the down node's N cells and the domain state it causes are its own finding (the
    # rack-wide step), not this tray's
    assert "9->0 N" not in r["message"] and "Domain State DEGRADED" not in r["message"]
    down_only = real("nvl72/01_imex_ctl_N_18node_p6e_gb200.txt").replace(
        "Node #9   - 172.31.53.80    - READY", "Node #9   - 172.31.53.80    - UNAVAILABLE")
    view = fabric_checks.check_imex("tray01", fabric.parse_imex_ctl(re.sub(r"(?m)^(\s+9\s+)C", r"\1N", down_only)), expect())
    assert view[0]["ok"] is True  # tray01's own view is fine; tray10 is the culprit
    trays = tuple(f"tray{i:02d}" for i in range(1, 19))
    views = [fabric_checks.check_imex(t, fabric.parse_imex_ctl(down_only), expect())[0] for t in trays]
    named = fabric_checks.domain_check(registry.platform("nvidia-nvl72"), "rack0", trays, views)
    assert [(x["host"], x["fact"], x["ok"], x["value"]) for x in named] == [("tray10", "imex_node", False, "UNAVAILABLE")]
    # IMEX lists other than the supernode's hosts: it cannot tell which tray, every viewer says so
    named = fabric_checks.domain_check(registry.platform("nvidia-nvl72"), "rack0", trays[:17], views[:17])
    assert len(named) == 17 and all("cannot tell which tray is node #9" in x["message"] for x in named)


def test_nvlink_info_two_gpus_firmware() -> None:
    p = fabric.parse_nvlink_info(real("nvl72/10_nvidia_smi_nvlink_info_gb200_nvle_firmware_k8s-test-infra-issue371_truncated.txt"))
    assert [g["index"] for g in p["gpus"]] == [0, 1]
    assert p["gpus"][1]["nvle"] == "disabled" and p["gpus"][1]["firmware"]["NETIR"] == "36:2014:1862"
    # the issue as the corpus stored it ends in GPU 2's header: a cut, never a firmware key of GPU 1
    raw = real("nvl72/10_nvidia_smi_nvlink_info_gb200_nvle_firmware_k8s-test-infra-issue371_truncated.txt")
    cut = fabric.parse_nvlink_info(raw + "GPU 2: NVIDIA GB200 (UUID:")
    assert "GPU 2" not in cut["gpus"][1]["firmware"] and [g["index"] for g in cut["gpus"]] == [0, 1, 2]
    assert cut["errors"] == ["GPU 2: its 'GPU n: NAME (UUID: ...)' line is cut short"]


def test_nvlink_status_faults_are_the_host_checks() -> None:
    """An inactive link among listed links, or one slower than the fastest listed, fails as the
    nvlink host fact does (gpu_checks)."""
    text = ("GPU 3: Tesla V100-SXM2-32GB (UUID: GPU-1)\n" + "".join(
        f"         Link {i}: {'<inactive>' if i in (3, 5) else '25.781 GB/s'}\n" for i in range(6)))
    p = nvidia_smi.parse_nvlink_status(text)
    assert p["faults"] == ["GPU 3 link 3 inactive", "GPU 3 link 5 inactive"] and p["errors"] == []
    slow = nvidia_smi.parse_nvlink_status(text.replace("<inactive>", "25.781 GB/s").replace(
        "Link 1: 25.781", "Link 1: 12.5"))
    assert slow["faults"] == ["GPU 3 link 1 at 12.5 GB/s (others 25.781 GB/s)"]
    assert nvidia_smi.parse_nvlink_status(text.replace("<inactive>", "25.781 GB/s"))["faults"] == []


def test_coreweave_rack_logs_parse_as_nccl_tests() -> None:
    one = nccl_tests.parse_nccl_tests(real("nvl72/02_nccl_allreduce_gb200_nvl72_single_rack_coreweave.txt"))
    assert one["avg_busbw_GBps"] == pytest.approx(745.53)
    big = [r for r in one["rows"] if r["size_bytes"] == 4294967296][0]
    assert big["out_of_place"]["busbw_GBps"] == pytest.approx(839.16)
    two = nccl_tests.parse_nccl_tests(real("nvl72/03_nccl_allreduce_gb200_2rack_20rack_coreweave.txt"))
    assert (two["ranks"], two["avg_busbw_GBps"]) == (144, 688.487)  # 2 racks; the 20-rack run follows
    assert two["rows"][-1]["in_place"]["busbw_GBps"] == 820.36
    [said] = two["errors"]
    assert said.startswith("two runs in one file: the log holds more than one run") and "split the file" in said, said
    mn = fabric.parse_nccl_mnnvl(real("nvl72/02_nccl_allreduce_gb200_nvl72_single_rack_coreweave.txt"))
    assert mn["ranks"] == 72 and mn["mnnvl"] is None  # the README excerpt has no INFO lines


def test_mnnvl_info_lines_parsed() -> None:
    # NCCL_DEBUG=INFO lines in the shape NCCL 2.2x prints them (no real capture of them is stored)
    on = ("node1:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.8\n"
          "node1:1:1 [0] NCCL INFO MNNVL 1 cliqueId 2 cliqueSize 72 cliqueRank 0\n"
          "node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 72 nNodes 18 localRanks 4 localRank 0 MNNVL 1\n")
    p = fabric.parse_nccl_mnnvl(on)
    assert (p["nccl_version"], p["mnnvl"], p["clique_sizes"], p["ranks"]) == ("2.26.2", True, [72], 72)
    assert not p.get("not_working")
    off = on + "node7:1:1 [2] NCCL INFO MNNVL is available but not working, falling back\n"
    assert "available but not working" in fabric.parse_nccl_mnnvl(off)["not_working"][0]


def test_nvbandwidth_matrices() -> None:
    p = nvbandwidth.parse_nvbandwidth(real("nvbandwidth/01_v0.10_2gpu_ce_with_cov.txt"))
    d2d = p["tests"]["device_to_device_memcpy_read_ce"]
    assert d2d["matrix"] == {"0": {"0": None, "1": 276.07}, "1": {"0": 276.19, "1": None}}
    assert (d2d["sum"], d2d["cv"]) == (552.26, 0.01)
    assert p["tests"]["host_to_device_memcpy_ce"]["matrix"]["0"] == {"0": 26.03, "1": 25.94}
    eight = nvbandwidth.parse_nvbandwidth(real("nvbandwidth/02_readme_d2d_write_ce_8gpu_matrix.txt"))
    m = eight["tests"]["device_to_device_memcpy_write_ce"]["matrix"]
    assert len(m) == 8 and m["0"]["0"] is None and m["6"]["0"] == 274.89
    rows = nvbandwidth.check_nvbandwidth("h1", eight, d2d_GBps=276.0, min_fraction=0.997)
    assert rows[0]["ok"] is False and "6->0 274.89" in rows[0]["message"] and rows[0]["value"] == 274.89
    assert nvbandwidth.check_nvbandwidth("h1", eight, d2d_GBps=276.0)[0]["ok"] is True
    h2d = nvbandwidth.parse_nvbandwidth(real("nvbandwidth/03_readme_h2d_ce_1x8_row.txt"))
    assert list(h2d["tests"]["host_to_device_memcpy_ce"]["matrix"]["0"].values())[4] == 26.19
    gh = nvbandwidth.parse_nvbandwidth(real("nvbandwidth/04_v0.6_gh200_full_run_waived_lines.txt"))
    assert (gh["version"], gh["driver_version"], gh["waived"], len(gh["tests"])) == ("v0.6", "550.54.15", 17, 15)
    assert gh["tests"]["host_device_latency_sm"]["unit"] == "ns"


def test_ib_write_bw_views() -> None:
    a = perftest.parse_ib_write_bw(real("perftest/01_ib_write_bw_loopback_8M_server_client_concat.txt"))
    assert (a["device"], a["link_type"], a["mtu"], len(a["rows"])) == ("ib0", "IB", 4096, 1)
    assert a["rows"][0]["bw_avg_Gbps"] == pytest.approx(24056.72 * 8 * 2**20 / 1e9, rel=1e-6)
    b = perftest.parse_ib_write_bw(real("perftest/02_ib_write_bw_loopback_all_sizes_interleaved.txt"))
    assert len(b["rows"]) == 23 and b["rows"][0]["bytes"] == 2 and b["rows"][-1]["bytes"] == 8388608
    c = perftest.parse_ib_write_bw(real("perftest/03_ib_write_bw_roce_dgx_spark_run_infinitely_gbits.txt"))
    assert (c["link_type"], c["device"], c["rows"][0]["bw_avg_Gbps"]) == ("Ethernet", "rocep1s0f0", 92.57)
    assert perftest.check_ib_write_bw("h1", a, nic_Gbps=200)[0]["ok"] is True
    low = perftest.check_ib_write_bw("h1", c, nic_Gbps=200, peer="h2")[0]
    assert low["ok"] is False and low["value"] == 92.57 and low["expected"] == 200 and "to h2" in low["message"]
    with pytest.raises(ParseError):
        perftest.parse_ib_write_bw("hello\n")
    half = perftest.parse_ib_write_bw(real("perftest/01_ib_write_bw_loopback_8M_server_client_concat.txt")
                                      .split(" #bytes")[0])
    assert half["rows"] == [] and perftest.check_ib_write_bw("h1", half, nic_Gbps=200)[0]["ok"] is False


def test_a_perftest_row_cut_inside_is_not_a_measurement() -> None:
    """A paste that ends inside a row ('... 1.6035' of a '%.6f' MsgRate, ucx-issue8852): the rows before it
    are read, the cut one is not (its figures may be cut too), and the paste is cut short."""
    whole = real("perftest/02_ib_write_bw_loopback_all_sizes_interleaved.txt")
    rows = perftest.parse_ib_write_bw(whole)["rows"]
    lines = whole.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [str(rows[5]["bytes"])])
    cut = "\n".join(lines[:at]) + "\n" + lines[at][:-3]  # the row's MsgRate cut: no newline at the end
    got = perftest.parse_ib_write_bw(cut)
    assert [r["bytes"] for r in got["rows"]] == [r["bytes"] for r in rows[:5]]
    assert got["errors"]


def test_perftest_rows_with_a_reporters_bold_under_two_headers_are_two_unclosed_tables() -> None:
    """perftest-issue65: two ib_send_bw results pasted as header + one row each, the BW average in
    markdown bold ('**5544.28**'). The rows read without the bold; two headers' one-size rows are
    two runs (not --run_infinitely's one table), and neither has its closing line: cut short."""
    got = perftest.parse_ib_write_bw(real("harvest11/ib-write-bw/01_ib_send_bw_two_pastes_header_and_one_row_each_"
                                          "1024B_1000_iters_bw_avg_in_markdown_bold_5544.28_and_920.13_MBps_no_banner_"
                                          "perftest-issue65.txt"))
    assert [(r["printed_avg"], r["msg_rate_Mpps"]) for r in got["rows"]] == [(5544.28, 5.67734), (920.13, 0.942218)]
    assert got["errors"] == ["the result table has no closing line ('-----'): cut short"]
    forever = real("perftest/03_ib_write_bw_roce_dgx_spark_run_infinitely_gbits.txt")
    assert perftest.parse_ib_write_bw(forever)["errors"] == []  # one header's rows of one size: still whole


# --------------------------------------------------------------------------- per-tray checks

def test_real_gb200_tray_passes_every_fabric_fact() -> None:
    rows = by_fact(fabric_checks.check_fabric("tray04", fabric.parse_query_xml(real(XML)), expect()))
    for f in ("fabric_state", "fabric_health", "fabric_clique", "platform_info", "ecc", "pcie_width"):
        assert rows[f]["ok"], rows[f]
    assert rows["fabric_clique"]["value"] == {"00000001-0000-0000-0000-000000000001/2": 4}
    assert rows["platform_info"]["value"] == "1820000000001:14:4"


def _xml_variant(**subs: str) -> str:
    text = real(XML)
    for old, new in subs.items():
        text = text.replace(old, new, 1)
    return text


def test_limited_capacity_and_in_progress_are_findings_with_values() -> None:
    text = _xml_variant(**{"<bandwidth>Full</bandwidth>": "<bandwidth>Limited Capacity</bandwidth>"})
    rows = by_fact(fabric_checks.check_fabric("tray05", fabric.parse_query_xml(text), expect()))
    h = rows["fabric_health"]
    assert h["ok"] is False and h["value"] == "Limited Capacity" and "GPU 00000000:29:00.0" in h["message"]
    assert "a warning" in h["message"] and h["severity"] == "warning" and rows["fabric_state"]["ok"]
    stuck = fabric.parse_fabric(real("nvl72/07_nvidia_smi_fabric_in_progress_gpu-operator-2511.txt"))
    assert fabric_checks.fabric_in_progress(stuck) == "In Progress on 1 GPU"
    rows = by_fact(fabric_checks.check_fabric("tray03", stuck, expect(cards=1)))
    assert rows["fabric_state"]["ok"] is False and "State In Progress, Status N/A" in rows["fabric_state"]["message"]
    assert rows["fabric_clique"]["ok"] is False


def test_not_supported_and_insufficient_resources_fail() -> None:
    for rel, text in (("08", "State Not Supported, Status Success"),
                      ("06", "State Completed, Status Insufficient Resources")):
        path = next((REAL / "nvl72").glob(f"{rel}_*"))
        rows = by_fact(fabric_checks.check_fabric("t", fabric.parse_fabric(strip_source_header(path.read_text())), expect(cards=1)))
        assert rows["fabric_state"]["ok"] is False and text in rows["fabric_state"]["message"]
        assert rows["fabric_clique"]["ok"] is False


def test_fabric_retry_reads_again_then_judges_the_last_output() -> None:
    done = real(XML)
    stuck = done.replace("<state>Completed</state>", "<state>In Progress</state>")
    outputs = [stuck, stuck, done]
    clock = [0.0]
    cmd = nv.COMMANDS["query_fabric"]

    def run() -> Result:
        return Result("t", cmd.display, outputs.pop(0) if len(outputs) > 1 else outputs[0], "", 0, 0.1)

    rows = hf.run_with_retry("t", cmd, expect(), run, window_s=60, interval_s=10,
                             sleep=lambda s: clock.__setitem__(0, clock[0] + s), clock=lambda: clock[0])
    assert by_fact(rows)["fabric_state"]["ok"] and clock[0] == 20
    outputs[:] = [stuck]
    clock[0] = 0.0
    rows = hf.run_with_retry("t", cmd, expect(), run, window_s=30, interval_s=10,
                             sleep=lambda s: clock.__setitem__(0, clock[0] + s), clock=lambda: clock[0])
    r = by_fact(rows)["fabric_state"]
    assert r["ok"] is False and "still In Progress on 4 GPUs after retrying for 30s, 4 reads" in r["message"]


def test_nvlink_design_comes_from_the_platform() -> None:
    parsed = {"gpus": [{"index": i, "links": [{"link": k, "active": True, "speed_GBps": 53.125} for k in range(18)],
                        "errors": []} for i in range(4)], "errors": []}
    assert gpu_checks.check_nvlink("t", parsed, expect())[0]["ok"]
    parsed["gpus"][2]["links"] = parsed["gpus"][2]["links"][:17]  # every GPU short would fool "max any lists"
    r = gpu_checks.check_nvlink("t", parsed, expect())[0]
    assert r["ok"] is False and "GPU 2 lists 17 links, platform has 18" in r["message"] and r["expected"] == 72


# --------------------------------------------------------------------------- the whole rack

def _rack_rows(cliques: dict[str, tuple[str, int]]) -> list[dict]:
    rows = []
    for i, (host, (uuid, clique)) in enumerate(cliques.items()):
        text = real(XML).replace("<cliqueId>2</cliqueId>", f"<cliqueId>{clique}</cliqueId>")
        text = text.replace("00000001-0000-0000-0000-000000000001", uuid)
        text = text.replace("<tray_index>4</tray_index>", f"<tray_index>{i}</tray_index>")
        rows += fabric_checks.check_fabric(host, fabric.parse_query_xml(text), expect())
    return rows


def test_split_clique_is_found_from_the_whole_rack_naming_both_halves() -> None:
    hosts = tuple(f"tray{i:02d}" for i in range(1, 19))
    uuid = "00000001-0000-0000-0000-000000000001"
    whole = _rack_rows({h: (uuid, 2) for h in hosts})
    rows = fabric_checks.domain_check(NVL72, "rack0", hosts, whole)
    assert len(rows) == 18 and all(r["ok"] for r in rows) and rows[0]["value"] == 72

    split = _rack_rows({h: (uuid, 2 if i < 9 else 3) for i, h in enumerate(hosts)})
    rows = fabric_checks.domain_check(NVL72, "rack0", hosts, split)
    assert len(rows) == 18 and not any(r["ok"] for r in rows)  # halves tie: every tray is named
    msg = rows[0]["message"]
    assert "clique split in rack0" in msg
    assert f"(ClusterUUID {uuid}, CliqueId 2): tray01..tray09 (9 trays, 36 GPUs)" in msg
    assert f"(ClusterUUID {uuid}, CliqueId 3): tray10..tray18 (9 trays, 36 GPUs)" in msg
    assert "expected one clique of 18 trays, 72 GPUs" in msg and rows[0]["value"] == 36


def test_same_clique_id_in_another_cluster_is_another_group() -> None:
    hosts = tuple(f"tray{i:02d}" for i in range(1, 19))
    other = "00000002-0000-0000-0000-000000000002"
    rows = fabric_checks.domain_check(NVL72, "rack0", hosts, _rack_rows(
        {h: ("00000001-0000-0000-0000-000000000001" if h != "tray07" else other, 2) for h in hosts}))
    bad = [r for r in rows if not r["ok"] and r["fact"] == "fabric_domain"]
    assert [r["host"] for r in bad] == ["tray07"] and bad[0]["value"] == 4
    assert f"(ClusterUUID {other}, CliqueId 2): tray07 (1 trays, 4 GPUs)" in bad[0]["message"]
    assert "17 trays, 68 GPUs" in bad[0]["message"]


def test_duplicate_tray_identity_across_the_rack() -> None:
    hosts = ("a", "b")
    rows = []
    for h in hosts:
        rows += fabric_checks.check_fabric(h, fabric.parse_query_xml(real(XML)), expect(hosts=2))
    dup = [r for r in fabric_checks.domain_check(NVL72, "r", hosts, rows) if r["fact"] == "tray_identity"]
    assert {r["host"] for r in dup} == {"a", "b"} and "reported by 2 trays" in dup[0]["message"]


# --------------------------------------------------------------------------- parse registry

@pytest.mark.parametrize("tool, rel", [
    ("nvidia-smi-qx", XML), ("nvidia-smi-fabric", XML),
    ("nvidia-smi-fabric", "nvl72/05_nvidia_smi_fabric_completed_but_unhealthy_dra-driver-626.txt"),
    ("imex-ctl", "nvl72/01_imex_ctl_N_18node_p6e_gb200.txt"),
    ("nvlink-info", "nvl72/10_nvidia_smi_nvlink_info_gb200_nvle_firmware_k8s-test-infra-issue371_truncated.txt"),
    ("nccl-tests", "nvl72/03_nccl_allreduce_gb200_2rack_20rack_coreweave.txt"),
    ("nvbandwidth", "nvbandwidth/04_v0.6_gh200_full_run_waived_lines.txt"),
    ("ib-write-bw", "perftest/02_ib_write_bw_loopback_all_sizes_interleaved.txt"),
])
def test_parse_registry_names_and_garbage(tool: str, rel: str) -> None:
    out = parsers()[tool](real(rel))
    json.dumps(out, allow_nan=False)
    for junk in ("", "garbage\n", real(rel)[: len(real(rel)) // 3]):
        only_parse_error_or_json(parsers()[tool], junk)


# --------------------------------------------------------------------------- a rack over SSH

# No capture of `nvidia-smi --query-gpu`, `nvlink -s` or `topo -m` from a GB200 tray is
# stored. --query-gpu lines are synthesised from the real -q -x capture (names, bus ids,
# driver, PCIe), nvlink -s in the layout of the real A100 capture with GB200's 18 links at
# 53.125 GB/s; topo -m (recorded, not judged on NVL72) replays the real H100 capture.

def _gb200_csv() -> str:
    p = fabric.parse_query_xml(real(XML))
    return "".join(f"{i}, NVIDIA GB200, GPU-0000000{i}-0000-0000-0000-000000000000, {g['bus_id']}, 189471 MiB, "
                   f"580.173.02, 5, 5, 16, 16, 30, 150.00 W, 0\n" for i, g in enumerate(p["gpus"]))


def _gb200_nvlink_s() -> str:
    return "".join(f"GPU {i}: NVIDIA GB200 (UUID: GPU-0000000{i}-0000-0000-0000-000000000000)\n"
                   + "".join(f"\t Link {k}: 53.125 GB/s\n" for k in range(18)) for i in range(4))


def _tray_xml(tray: int, *, clique: int = 2, state: str = "Completed", limited_gpu: int | None = None) -> str:
    text = real(XML).replace("<tray_index>4</tray_index>", f"<tray_index>{tray}</tray_index>")
    text = text.replace("<cliqueId>2</cliqueId>", f"<cliqueId>{clique}</cliqueId>")
    if state != "Completed":  # as the gpu-operator capture (07) shows it: everything else N/A
        text = text.replace("<state>Completed</state>", f"<state>{state}</state>")
        text = text.replace("<status>Success</status>", "<status>N/A</status>")
        text = text.replace(f"<cliqueId>{clique}</cliqueId>", "<cliqueId>N/A</cliqueId>")
        text = text.replace("<clusterUuid>00000001-0000-0000-0000-000000000001</clusterUuid>", "<clusterUuid>N/A</clusterUuid>")
    if limited_gpu is not None:
        parts = text.split("<bandwidth>Full</bandwidth>")
        parts[limited_gpu] += "<bandwidth>Limited Capacity</bandwidth>" + parts.pop(limited_gpu + 1)
        text = "<bandwidth>Full</bandwidth>".join(parts)
    return text


def _install_tray(host, qx: str | list[str]) -> None:
    """Fake nvidia-smi (and friends) on a tray; a list of -q -x outputs is played in turn
    (the last one repeats), as a fabric that finishes registering after a few reads."""
    import shlex

    from sshd_harness import install_fake_tool
    from vendor_ssh import install_replay

    data = host.directory / "nv"
    data.mkdir(exist_ok=True)
    outputs = qx if isinstance(qx, list) else [qx]
    for i, text in enumerate(outputs):  # each tray lists its own GPUs (one capture's UUIDs made the host's)
        (data / f"qx{i}").write_text(own_ids(text, host.name))
    (data / "csv").write_text(own_ids(_gb200_csv(), host.name))
    (data / "nvlink_s").write_text(own_ids(_gb200_nvlink_s(), host.name))
    # a tray's own 4 GPUs in the layout of the H100 captures (no GB200 capture of these): an
    # 8-GPU topo or a 1-GPU excerpt on a 4-GPU tray is a listing the run does not judge
    tray = HostState("tray", 4, "nvidia-nvl72")
    (data / "nvlink_e").write_text(nvidia_sim.render_nvlink_errors(tray))
    (data / "topo").write_text(nvidia_sim.render_topo(tray))
    d = shlex.quote(str(data))
    install_fake_tool(host, "nvidia-smi", f"""#!/bin/sh
D={d}
case "$*" in
  --query-gpu=*) exec cat "$D/csv" ;;
  "topo -m") exec cat "$D/topo" ;;
  "nvlink -s") exec cat "$D/nvlink_s" ;;
  "nvlink -e") exec cat "$D/nvlink_e" ;;
  "-q -x")
    n=$(cat "$D/reads" 2>/dev/null || echo 0); echo $((n+1)) > "$D/reads"
    last={len(outputs) - 1}; [ "$n" -gt "$last" ] && n=$last
    exec cat "$D/qx$n" ;;
esac
echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 2
""")
    install_replay(host, "nvidia-imex-ctl", {"-N": real("nvl72/01_imex_ctl_N_18node_p6e_gb200.txt")})
    install_replay(host, "ibstat", {"": real("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt")})
    install_replay(host, "dcgmi", {"diag -r 1": real("dcgmi-diag/01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt")})


@pytest.mark.sshd
def test_nvl72_rack_over_ssh_in_progress_tray_limited_gpu_then_a_split_clique(sshd_cluster, tmp_path: Path) -> None:
    from vendor_ssh import facts_of, host_facts, write_inventory

    trays = [f"tray{i:02d}" for i in range(1, 19)]
    cluster = sshd_cluster(18, trays)
    stuck = _tray_xml(3, state="In Progress")
    for i, name in enumerate(trays, start=1):
        if name == "tray03":
            qx: str | list[str] = stuck  # never finishes
        elif name == "tray05":
            qx = [stuck, stuck, _tray_xml(5)]  # finishes on the third read, inside the window
        elif name == "tray07":
            qx = _tray_xml(7, limited_gpu=1)
        else:
            qx = _tray_xml(i)
        _install_tray(cluster[name], qx)
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "nvidia-nvl72", {"rack0": trays})
    rows, findings = host_facts(inv, cluster, fabric_retry_s=3.0, fabric_retry_every_s=0.5)

    by_host = {f.entity: f for f in findings}
    # the tray whose every GPU is not registered; the one Limited-Capacity GPU, not its tray
    assert set(by_host) == {"tray03", "tray07/gpu1"}, [(f.entity, f.message) for f in findings]
    text_of = {h: " ".join(f.message for f in findings if f.entity == h) for h in by_host}
    state = facts_of(rows, "tray03")["fabric_state"]
    assert (state["ok"], state["value"], state["expected"]) == (False, 0, 4)
    assert "State In Progress, Status N/A" in state["message"]
    # read again until the 3 s window ended (how long past it depends on the machine's load)
    assert re.search(r"still In Progress on 4 GPUs after retrying for \d+s, \d+ reads, window 3s", state["message"])
    assert "fabric registration Completed/Success on 0/4 GPUs" in text_of["tray03"]
    assert "ClusterUUID N/A, CliqueId N/A" in text_of["tray03"]
    health = facts_of(rows, "tray07")["fabric_health"]
    assert (health["ok"], health["value"], health["expected"]) == (False, "Limited Capacity", "Healthy/Full")
    second_gpu = fabric.parse_query_xml(real(XML))["gpus"][1]["bus_id"]
    assert f"GPU {second_gpu}: Bandwidth Limited Capacity (Summary Healthy)" in health["message"]
    assert "Limited Capacity" in by_host["tray07/gpu1"].message
    assert (by_host["tray07/gpu1"].rule, by_host["tray07/gpu1"].severity) == ("host-fact-warning", "warning")
    assert by_host["tray07/gpu1"].entity_kind == "card"
    assert {f.severity for f in findings if f.entity == "tray03"} == {"critical"}
    assert (by_host["tray07/gpu1"].evidence["measured"], by_host["tray07/gpu1"].evidence["expected"]) == (
        "Limited Capacity", "Healthy/Full")
    assert facts_of(rows, "tray05")["fabric_state"]["ok"]  # In Progress twice, then Completed: a pass
    domain = facts_of(rows, "tray01")["fabric_domain"]
    assert domain["ok"] and domain["value"] == 68 and "no clique from tray03" in domain["message"]
    assert facts_of(rows, "tray01")["imex_domain"]["ok"] and facts_of(rows, "tray01")["nvlink"]["value"] == 72

    # The same rack with trays 10-18 registered into another clique: found from the whole
    # rack's facts, both halves named.
    for i, name in enumerate(trays, start=1):
        (cluster[name].directory / "nv" / "reads").unlink(missing_ok=True)
        _install_tray(cluster[name], _tray_xml(i, clique=2 if i < 10 else 3))
    rows, findings = host_facts(inv, cluster, fabric_retry_s=0.0)
    split = [r for r in rows if r.get("fact") == "fabric_domain"]
    assert len(split) == 18 and not any(r["ok"] for r in split)
    msg = split[0]["message"]
    assert "(ClusterUUID 00000001-0000-0000-0000-000000000001, CliqueId 2): tray01..tray09 (9 trays, 36 GPUs)" in msg
    assert "CliqueId 3): tray10..tray18 (9 trays, 36 GPUs)" in msg
    assert {f.entity for f in findings} == set(trays)

    # One IMEX node down: every tray's nvidia-imex-ctl -N (the real capture, node #8 made
    # UNAVAILABLE and its row and column N) shows it; the finding is tray09's alone.
    from vendor_ssh import install_replay

    from sncheck.vendors.nvidia.sim_fabric import imex

    for i, name in enumerate(trays, start=1):
        (cluster[name].directory / "nv" / "reads").unlink(missing_ok=True)
        _install_tray(cluster[name], _tray_xml(i))
        install_replay(cluster[name], "nvidia-imex-ctl", {"-N": imex(down=(8,))})
    rows, findings = host_facts(inv, cluster, fabric_retry_s=0.0)
    assert [(f.entity, f.entity_kind, f.rule) for f in findings] == [("tray09", "host", "host-fact")], \
        [(f.entity, f.message) for f in findings]
    node = facts_of(rows, "tray09")["imex_node"]
    assert (node["ok"], node["value"], node["expected"]) == (False, "UNAVAILABLE", "READY")
    assert "IMEX node #8 172.31.52.239 is UNAVAILABLE in 18 of 18 trays' nvidia-imex-ctl -N views" in node["message"]
    # the SSH addresses are loopback ones, no tray's is the node's: found by IMEX node order, and said so
    assert "node #8 is tray09 (by IMEX node order, no host has that address" in node["message"]
    view = facts_of(rows, "tray01")["imex_domain"]
    assert view["ok"] and view["value"]["ready"] == 17 and "node #8 172.31.52.239 UNAVAILABLE" in view["message"]
    assert not [r for r in rows if r.get("fact") == "imex_node" and r["host"] != "tray09"]


def test_hgx_topology_sanity_and_fabric_manager() -> None:
    from sncheck.vendors.nvidia import nvidia_smi

    hgx = hf.Expect(cards=8, platform=registry.platform("nvidia-hgx"), domain_hosts=1)
    h100 = nvidia_smi.parse_topo(real("nvidia-smi-topo/01_h100_8gpu_nv18_no_nics_spaces.txt"))
    r = by_fact(gpu_checks.check_topology_platform("h1", h100, hgx))["topo_sanity"]
    # every GPU pair is NV18: the only problem named is the missing NICs
    assert r["ok"] is False and r["message"] == "h1: topo -m: topo -m lists no NIC (the platform has one per GPU)"
    a10 = nvidia_smi.parse_topo(real("nvidia-smi-topo/03_a10_4gpu_pcie_sys_only_2nics.txt"))
    r = by_fact(gpu_checks.check_topology_platform("h1", a10, hgx))["topo_sanity"]
    assert r["ok"] is False and r["value"] == 6 + 4 and "GPU0-GPU1 SYS, GPU0-GPU2 SYS" in r["message"]
    assert fabric_checks.check_fabric_manager("h1", fabric_checks.parse_systemctl_active("active\n"), hgx)[0]["ok"]
    r = fabric_checks.check_fabric_manager("h1", fabric_checks.parse_systemctl_active("inactive\n"), hgx)[0]
    assert (r["ok"], r["value"], r["expected"]) == (False, "inactive", "active")
    assert "fabric_manager" in registry.platform("nvidia-hgx").checks
    assert "fabric_manager" not in registry.platform("nvidia-nvl72").checks


# NVLink 5 (Blackwell, driver 595.91.07 on B300): nvidia_smi_grammar's nvlink-errors entry
_NVLINK5 = ("Malformed packet Errors", "Buffer overrun Errors", "Rx Errors", "Rx remote Errors", "Rx General Errors",
            "Local link integrity Errors", "Tx discards", "Link recovery successful events",
            "Link recovery failed events", "Total link recovery events", "Effective Errors")


def _nvlink5_e(bad: dict[tuple[int, str], int]) -> str:
    lines = ["GPU 0: NVIDIA B300 SXM6 AC (UUID: GPU-5c3f8a2e-0d1b-4e5f-9a7c-1b2d3e4f5a6b)"]
    for k in range(18):
        body = [(name, bad.get((k, name), 0)) for name in _NVLINK5]
        body += [("Effective BER", "15e-255"), ("Symbol Errors", bad.get((k, "Symbol Errors"), 0)),
                 ("Symbol BER", "15e-255"), ("FEC Errors - 0", 36140749276)]
        body += [(f"FEC Errors - {b}", 2 if b == 1 else 0) for b in range(1, 16)]
        body += [("Raw BER Lane 0", 2061), ("Raw BER Lane 1", 1038), ("Raw BER Total", 1037),
                 ("Raw Errors Lane 0", 82), ("Raw Errors Lane 1", 4)]
        lines += [f"\t Link {k}: {name}: {v}" for name, v in body]
    return "\n".join(lines) + "\n"


def test_nvlink5_error_counters_are_read_by_name_and_the_rules_judge_each_fault_counter() -> None:
    from sncheck.health.rules import load_rules
    from sncheck.vendors.parsers import failures, parse_text

    healthy = parse_text("nvlink-errors", _nvlink5_e({}))
    # FEC bucket 0 in the billions, the raw lane counters non-zero, the BER at its float floor:
    # a healthy link, no fault, nothing cut
    assert failures(healthy) == [] and len(healthy["gpus"][0]["links"]) == 18
    link = healthy["gpus"][0]["links"][5]["counters"]
    assert link["fec_errors_0"] == 36140749276 and link["raw_errors_lane_0"] == 82 and link["effective_ber"] == 1.5e-254
    assert "replay_errors" not in link and len(link) == 35
    sick = parse_text("nvlink-errors", _nvlink5_e({(3, "Link recovery failed events"): 2, (17, "Symbol Errors"): 1}))
    assert sick["faults"] == ["GPU 0 link 3 link_recovery_failed_events=2", "GPU 0 link 17 symbol_errors=1"]
    assert sick["errors"] == []
    # every counter the view calls a fault, a run judges by its growth (and its value before the run)
    named = {re.sub(r"[^a-z0-9]+", "_", n.lower()).strip("_") for n in (*_NVLINK5, "Symbol Errors")}
    named.discard("total_link_recovery_events")  # the sum of the two before it: judged through them
    rules = {r.name: r for r in load_rules("default").rules}
    for name in ("nvlink-errors-grew", "fabric-errors-before-run"):
        assert named <= set(rules[name].params["counters"]), (name, named - set(rules[name].params["counters"]))
    # a link short of the counters the first link prints was cut (no end marker: the last link)
    text = _nvlink5_e({})
    cut = parse_text("nvlink-errors", text[: text.rindex("\t Link 17: FEC Errors - 9")])
    assert cut["errors"] == ["GPU 0 link 17: no fec_errors_9, which every link prints: cut short"]
