"""nvidia-smi parsers (topo -m, nvlink -s/-e, -q, --query-gpu), checked against real captured output."""

from __future__ import annotations

from pathlib import Path

import pytest
from parser_checks import only_parse_error_or_json
from hypothesis import given, settings
from hypothesis import strategies as st

from sncheck.errors import ParseError
from sncheck.vendors.nvidia.nvidia_smi import QUERY_GPU_FIELDS, parse_nvlink_errors, parse_nvlink_status, parse_query, parse_query_gpu_csv, parse_topo, query_gpu_command
from sncheck.vendors.parsers import strip_source_header

REAL = Path(__file__).parent.parent / "fixtures" / "real"

TOPO_H100 = "nvidia-smi-topo/01_h100_8gpu_nv18_no_nics_spaces.txt"
TOPO_A10 = "nvidia-smi-topo/03_a10_4gpu_pcie_sys_only_2nics.txt"
TOPO_1080 = "nvidia-smi-topo/04_2x1080ti_phb_consumer_numa_na.txt"
TOPO_A100 = "nvidia-smi-topo/05_a100_8gpu_nv12_2numa_author_compacted_spacing.txt"
NVL_ONE = "nvidia-smi-nvlink/01_status_a100_1gpu_12links_25GBs.txt"
NVL_DOWN = "nvidia-smi-nvlink/02_status_a100_all_links_inactive_error.txt"
NVL_P4DE = "nvidia-smi-nvlink/03_status_p4de_a100_gpu0_only.txt"
NVL_ERRORS = "nvidia-smi-nvlink/04_errors_h100_18links_elided.txt"
NVL_EIGHT = "nvidia-smi-nvlink/05_status_a100_8gpu_12links_25GBs.txt"
NVL_NONE = "nvidia-smi-nvlink/06_status_a10_no_nvlink.txt"
Q_RETIRE = "nvidia-smi-q/01_q_d_page_retirement_8gpu_a100_clean.txt"
Q_RETIRE_BAD = "nvidia-smi-q/09_q_d_page_retirement_8gpu_a100_pending_blacklist_4gpus.txt"
Q_ECC177 = "nvidia-smi-q/02_a100_ecc_dram_correctable_177_remap_pending_elided.txt"
Q_H100 = "nvidia-smi-q/03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt"
Q_TRUNC = (
    "nvidia-smi-q/05_535.183.01_h100_truncated_misindented_invalid_hw_slowdown.txt"
)
Q_A10 = "nvidia-smi-q/06_535.129.03_a10_remapped_rows_uncorrectable4_pending_yes.txt"
Q_TITANV = "nvidia-smi-q/07_560.35.03_titanv_1gpu_pcie_gen1_of_3_ecc_na.txt"
Q_4090 = "nvidia-smi-q/08_535.154.05_8xRTX4090_sw_power_cap_ecc_disabled.txt"


def load(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text())


def test_every_real_nvidia_smi_file_is_named_here():
    named = {v for k, v in globals().items() if k.startswith(("TOPO_", "NVL_", "Q_"))}
    on_disk = {
        str(p.relative_to(REAL))
        for d in ("nvidia-smi-topo", "nvidia-smi-nvlink", "nvidia-smi-q")
        for p in (REAL / d).glob("*.txt")
    }
    assert on_disk == named


# --------------------------------------------------------------------------- topo -m


def test_topo_h100_nvswitch_all_nv18_two_numa_nodes():
    result = parse_topo(load(TOPO_H100))
    assert result["gpus"] == [f"GPU{i}" for i in range(8)]
    assert result["nics"] == []
    # the author left out the Legend topo -m prints under every matrix: an excerpt, read but cut short
    assert result["errors"] == ["no Legend follows the matrix (topo -m prints one under every matrix): output cut short"]
    assert parse_topo(load(TOPO_H100) + "\nLegend:\n\n  X    = Self\n  PIX  = Connection traversing at most a "
                      "single PCIe bridge\n  NV#  = Connection traversing a bonded set of # NVLinks\n")["errors"] == []
    for a in result["gpus"]:
        for b in result["gpus"]:
            assert result["matrix"][a][b] == ("X" if a == b else "NV18")
    assert result["affinity"]["GPU0"] == {
        "cpu": "0-51,104-155",
        "numa": 0,
        "gpu_numa_id": None,
    }
    assert result["affinity"]["GPU7"] == {
        "cpu": "52-103,156-207",
        "numa": 1,
        "gpu_numa_id": None,
    }


def test_topo_pcie_only_with_nic_rows_and_nic_legend():
    result = parse_topo(load(TOPO_A10))
    assert result["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert result["nics"] == [
        {"name": "NIC0", "device": "mlx5_0"},
        {"name": "NIC1", "device": "mlx5_1"},
    ]
    assert result["matrix"]["GPU1"]["GPU2"] == "SYS"
    assert result["matrix"]["GPU3"]["NIC0"] == "SYS"
    assert (
        result["matrix"]["NIC0"]["NIC1"] == "PIX"
        and result["matrix"]["NIC1"]["NIC0"] == "PIX"
    )
    assert result["matrix"]["NIC1"]["NIC1"] == "X"
    assert result["affinity"]["GPU2"] == {
        "cpu": "0-127",
        "numa": 0,
        "gpu_numa_id": None,
    }  # GPU NUMA ID N/A
    assert "NIC0" not in result["affinity"]


def test_topo_consumer_board_phb_and_numa_na():
    result = parse_topo(load(TOPO_1080))
    assert result["matrix"] == {
        "GPU0": {"GPU0": "X", "GPU1": "PHB"},
        "GPU1": {"GPU0": "PHB", "GPU1": "X"},
    }
    assert result["affinity"]["GPU1"] == {
        "cpu": "0-11",
        "numa": None,
        "gpu_numa_id": None,
    }


def test_topo_author_compacted_spacing():
    result = parse_topo(load(TOPO_A100))
    assert {result["matrix"]["GPU2"][g] for g in result["gpus"] if g != "GPU2"} == {
        "NV12"
    }
    assert [result["affinity"][g]["numa"] for g in result["gpus"]] == [
        0,
        0,
        0,
        0,
        1,
        1,
        1,
        1,
    ]
    assert result["affinity"]["GPU5"]["cpu"] == "24-47"


def test_topo_short_row_is_reported():
    text = load(TOPO_A100).replace(
        "GPU3  NV12  NV12  NV12   X    NV12  NV12  NV12  NV12   0-23         0",
        "GPU3  NV12",
    )
    result = parse_topo(text)
    assert result["errors"][0] == "row GPU3: 1 of 8 cells"  # then the Legend the author left out
    assert result["matrix"]["GPU3"] == {"GPU0": "NV12"}


def test_topo_without_header_raises():
    with pytest.raises(ParseError):
        parse_topo(load(NVL_ONE))


# --------------------------------------------------------------------------- nvlink -s


def test_nvlink_status_single_gpu_tab_indented():
    result = parse_nvlink_status(load(NVL_ONE))
    (gpu,) = result["gpus"]
    assert (gpu["index"], gpu["name"]) == (7, "NVIDIA A100-SXM4-80GB")
    assert gpu["uuid"] == "GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8"
    assert gpu["links"] == [
        {"link": i, "active": True, "speed_GBps": 25.0} for i in range(12)
    ]
    assert result["errors"] == [] and gpu["errors"] == []


def test_nvlink_status_all_links_inactive_is_an_error_not_a_guess():
    result = parse_nvlink_status(load(NVL_DOWN))
    (gpu,) = result["gpus"]
    assert gpu["index"] == 6 and gpu["links"] == []
    assert gpu["errors"] == [
        "NVML: Unable to retrieve NVLink information as all links are inactive"
    ]
    assert result["errors"] == [
        "GPU 6: NVML: Unable to retrieve NVLink information as all links are inactive"
    ]


def test_nvlink_status_two_space_indent():
    (gpu,) = parse_nvlink_status(load(NVL_P4DE))["gpus"]
    assert gpu["index"] == 0 and len(gpu["links"]) == 12
    assert gpu["uuid"] == "GPU-370ec676-e407-3115-836a-8ebcb3c4f62a"


def test_nvlink_status_eight_gpus():
    result = parse_nvlink_status(load(NVL_EIGHT))
    assert [g["index"] for g in result["gpus"]] == list(range(8))
    assert all(len(g["links"]) == 12 for g in result["gpus"])
    assert {link["speed_GBps"] for g in result["gpus"] for link in g["links"]} == {25.0}
    assert result["gpus"][1]["uuid"] == "GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4"


def test_nvlink_status_empty_output_of_a_gpu_without_nvlink():
    # 'faults' since ce13074 (an inactive or slow link among those listed): none listed, none at fault
    assert parse_nvlink_status(load(NVL_NONE)) == {
        "tool": "nvlink-status",
        "gpus": [],
        "faults": [],
        "errors": [],
    }


def test_nvlink_status_inactive_link_line():
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    links = parse_nvlink_status(text)["gpus"][0]["links"]
    assert links == [
        {"link": 0, "active": True, "speed_GBps": 26.562},
        {"link": 1, "active": False, "speed_GBps": None},
    ]


# --------------------------------------------------------------------------- nvlink -e


def test_nvlink_errors_per_link_counters_with_elided_links():
    result = parse_nvlink_errors(load(NVL_ERRORS))
    (gpu,) = result["gpus"]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert [link["link"] for link in gpu["links"]] == [0, 1, 17]
    zero = {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}
    assert all(link["counters"] == zero for link in gpu["links"])
    assert result["errors"] == []


def test_nvlink_errors_nonzero_counter():
    text = load(NVL_ERRORS).replace("Link 17: CRC Errors: 0", "Link 17: CRC Errors: 12")
    links = parse_nvlink_errors(text)["gpus"][0]["links"]
    assert links[-1] == {
        "link": 17,
        "counters": {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 12},
    }


# --------------------------------------------------------------------------- -q


def test_query_page_retirement_section_only():
    result = parse_query(load(Q_RETIRE))
    assert result["driver_version"] == "535.86.10" and result["cuda_version"] == "12.2"
    assert [g["bus_id"] for g in result["gpus"]] == [
        f"0000000{i}:00:00.0" for i in range(1, 9)
    ]
    assert all(
        g["retired_pages"]
        == {"single_bit_ecc": 0, "double_bit_ecc": 0, "pending": False}
        for g in result["gpus"]
    )
    assert all(g["pcie"] is None and g["clock_reasons"] is None for g in result["gpus"])
    assert result["errors"] == []
    bad = parse_query(load(Q_RETIRE_BAD))  # its bad twin: four GPUs with a page blacklist pending
    assert [g["retired_pages"]["pending"] for g in bad["gpus"]] == [False, True] * 4
    assert [g["retired_pages"]["double_bit_ecc"] for g in bad["gpus"]] == [5, 61, 0, 0, 0, 45, 0, 56]
    assert bad["errors"] == [] and bad["attached_gpus"] == 8


def test_query_ecc_177_and_pending_remap_in_an_elided_excerpt():
    result = parse_query(load(Q_ECC177))
    (gpu,) = result["gpus"]
    assert (
        gpu["product_name"] == "NVIDIA A100-SXM4-80GB"
        and gpu["bus_id"] == "00000000:10:1C.0"
    )
    assert gpu["ecc"]["volatile"]["DRAM Correctable"] == 177
    assert gpu["ecc"]["aggregate"] == {
        "SRAM Correctable": 0,
        "SRAM Uncorrectable": 0,
        "DRAM Correctable": 177,
        "DRAM Uncorrectable": 0,
    }
    assert gpu["ecc"]["mode_current"] is None  # the ECC Mode section was elided
    assert gpu["retired_pages"] == {
        "single_bit_ecc": None,
        "double_bit_ecc": None,
        "pending": None,
    }
    assert gpu["remapped_rows"] == {
        "correctable": 1,
        "uncorrectable": 0,
        "pending": True,
        "failure": False,
        "histogram": {"Max": 639, "High": 1, "Partial": 0, "Low": 0, "None": 0},
    }
    assert result["errors"] == [
        "8 GPUs attached but 1 listed (truncated or excerpted output)",
        # the excerpt stops before the last section of a full listing
        "GPU 00000000:10:1C.0: no 'Processes' section, the last of a full listing: output cut short",
    ]


def test_query_h100_hw_slowdown_and_power_brake_active_on_all_gpus():
    result = parse_query(load(Q_H100))
    assert (
        result["attached_gpus"] == 8
        and len(result["gpus"]) == 8
        and result["errors"] == []
    )
    gpu = result["gpus"][0]
    assert gpu["uuid"] == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert gpu["pcie"] == {
        "gen_current": 5,
        "gen_max": 5,
        "width_current": 16,
        "width_max": 16,
        "replays_since_reset": 67,
        "below_max": [],
    }
    assert [g["pcie"]["replays_since_reset"] for g in result["gpus"]] == [
        67,
        63,
        52,
        43,
        49,
        53,
        82,
        67,
    ]
    assert gpu["ecc"]["mode_current"] == "Enabled"
    assert gpu["ecc"]["aggregate"]["SRAM Uncorrectable SEC-DED"] == 0
    assert gpu["ecc"]["aggregate"]["SRAM Threshold Exceeded"] is False
    assert gpu["remapped_rows"]["histogram"]["Max"] == 2560
    for g in result["gpus"]:
        reasons = g["clock_reasons"]
        assert reasons["section"] == "Clocks Event Reasons"
        assert reasons["active"] == ["HW Slowdown", "HW Power Brake Slowdown"]
        assert reasons["reasons"]["HW Thermal Slowdown"] is False


def test_query_older_clocks_throttle_reasons_naming():
    # Drivers before 535 print the same block under "Clocks Throttle Reasons".
    text = load(Q_H100).replace("Clocks Event Reasons", "Clocks Throttle Reasons")
    reasons = parse_query(text)["gpus"][3]["clock_reasons"]
    assert reasons["section"] == "Clocks Throttle Reasons"
    assert reasons["active"] == ["HW Slowdown", "HW Power Brake Slowdown"]


def test_query_truncated_file_with_invalid_reason_names():
    result = parse_query(load(Q_TRUNC))
    (gpu,) = result["gpus"]
    assert gpu["pcie"]["replays_since_reset"] == 120
    assert (
        gpu["ecc"] is None and gpu["remapped_rows"] is None
    )  # cut before those sections
    reasons = gpu["clock_reasons"]["reasons"]
    assert (
        reasons["Invalid HW Slowdown"] is False
        and reasons["Invalid HW Power Brake Slowdown"] is False
    )
    assert gpu["clock_reasons"]["active"] == ["Idle"]
    assert result["errors"] == [
        "8 GPUs attached but 1 listed (truncated or excerpted output)",
        "GPU 00000000:53:00.0: no 'Processes' section, the last of a full listing: output cut short",
    ]


def test_query_a10_uncorrectable_remapped_rows_pending():
    (gpu,) = parse_query(load(Q_A10))["gpus"]
    assert gpu["product_name"] == "NVIDIA A10"
    assert (
        gpu["remapped_rows"]["uncorrectable"] == 4
        and gpu["remapped_rows"]["pending"] is True
    )
    assert gpu["remapped_rows"]["failure"] is False
    assert gpu["pcie"]["gen_current"] == 4 and gpu["pcie"]["gen_max"] == 4


def test_query_titan_v_pcie_gen1_of_3_and_ecc_na():
    result = parse_query(load(Q_TITANV))
    (gpu,) = result["gpus"]
    assert result["driver_version"] == "560.35.03"
    assert (gpu["pcie"]["gen_current"], gpu["pcie"]["gen_max"]) == (1, 3)
    assert gpu["ecc"]["mode_current"] is None and gpu["ecc"]["mode_pending"] is None
    assert gpu["ecc"]["volatile"]["Single Bit/Total"] is None
    assert gpu["ecc"]["aggregate"]["Double Bit/Device Memory"] is None
    assert gpu["remapped_rows"] is None  # "Remapped Rows : N/A"


def test_query_rtx4090_sw_power_cap_on_two_gpus_and_ecc_disabled():
    result = parse_query(load(Q_4090))
    capped = [
        g["bus_id"]
        for g in result["gpus"]
        if "SW Power Cap" in g["clock_reasons"]["active"]
    ]
    assert capped == ["00000000:23:00.0", "00000000:81:00.0"]
    assert {g["ecc"]["mode_current"] for g in result["gpus"]} == {"Disabled"}
    assert result["gpus"][0]["ecc"]["volatile"]["DRAM Correctable"] is None
    assert [g["pcie"]["gen_current"] for g in result["gpus"]] == [
        1,
        4,
        1,
        1,
        4,
        1,
        1,
        1,
    ]


def test_query_misindented_lines_stay_in_their_gpu():
    lines = load(Q_A10).splitlines()
    lines = [ln.lstrip() if "Product Name" in ln else ln for ln in lines]
    lines = [
        ln.replace(
            "        Pending                           : Yes", "      Pending : Yes"
        )
        for ln in lines
    ]
    (gpu,) = parse_query("\n".join(lines))["gpus"]
    assert gpu["product_name"] == "NVIDIA A10"
    assert gpu["remapped_rows"]["pending"] is True


def test_query_driver_failure_text_is_an_error_not_a_crash():
    text = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    result = parse_query(text)
    assert result["gpus"] == [] and result["errors"] == [text.strip()]


def test_query_garbage_raises():
    with pytest.raises(ParseError):
        parse_query(load(TOPO_H100))


# --------------------------------------------------------------------------- --query-gpu CSV

# No captured --query-gpu file exists; these lines carry GPU 0 and 1 of the real -q capture
# Q_H100 in nvidia-smi's "csv,noheader" format for QUERY_GPU_FIELDS.
H100_CSV = (
    "0, NVIDIA H100 80GB HBM3, GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa, 00000000:19:00.0, 81559 MiB, "
    "535.161.08, 5, 5, 16, 16, 29, 67.74 W, 0\n"
    "1, NVIDIA H100 80GB HBM3, GPU-47daa2ad-a218-6286-252b-af45f0dfaf00, 00000000:3B:00.0, 81559 MiB, "
    "535.161.08, 5, 5, 16, 16, 30, 68.02 W, [N/A]\n"
)


def test_query_gpu_command_uses_the_field_constant():
    assert query_gpu_command() == [
        "nvidia-smi",
        "--query-gpu=" + ",".join(QUERY_GPU_FIELDS),
        "--format=csv,noheader",
    ]


def test_query_gpu_csv_values_agree_with_the_q_capture():
    result = parse_query_gpu_csv(H100_CSV)
    q = parse_query(load(Q_H100))["gpus"]
    gpu0 = result["gpus"][0]
    assert gpu0["uuid"] == q[0]["uuid"] and gpu0["pci.bus_id"] == q[0]["bus_id"]
    assert gpu0["pcie.link.gen.current"] == q[0]["pcie"]["gen_current"]
    assert gpu0["pcie.link.width.max"] == q[0]["pcie"]["width_max"]
    assert gpu0 == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa",
        "pci.bus_id": "00000000:19:00.0",
        "memory.total": 81559,
        "driver_version": "535.161.08",
        "pcie.link.gen.current": 5,
        "pcie.link.gen.max": 5,
        "pcie.link.width.current": 16,
        "pcie.link.width.max": 16,
        "temperature.gpu": 29,
        "power.draw": 67.74,
        "ecc.errors.uncorrected.volatile.total": 0,
    }
    assert result["gpus"][1]["ecc.errors.uncorrected.volatile.total"] is None
    assert result["errors"] == []


def test_query_gpu_csv_with_header_and_units_takes_fields_from_the_header():
    text = "index, name, memory.total [MiB], retired_pages.pending\n0, NVIDIA A10, 23028 MiB, No\n"
    result = parse_query_gpu_csv(text)
    assert result["fields"] == [
        "index",
        "name",
        "memory.total",
        "retired_pages.pending",
    ]
    assert result["gpus"] == [
        {
            "index": 0,
            "name": "NVIDIA A10",
            "memory.total": 23028,
            "retired_pages.pending": False,
        }
    ]


def test_query_gpu_csv_header_under_a_pasted_command_line_names_the_fields():
    """HPE e-learning's paste: the '# nvidia-smi --query-gpu ...' line above the CSV is the
    reporter's; the header under it still names the fields (not 13 defaults), the rows read."""
    text = (
        "        # nvidia-smi --query-gpu gpu_name temperature.gpu memory.free --format csv\n"
        "        name, temperature.gpu, memory.free [MiB]\n"
        "        NVIDIA A100-PCIE-40GB, 39, 40447 MiB\n"
    )
    result = parse_query_gpu_csv(text)
    assert result["errors"] == []
    assert result["gpus"] == [{"name": "NVIDIA A100-PCIE-40GB", "temperature.gpu": 39, "memory.free": 40447}]


def test_query_gpu_csv_wrong_column_count_and_tool_errors_are_reported():
    result = parse_query_gpu_csv(
        H100_CSV.splitlines()[0] + "\n0, NVIDIA H100\nNo devices were found\n"
    )
    assert len(result["gpus"]) == 1
    assert result["errors"] == [
        "line 2: 2 values for 13 fields: '0, NVIDIA H100'",
        "No devices were found",
    ]


def test_query_gpu_csv_empty_raises():
    with pytest.raises(ParseError):
        parse_query_gpu_csv("")


# --------------------------------------------------------------------------- garbage

PARSERS = [
    parse_topo,
    parse_nvlink_status,
    parse_nvlink_errors,
    parse_query,
    parse_query_gpu_csv,
]
REAL_LINES = sorted(
    {
        ln
        for rel in (TOPO_A10, NVL_ONE, NVL_ERRORS, Q_A10)
        for ln in load(rel).splitlines()
    }
)


@pytest.mark.parametrize("parser", PARSERS)
@settings(max_examples=150, deadline=None)
@given(text=st.text())
def test_random_text_only_ever_raises_parse_error(parser, text):
    only_parse_error_or_json(parser, text)


@pytest.mark.parametrize("parser", PARSERS)
@settings(max_examples=100, deadline=None)
@given(
    lines=st.lists(st.sampled_from(REAL_LINES), max_size=40),
    cut=st.integers(min_value=0, max_value=60),
)
def test_shuffled_and_cut_real_lines_only_ever_raise_parse_error(parser, lines, cut):
    only_parse_error_or_json(parser, "\n".join(line[: cut or None] for line in lines))


def test_every_identity_value_the_grammar_lists_is_kept_in_q_and_qx():
    """Issue 28's audit: -q and -q -x dropped VBIOS Version, Minor Number, GSP Firmware Version,
    Virtualization Mode (and Persistence Mode, Serial Number, Board ID ...); now kept under one
    name each in both views (smi_query.IDENTITY). Values read by hand from the raw captures."""
    from sncheck.vendors.parsers import parse_text  # noqa: PLC0415 -- the views, as sncheck parse reads them

    q = parse_text("nvidia-smi-q", (REAL / Q_H100).read_text())["gpus"][0]
    assert {k: q[k] for k in ("persistence_mode", "product_brand", "product_architecture", "serial_number",
                              "minor_number", "vbios_version", "board_id", "gpu_part_number", "module_id",
                              "gsp_firmware_version", "virtualization_mode")} == {
        "persistence_mode": "Enabled", "product_brand": "NVIDIA", "product_architecture": "Hopper",
        "serial_number": "1650124031592", "minor_number": 0, "vbios_version": "96.00.74.00.0D", "board_id": "0x1900",
        "gpu_part_number": "2330-885-A1", "module_id": 2, "gsp_firmware_version": "535.161.08",
        "virtualization_mode": "None"}
    qx = parse_text("nvidia-smi-qx", (REAL / "r3/nvidia-smi-qx/02_qx_515.105.01_a10g_1gpu_remapped_rows_block.xml.txt")
                    .read_text())["gpus"][0]
    assert {k: qx[k] for k in ("persistence_mode", "product_architecture", "serial_number", "minor_number",
                               "vbios_version", "board_id", "gpu_part_number", "module_id", "gsp_firmware_version",
                               "virtualization_mode")} == {
        "persistence_mode": "Disabled", "product_architecture": "Ampere", "serial_number": "0000000000000",
        "minor_number": 0, "vbios_version": "94.02.75.00.01", "board_id": "0x1e",
        "gpu_part_number": "000-00000-0000-000", "module_id": 0, "gsp_firmware_version": "515.105.01",
        "virtualization_mode": "Pass-Through"}
