"""Harvest 14's misses (issue 28's measure, fixtures/real/harvest14): each a grammar the tool's own
source prints that the view did not read, held here as a capture-shaped text. Each test failed on
main before its fix."""

from __future__ import annotations

from sncheck.vendors.parsers import failures, parse_text

# amd-smi static of ROCm 6.0 (ROCm/amdsmi rocm-6.0.0 amdsmi_logger._convert_json_to_human_readable:
# the device dict yaml-dumped as is, so 'GPU: 0' and its sections share column 0)
_FLAT = """GPU: 0
ASIC:
    MARKET_NAME: 0x73bf
    DEVICE_ID: 0x73bf
BUS:
    BDF: 0000:23:00.0
DRIVER:
    DRIVER_NAME: amdgpu
    DRIVER_VERSION: 6.1.10

GPU: 1
ASIC:
    MARKET_NAME: 0x73bf
    DEVICE_ID: 0x73bf
BUS:
    BDF: 0000:26:00.0
DRIVER:
    DRIVER_NAME: amdgpu
    DRIVER_VERSION: 6.1.10
"""


def test_amd_smi_rocm_6_0_sections_at_the_device_column_are_the_device_s() -> None:
    """Up to ROCm 6.0.x a GPU's sections start at its own 'GPU: n' column; they had been read as
    nobody's (every value lost, exit 0 on two empty GPUs). Both GPUs hold their sections now, and a
    second GPU cut inside its sections is still cut."""
    data = parse_text("amd-smi", _FLAT)
    assert [g["BUS"]["BDF"] for g in data["gpus"]] == ["0000:23:00.0", "0000:26:00.0"], data
    assert data["gpus"][1]["DRIVER"]["DRIVER_VERSION"] == "6.1.10" and not failures(data)
    cut = parse_text("amd-smi", _FLAT[:_FLAT.rindex("DRIVER:")])
    assert failures(cut), cut


def test_amd_smi_cpu_blocks_are_cpus_never_gpus_and_never_a_gpu_s_sections() -> None:
    """ESMI (ROCm 6.1+) prints 'CPU: n' blocks before the GPUs (amdsmi_commands.py static_cpu): in the
    6.0/6.1 flat layout their sections had been merged into nothing and in any layout dropped; they are
    the view's cpus now, and the GPUs keep only their own sections."""
    text = ("CPU: 0\nSMU:\n    FW_VERSION: 85:81:0\nINTERFACE_VERSION:\n    PROTO VERSION: 6\n\n" + _FLAT)
    data = parse_text("amd-smi", text)
    assert data["cpus"] == [{"cpu": 0, "SMU": {"FW_VERSION": "85:81:0"}, "INTERFACE_VERSION": {"PROTO VERSION": 6}}]
    assert len(data["gpus"]) == 2 and "SMU" not in data["gpus"][0] and not failures(data)


def test_amd_smi_a_device_line_with_nothing_under_it_is_cut() -> None:
    """Every device amd-smi prints holds at least one entry under its 'GPU: n' (or 'CPU: n') line; a
    paste ending right after that line had read as one whole GPU (exit 0, its generator's cut under
    SNCHECK_GRAMMAR_ALL), and CPU blocks with no GPU after them as a parse error."""
    for text in ("$ amd-smi list\nGPU: 0\n", "GPU: 0\nASIC:\n    MARKET_NAME: MI300A\n\nGPU: 1\n",
                 "CPU: 0\nSMU:\n    FW_VERSION: 85:81:0\n\nCPU: 1\n"):
        data = parse_text("amd-smi", text)
        assert any("cut short" in e or "no GPU measured" in e for e in data["errors"]), data


def test_a_command_behind_bash_s_working_directory_prompt_is_its_command() -> None:
    """bash's '\\w\\$ ' prompt ('~$ ', '/opt/rocm# ': PROMPTING, \\w the directory, \\$ '#' for root) is
    a prompt (AMD SMI's README: '~$ amd-smi static'); the line had been an unrecognised line (exit 1
    on a whole output), and the command's '-g 0 1' was not read."""
    whole = parse_text("amd-smi", "~$ amd-smi static --bus\n" + _FLAT)
    assert not failures(whole), whole
    asked_two = parse_text("amd-smi", "/opt/rocm# amd-smi static --bus -g 0 1\n" + _FLAT[:_FLAT.index("GPU: 1")])
    assert any("asked for GPU 0, 1" in e for e in asked_two["errors"]), asked_two


_MONITOR_Q = """$ amd-smi monitor -q
GPU  POWER  GPU_TEMP  VRAM_USED  VRAM_TOTAL   PCIE_BW
  0  199 W    103 °C    1235 MB    16335 MB  N/A Mb/s
  1  201 W     99 °C    1235 MB    16335 MB  12 Mb/s

PROCESS INFO:
GPU                  NAME      PID  GTT_MEM  CPU_MEM  VRAM_MEM  MEM_USAGE     GFX     ENC
  0                   rvs  1564865    0.0 B    0.0 B    1.1 GB      0.0 B    0 ns    0 ns
  1  No running processes detected
"""


def test_amd_smi_monitor_q_process_table_is_its_processes_not_gpu_rows() -> None:
    """monitor -q (ROCm 6.2) prints 'PROCESS INFO:' and a process table after the GPU rows
    (amdsmi_logger._print_tabular_output's secondary table); its rows had been read as malformed GPU
    rows (exit 1 on a whole output), and a PCIE_BW of 'N/A Mb/s' (helpers.unit_format puts the unit
    after N/A too) as a cell too many."""
    data = parse_text("amd-smi-monitor", _MONITOR_Q)
    assert [g["PCIE_BW"] for g in data["gpus"]] == ["N/A Mb/s", "12 Mb/s"], data
    assert data["processes"] == [{"gpu": 0, "NAME": "rvs", "PID": 1564865, "GTT_MEM": "0.0 B", "CPU_MEM": "0.0 B",
                                  "VRAM_MEM": "1.1 GB", "MEM_USAGE": "0.0 B", "GFX": "0 ns", "ENC": "0 ns"}]
    assert not failures(data), data
    for at in ("    0 ns    0 ns", "  1  No running"):  # inside a row; before GPU 1's row (each GPU has one)
        cut = parse_text("amd-smi-monitor", _MONITOR_Q[:_MONITOR_Q.index(at)])
        assert failures(cut), cut


def _table(name: str, cells: str) -> list[str]:
    bdfs = ["0000:0c:00.0", "0000:22:00.0"]
    return [f"{name} TABLE:", " " * 13 + " ".join(b.ljust(12) for b in bdfs)] + \
        [f"{b} " + " ".join(c.ljust(12) for c in cells.split()[i * 2:i * 2 + 2]) for i, b in enumerate(bdfs)] + [""]


def test_amd_smi_topology_bi_directional_table_and_the_legend() -> None:
    """ROCm 6.3's topology -c -n -d -z tables: 'BI-DIRECTIONAL TABLE:' (a name with a hyphen) had been
    read as rows of the table before it, and the Legend amdsmi_commands.py prints after the last table
    as more rows (exit 1 on a whole output). A -cndz command whose last table is missing is cut."""
    lines = ["$ amd-smi topology -cndz"] + _table("CACHE COHERANCY", "SELF C C SELF") + \
        _table("ATOMICS", "SELF 64,32 64,32 SELF") + _table("DMA", "SELF T T SELF") + \
        _table("BI-DIRECTIONAL", "SELF F F SELF") + \
        ["", "Legend:", "  SELF = Current GPU", "  T/F = True / False", "  C/NC = Coherant / Non-Coherant io links",
         "  64,32 = 64 bit and 32 bit atomic support", "  <BW from>-<BW to>"]
    data = parse_text("amd-smi-topology", "\n".join(lines) + "\n")
    assert data["tables"]["BI-DIRECTIONAL"]["0000:0c:00.0"]["0000:22:00.0"] == "F" and not failures(data), data
    cut = parse_text("amd-smi-topology", "\n".join(lines[:lines.index("BI-DIRECTIONAL TABLE:")]) + "\n")
    assert any("BI-DIRECTIONAL" in e for e in cut["errors"]), cut


def test_flight_recorder_analyzer_heads_of_each_version_are_read() -> None:
    """tools/flight_recorder's report head as 2.5 logs it ('Not all ranks joining collective S at entry R',
    its 'expected ranks: N' a count) and as EntryState.log does from 2.6 ('Not all ranks joining collective,
    sequence number: S'): neither had been read (no watchdog message: a parse error, not a finding)."""
    v25 = ("Not all ranks joining collective 5 at entry 4\ngroup info: 0:default_pg\ncollective: nccl:all_reduce\n"
           "missing ranks: {1}\ninput sizes: [[3, 4]]\noutput sizes: [[3, 4]]\nexpected ranks: 2\n"
           "collective state: scheduled\ncollective stack trace:\n")
    [m] = parse_text("torch-nccl", v25)["flight_recorder"]["mismatches"]
    assert (m["seq"], m["record_id"], m["missing_ranks"], m["world_size"], m["expected_ranks"]) == (5, 4, [1], 2, None)
    v26 = ("Not all ranks joining collective, sequence number: 4\ninternal record id: 4\ngroup info: main_comm:gloo\n"
           "collective: nccl:all_reduce\nmissing ranks: {1}\nworld size: 2\nexpected ranks: {0, 1}\n"
           "collective state: scheduled\n")
    data = parse_text("torch-nccl", v26)
    [m] = data["flight_recorder"]["mismatches"]
    assert (m["seq"], m["record_id"], m["pg"], m["expected_ranks"]) == (4, 4, "main_comm:gloo", [0, 1])
    assert any("ranks 1 never joined" in f for f in failures(data)), data


def test_amd_smi_topology_with_no_option_prints_numa_bw_and_with_the_legend_the_io_link_tables() -> None:
    """With no option topology() sets every table's flag (rocm-6.0.2 to rocm-systems' topology.py), NUMA BW
    among them: a paste of its command cut before the NUMA BW table had read as whole (harvest 14's
    changelog capture, a seeded random cut). A Legend says 6.3+, whose default adds the four io-link tables."""
    five = ["$ amd-smi topology"] + _table("ACCESS", "ENABLED ENABLED ENABLED ENABLED") + _table("WEIGHT", "0 15 15 0") + \
        _table("HOPS", "0 1 1 0") + _table("LINK TYPE", "SELF XGMI XGMI SELF")
    cut = parse_text("amd-smi-topology", "\n".join(five) + "\n")
    assert any("NUMA BW" in e for e in cut["errors"]), cut
    whole = five + _table("NUMA BW", "N/A 50000-50000 50000-50000 N/A")
    assert not failures(parse_text("amd-smi-topology", "\n".join(whole) + "\n"))
    legend = parse_text("amd-smi-topology", "\n".join(whole + ["Legend:", "  SELF = Current GPU"]) + "\n")
    assert any("CACHE COHERANCY" in e for e in legend["errors"]), legend
