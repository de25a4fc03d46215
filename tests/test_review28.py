"""Review 28: held-out attacks on this session's parser landings (issue 28), each a capture-shaped
text with the grammar it comes from. Each test failed on main before its fix."""

from __future__ import annotations

from pathlib import Path

from sncheck.vendors import facts as hf
from sncheck.vendors.nvidia import checks as nv
from sncheck.vendors.parsers import failures, parse_text, strip_source_header

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
_H100_PCIE_BRIDGED = ("harvest11/nvlink-status/02_nvlink_s_555.42.02_2x_h100_pcie_18_links_12_at_26.562GBs_links_4_5_"
                      "10_11_16_17_inactive_root_prompt_hpe-japan-e-learning.txt")
_A100_PCIE_BRIDGELESS = ("harvest11/nvlink-status/01_nvlink_s_555.42.02_2x_a100_pcie_no_nvlink_nvml_unable_to_retrieve_"
                         "all_links_inactive_after_each_gpu_hpe-japan-e-learning.txt")


def _real(rel: str) -> str:
    return strip_source_header((REAL / rel).read_text(encoding="utf-8"))


def _host_fact(text: str) -> dict:
    [row] = [r for r in hf.evaluate("node1", nv.COMMANDS["nvlink_status"], hf.Expect(2), exit_code=0, stdout=text)
             if r["fact"] == "nvlink"]
    return row


def test_pcie_boards_nvidia_smi_names_without_pcie_keep_their_unbridged_links_normal() -> None:
    """46af88f (decision b) excused the inactive links of a board named '... PCIe' / '-PCIE-' only.
    nvidia-smi names other PCIe boards with NVLink bridges without that word: 'NVIDIA H100 NVL' (its
    product brief: PCIe Gen5 card, NVLink 600 GB/s through bridges; the name as thamada/nvidia-smi's
    capture, harvest 12, prints it), 'NVIDIA H200 NVL' (2- or 4-way bridges), 'NVIDIA A40' and
    'NVIDIA A30' (PCIe only, NVLink bridge). Harvest 11's bridged H100 PCIe and bridgeless A100 PCIe
    captures under those names read as faults, exit 1, where the same board named 'PCIe' passes.
    An SXM board named beside them ('NVIDIA H100 80GB HBM3') still fails on an inactive link, and the
    rack's 'NVL72' is no board name."""
    for name in ("NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA A40", "NVIDIA A30"):
        for rel, old, up in ((_H100_PCIE_BRIDGED, "NVIDIA H100 PCIe", 24), (_A100_PCIE_BRIDGELESS, "NVIDIA A100-PCIE-40GB", 0)):
            text = _real(rel).replace(old, name)
            data = parse_text("nvlink-status", text, expect=2)
            assert not failures(data), (name, data["faults"], data["errors"])
            row = _host_fact(text)
            assert (row["ok"], row["value"]) == (True, up), (name, row["message"])
    for name in ("NVIDIA H100 80GB HBM3", "NVIDIA GB200 NVL72"):
        text = _real(_H100_PCIE_BRIDGED).replace("NVIDIA H100 PCIe", name)
        assert parse_text("nvlink-status", text, expect=2)["faults"], name


def _ib_using(devices: str) -> list[dict]:
    from sncheck.vendors.nccl.debug_log import parse_nccl_debug

    line = f"gpu1:2841:2841 [0] NCCL INFO NET/IB : Using{devices} [RO]; OOB ib0:10.0.0.1<0>\n"
    return parse_nccl_debug(line)["net"]["devices"]


def test_nccl_2_30_ib_device_with_rail_and_plane_keeps_its_port_and_link() -> None:
    """NCCL 2.30.7's net_ib/init.cc prints ' [%d]%s:%d', then ':%d' (railId) or ':' (no rail, a
    plane), then ':%d' (planeId) where NCCL_IB_HCA names them ('mlx5_0:1:RAIL:PLANE', utils.cc
    parseStringList), then '/%s' (link layer). main read '[0]mlx5_0:1:0:1/IB' with port and link
    null. A Socket device's address (IPv4, IPv6) stays an address."""
    got = [(d["device"], d["port"], d["link"], d.get("rail"), d.get("plane"))
           for d in _ib_using(" [0]mlx5_0:1:0:1/IB [1]mlx5_1:1:3/RoCE [2]mlx5_2:2::0/IB")]
    assert got == [("mlx5_0", 1, "IB", 0, 1), ("mlx5_1", 1, "RoCE", 3, None), ("mlx5_2", 2, "IB", None, 0)]
    from sncheck.vendors.nccl.debug_log import parse_nccl_debug

    sock = parse_nccl_debug("h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:2001:db8::1<0>\n")
    assert [(d["port"], d.get("address")) for d in sock["net"]["devices"]] == [(None, "10.0.0.1"), (None, "2001:db8::1")]


def test_nccl_plain_ib_device_beside_a_merged_one_keeps_nccl_s_index() -> None:
    """NCCL 2.20.3 to 2.23 (net_ib.cc ncclIbInit, v2.21.5-1 lines 517-533) loop d over the merged
    devices: a merged one prints ' [%d]={' with d, a plain one ' [%d]%s:%d/%s' with ibDev, its IB
    device's index. main kept the printed number as NCCL's index: after a merged pair the next
    plain NIC read as index 2 where NCCL numbers it 1 (its 'NET/IB/1' channels)."""
    devices = _ib_using(" [0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB} [2]mlx5_4:1/IB [3]mlx5_5:1/IB")
    assert [(d["index"], d["device"], d.get("ib_index")) for d in devices] == [
        (0, "mlx5_0+mlx5_1", None), (1, "mlx5_4", 2), (2, "mlx5_5", 3)]
    plain = _ib_using(" [0]mlx5_0:1/IB [1]mlx5_1:1/IB")  # no merged device: the printed index is d
    assert [(d["index"], "ib_index" in d) for d in plain] == [(0, False), (1, False)]


def test_aer_status_only_report_names_pcie_r6_bits_as_the_kernel_does() -> None:
    """a129717 names a status-only report's bits from aer.c's tables; aer.c names bits 27-31 of the
    Uncorrectable Error Status since 6633875250b3 ('PCI/AER: Support errors introduced by PCIe r6.0',
    2025, in stable down to 5.15): DMWrReqBlocked, IDECheck, MisIDETLP, PCRC_CHECK, TLPXlatBlocked.
    main named them 'Unknown Error Bit'."""
    from sncheck.vendors.kernel_log import parse_kernel_log

    text = ("pcieport 0000:00:01.1: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)\n"
            "pcieport 0000:00:01.1:   device [8086:6f03] error status/mask=88000020/00000000\n")
    [e] = parse_kernel_log(text)["events"]
    assert [(b["bit"], b["name"]) for b in e["bits"]] == [(5, "SDES"), (27, "DMWrReqBlocked"), (31, "TLPXlatBlocked")]


def test_inspector_record_giving_a_key_twice_is_refused_like_every_json_view() -> None:
    """ee03628 moved nccl-tests JSON and the listing onto jsonprefix so that an object giving a key
    twice (two outputs spliced, or an edited one) is refused 'where every other JSON view refuses it';
    the nccl-inspector view (json_stream, a plain JSONDecoder) still kept the last value silently:
    harvest 9's Inspector record with a second 'coll_busbw_gbs' read busbw 0.5, exit 0. Inspector
    (plugins/profiler/inspector/inspector_json.cc) writes each key once. The record before stays read."""
    from click.testing import CliRunner

    from sncheck.cli.main import main
    from sncheck.vendors.nccl_inspector import parse_inspector

    rel = ("harvest9/nccl-inspector/02_inspector_v4.0_record_cw_dfw_h100_rank31_of_32_4_nodes_reducescatter_sn129_64KiB_"
           "busbw_18.469236_json_fence_inspector-analysis-tool-readme.txt")
    whole = _real(rel).replace("```json\n", "").replace("```", "")
    twice = whole.replace('"coll_busbw_gbs": 18.469236', '"coll_busbw_gbs": 18.469236,\n    "coll_busbw_gbs": 0.5')
    data = parse_inspector(whole + twice)
    assert [r["busbw_GBps"] for r in data["records"]] == [18.469236]
    assert data["errors"] and "'coll_busbw_gbs' is given twice" in data["errors"][0], data["errors"]
    assert "cut short" not in data["errors"][0]
    assert not parse_inspector(whole + whole)["errors"]  # two whole records: no refusal
    runner = CliRunner()
    with runner.isolated_filesystem():
        Path("twice.json").write_text(twice, encoding="utf-8")
        r = runner.invoke(main, ["parse", "nccl-inspector", "twice.json"])
    assert r.exit_code != 0 and "given twice" in r.output, r.output


def test_a_pasted_mlxlink_command_behind_a_bracketed_or_conda_prompt_is_its_command():
    """Final read: mlxlink's command pattern kept its own prompt form (``\\S*[#$>]``), not
    delivery.PS1, so RHEL's ``[root@h ~]#`` and a conda ``(base) user@h:~$`` prompt hid the
    pasted command: no sections asked, and an output cut before an asked section read whole."""
    from sncheck.vendors.infiniband import mlxlink

    for line in ("[root@h ~]# mlxlink -d mlx5_0 -m", "(base) user@h:~$ sudo mlxlink -d mlx5_0 -c",
                 "$ /usr/bin/mlxlink -d mlx5_0 -e", "mlxlink -d mlx5_0"):
        assert mlxlink._command([line, "Operational Info"]) == line, line
    assert mlxlink._command(["[root@h ~]# ibstat", "Operational Info"]) is None
