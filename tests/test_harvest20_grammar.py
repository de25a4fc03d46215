"""Harvest 20's first-try misses, each read now by its tool's grammar (README "Harvest 20").

Each case is written from the tool's source (the line it prints), not from the capture that
showed it: amd-smi xgmi of ROCm 6.4 to 7.x (amdsmi_cli amdsmi_commands.py xgmi and
amdsmi_helpers.convert_bytes_to_readable: readable Read/Write units, the GPU column headers,
'GPU LINK PORT STATUS', 'XGMI LINK STATUS' with SELF and '/'-joined link states, the Legend it
prints last, the sentinel maxima of a GPU without XGMI), amd-smi metric's ``ECC_BLOCKS: N/A``
(metric_gpu when the RAS block features cannot be read), and nvidia-smi topo -m's tab-separated
cells (an empty CPU Affinity cell; two cells a paste glued into one)."""

from __future__ import annotations

from sncheck.vendors.amd import amd_smi_xgmi, checks
from sncheck.vendors.facts import Expect

_BDFS = ("0000:05:00.0", "0000:26:00.0")
_LEGEND = ("", "", "Legend:", "  SELF = Current GPU", "  N/A = Not supported",
           "  U / D / X = Link is Up / Down / Disabled", "  Read / Write = GPU Metric Accumulated Read / Write")


def _xgmi_7x(states: tuple[str, str] = ("U", "U"), cells: tuple[str, str] = ("1.123 PB", "229.1 MB"),
             rate: str = "32 Gb/s   512 Gb/s       XGMI", legend: tuple[str, ...] = _LEGEND) -> str:
    lines = ["LINK METRIC TABLE:", "       bdf           bit_rate  max_bandwidth  link_type  GPU0         GPU1"]
    for g, bdf in enumerate(_BDFS):
        row = [cells[0], "N/A"] if g else ["N/A", cells[0]]
        lines += [f"GPU{g}   {bdf}  {rate}", " Read".ljust(57) + "".join(c.ljust(13) for c in row).rstrip(),
                  " Write".ljust(57) + "".join(c.ljust(13) for c in (row if g else ["N/A", cells[1]])).rstrip()]
    lines += ["", "GPU LINK PORT STATUS:", "       bdf           port_num"]
    lines += [f"GPU{g}   {bdf}  " + "  ".join(["U"] * 8) for g, bdf in enumerate(_BDFS)]
    lines += ["", "XGMI LINK STATUS:", "       bdf           GPU0          GPU1"]
    lines += [f"GPU0   {_BDFS[0]}  SELF          {states[0]}", f"GPU1   {_BDFS[1]}  {states[1]}          SELF"]
    return "\n".join(lines + list(legend)) + "\n"


def test_xgmi_readable_units_are_read_in_kb() -> None:
    """6.4 prints Read/Write by convert_bytes_to_readable (B..PB, 1024 a step): only 'N KB' and N/A
    were cells, so a GPU's row read one cell of eight and was called cut short."""
    out = amd_smi_xgmi.parse_amd_smi_xgmi(_xgmi_7x())
    g0 = out["gpus"][0]
    assert g0["read_KB"] == {_BDFS[0]: None, _BDFS[1]: 1.123 * 1024 ** 4}
    assert g0["write_KB"][_BDFS[1]] == 229.1 * 1024
    assert out["errors"] == [] and out["faults"] == []


def test_xgmi_7x_link_status_table_is_read_by_its_gpu_headers() -> None:
    """'XGMI LINK STATUS:' (no '... TABLE:' title) names its peers GPU0 GPU1 and marks the GPU
    itself SELF; a peer's links joined by '/' are up when every one is: nothing was read (no JSON)."""
    out = amd_smi_xgmi.parse_amd_smi_xgmi(_xgmi_7x(states=("U/U", "U")))
    assert out["gpus"][1]["status"] == {_BDFS[0]: "U", _BDFS[1]: "SELF"}
    assert out["gpus"][0]["ports"] == ["U"] * 8
    assert out["errors"] == [] and out["faults"] == []
    r = checks.check_xgmi_status("n1", out, Expect(cards=2))[0]
    assert r["ok"] and "2/2 links up" in r["message"]
    down = amd_smi_xgmi.parse_amd_smi_xgmi(_xgmi_7x(states=("U/D", "U")))
    assert down["faults"] == [f"GPU0 -> {_BDFS[1]} U/D: XGMI link not up"]


def test_xgmi_sentinel_maxima_run_together_read_as_na() -> None:
    """Before amdsmi's fix a GPU without XGMI printed '65535 Gb/s4294967295 Gb/sN/A' (UINT16/UINT32
    max, the library's 'not supported'), its cells run past their widths: no GPU row was read."""
    text = _xgmi_7x(states=("N/A", "N/A"), cells=("N/A", "N/A"), rate="65535 Gb/s4294967295 Gb/sN/A")
    out = amd_smi_xgmi.parse_amd_smi_xgmi(text)
    assert [(g["bit_rate_Gbps"], g["max_bandwidth_Gbps"], g["link_type"]) for g in out["gpus"]] == [(None, None, "N/A")] * 2
    assert any("link status not read" in e for e in out["errors"])  # no link up: never a pass


def test_xgmi_7x_output_ends_with_its_legend() -> None:
    """7.x prints the Legend after its tables: an output cut inside it, or before it, is not whole."""
    assert amd_smi_xgmi.parse_amd_smi_xgmi(_xgmi_7x())["errors"] == []
    for cut in (_LEGEND[:-1], _LEGEND[:-1] + ("  Read / Write = GPU Metric",), ()):
        errors = amd_smi_xgmi.parse_amd_smi_xgmi(_xgmi_7x(legend=cut))["errors"]
        assert errors == ["no whole Legend after the tables (amd-smi 7.x prints it last): output cut short"], cut


def test_ecc_blocks_na_is_not_measured_never_a_crash(tmp_path) -> None:
    """amd-smi metric prints 'ECC_BLOCKS: N/A' where metric_gpu cannot read the RAS block features
    (amdsmi_commands.py: values_dict['ecc_blocks'] = "N/A"); the ecc check iterated the string
    (AttributeError: sncheck parse exit 3). Now that GPU's blocks are not read: not measured."""
    from click.testing import CliRunner

    from sncheck.cli.main import main
    from sncheck.model import Status
    from sncheck.vendors.amd import amd_smi
    text = ("GPU: 0\n    ECC:\n        TOTAL_CORRECTABLE_COUNT: 0\n        TOTAL_UNCORRECTABLE_COUNT: 0\n"
            "        TOTAL_DEFERRED_COUNT: 0\n    ECC_BLOCKS: N/A\n")
    row = checks.check_ecc("n1", amd_smi.parse_amd_smi(text), Expect(cards=1))[0]
    assert row["ok"] is False and row["status"] == Status.NOT_MEASURED and "ECC blocks N/A on GPU 0" in row["message"]
    blocks = "    ECC_BLOCKS:\n        UMC:\n            CORRECTABLE_COUNT: 0\n            UNCORRECTABLE_COUNT: 2\n" \
             "            DEFERRED_COUNT: 0\n"
    both = amd_smi.parse_amd_smi("GPU: 0\n" + blocks + "GPU: 1\n    ECC_BLOCKS: N/A\n")
    row = checks.check_ecc("n1", both, Expect(cards=2))[0]
    assert row["ok"] is False and row["status"] != Status.NOT_MEASURED and "2 uncorrectable" in row["message"]
    (tmp_path / "metric.txt").write_text(text)
    r = CliRunner().invoke(main, ["parse", "amd-smi", str(tmp_path / "metric.txt"), "--json"])
    assert r.exit_code == 0, r.output  # the output shows no fault; a run's ecc fact is not measured


def test_throttle_status_na_is_not_measured_never_throttled() -> None:
    """metric_gpu prints THROTTLE_STATUS N/A where it cannot read the power state (an APU): it was
    judged a throttled GPU ('0/1 GPUs UNTHROTTLED; GPU 0: N/A', parse exit 1)."""
    from sncheck.model import Status
    from sncheck.vendors.amd import amd_smi
    text = "GPU: 0\n    POWER:\n        SOCKET_POWER: N/A\n        THROTTLE_STATUS: N/A\n"
    row = checks.check_metric("n1", amd_smi.parse_amd_smi(text), Expect(cards=1))[0]
    assert row["status"] == Status.NOT_MEASURED and "GPU 0: N/A" not in row["message"]
    two = amd_smi.parse_amd_smi(text + "GPU: 1\n    POWER:\n        THROTTLE_STATUS: THROTTLED\n")
    row = checks.check_metric("n1", two, Expect(cards=2))[0]
    assert row["ok"] is False and row["status"] != Status.NOT_MEASURED and "GPU 1: THROTTLED" in row["message"]
    assert "listed, inventory says" not in row["message"]


def _topo(gpu1_cpu: str, gpu1_nic1: str = "NODE") -> str:
    cols = ("GPU0", "GPU1", "NIC0", "NIC1")
    rows = [["GPU0", " X ", "NV18", "PIX", "NODE", "0-47", "0", "", "N/A"],
            ["GPU1", "NV18", " X ", "NODE", gpu1_nic1, gpu1_cpu, "1", "", "N/A"],
            ["NIC0", "PIX", "NODE", " X ", "NODE", "", "", "", ""],
            ["NIC1", "NODE", "PIX", "NODE", " X ", "", "", "", ""]]
    legend = ["", "Legend:", "", "  X    = Self", "  SYS  = Connection traversing PCIe as well as the SMP interconnect",
              "  NODE = Connection traversing PCIe within a NUMA node", "  PHB  = Connection traversing a PCIe Host Bridge",
              "  PXB  = Connection traversing multiple PCIe bridges", "  PIX  = Connection traversing a single PCIe bridge",
              "  NV#  = Connection traversing a bonded set of # NVLinks", "", "NIC Legend:", "", "  NIC0: mlx5_0",
              "  NIC1: mlx5_1"]
    return "\n".join(["\t" + "\t".join(cols + ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"))]
                     + ["\t".join(r) for r in rows] + legend) + "\n"


def test_topo_empty_cpu_affinity_cell_is_read_by_its_tabs() -> None:
    """nvidia-smi separates topo -m's cells by tabs and may leave a GPU's CPU Affinity blank (a Della
    H100 node: '\\t\\t0\\t\\tN/A'); split on blanks, the NUMA node was read as the CPU list, and null."""
    from sncheck.vendors.nvidia.nvidia_smi import parse_topo
    out = parse_topo(_topo(""))
    assert out["affinity"]["GPU1"] == {"cpu": None, "numa": 1, "gpu_numa_id": None}
    assert out["affinity"]["GPU0"] == {"cpu": "0-47", "numa": 0, "gpu_numa_id": None}
    assert out["errors"] == []


def test_topo_cells_a_paste_joined_are_no_link_type() -> None:
    """A paste that lost a tab joins two cells ('PIXNODE'): the row read whole by its blanks (exit 0),
    one column short and the CPU list taken for a link. Each cell is one link type or the row is not whole."""
    from sncheck.vendors.nvidia.nvidia_smi import parse_topo
    text = _topo("48-95").replace("NODE\tNODE\t48-95", "NODENODE\t48-95")
    assert any("'NODENODE' under NIC0" in e and "is no link type" in e for e in parse_topo(text)["errors"])


def test_xgmi_link_status_row_short_of_its_peers_is_cut() -> None:
    """A LINK STATUS row prints a state for every GPU of its header: a row with fewer (a paste cut inside
    it) read as fewer links, the missing peer unjudged and no error."""
    text = ("LINK STATUS TABLE:\n       bdf          " + " ".join(_BDFS) + "\n"
            f"GPU0   {_BDFS[0]} X U\nGPU1   {_BDFS[1]} U\n")
    assert amd_smi_xgmi.parse_amd_smi_xgmi(text)["errors"] == ["GPU1: 1 link status cells for 2 GPUs: cut short"]
