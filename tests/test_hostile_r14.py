"""Hostile inputs, round 14: new instances of the outside probe's classes
(``../shared/adversarial-r3``), where rounds 1-13 did not look: the parse views added last stops
(mlxlink, ibv_devinfo, ethtool on mlx5, NCCL Inspector, NCCL_DEBUG, amd-smi monitor, npu-smi)
fed duplicated, spliced, contradicting or cut sections and another tool's report; a 16k-card
inventory with one hostile host name, hosts named as a link tier; rules files overriding the
kernel-log policy with windows and severities that invert it; a results.json edited by hand to
name a card its run never had; a state store whose runs' clocks lie; capacity of a fleet of one;
the Prometheus file's series. Each test names its case id; the README's round 14 table lists
them."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "real"
RAS = REAL / "nccl-ras" / "01_mismatch_allgather_2.26.2_issue1911.txt"
INSPECTOR = next((REAL / "harvest7" / "nccl-inspector").iterdir())
MONITOR = next((REAL / "harvest14" / "amd-smi-monitor").glob("04_*"))
NPU = next((REAL / "harvest7" / "npu-smi").iterdir())


@pytest.fixture
def inv3(tmp_path: Path) -> Path:
    """Round 13's inventory: three hosts of two cards."""
    (p := tmp_path / "small.yaml").write_text(SMALL)
    return p


def _parse(tmp_path: Path, view: str, text: str, *extra: object) -> tuple[int, dict]:
    """`parse VIEW --json` of ``text``: the exit code and the JSON it printed (never a traceback)."""
    path = tmp_path / f"{view}.txt"
    path.write_text(text)
    r = _cli("parse", view, path, "--json", *extra)
    assert "Traceback" not in r.output, r.output
    return r.exit_code, json.loads(r.output[: r.output.rindex("}") + 1])


# -- mlxlink ----------------------------------------------------------------------------------------

def _mlxlink(state: str, phys: str, opcode: int, advice: str) -> str:
    rows = [("State", state), ("Physical state", phys), ("Speed", "IB-HDR" if opcode == 0 else "N/A"),
            ("Width", "2x"), ("FEC", "RS-FEC - (544,514) + PLR"), ("Loopback Mode", "No Loopback"),
            ("Auto Negotiation", "ON")]
    trouble = [("Status Opcode", str(opcode)), ("Group Opcode", "N/A" if opcode == 0 else "PHY FW"),
               ("Recommendation", advice)]
    block = lambda title, recs: f"\n{title}\n{'-' * len(title)}\n" + "".join(f"{k:<32}: {v}\n" for k, v in recs)  # noqa: E731
    return block("Operational Info", rows) + block("Troubleshooting Info", trouble)


GOOD_PORT = _mlxlink("Active", "LinkUp", 0, "No issue was observed")
DOWN_PORT = _mlxlink("Polling", "Polling", 54, "Check the cable")


def test_h14_01_mlxlink_two_outputs_the_down_one_first(tmp_path: Path) -> None:
    """H14-01: two devices' `mlxlink` outputs in one file (the shipped loop capture holds 8), the
    port that is down first: each record overwrote the first's, exit 0 and 'Active'. Each output
    is judged now."""
    code, data = _parse(tmp_path, "mlxlink", DOWN_PORT + GOOD_PORT)
    assert code == 1, data
    assert data["faults"] == ["output 1 of 2: link state Polling (physical state Polling), not Active",
                              "output 1 of 2: troubleshooting status opcode 54: Check the cable"], data["faults"]
    code, data = _parse(tmp_path, "mlxlink", GOOD_PORT + DOWN_PORT)
    assert code == 1 and data["outputs"] == 2 and all(f.startswith("output 2 of 2:") for f in data["faults"]), data
    assert _parse(tmp_path, "mlxlink", GOOD_PORT + GOOD_PORT)[0] == 0  # two whole, healthy outputs pass


def test_h14_02_mlxlink_json_status_1_or_a_key_twice(tmp_path: Path) -> None:
    """H14-02: `mlxlink --json` saying `status.code` 1 beside an Active port, and one whose State is
    given twice (Polling, then Active): exit 1 (held)."""
    doc = {"result": {"output": {"Operational Info": {"State": "Active", "Physical state": "LinkUp"},
                                 "Troubleshooting Info": {"Status Opcode": "0", "Recommendation": "ok"}}},
           "status": {"code": 1, "message": "Failed to get PDDR"}}
    code, data = _parse(tmp_path, "mlxlink", json.dumps(doc))
    assert code == 1 and any("status 1" in e for e in data["errors"]), data
    doc["status"] = {"code": 0, "message": "success"}
    code, data = _parse(tmp_path, "mlxlink", json.dumps(doc).replace('"State": "Active"',
                                                                     '"State": "Polling", "State": "Active"'))
    assert code == 1 and data["errors"], data


# -- ibv_devinfo ------------------------------------------------------------------------------------

def _hca(name: str, ports: int) -> str:
    return (f"hca_id:\t{name}\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.39.2048\n"
            f"\tnode_guid:\t\t\t946d:ae03:00f2:1c2a\n\tvendor_id:\t\t\t0x02c9\n\tvendor_part_id:\t\t\t4129\n"
            f"\thw_ver:\t\t\t\t0x0\n\tboard_id:\t\t\tMT_0000000838\n\tphys_port_cnt:\t\t\t{ports}\n")


def _ibv_port(n: int, state: str = "PORT_ACTIVE (4)") -> str:
    return (f"\t\tport:\t{n}\n\t\t\tstate:\t\t\t{state}\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t4096 (5)\n"
            f"\t\t\tsm_lid:\t\t\t1\n\t\t\tport_lid:\t\t12\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tInfiniBand\n\n")


def test_h14_03_ibv_devinfo_one_port_listed_twice_the_other_lost(tmp_path: Path) -> None:
    """H14-03: a two-port HCA whose port 1 is listed twice and port 2 not at all (a splice): two
    ports counted, exit 0. devinfo.c lists ports 1 to phys_port_cnt once each."""
    code, data = _parse(tmp_path, "ibv-devinfo", _hca("mlx5_0", 2) + _ibv_port(1) + _ibv_port(1))
    assert code == 1 and data["errors"] == ["mlx5_0: port 1 is listed twice: output spliced or repeated"], data
    assert _parse(tmp_path, "ibv-devinfo", _hca("mlx5_0", 2) + _ibv_port(1) + _ibv_port(2))[0] == 0


@pytest.mark.parametrize("port", [0, 3])
def test_h14_04_ibv_devinfo_a_port_outside_its_phys_port_cnt(tmp_path: Path, port: int) -> None:
    """H14-04: a two-port HCA listing port 1 and port 0 or 3 (no port 2): exit 0."""
    code, data = _parse(tmp_path, "ibv-devinfo", _hca("mlx5_0", 2) + _ibv_port(1) + _ibv_port(port))
    assert code == 1, data
    assert data["errors"] == [f"mlx5_0: port {port} is not one of its ports 1 to 2 (phys_port_cnt)"], data


def test_h14_05_ibv_devinfo_one_hca_twice_down_then_active(tmp_path: Path) -> None:
    """H14-05: one HCA's listing twice, its port down in the first and active in the second: the
    fault and the splice both said, exit 1 (held)."""
    text = _hca("mlx5_0", 1) + _ibv_port(1, "PORT_DOWN (1)") + _hca("mlx5_0", 1) + _ibv_port(1)
    code, data = _parse(tmp_path, "ibv-devinfo", text)
    assert code == 1 and data["faults"] == ["mlx5_0 port 1: PORT_DOWN"], data
    assert any("listed twice" in e for e in data["errors"]), data


# -- ethtool -S on mlx5 -----------------------------------------------------------------------------

ETHTOOL = "NIC statistics:\n     rx_packets: 1000\n     rx_crc_errors_phy: {crc}\n     rx_symbol_err_phy: 0\n"


@pytest.mark.parametrize("text", [ETHTOOL.format(crc=50) + "     rx_crc_errors_phy: 0\n",
                                  ETHTOOL.format(crc=50) + ETHTOOL.format(crc=0)],
                         ids=["counter-twice", "two-blocks"])
def test_h14_06_ethtool_a_counter_read_twice_bad_then_zero(tmp_path: Path, text: str) -> None:
    """H14-06: `ethtool -S` with rx_crc_errors_phy 50 then 0 (a second read spliced after the
    first, or a pasted block twice): the last kept, the 50 gone, exit 0. Now the splice is an
    error and the larger value is kept and judged."""
    code, data = _parse(tmp_path, "ethtool-mlx5", text)
    assert code == 1 and data["counters"]["rx_crc_errors_phy"] == 50, data
    assert "rx_crc_errors_phy = 50" in data["faults"], data
    assert any("rx_crc_errors_phy is listed twice (50, then 0)" in e for e in data["errors"]), data


@pytest.mark.parametrize("value", ["-5", "0x10", "1.5e3", "n/a"])
def test_h14_07_ethtool_a_judged_counter_that_is_no_count(tmp_path: Path, value: str) -> None:
    """H14-07: rx_crc_errors_phy reading `-5`, `0x10`, `1.5e3` or `n/a` (ethtool prints an
    unsigned decimal): the line was skipped, the counter never judged, exit 0."""
    code, data = _parse(tmp_path, "ethtool-mlx5", ETHTOOL.replace("{crc}", value))
    assert code == 1 and "rx_crc_errors_phy" not in data["counters"], data
    assert data["errors"] == [f"counter rx_crc_errors_phy reads {value!r}, not ethtool's unsigned decimal: "
                              "not judged"], data


def test_h14_08_ethtool_a_counter_beyond_64_bits(tmp_path: Path) -> None:
    """H14-08: rx_crc_errors_phy of 2^70 (no u64 holds it): exit 1 (held)."""
    assert _parse(tmp_path, "ethtool-mlx5", ETHTOOL.format(crc=2 ** 70))[0] == 1


# -- NCCL Inspector ---------------------------------------------------------------------------------

def _record(**change: object) -> str:
    rec = copy.deepcopy(json.loads(INSPECTOR.read_text().splitlines()[1]))
    for key, value in change.items():
        part, field = key.split("__")
        rec[part][field] = value
    return json.dumps(rec) + "\n"


@pytest.mark.parametrize("text,says", [
    (_record(header__rank=7), "record 1: rank 7 of a communicator of 3 ranks"),
    (_record() + _record(header__rank=2, header__n_ranks=5),
     "record 2: communicator 0xad56c683b0c4ef of 5 ranks, 3 in an earlier record")],
    ids=["rank-7-of-3", "two-sizes"])
def test_h14_09_inspector_a_rank_outside_its_communicator(tmp_path: Path, text: str, says: str) -> None:
    """H14-09: an Inspector record of rank 7 in a communicator of 3, or one communicator of 3 ranks
    and of 5: exit 0, read as records."""
    code, data = _parse(tmp_path, "nccl-inspector", text)
    assert code == 1 and says in data["errors"], data


def test_h14_10_inspector_one_rank_s_collective_twice_with_other_values(tmp_path: Path) -> None:
    """H14-10: rank 1's AllReduce 8995 twice, the second claiming 99 GB/s (two dumps spliced, or one
    edited): two records, exit 0. Inspector writes one rank's operation once; the same record again
    (a dump repeated) is still read."""
    code, data = _parse(tmp_path, "nccl-inspector", _record() + _record(coll_perf__coll_busbw_gbs=99.0))
    assert code == 1 and any("coll 8995 of communicator 0xad56c683b0c4ef is listed twice with other values" in e
                             for e in data["errors"]), data
    assert _parse(tmp_path, "nccl-inspector", _record() + _record())[0] == 0


@pytest.mark.parametrize("field", ["coll_perf__coll_sn", "coll_perf__coll_msg_size_bytes"])
def test_h14_11_inspector_a_negative_sequence_number_or_size(tmp_path: Path, field: str) -> None:
    """H14-11: a record whose sequence number or message size is -1: exit 0."""
    code, data = _parse(tmp_path, "nccl-inspector", _record(**{field: -1}))
    name = {"coll_perf__coll_sn": "sn", "coll_perf__coll_msg_size_bytes": "size_bytes"}[field]
    assert code == 1 and f"record 1: {name} -1 is negative" in data["errors"], data


@pytest.mark.parametrize("text", [_record() + _record(coll_perf__coll_sn=8996)[:120],
                                  _record(coll_perf__coll_busbw_gbs=-3.0)], ids=["cut", "negative-busbw"])
def test_h14_12_inspector_cut_mid_record_or_negative_bandwidth(tmp_path: Path, text: str) -> None:
    """H14-12: a stream cut inside its second record, a negative bus bandwidth: exit 1 (held)."""
    assert _parse(tmp_path, "nccl-inspector", text)[0] == 1


# -- NCCL_DEBUG -------------------------------------------------------------------------------------

def test_h14_13_nccl_debug_fed_an_nccl_ras_report(tmp_path: Path) -> None:
    """H14-13: `parse nccl-debug` of an NCCL RAS client's report (a MISMATCH of 32 ranks): its
    'NCCL version ... compiled with CUDA' banner was taken as NCCL_DEBUG=VERSION's: no line, no
    fault, exit 0."""
    line = one_line_error(_cli("parse", "nccl-debug", RAS, "--json"), 1)
    assert f"{RAS}: nccl-debug: no NCCL_DEBUG line" in line and "(an NCCL RAS report: view nccl-ras)" in line, line


def test_h14_14_nccl_debug_two_nccl_versions_in_one_log(tmp_path: Path) -> None:
    """H14-14: a log whose two hosts print NCCL 2.18.5 and 2.21.5 (ranks of one job on two
    releases, or two jobs' logs spliced): the first version kept, the second unsaid, exit 0."""
    text = ("h1:100:100 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\nh1:100:100 [0] NCCL INFO Bootstrap : Using "
            "eth0:10.0.0.1<0>\nh2:200:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\nh2:200:200 [0] NCCL INFO "
            "Bootstrap : Using eth0:10.0.0.2<0>\n")
    code, data = _parse(tmp_path, "nccl-debug", text)
    assert code == 1 and any(f.startswith("2 NCCL versions in one log (2.18.5, 2.21.5)") for f in data["faults"]), data
    assert _parse(tmp_path, "nccl-debug", text.replace("2.21.5+cuda12.4", "2.18.5+cuda12.2"))[0] == 0


# -- amd-smi monitor, npu-smi -----------------------------------------------------------------------

def test_h14_15_amd_smi_monitor_a_gpu_row_twice_hot_first(tmp_path: Path) -> None:
    """H14-15: `amd-smi monitor` with GPU 2's row twice, the first at 131 °C: exit 1 (held)."""
    lines = MONITOR.read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("GPU  POWER"))
    hot = lines[head + 3].replace("31 °C", "131 °C")
    code, data = _parse(tmp_path, "amd-smi-monitor", "\n".join(lines[head:head + 3] + [hot] + lines[head + 3:]) + "\n")
    assert code == 1 and data["errors"], data


def test_h14_16_npu_smi_one_npu_twice_alarm_then_ok(tmp_path: Path) -> None:
    """H14-16: `npu-smi info` with NPU 0's two rows twice, Health `Alarm` in the first, `OK` in the
    second: exit 1 (held)."""
    lines = NPU.read_text().splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("| 0       310B4"))
    alarm = [lines[i].replace("OK    ", "Alarm "), lines[i + 1], lines[i + 2]]
    assert _parse(tmp_path, "npu-smi", "\n".join(lines[:i] + alarm + lines[i:]) + "\n")[0] == 1


# -- inventories ------------------------------------------------------------------------------------

def test_h14_17_a_16k_card_inventory_with_one_hostile_host_name(tmp_path: Path) -> None:
    """H14-17: 32 supernodes x 64 hosts x 8 cards (16,384 cards), one host of supernode 17 named
    with an OSC 8 hyperlink, a BEL and a right-to-left override: exit 2, one line at its line,
    the name escaped (held)."""
    lines = ["name: big", "design:", "  scale_up: {bandwidth: '900 GB/s', latency: '2 us'}",
             "  scale_out: {bandwidth: '400 Gb/s', latency: '12 us'}", "supernodes:"]
    for s in range(32):
        if s == 17:
            hosts = ", ".join([f"'n17h{h:03d}'" for h in range(63)] + ['"n17h\\e]8;;http://x\\a\\u202eevil"'])
            lines.append(f"  - {{name: sn17, hosts: [{hosts}], cards_per_host: 8}}")
        else:
            lines.append(f"  - {{name: sn{s:02d}, hosts: 'n{s:02d}h[000-063]', cards_per_host: 8}}")
    inv = tmp_path / "big.yaml"
    inv.write_text("\n".join(lines) + "\n")
    line = one_line_error(_cli("inventory", "check", inv))
    assert line.startswith(f"sncheck: error: {inv}:23:") and "\\u202e" in line and "\x1b" not in line, line


@pytest.mark.parametrize("name,what", [("scale_up", "host"), ("Scale_Out", "host"), ("intra_host.", "host"),
                                       ("scale_out", "supernode")])
def test_h14_18_a_host_or_supernode_named_as_a_link_tier(tmp_path: Path, name: str, what: str) -> None:
    """H14-18: a host (or supernode) named `scale_up`: `history scale_up` reads the tier's
    measurements, never the host's, and the tier's findings and the host's were one key. Refused
    at its line now, as a host named as a supernode is."""
    inv = tmp_path / "inv.yaml"
    sn = (f"  - {{name: sn0, hosts: ['h1', '{name}'], cards_per_host: 2}}\n" if what == "host"
          else f"  - {{name: {name}, hosts: 'h[1-2]', cards_per_host: 2}}\n")
    inv.write_text(SMALL.split("supernodes:")[0] + "supernodes:\n" + sn)
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:5: {what} {name!r} has the name of a link tier" in line, line


# -- the kernel-log policy in a rules file ----------------------------------------------------------

def _policy(tmp_path: Path, entry: str) -> Path:
    rules = tmp_path / "rules.yaml"
    rules.write_text("extends: default\nrules:\n  - name: kernel-xid\n    op: kernel_events\n    metric: kernel_events\n"
                     "    source: xid\n    severity: warning\n    table:\n      79: " + entry + "\n")
    return rules


@pytest.mark.parametrize("window", ["'0.0001s'", "0.5", "'999ms'"])
def test_h14_19_a_window_shorter_than_a_kernel_log_s_second(tmp_path: Path, window: str) -> None:
    """H14-19: Xid 79 critical at 3 reports within 0.1 ms: accepted. dmesg -T and journal times
    are whole seconds, so no such log ever holds 3 in it: every storm of Xid 79 judged `below`
    (info) there, critical in a raw dmesg."""
    rules = _policy(tmp_path, f"{{severity: critical, count: 3, window: {window}}}")
    line = one_line_error(_cli("rules", "check", rules))
    assert f"{rules}:8:" in line and "window must be" in line, line


def test_h14_20_below_as_severe_as_the_severity(tmp_path: Path) -> None:
    """H14-20: `{severity: info, count: 3, window: 1h, below: critical}`: one report critical,
    three info. Accepted; refused now (below must be less severe)."""
    rules = _policy(tmp_path, "{severity: info, count: 3, window: 1h, below: critical}")
    line = one_line_error(_cli("rules", "check", rules))
    assert "below (critical) must be less severe than severity (info)" in line, line
    rules = _policy(tmp_path, "{severity: warning, count: 3, window: 1h, below: warning}")
    assert "below (warning) must be less severe" in one_line_error(_cli("rules", "check", rules))
    assert _cli("rules", "check", _policy(tmp_path, "{severity: critical, count: 3, window: 1h, below: warning}")
                ).exit_code == 0


@pytest.mark.parametrize("window", ["0s", "'-1h'", ".inf", ".nan", "'1e999s'", "true", "2592001", "'1d12h'"])
def test_h14_21_windows_of_nothing_forever_or_no_duration(tmp_path: Path, window: str) -> None:
    """H14-21: a window of 0 s, minus an hour, infinity, NaN, 1e999 s, `true`, 30 days and a
    second, `1d12h`: refused at the line (held)."""
    rules = _policy(tmp_path, f"{{severity: critical, count: 3, window: {window}}}")
    assert f"{rules}:8:" in one_line_error(_cli("rules", "check", rules))


# -- records edited, clocks that lie ----------------------------------------------------------------

def _run(inv3: Path, out: Path, seed: int = 1, *extra: object) -> None:
    r = _cli("connectivity", "-i", inv3, "--backend", "mock", "--seed", seed, "-q", "--out", out, *extra)
    assert r.exit_code == 0, r.output


def test_h14_22_a_results_json_edited_to_name_a_card_its_run_never_had(tmp_path: Path, inv3: Path) -> None:
    """H14-22: a passing run's results.json given by hand a critical finding on `ghost9/gpu0` (no
    host of its inventory): `diff` listed it as a new critical finding of the run, exit 0. Now
    every reader of a record (diff, baseline make, watch --baseline) refuses it, exit 2."""
    _run(inv3, tmp_path / "a")
    edited = tmp_path / "b"
    shutil.copytree(tmp_path / "a", edited)
    doc = json.loads((edited / "results.json").read_text())
    doc["findings"].append({"entity": "ghost9/gpu0", "entity_kind": "card", "layer": "connectivity",
                            "rule": "p2p-bw", "severity": "info", "message": "edited", "evidence": {}})
    (edited / "results.json").write_text(json.dumps(doc))
    line = one_line_error(_cli("diff", tmp_path / "a", edited))
    assert f"{edited / 'results.json'}: findings[0] names the card 'ghost9/gpu0', not of the run's own topology" \
        in line, line
    assert "not of the run's own topology" in one_line_error(_cli("baseline", "make", edited, "--out",
                                                                  tmp_path / "b.json"))
    assert _cli("diff", tmp_path / "a", tmp_path / "a").exit_code == 0


@pytest.mark.parametrize("skew", ["2031-01-01T00:00:00Z", "2019-01-01T00:00:00Z"], ids=["ahead", "behind"])
def test_h14_23_a_run_whose_clock_lies_is_ordered_as_recorded(tmp_path: Path, inv3: Path, skew: str) -> None:
    """H14-23: two runs into one store, then the first's start rewritten 5 years ahead (a host
    whose clock ran ahead), or the second's 7 years behind: the skewed run was "the last run" for
    good, `history --runs --last 1` showed it and `baseline make --from-state --last 1` built
    the baseline of it. The store now orders runs as it recorded them."""
    state = tmp_path / "state"
    _run(inv3, tmp_path / "r1", 1, "--state-dir", state)
    _run(inv3, tmp_path / "r2", 2, "--state-dir", state)
    with sqlite3.connect(state / "state.db") as db:
        first, second = [r[0] for r in db.execute("SELECT run_id FROM runs ORDER BY rowid")]
        db.execute("UPDATE runs SET started = ? WHERE run_id = ?", (skew, first if skew > "2026" else second))
    r = _cli("history", "--runs", "--last", "1", "--state-dir", state)
    assert r.exit_code == 0 and r.output.startswith(second) and first not in r.output, r.output
    r = _cli("baseline", "make", "--from-state", state, "--last", "1", "--out", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "b.json").read_text())["runs"] == [second]


# -- capacity and plans of what the store holds ------------------------------------------------------

def test_h14_24_plan_with_a_store_holding_a_host_the_inventory_dropped(tmp_path: Path, inv3: Path) -> None:
    """H14-24: h3 isolated, then the inventory shrinks to h1-h2: `plan --state-dir` counts 4 of 4
    healthy cards, never takes h3's out of the two hosts left (held)."""
    state = tmp_path / "state"
    r = _cli("isolate", "h3", "-i", inv3, "--cap", "1", "--via", "hostfile", "--apply", "--state-dir", state)
    assert r.exit_code == 0, r.output
    two = tmp_path / "two.yaml"
    two.write_text(SMALL.replace("h[1-3]", "h[1-2]"))
    r = _cli("plan", "-i", two, "--state-dir", state, "--params", "1B", "--layout", "tp=2,dp=2",
             "--card-memory", "80GB")
    assert r.exit_code == 0 and "capacity: 4/4 healthy cards" in r.output, r.output


def test_h14_25_capacity_of_a_fleet_of_one_whose_card_is_out(tmp_path: Path) -> None:
    """H14-25: an inventory of one host with one card, that card isolated (`--cap 1`): `capacity`
    says the layout does not fit, exit 1, never 'fits' (held)."""
    one = tmp_path / "one.yaml"
    one.write_text(SMALL.replace("'h[1-3]', cards_per_host: 2", "'solo', cards_per_host: 1"))
    state = tmp_path / "state"
    r = _cli("isolate", "solo/gpu0", "-i", one, "--cap", "1", "--via", "hostfile", "--apply", "--state-dir", state)
    assert r.exit_code == 0, r.output
    r = _cli("capacity", "-i", one, "--state-dir", state)
    assert r.exit_code == 1 and "layout does NOT fit" in r.output and "0/1 healthy" in r.output, r.output


# -- Prometheus -------------------------------------------------------------------------------------

def test_h14_26_the_prometheus_file_holds_each_series_once(tmp_path: Path) -> None:
    """H14-26: the mixed-fault demo gate's `sncheck.prom`: no series (name and label set) given
    twice, which Prometheus' textfile collector refuses whole, and every sample a number (held)."""
    out = tmp_path / "run"
    r = _cli("connectivity", "-i", ROOT / "fixtures/inventories/demo-2sn.yaml", "--backend", "mock", "--faults",
             ROOT / "fixtures/faults/demo-mixed.yaml", "--seed", "1", "-q", "--out", out, "--format", "prometheus")
    assert r.exit_code == 1, r.output
    samples = [ln for ln in (out / "sncheck.prom").read_text().splitlines() if ln and not ln.startswith("#")]
    series = [ln.rsplit(" ", 1)[0] for ln in samples]
    assert len(series) > 100 and len(set(series)) == len(series)
    assert all(float(ln.rsplit(" ", 1)[1]) == float(ln.rsplit(" ", 1)[1]) for ln in samples)
