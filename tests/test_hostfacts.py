"""Host fact checks (sncheck.vendors.facts) on real captured tool output, no SSH."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sncheck.vendors import facts as hf
from sncheck.vendors import registry
from sncheck.vendors.infiniband.checks import check_ib_ports
from sncheck.vendors.nvidia import checks as nv
from sncheck.vendors.infiniband.ibstat import parse_ibstatus
from sncheck.vendors.parsers import strip_source_header
from sncheck.transport import build_command

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
HOST = "node7"


def real(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text(encoding="utf-8"))


def run(command: str, text: str, cards: int = 8, exit_code: int | None = 0, **kw) -> dict[str, dict]:
    rows = hf.evaluate(HOST, nv.COMMANDS[command], hf.Expect(cards), exit_code=exit_code, stdout=text, **kw)
    assert all(r["kind"] == "host_fact" and r["host"] == HOST for r in rows)
    return {r["fact"]: r for r in rows}


# --------------------------------------------------------------------------- nvlink

def test_nvlink_all_links_inactive_fails() -> None:
    r = run("nvlink_status", real("nvidia-smi-nvlink/02_status_a100_all_links_inactive_error.txt"))["nvlink"]
    assert (r["ok"], r["status"], r["value"], r["tool"]) == (False, "ok", 0, "nvidia-smi")
    assert "GPU 6: NVML: Unable to retrieve NVLink information as all links are inactive" in r["message"]
    assert r["message"].startswith(f"{HOST}: ")


@pytest.mark.parametrize(("rel", "up"), [("01_status_a100_1gpu_12links_25GBs.txt", 12),
                                         ("03_status_p4de_a100_gpu0_only.txt", 12),
                                         ("05_status_a100_8gpu_12links_25GBs.txt", 96)])
def test_nvlink_healthy(rel: str, up: int) -> None:
    r = run("nvlink_status", real(f"nvidia-smi-nvlink/{rel}"))["nvlink"]
    assert (r["ok"], r["value"], r["expected"]) == (True, up, up)
    assert "at 25 GB/s" in r["message"]


def test_nvlink_one_inactive_or_slow_link_fails() -> None:
    text = real("nvidia-smi-nvlink/05_status_a100_8gpu_12links_25GBs.txt")
    lines = text.splitlines()
    gpu3 = lines.index(next(ln for ln in lines if ln.startswith("GPU 3:")))
    lines[gpu3 + 5] = "         Link 4: <inactive>"
    lines[gpu3 + 8] = "         Link 7: 12.5 GB/s"
    r = run("nvlink_status", "\n".join(lines))["nvlink"]
    assert (r["ok"], r["value"], r["expected"]) == (False, 95, 96)
    assert "GPU 3 link 4 inactive" in r["message"]
    assert "GPU 3 link 7 at 12.5 GB/s (others 25 GB/s)" in r["message"]
    # "GPU 3:" is nvidia-smi's index: the card of that index, not the host
    assert r["cards"] == {"3": "NVLink: GPU 3 link 4 inactive, GPU 3 link 7 at 12.5 GB/s (others 25 GB/s)"}
    assert "cards" not in run("nvlink_status", "\n".join(lines), cards=3)["nvlink"]  # no card 3 here


def test_inactive_links_of_a_pcie_board_are_its_design_not_a_fault() -> None:
    """Decision (harvest 12), on harvest 11's PCIe captures: a PCIe board's NVLink is a bridge pair's
    (NVIDIA's H100/A100 PCIe briefs: up to 3 bridges, 12 links), and nvidia-smi nvlink -s lists every
    link of the chip. The links no bridge wires are inactive by design: 6 of a bridged H100 PCIe's 18,
    all of a bridgeless A100 PCIe (NVML's all-inActive line). Without a platform's NVLink design the
    host fact passes on the links up, and `sncheck parse` agrees (exit 0); an SXM board's inactive
    link still fails, and a PCIe board's slow link too."""
    from sncheck.vendors.parsers import failures, parse_text

    for rel, up in (("harvest11/nvlink-status/02_nvlink_s_555.42.02_2x_h100_pcie_18_links_12_at_26.562GBs_links_4_5_"
                     "10_11_16_17_inactive_root_prompt_hpe-japan-e-learning.txt", 24),
                    ("harvest11/nvlink-status/01_nvlink_s_555.42.02_2x_a100_pcie_no_nvlink_nvml_unable_to_retrieve_"
                     "all_links_inactive_after_each_gpu_hpe-japan-e-learning.txt", 0)):
        text = real(rel)
        r = run("nvlink_status", text, cards=2)["nvlink"]
        assert (r["ok"], r["value"], r["expected"]) == (True, up, up), r["message"]
        data = parse_text("nvlink-status", text, expect=2)
        assert not failures(data), (data["faults"], data["errors"])
    slow = real("harvest11/nvlink-status/02_nvlink_s_555.42.02_2x_h100_pcie_18_links_12_at_26.562GBs_links_4_5_10_11_"
                "16_17_inactive_root_prompt_hpe-japan-e-learning.txt").replace("Link 0: 26.562", "Link 0: 13.281", 1)
    assert run("nvlink_status", slow, cards=2)["nvlink"]["ok"] is False
    sxm = real("nvidia-smi-nvlink/05_status_a100_8gpu_12links_25GBs.txt").replace("Link 4: 25 GB/s", "Link 4: <inactive>", 1)
    assert run("nvlink_status", sxm)["nvlink"]["ok"] is False


def test_a_pcie_board_with_fewer_links_up_than_its_bridged_peer_fails() -> None:
    """A bridge joins two boards: on harvest 11's bridged H100 PCIe pair, GPU 1 with 8 of its 12 bridged
    links down (4 up) read "16/16 links up", ok, before. Each bridged board (any link up) has as many links
    up as the most any bridged board has; a board with no link up has no bridge and still reads 0/0."""
    rel = ("harvest11/nvlink-status/02_nvlink_s_555.42.02_2x_h100_pcie_18_links_12_at_26.562GBs_links_4_5_"
           "10_11_16_17_inactive_root_prompt_hpe-japan-e-learning.txt")
    head, gpu1 = real(rel).split("GPU 1:")
    broken = head + "GPU 1:" + gpu1.replace(": 26.562 GB/s", ": <inactive>", 12).replace("<inactive>", "26.562 GB/s", 4)
    assert broken.count("26.562 GB/s") == 16
    r = run("nvlink_status", broken, cards=2)["nvlink"]
    assert (r["ok"], r["value"], r["expected"]) == (False, 16, 24), r["message"]
    assert "GPU 1: 4 links up, its bridged peer 12" in r["message"]
    assert r["cards"] == {"1": "NVLink: GPU 1: 4 links up, its bridged peer 12"}
    from sncheck.vendors.parsers import parse_text  # `sncheck parse` finds the same fault
    assert parse_text("nvlink-status", broken, expect=2)["faults"] == ["GPU 1: 4 links up, its bridged peer 12"]
    none = real("harvest11/nvlink-status/01_nvlink_s_555.42.02_2x_a100_pcie_no_nvlink_nvml_unable_to_retrieve_"
                "all_links_inactive_after_each_gpu_hpe-japan-e-learning.txt")
    r = run("nvlink_status", none, cards=2)["nvlink"]
    assert (r["ok"], r["value"], r["expected"]) == (True, 0, 0), r["message"]


def test_a_bridgeless_pcie_board_passes_nvlink_e_as_it_passes_nvlink_s() -> None:
    """NVML's all-inactive line after a bridgeless PCIe board's GPU line is its normal in `nvlink -e`
    as in `nvlink -s` (both read the blocks through nvidia_smi._nvlink_blocks); before, only -s knew,
    and harvest 11's two A100 PCIe failed nvlink_errors. An SXM board's all-inactive line still fails."""
    from sncheck.vendors.nvidia.nvidia_smi import parse_nvlink_errors

    text = real("harvest11/nvlink-status/01_nvlink_s_555.42.02_2x_a100_pcie_no_nvlink_nvml_unable_to_retrieve_"
                "all_links_inactive_after_each_gpu_hpe-japan-e-learning.txt").replace("nvlink -s", "nvlink -e")
    assert parse_nvlink_errors(text)["errors"] == []
    assert run("nvlink_errors", text, cards=2)["nvlink_errors"]["ok"] is True
    sxm = text.replace("A100-PCIE-40GB", "A100-SXM4-40GB", 1)
    assert parse_nvlink_errors(sxm)["errors"] == [
        "GPU 0: NVML: Unable to retrieve NVLink information as all links are inActive"]
    assert run("nvlink_errors", sxm, cards=2)["nvlink_errors"]["ok"] is False


def test_no_nvlink_at_all_passes_with_a_message() -> None:
    r = run("nvlink_status", real("nvidia-smi-nvlink/06_status_a10_no_nvlink.txt"))["nvlink"]
    assert (r["ok"], r["value"]) == (True, 0)
    assert "no NVLink reported" in r["message"]


def test_nvlink_error_counters_are_recorded_not_judged_by_value() -> None:
    # A counter's value alone is not tonight's failure: the rules judge its growth during
    # the run (sncheck.health.fabric). The fact records every link's counters by card.
    text = real("nvidia-smi-nvlink/04_errors_h100_18links_elided.txt")
    r = run("nvlink_errors", text)["nvlink_errors"]
    assert r["ok"] is True and "all zero" in r["message"]
    bad = text.replace("Link 17: CRC Errors: 0", "Link 17: CRC Errors: 42")
    r = run("nvlink_errors", bad)["nvlink_errors"]
    assert r["ok"] is True and "cards" not in r
    assert r["value"]["gpus"][0]["card"] == 0
    assert r["value"]["gpus"][0]["links"]["17"]["crc_errors"] == 42
    assert "GPU 0 link 17 crc_errors=42" in r["message"]


# --------------------------------------------------------------------------- nvidia-smi -q

def test_q_remap_pending_fails() -> None:
    facts = run("query", real("nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt"))
    remap = facts["remapped_rows"]
    assert (remap["ok"], remap["value"]) == (False, 1)
    assert "00000000:10:1C.0: row remap pending" in remap["message"]
    # 177 correctable DRAM errors are reported, not judged.
    assert facts["ecc"]["ok"] is True and "177 correctable" in facts["ecc"]["message"]
    # The capture lists 1 of 8 attached GPUs: the report itself is incomplete.
    assert (facts["gpu_report"]["ok"], facts["gpu_report"]["value"], facts["gpu_report"]["expected"]) == (False, 1, 8)
    # ...and an excerpt cannot say which of the 8 cards that GPU is: the host's finding
    assert "cards" not in remap


def test_q_remapped_rows_uncorrectable_pending_fails() -> None:
    facts = run("query", real("nvidia-smi-q/06_535.129.03_a10_remapped_rows_uncorrectable4_pending_yes.txt"), cards=1)
    assert facts["remapped_rows"]["ok"] is False
    assert "4 uncorrectable" in facts["remapped_rows"]["message"]
    assert list(facts["remapped_rows"]["cards"]) == ["0"]  # the host's one GPU, listed whole
    assert all(facts[f]["ok"] for f in ("gpu_report", "pcie_width", "pcie_gen", "ecc", "clock_reasons"))


def test_q_hw_slowdown_and_power_brake_fail() -> None:
    facts = run("query", real("nvidia-smi-q/03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt"))
    clocks = facts["clock_reasons"]
    assert (clocks["ok"], clocks["value"], clocks["expected"]) == (False, 8, 0)
    assert "GPU 00000000:19:00.0: HW Slowdown, HW Power Brake Slowdown active" in clocks["message"]
    healthy = ("gpu_report", "pcie_width", "pcie_gen", "ecc", "remapped_rows", "retired_pages")
    assert {f: facts[f]["ok"] for f in healthy} == dict.fromkeys(healthy, True)
    assert (facts["pcie_gen"]["value"], facts["pcie_gen"]["expected"]) == (5, 5)
    # the whole listing, in nvidia-smi's (bus id) order: section i is card i
    assert sorted(clocks["cards"], key=int) == [str(i) for i in range(8)]
    assert clocks["cards"]["1"] == "clock event reasons: GPU 00000000:3B:00.0: HW Slowdown, HW Power Brake Slowdown active"


def test_q_cards_are_named_only_from_a_whole_listing() -> None:
    text = real("nvidia-smi-q/03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt")
    # the inventory says 4 cards and nvidia-smi lists 8: which section is which card is unknown
    assert "cards" not in run("query", text, cards=4)["clock_reasons"]
    # one GPU fallen off the bus: 7 listed of 8 attached, the order no longer gives the index
    first, _, rest = text.partition("\nGPU 00000000:3B:00.0")
    seven = first + "\nGPU " + rest.split("\nGPU ", 1)[1]
    facts = run("query", seven)
    assert facts["gpu_report"]["ok"] is False and "cards" not in facts["clock_reasons"]


def test_q_sw_power_cap_idle_and_gen_downshift_are_benign() -> None:
    facts = run("query", real("nvidia-smi-q/08_535.154.05_8xRTX4090_sw_power_cap_ecc_disabled.txt"))
    assert all(r["ok"] for r in facts.values()), [r["message"] for r in facts.values() if not r["ok"]]
    gen = facts["pcie_gen"]
    assert (gen["value"], gen["expected"]) == (1, 4)
    assert "GPU 00000000:01:00.0: gen 1 of 4" in gen["message"] and "not judged" in gen["message"]
    assert facts["clock_reasons"]["message"].endswith("8/8 GPUs fine")


def test_q_pcie_width_downshift_fails_gen_does_not() -> None:
    text = real("nvidia-smi-q/07_560.35.03_titanv_1gpu_pcie_gen1_of_3_ecc_na.txt")
    facts = run("query", text, cards=1)
    assert facts["pcie_width"]["ok"] is True and facts["pcie_gen"]["ok"] is True
    width = "            Link Width\n                Max                       : 16x\n"
    assert width + "                Current                   : 16x" in text
    narrow = text.replace(width + "                Current                   : 16x",
                          width + "                Current                   : 8x")
    assert narrow != text
    facts = run("query", narrow, cards=1)
    assert facts["pcie_width"]["ok"] is False
    assert "PCIe x8 of x16" in facts["pcie_width"]["message"]


def test_q_sections_missing_are_not_reported_not_failed() -> None:
    facts = run("query", real("nvidia-smi-q/01_q_d_page_retirement_8gpu_a100_clean.txt"))
    assert facts["retired_pages"]["ok"] is True and facts["retired_pages"]["value"] == 0
    for fact in ("pcie_width", "ecc", "remapped_rows", "clock_reasons"):
        assert facts[fact]["value"] is None and "not reported" in facts[fact]["message"]


def test_q_retired_pages_pending_fails() -> None:
    text = real("nvidia-smi-q/01_q_d_page_retirement_8gpu_a100_clean.txt")
    assert "Pending Page Blacklist" in text
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if "Pending Page Blacklist" in ln)
    lines[first] = lines[first].replace(": No", ": Yes")
    facts = run("query", "\n".join(lines))
    assert facts["retired_pages"]["ok"] is False
    assert "00000001:00:00.0: page retirement pending" in facts["retired_pages"]["message"]


# --------------------------------------------------------------------------- ibstat, dcgmi

def test_ibpanic_fails() -> None:
    r = run("ibstat", real("ib/03_ibstat_a100_azure_8xIB200_ibpanic_error.txt"))["ib_ports"]
    assert (r["ok"], r["value"], r["expected"], r["tool"]) == (False, 8, 8, "ibstat")
    assert "ibpanic:" in r["message"] and "mlx5_8" in r["message"]


@pytest.mark.parametrize(("rel", "ports"), [("04_ibstat_h100_roce_12CA_all_active_eth.txt", 12),
                                            ("06_ibstat_2CA_cx6dx_roce_100g_space_indented.txt", 2)])
def test_ib_all_active(rel: str, ports: int) -> None:
    r = run("ibstat", real(f"ib/{rel}"))["ib_ports"]
    assert (r["ok"], r["value"], r["expected"]) == (True, ports, ports)


def test_ib_mixed_adapters_keep_their_own_rates() -> None:
    # 8 HDR InfiniBand ports at 200 and one 40G Ethernet port: different link layers.
    rows = check_ib_ports(HOST, parse_ibstatus(real("ib/05_ibstatus_a100_azure_8xHDR.txt")), hf.Expect(8))
    assert rows[0]["ok"] is True and rows[0]["value"] == 9


def test_ib_port_down_or_slow_fails() -> None:
    text = real("ib/04_ibstat_h100_roce_12CA_all_active_eth.txt")
    blocks = {b.split("'", 1)[0]: b for b in text.split("CA '")[1:]}
    blocks["mlx5_10"] = blocks["mlx5_10"].replace("State: Active", "State: Down").replace(
        "Physical state: LinkUp", "Physical state: Polling")
    blocks["mlx5_11"] = blocks["mlx5_11"].replace("Rate: 400", "Rate: 200")
    r = run("ibstat", "".join("CA '" + b for b in blocks.values()))["ib_ports"]
    assert (r["ok"], r["value"], r["expected"]) == (False, 11, 12)
    assert "mlx5_10 port 1 Down/Polling" in r["message"]
    assert "mlx5_11 port 1 at 200 Gb/s (same adapters run 400 Gb/s)" in r["message"]
    assert "mlx5_1 " not in r["message"]  # a 100G adapter model (MT4125), not a slow 400G one


@pytest.mark.parametrize(("rel", "ok", "result"), [
    ("01_r2_dcgm3.3.3_p4de_8xA100_all_pass.txt", True, "Pass"),
    ("02_r3_fragment_deployment_error_row_remap_pending.txt", False, "Fail"),
    ("03_r2_fragment_gpu_memory_fail_gpu0_thermal_warning.txt", False, "Fail"),
    ("04_r3_json_1gpu_pass_eud_skip.json.txt", False, "Pass"),
    ("../r3/dcgmi-diag/03_dcgm3.3.9_r3_2x_rtxpro6000_all_hw_tests_skip_printed_twice.txt", False, "Skip"),
])
def test_dcgmi(rel: str, ok: bool, result: str) -> None:
    r = run("dcgmi_diag", real(f"dcgmi-diag/{rel}"))["dcgmi_diag"]
    assert (r["ok"], r["value"], r["expected"], r["tool"]) == (ok, result, "Pass", "dcgmi")
    if "skip" in rel:  # a skipped test measured nothing: not judged (a check finding), never a pass
        assert r["status"] == "not_measured" and "not judged: " in r["message"], r
        assert "EUD Test" in r["message"] and ("GPU Memory" in r["message"]) == rel.startswith("..")
    else:
        assert r["status"] == "ok"
    if rel.startswith("03"):
        assert "GPU Memory" in r["message"] and "Thermal violations" in r["message"]
    if rel.startswith("02"):
        assert "row remappings are pending" in r["message"]


# --------------------------------------------------------------------------- card count, topology

# No real capture of --query-gpu exists; these lines follow `nvidia-smi --query-gpu=...
# --format=csv,noheader` for two GPUs of the RTX 4090 -q capture (08), fields in the order
# of nvidia_smi.QUERY_GPU_FIELDS.
CSV = ("0, NVIDIA GeForce RTX 4090, GPU-1c6f4e1e-6ba6-ba5d-2e3f-1bd2bb0a1fd3, 00000000:01:00.0, 24564 MiB, "
       "535.154.05, 1, 4, 16, 16, 34, 21.57 W, [N/A]\n"
       "1, NVIDIA GeForce RTX 4090, GPU-7a0b2a44-8c1d-5a32-0e3b-2a5c0c3d6e41, 00000000:23:00.0, 24564 MiB, "
       "535.154.05, 4, 4, 16, 16, 41, 49.88 W, [N/A]\n")


def test_card_count() -> None:
    assert run("query_gpu", CSV, cards=2)["card_count"]["ok"] is True
    r = run("query_gpu", CSV, cards=4)["card_count"]
    assert (r["ok"], r["value"], r["expected"]) == (False, 2, 4)
    assert "2 GPUs found, inventory says 4 (NVIDIA GeForce RTX 4090)" in r["message"]
    r = run("query_gpu", "No devices were found\n", cards=4, exit_code=6)["card_count"]
    assert (r["ok"], r["status"], r["value"]) == (False, "ok", 0)
    assert "No devices were found" in r["message"]


def test_topology_is_recorded() -> None:
    r = run("topo", real("nvidia-smi-topo/01_h100_8gpu_nv18_no_nics_spaces.txt"))["gpu_topology"]
    assert (r["ok"], r["value"]) == (True, {"NV18": 28})


# --------------------------------------------------------------------------- failures

def test_missing_tool_is_a_failed_fact_naming_the_tool() -> None:
    rows = hf.evaluate(HOST, nv.COMMANDS["query"], hf.Expect(8), exit_code=127, stdout="",
                       stderr="bash: line 1: nvidia-smi: command not found")
    assert [r["fact"] for r in rows] == list(nv.COMMANDS["query"].facts)
    assert {(r["ok"], r["status"], r["tool"]) for r in rows} == {(False, "missing_tool", "nvidia-smi")}
    assert "node7: nvidia-smi not found on the PATH (exit 127): cannot check ecc" in [r["message"] for r in rows]
    ib = run("ibstat", "", exit_code=127)["ib_ports"]
    assert (ib["status"], ib["tool"]) == ("missing_tool", "ibstat")


def test_timeout_names_the_command() -> None:
    r = run("dcgmi_diag", "partial", exit_code=None, timed_out=True, duration=2.04)["dcgmi_diag"]
    assert (r["ok"], r["status"]) == (False, "timeout")
    assert r["message"] == "node7: `dcgmi diag -r 1` timed out after 2.0s and was killed: cannot check dcgmi_diag"


def test_garbage_is_parse_failed_or_error() -> None:
    r = run("ibstat", "Segmentation fault\n")["ib_ports"]
    assert (r["ok"], r["status"], r["tool"]) == (False, "parse_failed", "ibstat")
    assert "cannot parse ibstat output" in r["message"]
    r = run("query", "garbage", exit_code=9, stderr="libnvidia-ml.so: cannot open")["ecc"]
    assert (r["ok"], r["status"]) == (False, "error")
    assert "failed with exit 9: libnvidia-ml.so: cannot open" in r["message"]


def test_clean_output_with_a_failing_exit_is_not_trusted() -> None:
    text = real("ib/06_ibstat_2CA_cx6dx_roce_100g_space_indented.txt")
    r = run("ibstat", text, exit_code=1, stderr="ibwarn: something")["ib_ports"]
    assert r["ok"] is False and "exit 1: ibwarn: something" in r["message"]


def test_registry_is_consistent_and_quotable() -> None:
    for vendor in registry.vendors().values():
        lists = [vendor.default_checks] + [p.checks for p in vendor.platforms.values()]
        for names in lists:
            produced = [f for n in names for f in vendor.commands[n].facts]
            assert len(produced) == len(set(produced)), (vendor.name, names)
        produced = {f for c in vendor.commands.values() for f in c.facts}
        assert produced | {"reachable"} <= set(vendor.facts), (vendor.name, produced - set(vendor.facts))
        for name, cmd in vendor.commands.items():
            assert name == cmd.name and all(isinstance(a, str) for a in cmd.argv)
            assert cmd.facts[0] in vendor.facts
            build_command(list(cmd.argv))
    assert dataclasses.is_dataclass(hf.Expect)


def test_a_skipped_dcgmi_diag_is_a_not_measured_check_finding_never_a_pass_nor_an_isolation() -> None:
    """Issue 21 gap (c): every hardware test 'Skip - All' (DCGM 3.3.9 on RTX PRO 6000) is a
    finding about the check: critical (the gate fails), rule not-measured, nothing isolated."""
    import pandas as pd

    from sncheck.run.inputs import load_inventory
    from sncheck.health.invariants import status_findings
    from sncheck.health.metrics import DetectContext
    from sncheck.topology import Topology

    topo = Topology(load_inventory(str(Path(__file__).resolve().parents[1] / "fixtures/inventories/demo-2sn.yaml")))
    host = topo.hosts[0]
    text = real("r3/dcgmi-diag/03_dcgm3.3.9_r3_2x_rtxpro6000_all_hw_tests_skip_printed_twice.txt")
    row = {**run("dcgmi_diag", text)["dcgmi_diag"], "host": host}
    found = status_findings(pd.DataFrame([row]), DetectContext(topo, topo.inventory.design))
    assert [(f.entity, f.rule, f.severity, f.about) for f in found] == [(host, "not-measured", "critical", "check")]
    assert "PCIe" in found[0].message and "Skip" in found[0].message
