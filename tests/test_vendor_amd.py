"""The AMD plug-in on real amd-smi / rocm-smi / TransferBench / rccl-tests captures, and an
AMD host over real SSH whose XGMI link is down."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from parser_checks import only_parse_error_or_json
from vendor_ssh import disagreements, facts_of, host_facts, install_replay, real, write_inventory

from sncheck.errors import ParseError
from sncheck.vendors import facts as hf
from sncheck.vendors import registry
from sncheck.vendors.amd import amd_smi, amd_smi_xgmi, checks, rocm_smi, transferbench
from sncheck.vendors.amd import sim as amd_sim
from sncheck.vendors.parsers import parse_text, parsers

MI300X = registry.platform("amd-mi300x")


ROOT = Path(__file__).resolve().parents[1]


def amd(name: str) -> str:
    return real(next(p for p in (Path(__file__).resolve().parents[1] / "fixtures/real/amd").glob(f"{name}_*")
                     ).relative_to(Path(__file__).resolve().parents[1] / "fixtures/real").as_posix())


def expect(cards: int = 8) -> hf.Expect:
    return hf.Expect(cards=cards, platform=MI300X, domain_hosts=1)


# --------------------------------------------------------------------------- amd-smi

def test_amd_smi_list_static_metric_trees() -> None:
    lst = amd_smi.parse_amd_smi(amd("01"))
    assert [g["gpu"] for g in lst["gpus"]] == [0, 1, 2] and lst["gpus"][2]["BDF"] == "0000:46:00.0"
    assert lst["errors"] == ["output truncated ('[output truncated]')"]
    static = amd_smi.parse_amd_smi(amd("02"))["gpus"][0]
    assert static["ASIC"]["MARKET_NAME"] == "MI300X-O" and static["ASIC"]["OAM_ID"] == 7
    assert static["BUS"]["MAX_PCIE_WIDTH"] == 16 and static["BUS"]["PCIE_INTERFACE_VERSION"] == "Gen 5"
    metric = amd_smi.parse_amd_smi(amd("04"))["gpus"][0]
    assert metric["POWER"]["THROTTLE_STATUS"] == "UNTHROTTLED" and metric["CLOCK"]["GFX_2"]["CLK"] == "2107 MHz"
    vram = amd_smi.parse_amd_smi_json(amd("03"))
    assert vram["gpus"] == [{"type": "HBM", "vendor": "N/A", "size": {"value": 196592, "unit": "MB"}}]
    part = amd_smi.parse_amd_smi(amd("11"))
    # its two '...' lines: the parser skips them, listing.elided says each once, with its line in the file;
    # the paste ends at 'GPU: 62' with nothing under it (every device amd-smi prints holds an entry): cut there
    assert [g["gpu"] for g in part["gpus"]] == [0, 62] and part["errors"] == ["GPU 62: nothing printed under it: cut short"]
    said = parse_text("amd-smi", next((ROOT / "fixtures/real/amd").glob("11_*")).read_text())["errors"]
    assert [e.split(" is ")[0] for e in said if "reporter's" in e] == ["line 8", "line 9"], said
    assert part["gpus"][0]["PARTITION"] == {"COMPUTE_PARTITION": "CPX", "MEMORY_PARTITION": "NPS4", "PARTITION_ID": 0}
    # amd-smi wraps a long list onto indented lines: one value; a list cut before its ']' is cut short
    wrapped = ("GPU: 0\n    USAGE:\n        JPEG_ACTIVITY: [N/A, N/A,\n            N/A, N/A]\n"
               "        GFX_ACTIVITY: 3 %\n")
    w = amd_smi.parse_amd_smi(wrapped)
    assert w["gpus"][0]["USAGE"] == {"JPEG_ACTIVITY": "[N/A, N/A, N/A, N/A]", "GFX_ACTIVITY": "3 %"} and not w["errors"]
    assert "cut short" in amd_smi.parse_amd_smi(wrapped.split("            N/A, N/A]")[0])["errors"][0]


def test_ecc_blocks_clean_and_correctable() -> None:
    clean = amd_smi.parse_amd_smi(amd("09"))
    assert set(clean["gpus"][0]["ECC_BLOCKS"]) == {"UMC", "SDMA", "GFX", "MMHUB", "PCIE_BIF", "HDP", "XGMI_WAFL"}
    r = checks.check_ecc("n1", clean, expect(1))[0]  # the changelog lists GPU 0 only: a 1-card host
    assert (r["ok"], r["value"]) == (True, 0) and "7 blocks read" in r["message"]
    # the same listing on an 8-card host read 1 GPU's counters: not a pass
    r8 = checks.check_ecc("n1", clean, expect())[0]
    assert r8["ok"] is False and "ECC blocks of 1 GPUs listed, inventory says 8" in r8["message"]
    ce = checks.check_ecc("n1", amd_smi.parse_amd_smi(amd("10")), expect(1))[0]
    assert ce["ok"] is True and "2 correctable, not judged" in ce["message"]
    bad = amd("09").replace("UNCORRECTABLE_COUNT: 0", "UNCORRECTABLE_COUNT: 3", 1)
    r = checks.check_ecc("n1", amd_smi.parse_amd_smi(bad), expect(1))[0]
    assert r["ok"] is False and "GPU 0 UMC: 3 uncorrectable, 0 deferred" in r["message"]
    assert r["cards"] == {"0": "ECC: GPU 0 UMC: 3 uncorrectable, 0 deferred"}  # the card, not the host


def test_monitor_tables_and_card_count() -> None:
    old = amd_smi.parse_amd_smi_monitor(amd("05"))
    assert len(old["gpus"]) == 8 and old["gpus"][0]["GFX_UTIL"] == "83 %" and old["gpus"][7]["MEM_CLOCK"] == "900 MHz"
    cpx = amd_smi.parse_amd_smi_monitor(amd("08"))
    assert len(cpx["gpus"]) == 32 and cpx["gpus"][31]["VRAM_TOTAL"] == "196300 MB"
    new = amd_smi.parse_amd_smi_monitor(amd("12"))
    assert new["columns"][:3] == ["GPU", "POWER", "PWR_CAP"] and new["gpus"][3]["GPU_T"] == "61 °C"
    assert checks.check_card_count("n1", old, expect())[0]["ok"]
    r = checks.check_card_count("n1", cpx, expect())[0]
    assert (r["ok"], r["value"], r["expected"]) == (False, 32, 8)
    assert checks.check_card_count("n1", cpx, expect(32))[0]["ok"]


def test_topology_and_xgmi_metric_tables() -> None:
    topo = amd_smi.parse_amd_smi_topology(amd("06"))
    assert set(topo["tables"]) == {"ACCESS", "WEIGHT"}
    assert topo["tables"]["WEIGHT"]["0000:05:00.0"]["0000:26:00.0"] == 15
    assert topo["tables"]["ACCESS"]["0000:e5:00.0"]["0000:05:00.0"] == "ENABLED"
    x = amd_smi_xgmi.parse_amd_smi_xgmi(amd("07"))
    assert [(g["gpu"], g["bdf"], g["bit_rate_Gbps"], g["max_bandwidth_Gbps"], g["link_type"]) for g in x["gpus"]] == [
        (0, "05:00.0", 32.0, 512.0, "XGMI"), (1, "26:00.0", 32.0, 512.0, "XGMI")]
    assert x["gpus"][0]["read_KB"]["c6:00.0"] == 9774 and x["gpus"][1]["write_KB"]["05:00.0"] == 0
    r = checks.check_xgmi_status("n1", x, expect())[0]
    assert r["ok"] is False and "truncated" in r["message"]  # the blog cut the table


def test_xgmi_status_table_down_link() -> None:
    # The LINK STATUS table of newer amd-smi (no capture stored): U up, D down, X self.
    text = amd("07").replace("[output truncated]", "") + (
        "LINK STATUS TABLE:\n"
        "       bdf          05:00.0 26:00.0 46:00.0\n"
        "GPU0   05:00.0      X       U       D\n")
    r = checks.check_xgmi_status("n1", amd_smi_xgmi.parse_amd_smi_xgmi(text), expect())[0]
    assert r["ok"] is False and "GPU0 -> 46:00.0 D" in r["message"] and "1/2 links up" in r["message"]


def test_xgmi_status_links_not_read_are_never_a_pass() -> None:
    """A LINK STATUS table whose peers are all N/A or '-', or no LINK STATUS table for several
    GPUs, read no link: not measured (was ok, '0/0 links up', exit 0). The own X diagonal is no link."""
    from sncheck.model import Status
    from sncheck.vendors import parsers
    bdfs = ["0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0"]
    for na in ("N/A", "-"):
        text = "LINK STATUS TABLE:\n       bdf          " + " ".join(bdfs) + "\n" + "".join(
            f"GPU{g}   {bdfs[g]} " + " ".join("X" if p == g else na for p in range(4)) + "\n" for g in range(4))
        parsed = amd_smi_xgmi.parse_amd_smi_xgmi(text)
        assert parsed["faults"] == [] and any("link status not read: not measured" in e for e in parsed["errors"])
        r = checks.check_xgmi_status("n1", parsed, expect(4))[0]
        assert r["ok"] is False and r["status"] == Status.NOT_MEASURED and "0/0 links up" in r["message"]
        assert parsers.failures(parsers.parse_text("amd-smi-xgmi", text))
    # one peer N/A among U links: the others are judged, that one not read
    text = "LINK STATUS TABLE:\n       bdf          " + " ".join(bdfs[:3]) + "\n" + "".join(
        f"GPU{g}   {bdfs[g]} " + " ".join("X" if p == g else "N/A" if {g, p} == {0, 2} else "U" for p in range(3))
        + "\n" for g in range(3))
    r = checks.check_xgmi_status("n1", amd_smi_xgmi.parse_amd_smi_xgmi(text), expect(3))[0]
    assert r["status"] == Status.NOT_MEASURED and "4/4 links up" in r["message"] and "GPU0: link status to 0000:46:00.0 N/A" in r["message"]
    # a link down beside a cell not read: the down link is a measured failure, not "not measured"
    r = checks.check_xgmi_status("n1", amd_smi_xgmi.parse_amd_smi_xgmi(text.replace(" U", " D", 1)), expect(3))[0]
    assert r["ok"] is False and r["status"] != Status.NOT_MEASURED
    # several GPUs, the LINK METRIC table alone (no LINK STATUS table): not read
    metric = "LINK METRIC TABLE:\n       bdf          bit_rate max_bandwidth link_type " + " ".join(bdfs) + "\n" + "".join(
        f"GPU{g}   {bdfs[g]} 32 Gb/s  512 Gb/s      XGMI\nRead " + " ".join("N/A" if p == g else "1 KB" for p in range(4))
        + "\nWrite " + " ".join("N/A" if p == g else "1 KB" for p in range(4)) + "\n" for g in range(4))
    parsed = amd_smi_xgmi.parse_amd_smi_xgmi(metric)
    assert parsed["errors"] == ["no LINK STATUS table for 4 GPUs: link status not read: not measured"]
    r = checks.check_xgmi_status("n1", parsed, expect(4))[0]
    assert r["status"] == Status.NOT_MEASURED and not r["ok"]
    # one GPU alone has no XGMI peer: nothing to read
    assert amd_smi_xgmi.parse_amd_smi_xgmi(metric.split("GPU1")[0])["errors"] == []


def test_rocm_smi_showtopo_xgmi_mesh_and_pcie_only() -> None:
    mesh = rocm_smi.parse_showtopo(amd("13"))
    assert len(mesh["gpus"]) == 8 and mesh["hops"]["GPU7"]["GPU0"] == 1 and mesh["weight"]["GPU3"]["GPU4"] == 15
    assert mesh["numa"]["GPU5"] == 1 and mesh["warnings"][0].startswith("WARNING: AMD GPU device(s)")
    r = checks.check_xgmi_topo("n1", mesh, expect())[0]
    assert (r["ok"], r["value"], r["expected"]) == (True, 28, 28)
    pcie = rocm_smi.parse_showtopo(amd("16"))
    r = checks.check_xgmi_topo("n1", pcie, expect(4))[0]
    assert r["ok"] is False and r["value"] == 0 and "GPU0-GPU1 PCIE (hops 3, weight 52)" in r["message"]


def test_rocm_smi_concise_three_layouts_and_pids() -> None:
    for name, cap, name0 in (("14", 650.0, None), ("15", 1000.0, None), ("24", 750.0, "AMD Instinct MI300X")):
        c = rocm_smi.parse_concise(amd(name))
        assert [g["device"] for g in c["gpus"]] == list(range(8))
        assert c["gpus"][0]["pwrcap_W"] == cap and c["gpus"][0]["name"] == name0
    assert rocm_smi.parse_concise(amd("24"))["gpus"][3]["vram_pct"] == 17
    assert rocm_smi.parse_concise(amd("15"))["gpus"][3]["temp_C"] == 67.0
    pids = rocm_smi.parse_showpids(amd("23"))["processes"]
    assert len(pids) == 8 and pids[2] == {"pid": 1168514, "name": "pt_main_thread", "gpus": "1",
                                          "vram_bytes": 177386942464, "sdma": 0, "cu_occupancy": 4}
    no_json = rocm_smi.parse_concise(amd("17"))
    assert no_json["gpus"] == [] and no_json["errors"][0] == "WARNING: No JSON data to report"
    # a partition's N/A cells (DPX secondaries): whole, each column read in its place; a paste
    # starting at the column header is the table (the banner left out)
    table = ("Device  Node  IDs              Temp        Power     Partitions          SCLK     MCLK     Fan  Perf"
             "    PwrCap   VRAM%  GPU%\n"
             "0       2     0x75a0,   24959  60.0°C      319.0W    NPS1, DPX, 0        2203Mhz  1900Mhz  0%   manual"
             "  1000.0W  0%     7%\n"
             "1       3     0x75a0,   20862  N/A         N/A       N/A, N/A, 1         N/A      N/A      0%   n/a"
             "     N/A      3%     N/A\n" + "=" * 20 + " End of ROCm SMI Log " + "=" * 20 + "\n")
    dpx = rocm_smi.parse_concise(table)
    assert dpx["errors"] == [] and dpx["gpus"][0]["gpu_pct"] == 7
    assert (dpx["gpus"][1]["vram_pct"], dpx["gpus"][1]["gpu_pct"], dpx["gpus"][1]["pwrcap_W"]) == (3, None, None)
    assert "row cut short" in rocm_smi.parse_concise(table.replace("  3%     N/A\n", "  3%\n"))["errors"][0]


def test_rocm_smi_1x_indented_rows_and_a_table_without_rows() -> None:
    """ROCm 1.x indents its rows under the SCLK OD / MCLK OD header (tensorflow-upstream issue
    156); a whole table where no device row reads is an error, never a pass with no GPU."""
    old = ("=" * 20 + "    ROCm System Management Interface    " + "=" * 20 + "\n"
           " GPU  Temp    AvgPwr   SCLK     MCLK     Fan      Perf    SCLK OD    MCLK OD\n"
           "  0   35c     73.68W   1411Mhz  300Mhz   0.0%     auto      0%         0%\n"
           "  1   41c     80.5W    1411Mhz  300Mhz   0.0%     auto      5%         0%\n"
           + "=" * 20 + "           End of ROCm SMI Log          " + "=" * 20 + "\n")
    c = rocm_smi.parse_concise(old)
    assert c["errors"] == [] and [g["device"] for g in c["gpus"]] == [0, 1]
    assert (c["gpus"][0]["power_W"], c["gpus"][1]["sclk_od_pct"], c["gpus"][1]["temp_C"]) == (73.68, 5, 41.0)
    rowless = "\n".join(ln for ln in old.splitlines() if "Mhz" not in ln) + "\n"
    assert rocm_smi.parse_concise(rowless)["errors"] == ["the table has no device row: no GPU was read"]
    # rows the parser cannot read (a prefix no delivery rule removes) are not a pass either
    garbled = old.replace("  0   35c", "  card0 35c").replace("  1   41c", "  card1 41c")
    assert rocm_smi.parse_concise(garbled)["errors"] == ["the table has no device row: no GPU was read"]


def test_metric_throttle_and_pcie_width() -> None:
    m = amd_smi.parse_amd_smi(amd("04"))
    rows = {r["fact"]: r for r in checks.check_metric("n1", m, expect())}
    assert rows["throttle"]["ok"] is False and "truncated" in rows["throttle"]["message"]
    whole = amd("04").replace("[output truncated]", "    PCIE:\n        WIDTH: 8\n        SPEED: 32 GT/s")
    whole = whole.replace("THROTTLE_STATUS: UNTHROTTLED", "THROTTLE_STATUS: THROTTLED")
    rows = {r["fact"]: r for r in checks.check_metric("n1", amd_smi.parse_amd_smi(whole), expect())}
    assert rows["throttle"]["ok"] is False and "GPU 0: THROTTLED" in rows["throttle"]["message"]
    assert rows["pcie_width"]["ok"] is False and "GPU 0: PCIe x8 of x16" in rows["pcie_width"]["message"]


# --------------------------------------------------------------------------- TransferBench, rccl-tests

def test_transferbench_views() -> None:
    a2a = transferbench.parse_transferbench(amd("18"))
    (m,) = a2a["matrices"]
    assert m["rows"]["GPU 02"]["GPU 01"] == 53.446 and m["rows"]["GPU 00"]["GPU 00"] is None
    assert (a2a["aggregate_GBps"], a2a["average_GBps"]) == (2879.354, 51.417)
    err = transferbench.parse_transferbench(amd("20"))
    # (its author's '...' after the version line may stand for Tests run before the error: said, parse28e)
    assert err["version"] == "v1.62.00" and err["errors"] == [
        "[ERROR] HIP Error: invalid resource handle",
        "line 3 is a reporter's '...': lines of the output were left out, it is not whole"]
    cfg = transferbench.parse_transferbench(amd("21"))
    assert len(cfg["tests"]) == 6 and cfg["tests"][2]["executors"][1] == {"executor": "GPU 01", "GBps": 45.471,
                                                                         "ms": 0.046, "bytes": 2097152,
                                                                         "sum_GBps": 46.304}
    assert cfg["tests"][3]["aggregate_GBps"] == 698.995
    p2p = transferbench.parse_transferbench(amd("22"))
    uni, bi = p2p["matrices"]
    assert uni["rows"]["GPU 03"]["GPU 07"] == 47.93 and uni["rows"]["GPU 00"]["GPU 00"] == 1689.85
    assert bi["rows"]["GPU 00 <->"]["GPU 01"] == 92.20 and len(bi["rows"]) == 30
    assert p2p["averages"]["UniDir"]["GPU->GPU"] == 48.44 and p2p["averages"]["BiDir"]["CPU->GPU"] == 43.84
    ok = checks.check_transferbench_p2p("n1", p2p, pair_GBps=50.0)[0]
    assert ok["ok"] and ok["value"] == 47.47
    low = checks.check_transferbench_p2p("n1", p2p, pair_GBps=64.0)[0]
    assert low["ok"] is False and "GPU 00->GPU 01 48.46 GB/s" in low["message"]
    assert checks.check_transferbench_p2p("n1", err, pair_GBps=50.0)[0]["ok"] is False


def test_transferbench_ends_its_grammar_names() -> None:
    """Each TransferBench output is whole only at the end its source prints (issue 28): cut
    before it, or inside a cell, it is cut short; '##' comments and [WARN] lines are no failure."""
    from sncheck.vendors.parsers import failures

    def fails(text: str) -> list[str]:
        return failures(parse_text("transferbench", text))

    p2p = amd("22")
    uni_end = p2p.index("Averages (During UniDir)")
    bi_end = p2p.index("Averages (During BiDir)")
    assert not fails(p2p)
    # a table without its Averages line, a row without its last cell, an Averages cut inside a number
    assert fails(p2p[:bi_end]) and fails(p2p[: p2p.index("   GPU 07 <-> ")] + "   GPU 07 <-> 78.76 96.91\n")
    assert fails(p2p[: p2p.index("\n", bi_end)][:-1] + "\n")  # '46.24' cut to '46.2'
    # P2P_MODE=0 (from the env listing) promises both tables; unknown (HIDE_ENV), the first is whole
    env = "TransferBench v1.52\n[P2P Related]\nP2P_MODE             =            0 : Running Unidirectional + Bidirectional\n"
    head = p2p[: p2p.index("\n", uni_end) + 1]
    assert not fails(head) and fails(env + head) and not fails(env + p2p)
    # averages N/A (no CPU devices) and SHOW_ITERATIONS' min/max/sd rows
    tb = parse_text("transferbench", head.replace("35.85", "N/A").replace(
        "   GPU 00 -> 55.23", "   GPU 00 min " + " 1.00" * 10 + "\n   GPU 00 -> 55.23"))
    assert tb["averages"]["UniDir"]["CPU->CPU"] is None and tb["matrices"][0]["rows"]["GPU 00"]["GPU 01"] == 48.46
    a2a = amd("18")
    assert not fails(a2a) and fails(a2a[: a2a.index("RTotal")]) and fails(a2a[: a2a.index("Aggregate bandwidth (CPU")])
    assert fails(a2a[: a2a.index("Aggregate bandwidth (CPU")] + "Aggregate bandwidth (CPU Timed): 2671.5")
    # the a2a preset's Test block came, its summary did not (the run stopped there)
    cfg = amd("21")
    test1 = cfg[cfg.index("Test 1:"): cfg.index("## Single DMA")]
    a2a_head = "GPU-GFX All-To-All benchmark:\n==========================\n" \
        "- Copying 268435456 bytes between directly connected pairs of GPUs using 8 CUs (56 Transfers)\n"
    assert fails(a2a_head + test1) and not fails(test1)
    # a config comment saying 'failed', and a [WARN], are no failure
    got = parse_text("transferbench", "## Copy that once failed\n[WARN] GFX executor 0 requesting 80 total "
                     "subexecutors, however only has 64.  Some Transfers may be serialized\n" + test1)
    assert not failures(got) and got["warnings"] and got["tests"][0]["overhead_ms"] == 0.111
    assert fails(test1.replace("Overhead: 0.111 ms", "Overhead: 0.1"))
    scaling = "GPU-GFX Scaling benchmark:\nNumCUs   CPU00     GPU00\n   1     14.11     20.30\n"
    assert not fails(scaling + " Best   14.11(  1)   20.30(  1)\n")
    assert fails(scaling + " Best   14.11(  1)   20.3") and fails(scaling + " Best   14.11(  1)\n")


def test_transferbench_hostile_lines_parse_in_linear_time() -> None:
    """Lines made to make a backtracking regex explode: the Averages keys' '(?:\\S+->\\S+\\s*)+' took
    37 s on 18 arrows (exponential), a scaling row or an Executor line of blanks was quadratic.
    Each is read in well under the CPU-time alarm (a few ms here; the old pattern never ends)."""
    import signal

    def over(_signum: int, _frame: object) -> None:
        raise TimeoutError("over 10 s of CPU: a regex backtracks")

    old = signal.signal(signal.SIGPROF, over)
    signal.setitimer(signal.ITIMER_PROF, 10.0)
    try:
        for text in ("Test 1:\n" + "a->" * 5000 + "a \x00\n",
                     "GPU-GFX Scaling benchmark:\nNumCUs CPU00\n1" + " " * 200_000 + "x\n",
                     "Test 1:\nExecutor: " + " " * 200_000 + "x\n"):
            assert transferbench.parse_transferbench(text)["errors"]  # nothing whole in them either
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def test_rccl_tests_are_the_collective_tool() -> None:
    vendor = registry.vendors()["amd"]
    assert vendor.collective.name == "rccl-tests" and vendor.dist_backend == "nccl"
    r = vendor.collective.parse(real("rccl-tests/01_all_reduce_mi300x_16ranks_2nodes_rccl_version_block.txt"))
    assert r["tool"] == "rccl-tests" and r["rows"]


@pytest.mark.parametrize("tool, name", [("amd-smi", "09"), ("amd-smi-json", "03"), ("amd-smi-monitor", "12"),
                                        ("amd-smi-topology", "06"), ("amd-smi-xgmi", "07"), ("rocm-smi", "14"),
                                        ("rocm-smi-showtopo", "13"), ("rocm-smi-showpids", "23"),
                                        ("transferbench", "22")])
def test_parse_registry_and_garbage(tool: str, name: str) -> None:
    json.dumps(parsers()[tool](amd(name)), allow_nan=False)
    for junk in ("", "garbage\n", amd(name)[: len(amd(name)) // 2]):
        only_parse_error_or_json(parsers()[tool], junk)
    with pytest.raises(ParseError):
        parsers()[tool]("")


# --------------------------------------------------------------------------- over SSH

def _xgmi_down(text: str, a: int, b: int) -> str:
    """rocm-smi --showtopo with the a<->b XGMI link down: the driver reaches b from a over
    PCIe (the link type and weight of rocm-smi's PCIe-only capture 16)."""
    out = []
    section = None
    for line in text.splitlines():
        if "between two GPUs" in line:
            section = line
        cells = line.split()
        if cells and re.fullmatch(r"GPU\d", cells[0]) and section:
            row = int(cells[0][3:])
            if row in (a, b):
                col = b if row == a else a
                new = {"Weight": "52", "Hops": "3", "Link Type": "PCIE"}[section.strip("= ").split(" between")[0]]
                cells[col + 1] = new
                line = cells[0].ljust(7) + "".join(c.ljust(13) for c in cells[1:]).rstrip()
        out.append(line)
    return "\n".join(out) + "\n"


def _install_amd(host, showtopo: str) -> None:
    # amd-smi metric: the blog cut the capture ("[output truncated]"); a real run prints it
    # whole, so the replay drops the author's marker line.
    metric = amd("04").replace("[output truncated]\n", "")
    # and a real 8-GPU host lists every GPU's blocks: the one-GPU captures as each GPU's
    install_replay(host, "amd-smi", {"list": amd_sim.gpu_list(), "monitor -putm": amd("05"),
                                     "metric --ecc-blocks": amd_sim.per_card(amd("09"), 8),
                                     "metric": amd_sim.per_card(metric, 8)})
    install_replay(host, "rocm-smi", {"--showtopo": showtopo})
    install_replay(host, "ibstat", {"": real("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt")})


# Facts a run judges against the platform (its design), which no output states: left out of
# the comparison with sncheck parse (tests/vendor_ssh.py disagreements).
AMD_DESIGN_ONLY: frozenset[str] = frozenset()


@pytest.mark.sshd
def test_amd_node_with_an_xgmi_link_down_over_ssh(sshd_cluster, tmp_path: Path) -> None:
    cluster = sshd_cluster(2, ["mi01", "mi02"])
    _install_amd(cluster["mi01"], amd("13"))
    _install_amd(cluster["mi02"], _xgmi_down(amd("13"), 2, 5))
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "amd-mi300x", {"mi01": ["mi01"], "mi02": ["mi02"]})
    outputs: dict[str, list[dict]] = {}
    rows, findings = host_facts(inv, cluster, outputs)
    # one parser, one judgement (issue 28): sncheck parse of each output the run read (amd-smi,
    # rocm-smi, ibstat) fails exactly where the run's facts of that command fail
    wrong, compared = disagreements(outputs, rows, registry.vendors()["amd"].commands, 8, AMD_DESIGN_ONLY)
    assert not wrong, "\n".join(wrong)
    assert compared >= 2 * 4, compared  # every command of both hosts was compared, not skipped
    healthy = facts_of(rows, "mi01")
    assert {f: r["ok"] for f, r in healthy.items()} == dict.fromkeys(
        ("reachable", "gpu_bus", "card_count", "xgmi_links", "ecc", "throttle", "pcie_width", "ib_ports",
         "ib_counters", "kernel_log"), True)  # the last two: what every SSH host is read for (hostreads)
    sick = facts_of(rows, "mi02")["xgmi_links"]
    assert (sick["ok"], sick["value"], sick["expected"]) == (False, 27, 28)
    assert "GPU2-GPU5 PCIE (hops 3, weight 52)" in sick["message"]
    # the XGMI link itself (both GPUs keep their other six links): one link finding
    assert [f.entity for f in findings] == ["mi02/gpu2<->mi02/gpu5"]
    (f,) = findings
    assert f.rule == "host-fact" and f.entity_kind == "link" and "GPU2-GPU5 PCIE" in f.message
    assert (f.evidence["measured"], f.evidence["expected"]) == (27, 28)


@pytest.mark.sshd
def test_transferbench_p2p_runs_where_the_plan_names_it_over_ssh(sshd_cluster, tmp_path: Path) -> None:
    """The connectivity option ``tools: [transferbench]`` runs the AMD plug-in's copy test
    (``TransferBench p2p``) on each host over SSH; a slow GPU pair fails the host's
    ``transferbench_p2p`` (against the platform's p2p_GBps, 48 GB/s at 80 %), a finding."""
    import pandas as pd

    from sncheck.backends.ssh import SshBackend
    from sncheck.run.inputs import load_inventory
    from sncheck.health.metrics import DetectContext
    from sncheck.health.rules import evaluate, load_rules
    from sncheck.probeplan import connectivity_plan
    from sncheck.topology import Topology

    cluster = sshd_cluster(2, ["mi01", "mi02"])
    healthy = amd("22")
    slow = healthy.replace("GPU 00 -> 55.23 55.26 1689.85 48.46", "GPU 00 -> 55.23 55.26 1689.85 18.46", 1)
    assert slow != healthy
    install_replay(cluster["mi01"], "TransferBench", {"p2p": healthy})
    install_replay(cluster["mi02"], "TransferBench", {"p2p": slow})
    inv = write_inventory(tmp_path / "inv.yaml", cluster, "amd-mi300x", {"mi01": ["mi01"], "mi02": ["mi02"]})
    topo = Topology(load_inventory(inv))
    backend = SshBackend(topo, known_hosts=str(cluster.known_hosts), ssh_config=str(cluster.ssh_config))
    rows: list[dict] = []
    try:
        assert backend.scale_out(connectivity_plan(topo, tools=("transferbench",)), rows.append) is True
    finally:
        backend.close()
    p2p = {r["host"]: r for r in rows if r["kind"] == "host_fact" and r["fact"] == "transferbench_p2p"}
    assert set(p2p) == {"mi01", "mi02"} and not [r for r in rows if r["kind"] == "not_run"]
    assert (p2p["mi01"]["ok"], p2p["mi01"]["value"]) == (True, 47.47)
    assert p2p["mi02"]["ok"] is False and "GPU 00->GPU 01 18.46 GB/s" in p2p["mi02"]["message"]
    findings = evaluate(load_rules("default").rules, pd.DataFrame(rows), DetectContext(topo, topo.inventory.design))
    assert [(f.entity, f.rule) for f in findings] == [("mi02", "host-fact")]


def test_a_bus_id_listed_for_two_gpus_fails_the_listing() -> None:
    """amd-smi list with one BDF under two GPUs passed gpu_bus (as many BDFs as cards), and the
    bus listing then named that bus's reports to the last of them: no card can be named by it."""
    gpus = [{"GPU": str(i), "BDF": f"0000:{0x1b + i:02x}:00.0"} for i in range(8)]
    [row] = checks.check_gpu_list("mi01", {"gpus": gpus, "errors": []}, expect())
    assert row["ok"] is True, row
    gpus[5]["BDF"] = gpus[4]["BDF"]
    [row] = checks.check_gpu_list("mi01", {"gpus": gpus, "errors": []}, expect())
    assert row["ok"] is False and "1 bus ids listed twice" in row["message"], row


def test_amd_smi_failure_keeps_the_views_other_errors() -> None:
    """A view that read nothing but amd-smi's failure line says the tool failed and keeps its
    other errors (a '[output truncated]' line was dropped)."""
    text = "ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n" \
        "[output truncated]\n"
    for parse in (amd_smi.parse_amd_smi, amd_smi.parse_amd_smi_monitor, amd_smi.parse_amd_smi_topology,
                  amd_smi_xgmi.parse_amd_smi_xgmi):
        errors = parse(text)["errors"]
        assert len(errors) == 2 and errors[0].startswith("amd-smi failed: ERROR:root:Unable") \
            and errors[0].endswith("not measured") and "truncated" in errors[1], (parse.__name__, errors)


def test_amd_smi_list_cut_inside_a_gpus_record_exits_1_and_each_versions_record_reads_whole() -> None:
    """amd-smi list prints each GPU's BDF and UUID (to ROCm 6.2.2) and from 6.3.0 its KFD_ID, NODE_ID
    and PARTITION_ID too (AmdSmiCommands.list, ROCm/amdsmi 3b7f661 and c9a489d): the last GPU's record
    stopped short of both is cut (it read whole before: the random cuts' 'one device's entries')."""
    from sncheck.vendors.parsers import strip_source_header

    (path,) = (Path(__file__).resolve().parents[1] / "fixtures/real/harvest7/amd-smi").glob("01_*.txt")
    text = strip_source_header(path.read_text(encoding="utf-8"))
    gpu = text[text.index("GPU: 0"):text.index("\n\nAI_NIC")] + "\n"
    assert amd_smi.parse_amd_smi(gpu)["errors"] == []
    for upto in ("BDF", "UUID", "KFD_ID", "NODE_ID"):
        cut = gpu[:gpu.index("\n", gpu.index(upto)) + 1]
        errors = amd_smi.parse_amd_smi(cut)["errors"]
        assert upto == "UUID" and errors == [] or any("cut short" in e for e in errors), (upto, errors)
