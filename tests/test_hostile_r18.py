"""Hostile inputs, round 18: new instances of the brief's classes, written from the classes (every input
sncheck reads, every contract) and not from the earlier rounds' files: digits that are not ASCII in a
hostlist, a NIC id and an ssh config's port; a NIC spelt otherwise; a spine joining one leaf twice; a
kernel-log policy entry that can never apply (a field no report carries, an Xid no kernel prints); a
``--query-gpu`` CSV listing one GPU under two indexes or a number nvidia-smi never prints; a results.json
whose run id forges a terminal line, whose gate is no severity, or that is not its rows' record; a
``watch`` dump whose file name forges a line; ``scontrol`` answers that list a node twice, in two cases,
with a GRES count no inventory takes, or another node's record; ssh config values the inventory refuses;
known_hosts marker lines; an ``--out`` inside another run's rows. Each test names its case id; the README's round 18 table lists
them. New instances only: no case of an earlier round is tested again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

from sncheck.cli.main import main
from sncheck.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]

_FABRIC = ("fabric:\n  leaves:\n    - {{name: a, ports: {{{nic0}: 1, h2/nic0: 2, h3/nic0: 3}}}}\n"
           "    - {{name: b, ports: {{h1/nic1: 1, h2/nic1: 2, h3/nic1: 3}}}}\n")
_RAILS = "fabric:\n  leaves:\n    - {name: a, rail: 0, hosts: 'h[1-3]'}\n    - {name: b, rail: 1, hosts: 'h[1-3]'}\n"


def _inv(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


def _check(tmp_path: Path, text: str) -> str:
    """`inventory check` of ``text``: exit 2, the one line it printed."""
    return one_line_error(_cli("inventory", "check", _inv(tmp_path, text)))


# -- digits that are not ASCII, ids spelt otherwise ------------------------------------------------------

def test_h18_01_a_hostlist_range_of_arabic_indic_digits_is_refused(tmp_path: Path) -> None:
    """H18-01: `hosts: 'h[١-٣]'` (Arabic-Indic digits; Python's int() reads them): the range expanded to
    h1, h2, h3, hosts the file never wrote (a host `h١` alone is refused as no host name). A range's
    bounds are ASCII digits, as Slurm's hostlist reads them."""
    for hosts in ("h[١-٣]", "h[1-٣]", "h[０-２]"):
        line = _check(tmp_path, SMALL.replace("'h[1-3]'", f"'{hosts}'"))
        assert "inv.yaml:5" in line and "ASCII" in line, line


def test_h18_02_a_nic_id_spelt_otherwise_in_the_fabric_is_refused(tmp_path: Path) -> None:
    """H18-02: a leaf's port map keyed `h1/nic00` or `h1/nic٠`: read as h1/nic0 (int() of the digits), so
    the fabric held a NIC id no finding or `--targets` spells (the card ids refuse `gpu01`). A NIC is
    `<host>/nic<rail>`, the rail in ASCII digits without a leading zero."""
    for nic in ("h1/nic00", "h1/nic٠", "h1/nic+0"):
        line = _check(tmp_path, SMALL + _FABRIC.format(nic0=nic))
        assert nic in line and "is not a NIC id" in line, line
    assert _cli("inventory", "check", _inv(tmp_path, SMALL + _FABRIC.format(nic0="h1/nic0"))).exit_code == 0


def test_h18_03_a_spine_joining_one_leaf_or_rail_twice_is_refused(tmp_path: Path) -> None:
    """H18-03: `spines: [{name: s0, leaves: [a, a]}]` (or `rails: [0, 0]`): accepted, the second read as
    nothing (a membership test), so the file said two uplinks where the fabric has one. A list that
    names one thing twice is refused at its line (as a golden list naming one curve twice, H16-19)."""
    for spine in ("{name: s0, leaves: [a, b, a]}", "{name: s0, rails: [0, 0]}"):
        line = _check(tmp_path, SMALL + _RAILS + f"  spines: [{spine}]\n")
        assert "inv.yaml:10" in line and "twice" in line, (spine, line)


def test_h18_04_ids_spelt_otherwise_are_refused_where_they_already_were(tmp_path: Path) -> None:
    """H18-04 (held): the same spellings where sncheck already refused them: a fault on `H1/gpu0`,
    `h1/gpu00`, `h1/gpu٠`, `h1.`; `--targets h1/gpu٠`; `isolate h1/gpu٠`; a kernel table key `'١٣'`."""
    inv = _inv(tmp_path, SMALL)
    for target in ("H1/gpu0", "h1/gpu00", "h1/gpu٠"):
        (plan := tmp_path / "f.yaml").write_text(f"faults:\n  - {{type: slow_card, target: {target}, factor: 0.5}}\n")
        line = one_line_error(_cli("connectivity", "-i", inv, "--backend", "mock", "--faults", plan,
                                   "--out", tmp_path / "run", "-q"))
        assert "f.yaml:2" in line and "is not a card of this inventory" in line, line
    assert not (tmp_path / "run").exists()
    line = one_line_error(_cli("connectivity", "-i", inv, "--backend", "mock", "--targets", "h1/gpu٠",
                               "--out", tmp_path / "run", "-q"))
    assert "is not a card, host or supernode" in line, line
    line = one_line_error(_cli("isolate", "h1/gpu٠", "-i", inv, "--state-dir", tmp_path / "sd"))
    assert "is not a card, host or switch" in line, line
    rules = _inv(tmp_path, "extends: default\nrules:\n  - name: kernel-xid\n    table:\n      '١٣': {severity: warning}\n",
                 "r.yaml")
    assert "r.yaml:4" in one_line_error(_cli("rules", "check", rules))


# -- YAML read as YAML 1.1 would, safely ----------------------------------------------------------------

def test_h18_05_yaml_timestamps_and_binary_are_no_names(tmp_path: Path) -> None:
    """H18-05 (held): `name: 2026-12-06` (YAML 1.1 reads a date), a host `2026-12-06` in a list,
    `name: !!binary aGVsbG8=` (bytes), `name: yes` (true): refused at the line, never str() of a date."""
    for old, new, at in (("name: small", "name: 2026-12-06", 1), ("'h[1-3]'", "[2026-12-06]", 5),
                         ("name: sn0", "name: 2026-12-06", 5), ("name: small", "name: !!binary aGVsbG8=", 1),
                         ("name: small", "name: yes", 1)):
        line = _check(tmp_path, SMALL.replace(old, new))
        assert f"inv.yaml:{at}" in line and "must be" in line, (new, line)


def test_h18_06_fabric_cables_that_cannot_be_are_refused(tmp_path: Path) -> None:
    """H18-06 (held): one NIC on two leaves; a leaf's ports from 65534 for three hosts; unit leaves
    beside a leaf map; a spine given both rails and leaves."""
    two = _FABRIC.format(nic0="h1/nic0").replace("{h1/nic1: 1,", "{h1/nic0: 4, h1/nic1: 1,")
    assert "hangs off two leaves" in _check(tmp_path, SMALL + two)
    assert "pass 65535" in _check(tmp_path, SMALL + _RAILS.replace("hosts: 'h[1-3]'}", "hosts: 'h[1-3]', first_port: 65534}", 1))
    assert "not both" in _check(tmp_path, SMALL + _RAILS + "  scalable_unit: 2\n")
    assert "not both" in _check(tmp_path, SMALL + _RAILS + "  spines: [{name: s0, rails: [0], leaves: [b]}]\n")


# -- the kernel-log policy: entries that could never apply --------------------------------------------

def _kernel_rules(tmp_path: Path, table: str) -> str:
    rules = _inv(tmp_path, f"extends: default\nrules:\n  - name: kernel-xid\n    table:\n{table}", "r.yaml")
    return one_line_error(_cli("rules", "check", rules))


def test_h18_07_a_when_field_no_report_carries_is_refused(tmp_path: Path) -> None:
    """H18-07: `13: {severity: critical, when: {recovery_actoin: 2}}` (a misspelt field), or a field a
    report carries tonight but the state directory never keeps (`process`): accepted, the entry applied
    to no report (or to tonight's and not to the earlier runs' it counts with), silently. A `when`
    field is one of the fields the kernel-log view keeps for a report; another is refused at its line
    with the nearest."""
    line = _kernel_rules(tmp_path, "      13: {severity: critical, when: {recovery_actoin: 2}}\n")
    assert "r.yaml:4" in line and "recovery_actoin" in line and "recovery_action" in line, line
    line = _kernel_rules(tmp_path, "      13: {severity: critical, when: {process: python3}}\n")
    assert "r.yaml:4" in line and "'process'" in line, line


def test_h18_08_an_xid_no_kernel_prints_is_refused(tmp_path: Path) -> None:
    """H18-08: a table key `99999999999999999999` (an Xid beyond 32 bits; the driver prints an NvU32
    with %d): accepted, an entry no report can reach."""
    for key in ("99999999999999999999", "4294967296"):
        line = _kernel_rules(tmp_path, f"      {key}: {{severity: warning}}\n")
        assert "r.yaml:4" in line and key in line, line
    ok = _inv(tmp_path, "extends: default\nrules:\n  - name: kernel-xid\n    table:\n      4294967295: {severity: info}\n",
              "ok.yaml")
    assert _cli("rules", "check", ok).exit_code == 0


def test_h18_09_kernel_entries_out_of_bounds_are_refused(tmp_path: Path) -> None:
    """H18-09 (held): count 0 or 10^12, a drivers range no version holds, an action carrying a shell
    command, an empty list of cases."""
    for entry, says in (("{severity: warning, count: 0, window: 24h}", "count must be"),
                        ("{severity: warning, count: 1000000000000, window: 24h}", "count must be"),
                        ("{severity: warning, drivers: '>=550,<500'}", "holds for no driver"),
                        ("{severity: warning, action: 'reboot; rm -rf /'}", "action must be one of"),
                        ("[]", "empty list")):
        line = _kernel_rules(tmp_path, f"      13: {entry}\n")
        assert "r.yaml:4" in line and says in line, (entry, line)


# -- nvidia-smi --query-gpu ---------------------------------------------------------------------------

_QG = "index, name, pci.bus_id, uuid, temperature.gpu, power.draw [W], memory.total [MiB]\n"


def _row(i: int, bus: str, uuid: str, temp: str = "35", power: str = "60.10 W", mem: str = "40960 MiB") -> str:
    return f"{i}, NVIDIA A100-SXM4-40GB, {bus}, {uuid}, {temp}, {power}, {mem}\n"


def _query(tmp_path: Path, text: str) -> tuple[int, dict]:
    (p := tmp_path / "qg.txt").write_text(text)
    r = _cli("parse", "nvidia-smi-query-gpu", p, "--json")
    assert "Traceback" not in r.output, r.output
    return r.exit_code, json.loads(r.output[: r.output.rindex("}") + 1])


def test_h18_10_one_gpu_under_two_indexes_is_not_whole(tmp_path: Path) -> None:
    """H18-10: two rows of other indexes at one bus id (or one UUID): two reads spliced, or one GPU
    answered twice: 2 GPUs, exit 0. A bus id and a UUID name one GPU each: "listed twice", exit 1."""
    a, b = "GPU-4a3c1d2e-0000-1111-2222-333344445555", "GPU-4a3c1d2e-0000-1111-2222-333344446666"
    code, doc = _query(tmp_path, _QG + _row(0, "00000000:07:00.0", a) + _row(1, "00000000:07:00.0", b))
    assert code == 1 and any("00000000:07:00.0 is listed twice" in e for e in doc["errors"]), doc
    code, doc = _query(tmp_path, _QG + _row(0, "00000000:07:00.0", a) + _row(1, "00000000:0F:00.0", a))
    assert code == 1 and any(f"{a} is listed twice" in e for e in doc["errors"]), doc
    code, doc = _query(tmp_path, _QG + _row(0, "00000000:07:00.0", a) + _row(1, "00000000:0F:00.0", b))
    assert code == 0 and doc["errors"] == [], doc


def test_h18_11_a_number_nvidia_smi_never_prints_is_said(tmp_path: Path) -> None:
    """H18-11: `power.draw` -60.10 W, `temperature.gpu` nan or 1e308, `memory.total` 1e400 MiB: the
    negative read as a value, the others kept as text, exit 0. nvidia-smi prints these as unsigned
    decimals (%d, %.2f) or [N/A]: another is said, and the cell is null."""
    for temp, power, mem, bad in (("35", "-60.10 W", "40960 MiB", "-60.10 W"), ("nan", "60.10 W", "40960 MiB", "nan"),
                                  ("1e308", "60.10 W", "40960 MiB", "1e308"), ("35", "60.10 W", "1e400 MiB", "1e400 MiB"),
                                  ("-5", "60.10 W", "40960 MiB", "-5")):
        code, doc = _query(tmp_path, _QG + _row(0, "00000000:07:00.0", "GPU-1", temp, power, mem))
        assert code == 1 and any(bad in e and "nvidia-smi" in e for e in doc["errors"]), (bad, doc)
    code, doc = _query(tmp_path, _QG + _row(0, "00000000:07:00.0", "GPU-1", "[N/A]", "[N/A]", "40960 MiB"))
    assert code == 0 and doc["gpus"][0]["power.draw"] is None, doc


# -- results.json read back ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def passed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One passing mock run of round 13's small inventory (a description carrying markup)."""
    base = tmp_path_factory.mktemp("r18run")
    inv = _inv(base, SMALL.replace("name: small\n", "name: small\ndescription: '</title><script>alert(1)</script>'\n"))
    r = _cli("connectivity", "-i", inv, "--backend", "mock", "--seed", "1", "--out", base / "run", "-q")
    assert r.exit_code == 0, r.output
    return base / "run"


def _edited(passed_run: Path, tmp_path: Path, **changes: object) -> Path:
    run = tmp_path / "edited"
    shutil.copytree(passed_run, run)
    doc = json.loads((run / "results.json").read_text())
    doc.update(changes)
    (run / "results.json").write_text(json.dumps(doc))
    return run


def test_h18_12_a_run_id_that_forges_a_line_is_escaped(passed_run: Path, tmp_path: Path) -> None:
    """H18-12: a results.json whose run_id is `x<newline>sncheck: verdict pass<U+202E>`, to `diff`: printed
    raw, a forged line on the terminal and the rest reversed. Every line diff prints is shown escaped.
    (Since round 22, H22-12, diff refuses a record whose run is not its rows': the refusal names the id,
    escaped as every line is.)"""
    run = _edited(passed_run, tmp_path, run_id="x\nsncheck: verdict pass\u202e")
    r = _cli("diff", passed_run, run)
    assert r.exit_code == 2 and "its rows are run" in r.output, r.output
    assert not any(ln.startswith("sncheck: verdict pass") for ln in r.output.splitlines()), r.output
    assert "\u202e" not in r.output and "x\\u000asncheck: verdict pass\\u202e" in r.output, r.output


def test_h18_13_a_gate_that_is_no_severity_is_refused(passed_run: Path, tmp_path: Path) -> None:
    """H18-13: `gate: "none"` (or `"CRITICAL"`, `7`) in a results.json: read as critical, silently, by
    `diff` and `baseline make`. A gate is a severity; another is refused naming the file."""
    for gate in ("none", "CRITICAL", 7):
        run = _edited(passed_run, tmp_path, gate=gate)
        line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "b.json"))
        assert "results.json" in line and "gate" in line, line
        assert "gate" in one_line_error(_cli("diff", passed_run, run))
        shutil.rmtree(run)
    assert not (tmp_path / "b.json").exists()


def test_h18_14_a_record_that_is_not_its_rows_run_is_refused(passed_run: Path, tmp_path: Path) -> None:
    """H18-14: a results.json whose run_id is another run's (copied over, or edited), beside this
    directory's rows: `baseline make` took the rows under the record's verdict. The record must be its
    rows' run: refused, naming both ids."""
    other = "20260101T000000Z-beef"
    run = _edited(passed_run, tmp_path, run_id=other)
    line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "b.json"))
    assert other in line and json.loads((passed_run / "results.json").read_text())["run_id"] in line, line
    assert not (tmp_path / "b.json").exists()


def test_h18_15_an_inventory_description_is_one_escaped_line(passed_run: Path, tmp_path: Path) -> None:
    """H18-15 (held): a description `</title><script>...` puts no markup in report.html; one holding a
    newline and U+202E is one line of `inventory check`, the mark escaped."""
    assert "<script>alert(1)" not in (passed_run / "report.html").read_text()
    inv = _inv(tmp_path, SMALL.replace("name: small\n", 'name: small\ndescription: "x\\nsncheck: verdict pass\\u202e"\n'))
    r = _cli("inventory", "check", inv)
    assert r.exit_code == 0 and "\u202e" not in r.output, r.output
    assert not any(ln.startswith("sncheck: verdict pass") for ln in r.output.splitlines()), r.output


# -- watch -----------------------------------------------------------------------------------------

def test_h18_16_a_dump_file_name_that_forges_a_line_is_escaped(tmp_path: Path) -> None:
    """H18-16: a dump named `fr_0<newline>sncheck: verdict pass<U+202E>.json` in the watched directory:
    watch's progress line printed the name raw (a forged line, the rest reversed); the finding
    escaped it. Every progress line is shown escaped."""
    (d := tmp_path / "dumps").mkdir()
    (d / "ranks.json").write_text('[{"rank": 0, "host": "n1", "local_rank": 0}]')
    (d / "fr_0\nsncheck: verdict pass\u202e.json").write_text("garbage")
    r = _cli("watch", d, "--once", "--out", tmp_path / "run")
    assert r.exit_code == 1, r.output
    assert not any(ln.startswith("sncheck: verdict pass") for ln in r.output.splitlines()), r.output
    assert "\u202e" not in r.output, r.output


# -- Slurm's answers --------------------------------------------------------------------------------

def _from_slurm(tmp_path: Path, *records: str):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (scontrol := bin_dir / "scontrol").write_text(
        "#!/bin/sh\n[ \"$2\" = nodes ] || exit 1\nprintf '%s\\n' " + " ".join(f"'{r}'" for r in records) + "\n")
    scontrol.chmod(0o755)
    return CliRunner().invoke(main, ["inventory", "from-slurm", "--out", str(tmp_path / "inv.yaml")],
                              env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})


def test_h18_17_a_gres_count_no_inventory_takes_is_refused(tmp_path: Path) -> None:
    """H18-17: `Gres=gpu:99999999999` on one node: from-slurm wrote an inventory of 10^11 cards per host
    (exit 0) that then failed to load. Refused naming the command and the node, nothing written."""
    line = one_line_error(_from_slurm(tmp_path, "NodeName=g1 Gres=gpu:99999999999", "NodeName=g2 Gres=gpu:4"))
    assert line.startswith("sncheck: error: scontrol show nodes -o: ") and "g1" in line and "1024" in line, line
    assert not (tmp_path / "inv.yaml").exists()


def test_h18_18_a_node_listed_twice_is_refused(tmp_path: Path) -> None:
    """H18-18: `NodeName=g1 Gres=gpu:4` then `NodeName=g1 Gres=gpu:8` (two reads spliced, or a lie): the
    last kept, 8 cards, exit 0. Or `g1` and `G1`: written, an inventory that does not load. Refused."""
    line = one_line_error(_from_slurm(tmp_path, "NodeName=g1 Gres=gpu:4", "NodeName=g1 Gres=gpu:8"))
    assert "scontrol show nodes -o" in line and "g1" in line and "twice" in line, line
    line = one_line_error(_from_slurm(tmp_path, "NodeName=g1 Gres=gpu:4", "NodeName=G1 Gres=gpu:4"))
    assert "scontrol show nodes -o" in line and "G1" in line and "twice" in line, line
    assert not (tmp_path / "inv.yaml").exists()


def test_h18_19_node_check_takes_no_other_nodes_gres() -> None:
    """H18-19: node-check on n1 asks `scontrol show node n1 -o`, which answers NodeName=n7's record
    (an alias, a wrapper, a stale cache): its `Gres=gpu:8` was taken as n1's card count. Only the
    record of the node asked for counts; without it the count is not Slurm's."""
    from sncheck.run.nodecheck import expected_cards
    from sncheck.transport.result import Result

    class Answer:
        def __init__(self, text: str) -> None:
            self.text = text

        def run(self, argv, **_kw) -> Result:
            return Result("local", " ".join(argv), self.text, "", 0, 0.0)

    n, source = expected_cards("n1", None, None, Answer("NodeName=n7 Arch=x86_64 Gres=gpu:8 State=IDLE\n"))
    assert (n, source) != (8, "Slurm GRES"), (n, source)
    assert expected_cards("n1", None, None, Answer("NodeName=n1 Arch=x86_64 Gres=gpu:4 State=IDLE\n")) == (4, "Slurm GRES")


# -- ssh config ------------------------------------------------------------------------------------

def test_h18_20_ssh_config_values_the_inventory_refuses_are_refused(tmp_path: Path) -> None:
    """H18-20: an ssh config's `HostName a;touch x`, `User root;id`, `ProxyJump -oProxyCommand=x`,
    `Port ٢٢` (Arabic-Indic digits): resolved as given (the port as 22), where the inventory refuses each
    (H8-12, H8-14). The same checks hold for the ssh config: refused naming the host and the value."""
    from sncheck.transport import load_ssh_config, resolve_host

    for body, bad in (("HostName a;touch x", "a;touch x"), ("User root;id", "root;id"),
                      ("HostName 127.0.0.1\n  ProxyJump -oProxyCommand=x", "-oProxyCommand=x"),
                      ("Port ٢٢", "٢٢")):
        (cfg := tmp_path / "cfg").write_text(f"Host h1\n  {body}\n")
        with pytest.raises(ConfigError) as e:
            resolve_host("h1", config=load_ssh_config(cfg))
        assert "h1" in str(e.value) and bad in str(e.value), (body, str(e.value))
    (cfg := tmp_path / "cfg").write_text("Host h1\n  HostName 10.0.0.1\n  User svc_gpu\n  Port 2222\n")
    spec = resolve_host("h1", config=load_ssh_config(cfg))
    assert (spec.hostname, spec.user, spec.port) == ("10.0.0.1", "svc_gpu", 2222)


def test_h18_21_ssh_config_directives_that_run_commands_are_refused(tmp_path: Path) -> None:
    """H18-21 (held): `PermitLocalCommand yes` + `LocalCommand`, a ProxyJump loop: refused, nothing run."""
    from sncheck.transport import load_ssh_config, resolve_host

    for body, says in (("Host h1\n  PermitLocalCommand yes\n  LocalCommand touch {p}\n", "LocalCommand"),
                       ("Host h1\n  ProxyJump h2\nHost h2\n  ProxyJump h1\n", "only one hop")):
        (cfg := tmp_path / "cfg").write_text(body.format(p=tmp_path / "pwn"))
        with pytest.raises(ConfigError, match=says):
            resolve_host("h1", config=load_ssh_config(cfg))
    assert not (tmp_path / "pwn").exists()


# -- the run directory ------------------------------------------------------------------------------

def test_h18_22_out_inside_another_runs_directory_is_refused(passed_run: Path, tmp_path: Path) -> None:
    """H18-22: `--out RUN/rows` (or `RUN/rows/p2p`, `RUN/evidence`): a run written inside another run's
    directory, its results.json and rows/ among that run's measurements. Refused, exit 2, naming the
    run it is inside; nothing written there."""
    run = tmp_path / "other"
    shutil.copytree(passed_run, run)
    inv = _inv(tmp_path, SMALL)
    before = sorted(map(str, run.rglob("*")))
    for inside in (run / "rows", run / "rows" / "p2p", run / "evidence" / "x"):
        line = one_line_error(_cli("connectivity", "-i", inv, "--backend", "mock", "--out", inside, "-q"))
        assert str(run) in line and "inside" in line, line
        assert sorted(map(str, run.rglob("*"))) == before


def test_h18_23_force_never_removes_what_is_not_sncheck_s(passed_run: Path, tmp_path: Path) -> None:
    """H18-23 (held): `--out DIR --force` where DIR holds a user's file beside an earlier run: the run's
    files replaced, the user's file kept as it was."""
    run = tmp_path / "again"
    shutil.copytree(passed_run, run)
    (run / "thesis.tex").write_text("precious\n")
    r = _cli("connectivity", "-i", _inv(tmp_path, SMALL), "--backend", "mock", "--seed", "2", "--out", run, "--force",
             "-q")
    assert r.exit_code == 0, r.output
    assert (run / "thesis.tex").read_text() == "precious\n"
    assert json.loads((run / "results.json").read_text())["seed"] == 2


# -- isolation stays a dry run, capped -------------------------------------------------------------

def test_h18_24_isolate_without_apply_changes_nothing_whatever_the_environment(tmp_path: Path) -> None:
    """H18-24 (held): `isolate h1/gpu0` with `SNCHECK_APPLY=1`, `SNCHECK_ISOLATE_APPLY=1` in the
    environment (an auto_envvar_prefix would read them) and `--via hostfile`: a dry run, no file made."""
    inv = _inv(tmp_path, SMALL)
    env = {"SNCHECK_APPLY": "1", "SNCHECK_ISOLATE_APPLY": "1", "SNCHECK_CAP": "1"}
    r = CliRunner().invoke(main, ["isolate", "h1/gpu0", "-i", str(inv), "--state-dir", str(tmp_path / "sd"),
                                  "--via", "hostfile"], env=env)
    assert r.exit_code == 0 and "dry run" in r.output.lower(), r.output
    assert not (tmp_path / "sd" / "hostfile.txt").exists()


# -- bounded work on a 1 MB input -------------------------------------------------------------------

@pytest.mark.parametrize("view,capture", [
    ("nvidia-smi-query-gpu", None),
    ("kernel-log", "kernel-log/01_dmesg_ctime_xid13_x3_xid109_gpud_readme.txt"),
])
def test_h18_25_a_1_mb_input_is_read_once(tmp_path: Path, view: str, capture: str | None) -> None:
    """H18-25 (held): a 1 MB input of one line repeated (a tool in a loop) to `parse`: read in one pass,
    in a child process held to 120 s (a quadratic read of it would take hours), exit 0 or 1."""
    line = _row(0, "00000000:07:00.0", "GPU-1") if capture is None else next(
        ln for ln in (ROOT / "fixtures" / "real" / capture).read_text().splitlines() if "Xid" in ln)
    line = line.rstrip("\n") + "\n"
    (p := tmp_path / "big.txt").write_text((_QG if capture is None else "") + line * (1_000_000 // len(line)))
    res = subprocess.run([sys.executable, "-m", "sncheck", "parse", view, str(p), "--json"], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stderr[-2000:]


# -- known_hosts markers ----------------------------------------------------------------------------

@pytest.mark.sshd
def test_h18_26_known_hosts_marker_lines_are_read_as_openssh_reads_them(sshd_cluster) -> None:
    """H18-26: a known_hosts holding an `@cert-authority` line (common where hosts have certificates),
    or an `@revoked` line for the host's own key: paramiko's reader raised InvalidHostKey on either, an
    error sncheck did not expect (every host 'unexpected error'). OpenSSH skips a CA line for a host it
    does not match and refuses a revoked key even where another line lists it; so does sncheck now (a
    HostKeyError naming the line), and `--accept-new-host-keys` never records a revoked key."""
    from sncheck.errors import HostKeyError
    from sncheck.transport import Connection, load_ssh_config, resolve_host

    cluster = sshd_cluster(1)
    spec = resolve_host("node1", config=load_ssh_config(cluster.ssh_config))
    own = cluster.known_hosts.read_text()
    _, kind, key = own.split()[:3]
    cluster.known_hosts.write_text(f"@cert-authority *.example.org {kind} {key}\n" + own)
    res = Connection(spec, known_hosts=cluster.known_hosts, retries=0, allow_agent=False).run(["echo", "ok"])
    assert res.ok and res.stdout.strip() == "ok", res
    name = own.split()[0]  # the cluster's own '[127.0.1.x]:port' (reviews14 #8: fnmatch never matched it)
    for text, accept in ((own + f"@revoked * {kind} {key}\n", False), (f"@revoked * {kind} {key}\n", True),
                         (own + f"@revoked {name} {kind} {key}\n", False)):
        cluster.known_hosts.write_text(text)
        with pytest.raises(HostKeyError, match="@revoked"):
            Connection(spec, known_hosts=cluster.known_hosts, retries=0, allow_agent=False,
                       accept_new_host_keys=accept).run(["true"])
        assert cluster.known_hosts.read_text() == text
