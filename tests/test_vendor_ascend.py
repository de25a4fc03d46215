"""The Ascend plug-in on real npu-smi / hccn_tool / hccl_test / asys / ascend-dmi captures,
and a CloudMatrix384 node over real SSH whose RoCE net_health is "Socket failed" on one NPU."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from parser_checks import only_parse_error_or_json
from sshd_harness import install_fake_tool
from vendor_ssh import disagreements, facts_of, host_facts, real, write_inventory

from sncheck.errors import ParseError
from sncheck.rows import BUSBW_FACTOR
from sncheck.vendors import facts as hf
from sncheck.vendors import registry
from sncheck.vendors.ascend import asys, checks, collected, hccl_test, hccn_tool, npu_smi, sweep
from sncheck.vendors.ascend import sim as ascend_sim
from sncheck.vendors.parsers import parsers
from sncheck.vendors.sim import own_ids

CM384 = registry.platform("ascend-cm384")
ASCEND = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "ascend"


def asc(name: str) -> str:
    return real("ascend/" + next(ASCEND.glob(f"{name}_*")).name)


def expect(cards: int = 16) -> hf.Expect:
    return hf.Expect(cards=cards, platform=CM384, domain_hosts=48)


def section(name: str, command: str) -> str:
    """The output of one command inside a collected log (11, 12, 13)."""
    for s in collected.parse_collected(asc(name))["sections"]:
        if s["command"].endswith(command):
            return s
    raise KeyError(command)


# --------------------------------------------------------------------------- npu-smi

def test_a_listing_without_hbm_is_not_measured_never_the_cards_fault() -> None:
    """The 310P layout prints no HBM column: where HBM is rated that is not a pass, and it named
    every chip an 'HBM capacity' culprit; now not measured, no card named, unless another chip
    listed its HBM short (that chip alone named)."""
    from sncheck.model import Status

    info = npu_smi.parse_info(asc("10"))
    for c in info["chips"]:
        c["hbm_total_MB"] = None
    row = {r["fact"]: r for r in checks.check_info("cm01", info, expect())}["hbm_capacity"]
    assert row["ok"] is False and row["status"] == Status.NOT_MEASURED and "cards" not in row, row
    info["chips"][3]["hbm_total_MB"] = 1024
    row = {r["fact"]: r for r in checks.check_info("cm01", info, expect())}["hbm_capacity"]
    assert row["ok"] is False and row["status"] != Status.NOT_MEASURED, row
    assert row["cards"] == {"3": "HBM capacity: NPU 1 chip 1: 1024 MB"}, row  # the short chip alone


def test_a3_node_16_dies_two_per_package() -> None:
    info = npu_smi.parse_info(asc("10"))
    assert info["version"] == "25.2.0" and len(info["chips"]) == 16 and info["errors"] == []
    assert [c["phy_id"] for c in info["chips"]] == list(range(16))
    assert info["chips"][1] == {"npu": 0, "chip": 1, "phy_id": 1, "name": "Ascend910", "health": "OK",
                                "power_W": None, "temp_C": 44, "bus_id": "0000:9F:00.0", "aicore_pct": 7,
                                "memory_used_MB": 0, "memory_total_MB": 0, "hbm_used_MB": 61625,
                                "hbm_total_MB": 65536, "hugepages_used": 0, "hugepages_total": 0}
    rows = {r["fact"]: r for r in checks.check_info("cm01", info, expect())}
    assert all(r["ok"] for r in rows.values())
    assert "(8 packages x 2 dies)" in rows["card_count"]["message"] and rows["hbm_capacity"]["value"] == 65536
    alarm = asc("10").replace("| 2     Ascend910           | OK ", "| 2     Ascend910           | Alarm", 1)
    r = {r["fact"]: r for r in checks.check_info("cm01", npu_smi.parse_info(alarm), expect())}["npu_health"]
    assert r["ok"] is False and r["value"] == 15 and "NPU 2 chip 0 (phy 4): Alarm" in r["message"]


def test_an_a3_table_cut_at_the_border_between_two_dies_is_cut_short() -> None:
    """An A3 NPU's two dies are parted by a plain '+---' border and its block closed by
    '+===': a table that ends on the former ends before the NPU's next die. Cut after
    every die border of a real 16-die table: each is cut short; after each '+===' border
    the listing reads whole (the judge's count of dies says whether every one is there)."""
    lines = asc("10").split("\n")
    die = [i for i, ln in enumerate(lines) if ln.rstrip().startswith("+-") and "+" not in ln.rstrip()[1:-1]
           and i > 8 and lines[i - 1].startswith("| ")]
    closed = [i for i, ln in enumerate(lines) if ln.startswith("+=") and lines[i - 1].startswith("| ")]
    assert len(die) == 8 and len(closed) >= 8, (die, closed)
    for i in die:
        info = npu_smi.parse_info("\n".join(lines[: i + 1]) + "\n")
        assert any("no die follows: output cut short" in e for e in info["errors"]), (i, info["errors"])
    # the first '+===' closes the header: a table cut there has no NPU row (review1: it read whole)
    assert npu_smi.parse_info("\n".join(lines[: closed[0] + 1]) + "\n")["errors"] == [
        "the table has no NPU row (the banner or header alone): output cut short"]
    for i in closed[1:9]:
        assert npu_smi.parse_info("\n".join(lines[: i + 1]) + "\n")["errors"] == [], i


def test_910b_views_health_ecc_board_usages() -> None:
    info = section("12", "npu-smi info")["parsed"]
    assert [c["npu"] for c in info["chips"]] == [0, 7] and info["chips"][1]["bus_id"] == "0000:3D:00.0"
    # the reporter's two '...' lines: each said once, by listing.elided (the parser said each again)
    assert len(info["errors"]) == 2 and all("a reporter's '...': lines of the output were left out" in e
                                            for e in info["errors"]), info["errors"]
    health = section("12", "-i 0 -c 0 -t health")["parsed"]
    assert (health["health"], health["error_codes"], health["error_information"]) == ("OK", [], None)
    ecc = section("12", "-i 0 -t ecc")["parsed"]["counters"]
    assert ecc["HBM Double Bit Isolated Pages Count"] == 0 and len(ecc) == 12
    assert section("12", "-i 0 -t usages")["parsed"]["hbm_capacity_MB"] == 32768
    assert npu_smi.parse_hbm(asc("07"))["hbm_capacity_MB"] == 65536
    common = npu_smi.parse_fields(asc("08"))
    # the blocks npucli parts by blank lines: the NPU header, its chip, the MCU
    assert common["blocks"][0] == {"NPU ID": "1", "Chip Count": "1"} and common["blocks"][1]["Aicore Count"] == "24"
    assert common["blocks"][2] == {"Chip Name": "mcu", "Temperature(C)": "38"} and len(common["chips"]) == 1
    assert common["errors"] == []
    assert npu_smi.parse_hbm(asc("18a"))["hbm_capacity_MB"] == 131072
    assert npu_smi.parse_health(asc("18b"))["health"] == "OK"  # the 950 prints 'Health', not 'Health Status'
    assert "topo" in npu_smi.parse_help(asc("05"))["types"]


def test_health_codes_and_ecc_sweeps() -> None:
    # the healthy lines of the MindCluster doc (12), one section per die as the sweep prints them
    real_health = asc("12").split("-i 0 -c 0 -t health\n")[1].split("\n\n")[0]
    assert "Health Status                  : OK" in real_health
    text = "\n".join(f"== device {i} health\n{real_health}" for i in range(16))
    first, rest = text.split("== device 5 health\n", 1)
    rest = rest.replace("Health Status                  : OK", "Health Status                  : Alarm", 1)
    text = first + "== device 5 health\n" + rest.replace(": NA", ": 0x80E18402", 1)
    r = checks.check_health_codes("cm01", sweep.parse_sweep(text), expect())[0]
    assert r["ok"] is False and r["value"] == 1 and "device 5: Alarm 0x80E18402" in r["message"]
    ecc_text = asc("12").split("-t ecc")[1].split("/usr/local/bin")[0]
    bad = ecc_text.replace("HBM Double Bit Isolated Pages Count      : 0", "HBM Double Bit Isolated Pages Count      : 3")
    r = checks.check_ecc("cm01", sweep.parse_sweep(f"== device 0 ecc\n{ecc_text}\n== device 1 ecc\n{bad}"), expect())[0]
    assert r["ok"] is False and "device 1: HBM Double Bit Isolated Pages Count 3" in r["message"]


def test_topology_and_spod() -> None:
    topo = npu_smi.parse_topo(asc("06"))
    assert len(topo["devices"]) == 8 and topo["matrix"]["NPU3"]["NPU5"] == "HCCS" and topo["affinity"]["NPU5"] == "48-71"
    assert checks.check_topo("n", topo, expect())[0]["ok"]
    sys_ = asc("06").replace("NPU3       HCCS       HCCS       HCCS       X          HCCS",
                             "NPU3       HCCS       HCCS       HCCS       X          SYS ")
    r = checks.check_topo("n", npu_smi.parse_topo(sys_), expect())[0]
    assert r["ok"] is False and "NPU3-NPU4 SYS" in r["message"]
    spod = npu_smi.parse_spod(asc("16"))
    assert (spod["sdid"], spod["super_pod_size"], spod["super_pod_id"], spod["server_index"]) == (16777216, 384, 0, 4)
    assert checks.check_spod("n", spod, expect())[0]["ok"]


def test_super_pod_domain_one_id_unique_sdids() -> None:
    rows = []
    for i, h in enumerate(("a", "b", "c")):
        text = asc("16").replace("SDID : 16777216", f"SDID : {16777216 + i * 16 if h != 'c' else 16777216}")
        text = text.replace("Super Pod ID : 0", f"Super Pod ID : {1 if h == 'b' else 0}")
        rows += checks.check_spod(h, npu_smi.parse_spod(text), expect())
    out = checks.domain_check(CM384, "sn0", ("a", "b", "c"), rows)
    pod = {r["host"]: r for r in out if r["fact"] == "super_pod_domain"}
    assert not pod["b"]["ok"] and pod["a"]["ok"] and "this node says 1" in pod["b"]["message"]
    dup = [r for r in out if r["fact"] == "sdid_unique"]
    assert {r["host"] for r in dup} == {"a", "c"} and "SDID 16777216 is reported by 2 nodes" in dup[0]["message"]


def _spod_950(pod: int, last: str, index: int) -> str:
    """An Ascend 950's spod-info (npucli print_npu_spod_info): no SDID; Server Index or Chassis ID."""
    lines = [("Super Pod Size", 384), ("Super Pod ID", pod), (last, index), ("Super Pod Type", 1)]
    return "".join(f"\t{k:<30} : {v}\n" for k, v in lines)


def test_950_nodes_print_no_sdid_and_are_not_duplicates_of_each_other() -> None:
    """The 950 prints no SDID: every 950 node's row once carried SDID 'None', and the domain check
    read three healthy nodes as one SDID reported thrice. Their Server Index is what is unique."""
    rows = []
    for i, h in enumerate(("a", "b", "c")):
        rows += checks.check_spod(h, npu_smi.parse_spod(_spod_950(0, "Server Index", i)), expect())
    assert all(r["ok"] for r in rows) and "Server Index 2" in rows[2]["message"] and "None" not in rows[2]["message"]
    out = checks.domain_check(CM384, "sn0", ("a", "b", "c"), rows)
    assert not [r for r in out if r["fact"] == "sdid_unique"] and all(r["ok"] for r in out)
    # two nodes at one Server Index: the same fault as a shared SDID
    rows[2] = checks.check_spod("c", npu_smi.parse_spod(_spod_950(0, "Server Index", 1)), expect())[0]
    dup = [r for r in checks.domain_check(CM384, "sn0", ("a", "b", "c"), rows) if r["fact"] == "sdid_unique"]
    assert {r["host"] for r in dup} == {"b", "c"} and "Server Index 1 is reported by 2 nodes" in dup[0]["message"]
    # the pod mainboard form names a chassis, not a node: nothing compared, never a duplicate
    rows = [checks.check_spod(h, npu_smi.parse_spod(_spod_950(0, "Chassis ID", 3)), expect())[0] for h in "ab"]
    out = checks.domain_check(CM384, "sn0", ("a", "b"), rows)
    assert not [r for r in out if r["fact"] == "sdid_unique"] and all(r["ok"] for r in out)


_DCMI = "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi module initialize failed. ret is -8005\n"


def test_npu_smi_failing_to_reach_the_driver_is_not_measured_not_a_parse_error() -> None:
    """npu-smi's DCMI init failure (printed instead of the box, exit 187) is the tool failing:
    parse exits 1 saying so, a run's info facts are not_measured (no device blamed, never a pass)."""
    from sncheck.model import Status
    from sncheck.vendors.parsers import failures, parse_text

    data = parse_text("npu-smi", _DCMI)
    assert data["chips"] == [] and data["tool_failed"] == ["dcmi module initialize failed. ret is -8005"]
    assert any("not measured" in f for f in failures(data))
    assert failures(parse_text("npu-smi", _DCMI, expect=16))
    rows = hf.evaluate("cm01", checks.COMMANDS["info"], expect(), exit_code=187, stdout=_DCMI)
    assert {r["fact"] for r in rows} == {"card_count", "npu_health", "hbm_capacity"}
    assert all(r["ok"] is False and r["status"] == Status.NOT_MEASURED and "-8005" in r["message"]
               and "cards" not in r for r in rows)
    # a device held by another container, and in a -t view: the failure is named, not 'no Key : Value'
    busy = "dcmi model initialized failed, because the device is used. ret is -8020\n"
    assert parse_text("npu-smi", busy)["tool_failed"]
    # (npu-smi info read it inline, its own way, until issue 28: one home, npu_smi.dcmi_failed)
    for parse in (npu_smi.parse_info, npu_smi.parse_health, npu_smi.parse_ecc, npu_smi.parse_fields,
                  npu_smi.parse_spod, npu_smi.parse_hbm, npu_smi.parse_mapping):
        got = parse(busy)
        assert got["tool_failed"] == [busy.strip()] and got["errors"] == [
            f"npu-smi failed before printing its output ({busy.strip()}): not measured"], (parse.__name__, got)
    # a -t view's output it cannot read names the view asked for, not npu-smi-fields (whose
    # Key : Value reader the spod, hbm, health and ecc views share)
    for view, parse in (("npu-smi-spod", npu_smi.parse_spod), ("npu-smi-hbm", npu_smi.parse_hbm),
                        ("npu-smi-health", npu_smi.parse_health), ("npu-smi-ecc", npu_smi.parse_ecc)):
        with pytest.raises(ParseError, match=f"^{view}: no 'Key : Value' lines"):
            parse("garbage\n")
    # and a box it cannot find says what npu-smi printed instead, as the -t views do
    with pytest.raises(ParseError, match="^npu-smi: no npu-smi info table; npu-smi printed 'garbage'"):
        npu_smi.parse_info("garbage\n")


def _sweep(view: str, body: str, special: dict[int, str], devices: int = 16) -> str:
    """sncheck's own sweep loop's output (sweep.npu_smi_script / hccn_script): 'echo', '== device N VIEW'."""
    return "".join(f"\n== device {i} {view}\n{special.get(i, body)}" for i in range(devices))


_HEALTH_OK = "\tHealth Status                  : OK\n\tError Code                     : NA\n"
_HEALTH_ALARM = "\tHealth Status                  : Alarm\n\tError Code                     : 80E18005\n"


def test_a_device_whose_sweep_query_cannot_reach_the_driver_is_not_measured_not_blamed() -> None:
    """One device's query in a sweep prints DCMI's init failure (its 2>&1 puts it in the section):
    not measured (the single npu-smi view's finding since e06ca0d), never that device's fault
    nor a pass; a fault found on another device keeps the fact failing and names both."""
    from sncheck.model import Status
    from sncheck.vendors.parsers import failures, parse_text

    one = _sweep("health", _HEALTH_OK, {5: _DCMI})
    data = parse_text("ascend-sweep", one, expect=16)
    assert data["devices"]["5"] is None and data["tool_failed"] == {"5": ["dcmi module initialize failed. ret is -8005"]}
    assert failures(data) == ["device 5: npu-smi failed (dcmi module initialize failed. ret is -8005): not measured"]
    ecc = asc("12").split("-t ecc")[1].split("/usr/local/bin")[0].strip("\n") + "\n"  # the MindCluster doc's
    for name, text in (("health", one), ("ecc", _sweep("ecc", ecc, {5: _DCMI}))):
        (row,) = hf.evaluate("cm01", checks.COMMANDS[name], expect(), exit_code=187, stdout=text)
        assert row["status"] == Status.NOT_MEASURED and row["ok"] is False, (name, row)
        assert "device 5 not measured (dcmi module initialize failed. ret is -8005)" in row["message"]
        assert "cards" not in row
    # every device unreachable: not measured, not 'OK on 0 devices'
    (row,) = hf.evaluate("cm01", checks.COMMANDS["health"], expect(), exit_code=187,
                         stdout=_sweep("health", _DCMI, {}))
    assert row["status"] == Status.NOT_MEASURED and "device 0 not measured" in row["message"] and "(16 in all)" in row["message"]
    # a device in Alarm beside it: a failure on that device, the unmeasured one named, not blamed
    (row,) = hf.evaluate("cm01", checks.COMMANDS["health"], expect(), exit_code=187,
                         stdout=_sweep("health", _HEALTH_OK, {3: _HEALTH_ALARM, 5: _DCMI}))
    assert row["status"] == "ok" and row["ok"] is False and set(row["cards"]) == {"3"}
    assert "device 5 not measured" in row["message"] and "80E18005" in row["message"]
    # the RoCE sweeps (hccn_tool over the same driver): the same, and a port DOWN elsewhere named alone
    link = checks.COMMANDS["roce_link"]
    (row,) = hf.evaluate("cm01", link, expect(), exit_code=187, stdout=_sweep("link", "link status: UP\n", {2: _DCMI}))
    assert row["status"] == Status.NOT_MEASURED and "nics" not in row and row["value"] == 15
    (row,) = hf.evaluate("cm01", link, expect(), exit_code=187,
                         stdout=_sweep("link", "link status: UP\n", {2: _DCMI, 4: "link status: DOWN\n"}))
    assert row["status"] == "ok" and row["ok"] is False and set(row["nics"]) == {"4"} and "device 2 not measured" in row["message"]
    # a device's own error line (no DCMI init failure) stays that device's problem
    (row,) = hf.evaluate("cm01", link, expect(), exit_code=1,
                         stdout=_sweep("link", "link status: UP\n", {6: "Invalid device id 6\n"}))
    assert row["status"] == "ok" and set(row["nics"]) == {"6"}


def test_a_roce_sweep_cut_inside_a_section_its_judge_passes_is_not_a_pass() -> None:
    """An optical section cut before its Rx LoL Flag reads (the lanes it has are fine) with an
    error; `sncheck parse` exits 1 on it, and the run's fact fails on it too (it passed)."""
    from sncheck.vendors.parsers import failures, parse_text

    good = _healthy_optical()
    cut = good.split("Rx LoL Flag")[0]
    text = _sweep("optical", good, {7: cut})
    assert failures(parse_text("ascend-sweep", text, expect=16))
    (row,) = hf.evaluate("cm01", checks.COMMANDS["roce_optical"], expect(), exit_code=0, stdout=text)
    assert row["ok"] is False and "device 7" in row["message"] and "cut short" in row["message"]


def _collected(*sections: tuple[str, str]) -> str:
    """A log as MindCluster's npu_info_collect.sh writes it: Datetime, then each command echoed
    above its output and two empty lines (echo -e "\\n") after it."""
    return "Datetime: 2026-03-03 12:00:44.179645\n\n\n" + "".join(f"{c}\n{o}\n\n" for c, o in sections)


_HCCN = "/usr/local/Ascend/driver/tools/hccn_tool"


@pytest.mark.parametrize("pipe", ["grep -v Error", "head -1", "tee /tmp/x"])
def test_a_section_through_a_pipe_of_its_own_is_held_to_its_views_end(pipe) -> None:
    """Only the collection script's own filter ('| grep prese') is not held to its view's end:
    a person's '| grep -v Error' dropped the Error Code line and the log exited 0, the same
    section without the pipe exiting 1 ('cut short')."""
    from sncheck.vendors.parsers import failures, parse_text

    health = "\n".join(ln for ln in _HEALTH_OK.rstrip("\n").split("\n") if "Error" not in ln)
    data = parse_text("ascend-collected", _collected((f"npu-smi info -i 0 -c 0 -t health | {pipe}", health)))
    assert data["sections"][0]["filter"] == pipe
    assert any("cut short" in f for f in failures(data)), failures(data)


def test_a_collected_log_is_read_by_the_collection_scripts_grammar() -> None:
    """npu_info_collect.sh: its '| grep prese' section holds the module's present line alone (the
    optical view's end is not there: no 'cut short'); lspci, pip and cat sections are sections
    of their own (their lines were read as the previous npu-smi output's); a pasted shell prompt
    before a command is no part of it; each section's faults are the log's (a link DOWN, a
    health Alarm exited 0: only errors were)."""
    from sncheck.vendors.parsers import failures, parse_text

    log = _collected((f"{_HCCN} -i 0 -optical -g | grep prese", "present              : present"),
                     ("lspci | grep acce", "3d:00.0 Processing accelerators: Huawei Technologies Co., Ltd. Device d801"),
                     ('pip list | grep "torch "', "torch                    2.1.0"),
                     ("[root@node7 ~]# /usr/local/bin/npu-smi info -i 0 -c 0 -t health", _HEALTH_OK.rstrip("\n")),
                     (f"{_HCCN} -i 0 -link -g", "link status: UP"))
    data = parse_text("ascend-collected", log, expect=5)
    assert failures(data) == [] and data["datetime"] == "2026-03-03 12:00:44.179645"
    got = [(s["command"], s["view"], s["filter"]) for s in data["sections"]]
    assert got == [(f"{_HCCN} -i 0 -optical -g", "hccn-optical", "grep prese"), ("lspci", None, "grep acce"),
                   ("pip list", None, 'grep "torch "'),
                   ("/usr/local/bin/npu-smi info -i 0 -c 0 -t health", "npu-smi-health", None),
                   (f"{_HCCN} -i 0 -link -g", "hccn-link", None)]
    assert data["sections"][0]["parsed"]["present"] == "present" and data["sections"][3]["parsed"]["health"] == "OK"
    # a section's faults are the log's, under its command; a filtered module not present too
    bad = parse_text("ascend-collected", log.replace("link status: UP", "link status: DOWN")
                     .replace(": present\n", ": not present\n").replace(": OK", ": Alarm"))
    assert failures(bad) == [f"`{_HCCN} -i 0 -optical -g`: module not present",
                             "`/usr/local/bin/npu-smi info -i 0 -c 0 -t health`: health Alarm",
                             f"`{_HCCN} -i 0 -link -g`: link DOWN"], failures(bad)
    # npu-smi info judged as `sncheck parse npu-smi` judges it (a run's check_info): a chip not OK
    info = asc("10")
    sick = info.replace("| OK ", "| Alarm ", 1)
    assert sick != info and "Alarm" in failures(parse_text("npu-smi", sick))[0]
    got = failures(parse_text("ascend-collected", _collected(("/usr/local/bin/npu-smi info", sick.strip("\n")))))
    assert got and all(f.startswith("`/usr/local/bin/npu-smi info`: ") for f in got) and "Alarm" in got[0]
    # a command that failed (its stderr is not kept): an empty section, an error
    assert failures(parse_text("ascend-collected", _collected((f"{_HCCN} -i 3 -link -g", "")))) == \
        [f"`{_HCCN} -i 3 -link -g`: no output"]


# --------------------------------------------------------------------------- hccn_tool

def test_hccn_views_from_the_vendor_doc_and_the_faultdiag_fixture() -> None:
    assert section("11", "-net_health -g")["parsed"]["net_health"] == "Init"
    assert section("11", "-link -g")["parsed"]["link"] == "UP"
    assert section("11", "-fec -g")["parsed"]["fec"] == "rs FEC mode"
    assert section("11", "-ip -g")["parsed"]["ipaddr"] == "10.xx.xx.10"
    assert section("11", "-link_stat -g")["parsed"]["link_up_count"] == 2
    assert section("11", "-stat -g")["parsed"]["counters"]["nic_rx_all_oct_num"] == 482237805
    bad = section("13", "-i 0 -net_health -g")["parsed"]
    assert bad["net_health"] == "Socket failed"
    assert section("13", "-i 0 -fec -g")["parsed"]["fec"] == "no FEC mode"
    opt = section("13", "-i 0 -optical -g")["parsed"]
    assert opt["present"] == "not present" and opt["values"]["Rx Power1"] == 0.0054
    assert opt["thresholds"]["RxPower Low"] == 0.1445 and opt["flags"]["Rx Los Flag"] == 0xFF
    problem = checks._judge_optical(opt)
    assert "module not present" in problem and "Rx Power1 0.0054 mW < 0.1445" in problem
    assert "Rx Los Flag 0xff" in problem and "Tx Power0 4.4035 mW > 3.5481" in problem
    assert section("13", "-i 2 -ip -g")["error"] == "no output"
    assert hccn_tool.parse_status(asc("02a"))["speed_Mbps"] == 200000
    assert hccn_tool.parse_hw_stats(asc("02b"))["counters"]["qp_active"] == 1
    assert hccn_tool.parse_lldp(asc("02c"))["tlvs"]["Port ID TLV"] == ["Ifname: 400GE1/1/20:2"]
    assert hccn_tool.parse_route(asc("02d"))["routes"][1]["destination"] == "29.1.0.0"
    assert hccn_tool.parse_ping(asc("03"))["loss_pct"] == 0.0
    assert hccn_tool.parse_hccn_conf(asc("04"))["devices"]["7"]["address"] == "29.1.170.143"
    assert [s["view"] for s in collected.parse_collected(asc("13"))["sections"]][:2] == ["npu-smi-mapping", "npu-smi"]


def test_roce_checks_per_npu() -> None:
    assert section("13", "-net_health -g")["parsed"]["net_health"] == "Socket failed"
    text = "\n".join(f"== device {i} net_health\nnet health status: " + ("Socket failed" if i == 9 else "Success")
                     for i in range(16))
    r = checks.check_net_health("cm01", sweep.parse_sweep(text), expect())[0]
    assert (r["ok"], r["value"], r["expected"]) == (False, 15, 16) and "NPU 9: net health Socket failed" in r["message"]
    assert r["message"].startswith("cm01: RoCE plane net_health")
    short = sweep.parse_sweep("\n".join(f"== device {i} link\nlink status: UP" for i in range(15)))
    r = checks.check_link("cm01", short, expect())[0]
    assert r["ok"] is False and "1 devices not reported" in r["message"]
    nofec = sweep.parse_sweep("== device 0 fec\nfec mode: no FEC mode")
    assert "NPU 0: fec no FEC mode" in checks.check_fec("cm01", nofec, expect(1))[0]["message"]


# --------------------------------------------------------------------------- hccl_test, asys, dmi

def test_hccl_test_rows_busbw_and_failed_ranks() -> None:
    p = hccl_test.parse_hccl_test(asc("09"), collective="all_reduce", ranks=8)
    assert (p["minbytes"], p["maxbytes"], p["iters"], p["warmup_iters"]) == (8192, 67108864, 20, 5)
    assert len(p["rows"]) == 14 and p["failed_checks"] == 0
    last = p["rows"][-1]
    assert (last["size_bytes"], last["time_us"], last["algbw_GBps"]) == (67108864, 2630.2, 23.76245)
    assert last["busbw_GBps"] == pytest.approx(23.76245 * BUSBW_FACTOR["all_reduce"](8))
    other_rank = asc("09").replace("67108864          |    2630.20    |      23.76245        | success",
                                   "67108864          |    2630.20    |      23.76245        | failed")
    two = hccl_test.parse_hccl_test(asc("09") + "\ncheck result failed, rank 5\n" + other_rank, "all_reduce", 8)
    assert two["failed_checks"] == 2 and two["failed_lines"] == ["check result failed, rank 5"]
    null = hccl_test.parse_hccl_test(asc("09").replace("| success\n16384", "| NULL\n16384"), "all_reduce", 8)
    assert null["unchecked"] == 1 and null["failed_checks"] == 0


def test_asys_and_ascend_dmi() -> None:
    h = asys.parse_asys(asc("14"))["reports"]
    assert h[0]["overall"] == "Healthy" and h[0]["devices"] == {"0": "Healthy", "1": "Healthy"}
    assert h[2]["overall"] == "Warning" and h[2]["error_codes"] == ["0xa419321c"]
    d = asys.parse_asys(asc("15"))["reports"]
    assert d[1]["results"]["HBM Detect"] == "Pass - All (0, 9, 0, 0)"
    assert d[6]["results"]["CPU Detect"] == "Pass, Warn, Pass, Fail"
    dmi = asys.parse_ascend_dmi(asc("17"))
    assert dmi["matrices"]["Unidirectional Peer to Peer Test"]["1"]["2"] == 388.9
    assert dmi["bandwidth"][1] == {"id": 1, "size_bytes": 536870912, "GBps": 57.875}
    assert dmi["compute"] == [{"device": "0/1", "tflops": 752.465, "power_W": 338.5}]


def test_asys_health_lists_five_codes_and_dots_past_five() -> None:
    """asys health -d prints its first five codes and a '......' row past five (oam-tools
    asys_health.py): whole, not 'ErrorCode Num: 7 but 5 listed'; five without the dots is cut."""
    from grammars.asys import _table

    codes = [[f"0x{i:08x}", "lp pmbus error"] for i in range(5)]
    head = [["Device ID: 0", "Overall Health: Warning"], ["", "ErrorCode Num: 7"]]
    whole = "\n".join(["asys health -d=0"] + _table(head, {"none": codes + [["......", "......"]]}, True)) + "\n"
    r = asys.parse_asys(whole)
    assert r["errors"] == [] and r["reports"][0]["codes_elided"] and len(r["reports"][0]["error_codes"]) == 5
    assert r["faults"] == ["'asys health -d=0': overall health Warning"]
    cut = "\n".join(["asys health -d=0"] + _table(head, {"none": codes}, True)) + "\n"
    assert "7 but 5 codes listed" in asys.parse_asys(cut)["errors"][0]


@pytest.mark.parametrize("tool, name", [("npu-smi", "10"), ("npu-smi-topo", "06"), ("npu-smi-spod", "16"),
                                        ("npu-smi-health", "18b"), ("npu-smi-hbm", "07"), ("hccn-lldp", "02c"),
                                        ("hccn-route", "02d"), ("hccn-ping", "03"), ("hccn-conf", "04"),
                                        ("hccl-test", "09"), ("asys", "15"), ("ascend-dmi", "17"),
                                        ("ascend-collected", "13"), ("npu-smi-fields", "08")])
def test_parse_registry_and_garbage(tool: str, name: str) -> None:
    json.dumps(parsers()[tool](asc(name)), allow_nan=False)
    for junk in ("", "garbage\n", asc(name)[: len(asc(name)) // 2]):
        only_parse_error_or_json(parsers()[tool], junk)
    with pytest.raises(ParseError):
        parsers()[tool]("")


# --------------------------------------------------------------------------- over SSH

def _healthy_optical() -> str:
    """The faultdiag capture (13) with its injected faults undone: module present, lane 1's
    Rx power like its neighbours, no LoS/LoL. No clean optical capture is stored."""
    text = section("13", "-i 0 -optical -g")
    raw = asc("13").split("-i 0 -optical -g\n", 1)[1].split("\n\n", 1)[0]
    assert text["parsed"]["present"] == "not present"
    return (raw.replace("present              : not present", "present              : present")
            .replace("Rx Power1            : 0.0054 mW", "Rx Power1            : 1.0213 mW")
            .replace("Tx Power0            : 4.4035 mW", "Tx Power0            : 1.4035 mW")
            .replace("Rx Los Flag          : 0xff", "Rx Los Flag          : 0x0")
            .replace("Rx LoL Flag          : 0xff", "Rx LoL Flag          : 0x0"))


def _install_cm_node(host, sdid: int, socket_failed_npu: int | None, dies_of: str | None = None) -> None:
    """A CloudMatrix node's fake npu-smi and hccn_tool; its dies' VDie IDs its own, or those of the
    host ``dies_of`` names (a cloned or misreported identity)."""
    data = host.directory / "ascend"
    data.mkdir(exist_ok=True)
    health = "Health Status                  : OK\nError Code                     : NA\nError Information              : NA\n"
    files = {
        "info": asc("10"), "topo": asc("06"), "health": health,
        "spod": asc("16").replace("SDID : 16777216", f"SDID : {sdid}"),
        "ecc": asc("12").split("-t ecc\n")[1].split("/usr/local/bin")[0],
        # hccn_tool: link and FEC from the MindCluster doc (11); net_health "Success" is the
        # healthy state named by the hccn_tool docs (no capture of it is stored); the
        # faulty NPU replays the faultdiag capture's "Socket failed" line (13) verbatim.
        "link": "link status: UP\n", "fec": "fec mode: rs FEC mode\n",
        "net_health": "net health status: Success\n", "optical": _healthy_optical(),
    }
    for name, text in files.items():
        (data / name).write_text(text)
    # each die's -t board (the doc's chip board, its VDie ID the die's), the host's own dies
    # (one capture on two hosts: sncheck.vendors.sim.own_ids, as every harness gives them)
    for die in range(16):
        (data / f"board.{die // 2}.{die % 2}").write_text(own_ids(ascend_sim.board(die), dies_of or host.name))
    if socket_failed_npu is not None:
        line = asc("13").split("-i 0 -net_health -g\n", 1)[1].splitlines()[0]
        assert line == "net health status: Socket failed"
        (data / f"net_health.{socket_failed_npu}").write_text(line + "\n")
    d = shlex.quote(str(data))
    install_fake_tool(host, "npu-smi", f"""#!/bin/sh
D={d}
case "$*" in
  "info") exec cat "$D/info" ;;
  "info -t topo") exec cat "$D/topo" ;;
  "info -t spod-info -i 0 -c 0") exec cat "$D/spod" ;;
  "info -t health -i "*) exec cat "$D/health" ;;
  "info -t ecc -i "*) exec cat "$D/ecc" ;;
  "info -t board -i "*" -c "*) exec cat "$D/board.$5.$7" ;;
esac
echo "fake npu-smi: unexpected arguments: $*" >&2; exit 2
""")
    install_fake_tool(host, "hccn_tool", f"""#!/bin/sh
D={d}
[ "$1" = "-i" ] || {{ echo "usage" >&2; exit 2; }}
view=${{3#-}}
if [ -f "$D/$view.$2" ]; then exec cat "$D/$view.$2"; fi
if [ -f "$D/$view" ]; then exec cat "$D/$view"; fi
echo "fake hccn_tool: unexpected arguments: $*" >&2; exit 2
""")


def test_parse_of_a_sweep_runs_only_its_own_views_check(tmp_path: Path) -> None:
    """The sweep commands share the ascend-sweep view, and parse runs each one's check on it:
    a health sweep went to the ECC check (KeyError 'counters': exit 3, 'internal error'), a
    net_health sweep to the link check. Each judges its own view's sweep only; a sick NPU in
    its own view still fails."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    health = "== device 0 health\n        Health Status : OK\n        Error Code : NA\n"
    net = "== device 0 net_health\nnet health status: Success\n\n== device 1 net_health\nnet health status: Socket failed\n"
    for name, text, code in (("health.txt", health, 0), ("net.txt", net, 1)):
        (tmp_path / name).write_text(text)
        r = CliRunner().invoke(main, ["parse", "ascend-sweep", str(tmp_path / name)])
        assert r.exit_code == code and "internal error" not in r.output, r.output
    assert "NPU 1: net health Socket failed" in r.output


# Facts a run judges against the platform (its design), which no output states: left out of
# the comparison with sncheck parse (tests/vendor_ssh.py disagreements).
ASCEND_DESIGN_ONLY: frozenset[str] = frozenset()


@pytest.mark.sshd
def test_cloudmatrix_node_with_socket_failed_on_one_npu_over_ssh(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(2, ["cm01", "cm02"])
    _install_cm_node(cluster["cm01"], 16777216, None)
    _install_cm_node(cluster["cm02"], 16777232, socket_failed_npu=9)
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "ascend-cm384", {"sp0": ["cm01", "cm02"]})
    outputs: dict[str, list[dict]] = {}
    rows, findings = host_facts(inv, cluster, outputs)
    # one parser, one judgement (issue 28): sncheck parse of each output the run read (npu-smi,
    # hccn_tool) fails exactly where the run's facts of that command fail
    wrong, compared = disagreements(outputs, rows, registry.vendors()["ascend"].commands, 16, ASCEND_DESIGN_ONLY)
    assert not wrong, "\n".join(wrong)
    assert compared >= 2 * 5, compared
    good = facts_of(rows, "cm01")
    assert all(r["ok"] for r in good.values()), [r["message"] for r in good.values() if not r["ok"]]
    assert set(good) >= {"card_count", "npu_health", "hbm_capacity", "npu_health_codes", "ecc", "die_ids", "ub_topology",
                         "super_pod", "super_pod_domain", "roce_link", "roce_net_health", "roce_optical", "roce_fec"}
    sick = facts_of(rows, "cm02")
    bad = {f: r for f, r in sick.items() if not r["ok"]}
    assert set(bad) == {"roce_net_health"}  # the UB plane and the other RoCE views stay clean
    r = bad["roce_net_health"]
    assert (r["value"], r["expected"]) == (15, 16) and "NPU 9: net health Socket failed" in r["message"]
    assert [(f.entity, f.entity_kind) for f in findings] == [("cm02/nic9", "nic")]  # NPU 9's RoCE port
    (f,) = findings
    assert f.rule == "host-fact" and "NPU 9: net health Socket failed" in f.message
    assert (f.evidence["measured"], f.evidence["expected"]) == (15, 16)


def _board_sweep(dies: dict[int, str]) -> dict:
    return sweep.parse_sweep("".join(f"\n== device {d} board\n{text}" for d, text in dies.items()))


def test_die_ids_lists_each_dies_vdie_id_and_fails_one_listed_twice_or_a_sweep_cut() -> None:
    """npu-smi -t board on every die: its VDie ID is the die's identity (the row's ids); a die
    printing NA or zeros (identity.unique_id's placeholder, reviews14 #1) is said, not failed; one id on two dies, a die not reported, a chip board cut
    before its Firmware Version, or DCMI's failure (not measured) are the fact's."""
    whole = {d: ascend_sim.board(d) for d in range(16)}
    [row] = checks.check_die_ids("cm01", _board_sweep(whole), expect(16))
    assert row["ok"] and row["value"] == 16 and len(set(row["ids"])) == 16, row
    assert row["ids"][0] == "42C711D4 20B03704 4A10C8D4 14CC040A D2102003"  # the doc's die 0, as printed
    na = dict(whole)
    na[3] = "\n".join(line.split(":")[0] + ": NA" if "VDie ID" in line else line for line in whole[3].splitlines())
    [row] = checks.check_die_ids("cm01", _board_sweep(na), expect(16))
    assert row["ok"] and row["value"] == 15 and "no die id on device 3" in row["message"], row
    zeros = {d: "\n".join(line.split(":")[0] + ": " + " ".join(["00000000"] * 5) if "VDie ID" in line else line
                          for line in t.splitlines()) for d, t in whole.items()}
    [row] = checks.check_die_ids("cm01", _board_sweep(zeros), expect(16))  # a placeholder, as identity says
    assert row["ok"] and row["value"] == 0 and not row.get("ids") and "identity not proven" in row["message"], row
    twice = {**whole, 5: whole[4]}
    [row] = checks.check_die_ids("cm01", _board_sweep(twice), expect(16))
    assert not row["ok"] and "listed for devices 4, 5" in row["message"], row
    [row] = checks.check_die_ids("cm01", _board_sweep({d: t for d, t in whole.items() if d < 15}), expect(16))
    assert not row["ok"] and "1 devices not reported" in row["message"], row
    cut = {**whole, 15: whole[15].split("Chip Position ID")[0]}
    [row] = checks.check_die_ids("cm01", _board_sweep(cut), expect(16))
    assert not row["ok"] and "device 15" in row["message"] and "Firmware Version" in row["message"], row
    failed = {**whole, 2: "dcmi module initialize failed. ret is -8005\n"}
    [row] = checks.check_die_ids("cm01", _board_sweep(failed), expect(16))
    assert row["status"] == "not_measured" and "device 2 not measured" in row["message"], row


@pytest.mark.sshd
def test_a_cloudmatrix_node_listing_another_nodes_dies_is_devices_shared_over_ssh(sshd_cluster, tmp_path: Path) -> None:
    """One card is in one machine (H16-02 for Ascend): cm02's npu-smi -t board prints cm01's VDie
    IDs (a cloned or misreported identity, or two names reaching one node); both are
    devices_shared, each naming the other, critical under the shipped rules. Before, a run read
    no Ascend identity (npu-smi info lists bus ids only) and both passed."""
    cluster = sshd_cluster(2, ["cm01", "cm02"])
    _install_cm_node(cluster["cm01"], 16777216, None)
    _install_cm_node(cluster["cm02"], 16777232, None, dies_of="cm01")
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "ascend-cm384", {"sp0": ["cm01", "cm02"]})
    rows, findings = host_facts(inv, cluster)
    shared = {r["host"]: r for r in rows if r["kind"] == "host_fact" and r["fact"] == "devices_shared"}
    assert set(shared) == {"cm01", "cm02"} and shared["cm01"]["value"] == 16, shared
    assert "(also cm02)" in shared["cm01"]["message"] and "(also cm01)" in shared["cm02"]["message"]
    assert all(facts_of(rows, h)["die_ids"]["ok"] for h in ("cm01", "cm02"))
    assert {(f.entity, f.severity.value) for f in findings if f.evidence.get("fact") == "devices_shared"} == \
        {("cm01", "critical"), ("cm02", "critical")}, findings
