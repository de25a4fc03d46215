"""Hostile inputs, round 21: round 20's leftovers (digits of other scripts in Slurm's tasks per
node, in switch port and NIC ids) and new ground: JSON inputs that give a key twice (a results.json
whose second `findings`/`verdict` make a failing run a passing one), arguments and dump file names
holding bytes that are not UTF-8, names longer than the file system takes, one host's InfiniBand
adapters listing one node GUID; and cases that held (SQL wildcards in `history`, YAML keys given
twice, links and FIFOs where files are written or read, fault plans that contradict themselves).
Each test names its case id; the README's round 21 table lists them. New instances only: no case
of an earlier round is tested again."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

from sncheck.vendors.parsers import strip_source_header

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "real"
RAS = REAL / "nccl-ras" / "01_mismatch_allgather_2.26.2_issue1911.txt"
IBSTAT = REAL / "ib" / "04_ibstat_h100_roce_12CA_all_active_eth.txt"
SMI_Q = REAL / "nvidia-smi-q" / "03_535.161.08_8xH100_full_hw_slowdown_power_brake_active.txt"
# two one-host supernodes of 8-card HGX hosts: a derived rail-aligned fabric (leaf:su0-rail<r>)
HGX2 = ("name: hgx\nplatform: nvidia-hgx\nsupernodes:\n  - {name: h01, hosts: h01}\n  - {name: h02, hosts: h02}\n"
        "backend: {type: mock}\n")


def _inv(tmp_path: Path, text: str = SMALL, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


def _dumps(tmp_path: Path, name: str = "ras.txt") -> Path:
    d = tmp_path / "dumps"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(("".join(ln for ln in RAS.read_text().splitlines(True)
                                    if not ln.startswith("# source"))).encode())
    return d


# -- round 20's leftovers: digits no tool prints ------------------------------------------------------

@pytest.mark.parametrize("env", [
    {"SLURM_TASKS_PER_NODE": "\u0662(x\u0662)"},                                  # Arabic-Indic 2(x2)
    {"SLURM_TASKS_PER_NODE": "\uff12,\uff12"},                                    # full-width 2,2
    {"SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_DISTRIBUTION": "plane=\u0662"},      # a plane of ٢
    {"SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_DISTRIBUTION": "plane", "SLURM_DIST_PLANESIZE": "\u0662"},
], ids=["tasks-arabic", "tasks-fullwidth", "plane-arabic", "planesize-arabic"])
def test_h21_01_slurm_task_counts_in_digits_slurm_never_prints(env: dict[str, str]) -> None:
    """H21-01: `watch` inside a job whose SLURM_TASKS_PER_NODE is `٢(x٢)` (or `２,２`, or a plane size
    `٢`): `\\d` and int() read them as 2, so four ranks were dealt to n1 and n2 as no Slurm placed
    them. Slurm prints its counts in ASCII digits: the environment lies, so no rank map (as for every
    other contradiction there), never a wrong one. The ASCII twin still maps."""
    from sncheck.watch.rankmap import from_slurm

    base = {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_ID": "7"}
    assert from_slurm({**base, **env}) is None
    ascii_twin = {k: v.translate({0x0662: "2", 0xFF12: "2"}) for k, v in env.items()}
    m = from_slurm({**base, **ascii_twin})
    assert m is not None and len(m.placements) == 4, ascii_twin


@pytest.mark.parametrize("port", ["\u0662", "\uff12", "02"], ids=["arabic", "fullwidth", "leading-zero"])
def test_h21_02_a_switch_port_spelt_as_no_port_id(port: str) -> None:
    """H21-02: a fault plan's `switch_port_down` on `leaf:su0-rail3[٢]` (`[２]`, `[02]`): the switch
    port id's `\\d+` and int() read port 2, so the fault was acted out on a port its target does not
    spell, and findings and the plan named two ids for one port. A port id is written in ASCII
    digits without a leading zero (model.index_of): refused at the line, as an unknown port is."""
    from sncheck.errors import ConfigError
    from sncheck.run.inputs import load_faults_text, load_inventory_text
    from sncheck.topology import Topology

    topo = Topology(load_inventory_text(HGX2, "hgx.yaml"))
    good = load_faults_text("faults:\n  - {type: switch_port_down, target: 'leaf:su0-rail3[2]'}\n", topo, "plan.yaml")
    assert good.faults[0].target == "leaf:su0-rail3[2]"
    with pytest.raises(ConfigError, match=r"plan\.yaml:2: .*is not a cabled switch port"):
        load_faults_text(f"faults:\n  - {{type: switch_port_down, target: 'leaf:su0-rail3[{port}]'}}\n", topo,
                         "plan.yaml")


@pytest.mark.parametrize("entity", ["h01/nic\u0663", "h01/gpu\u0663", "h01/nic03", "h01/gpu\uff13"])
def test_h21_03_a_card_or_nic_id_spelt_as_no_id(entity: str) -> None:
    """H21-03: the fabric's position of `h01/nic٣` (`h01/gpu٣`, `h01/nic03`, full-width `gpu３`) was
    h01/gpu3's, and `card_of('h01/nic٣')` named the card `h01/gpu٣`: one id of every spelling
    int() reads. An index is ASCII digits without a leading zero, as sncheck writes it; another
    spelling names no card or NIC."""
    from sncheck.health.policy import entity_kind
    from sncheck.model import card_of
    from sncheck.run.inputs import load_inventory_text
    from sncheck.topology import Topology

    fabric = Topology(load_inventory_text(HGX2, "hgx.yaml")).fabric
    assert fabric.card_position("h01/nic3") == fabric.card_position("h01/gpu3")
    with pytest.raises(KeyError):
        fabric.card_position(entity)
    assert card_of(entity) == entity and card_of("h01/nic3") == "h01/gpu3"
    assert entity_kind(entity) == "host" and entity_kind("h01/nic3") == "nic"


# -- JSON inputs that give a key twice ---------------------------------------------------------------

def _failing_run(tmp_path: Path) -> Path:
    (faults := tmp_path / "faults.yaml").write_text("faults:\n  - {type: slow_card, target: h1/gpu0, factor: 0.5}\n")
    r = _cli("connectivity", "-i", _inv(tmp_path), "--backend", "mock", "-q", "--seed", "1", "--faults", faults,
             "--out", tmp_path / "run")
    assert r.exit_code == 1, r.output
    return tmp_path / "run"


def test_h21_04_a_results_json_giving_its_verdict_and_findings_twice(tmp_path: Path) -> None:
    """H21-04: a failing run's results.json (h1/gpu0 at half its bandwidth, critical) with
    `, "findings": [], "verdict": "pass"` added before its last brace (an edit, two records
    spliced): Python's json keeps a key's last value, so `baseline make` made a baseline of the
    halved card and `diff` read the run as pass, no finding. No writer gives a key twice: refused,
    exit 2, naming the file and the key; no baseline written."""
    run = _failing_run(tmp_path)
    text = (run / "results.json").read_text().rstrip()
    assert text.endswith("}") and json.loads(text)["verdict"] == "fail"
    (run / "results.json").write_text(text[:-1] + ', "findings": [], "verdict": "pass"}\n')
    line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "base.json"))
    assert "results.json" in line and "'findings' is given twice" in line, line
    assert not (tmp_path / "base.json").exists()
    shutil.copytree(run, other := tmp_path / "other")
    line = one_line_error(_cli("diff", other, run))
    assert "given twice" in line, line


@pytest.mark.parametrize("what", ["rank-map", "baseline"])
def test_h21_05_other_json_inputs_giving_a_key_twice(tmp_path: Path, what: str) -> None:
    """H21-05: a rank map entry `{"rank": 0, "rank": 1, ...}` (watch read rank 1), a baseline whose
    card `h1/gpu0` is given at 450 then at 1 GB/s (the run held the card to the last): every JSON
    input is read by one reader (config.jsonio.read_json), which refuses a key given twice."""
    if what == "rank-map":
        (rm := tmp_path / "ranks.json").write_text('[{"rank": 0, "rank": 1, "host": "n1", "local_rank": 0}]')
        r = _cli("watch", _dumps(tmp_path), "--once", "--out", tmp_path / "out", "--rank-map", rm)
    else:
        (b := tmp_path / "base.json").write_text(
            '{"schema": "sncheck.baseline/1", "inventory": "small", "created": "2026-12-07T08:00:00+00:00", '
            '"metrics": {"p2p_bandwidth": {"tier": {"scale_up": 450.0}, '
            '"card": {"scale_up": {"h1/gpu0": 450.0, "h1/gpu0": 1.0}}}}}')
        r = _cli("connectivity", "-i", _inv(tmp_path), "--backend", "mock", "-q", "--baseline", b, "--out",
                 tmp_path / "out")
    line = one_line_error(r)
    assert "is given twice" in line, line
    assert not (tmp_path / "out" / "results.json").exists()


# -- bytes that are not UTF-8, names the file system refuses ------------------------------------------

@pytest.mark.parametrize("args", [
    ("connectivity", "--backend", "mock", "-q", "--out", "OUT\udcff"),
    ("isolate", "h1/gpu0", "--via", "hostfile", "--rule", "x\udcff", "--apply", "--state-dir", "SD"),
    ("history", "h1/gpu0\udce9", "--state-dir", "SD"),
    ("inventory", "check", "INV\udcfe"),
], ids=["out", "isolate-rule", "history", "inventory"])
def test_h21_06_an_argument_holding_a_byte_that_is_not_utf8(tmp_path: Path, args: tuple[str, ...]) -> None:
    """H21-06: `--out $'run\\xff'` (a name typed in a Latin-1 locale) and `isolate --rule $'x\\xff'
    --apply`: Python hands the byte on as a lone surrogate, which no results.json, audit line or
    state store row can hold: 'internal error ... UnicodeEncodeError', exit 3, the run directory
    begun with only crash.log in it. Every argument is read as UTF-8: one refused is exit 2, shown
    escaped, before anything is written."""
    inv = _inv(tmp_path)
    shutil.copy(inv, tmp_path / "INV\udcfe")
    subst = {"OUT": str(tmp_path / "OUT"), "SD": str(tmp_path / "sd"), "INV": str(tmp_path / "INV")}
    argv = [re.sub(r"^(OUT|SD|INV)", lambda m: subst[m[1]], a) for a in args]
    extra = ["-i", str(inv)] if args[0] in ("connectivity", "isolate") else []
    r = _cli(*argv, *extra)
    assert r.exit_code == 2 and "Traceback" not in r.output and "internal error" not in r.output, r.output
    assert "is not UTF-8 text" in r.output and "\\x" in r.output, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["inv.yaml", "INV\udcfe"])


def test_h21_07_a_dump_whose_file_name_is_not_utf8(tmp_path: Path) -> None:
    """H21-07: `watch DIR` where DIR holds NCCL RAS's dump under a name with the byte 0xff (copied
    from a machine of another locale): the name went into the rows and results.json as a lone
    surrogate, 'internal error', exit 3, no dump judged. The dump is judged as its twin of an ASCII
    name is, named with the byte escaped."""
    plain = _cli("watch", _dumps(tmp_path / "a"), "--once", "--out", tmp_path / "a" / "out", "-q", "--json")
    odd = _cli("watch", _dumps(tmp_path / "b", "ras\udcff.txt"), "--once", "--out", tmp_path / "b" / "out",
               "-q", "--json")
    assert odd.exit_code == plain.exit_code and "internal error" not in odd.output, odd.output
    a, b = json.loads(plain.output), json.loads(odd.output)
    assert [f["rule"] for f in b["findings"]] == [f["rule"] for f in a["findings"]] and b["findings"]
    assert b["layers"][0]["summary"]["dumps"] == 1 and b["layers"][0]["summary"]["unreadable"] == 0
    assert {f["evidence"].get("dump") for f in b["findings"]} == {"ras\\xff.txt"}, b["findings"][0]["evidence"]


@pytest.mark.parametrize("option", ["--out", "--state-dir"])
def test_h21_08_a_name_longer_than_the_file_system_takes(tmp_path: Path, option: str) -> None:
    """H21-08: `--out` (or `--state-dir`) whose last part is 300 characters (a generated name, a
    pasted hash list): the file system's ENAMETOOLONG was said as the harness's (exit 3) although
    the name given is the fault. Exit 2, naming it."""
    name = tmp_path / ("a" * 300)
    extra = ("--out", tmp_path / "run") if option == "--state-dir" else ()
    r = _cli("connectivity", "-i", _inv(tmp_path), "--backend", "mock", "-q", option, name, *extra)
    line = one_line_error(r)
    assert "too long" in line.lower() and "aaaa" in line, line


# -- one host's adapters listing one node GUID -------------------------------------------------------

def _twice_guid(text: str, key: str) -> tuple[str, str]:
    guids = re.findall(rf"{key}\s*(\S+)", text)
    assert len(set(guids)) >= 2, guids[:3]
    return text.replace(guids[1], guids[0]), guids[0]


def test_h21_09_two_adapters_of_one_host_listing_one_node_guid(tmp_path: Path) -> None:
    """H21-09: a host's `ibstat` lists two CAs with one Node GUID (a wrapper splicing two reads, a
    cloned firmware image): a node GUID is one adapter's (IEEE EUI-64), as a GPU's UUID is one GPU's,
    which `nvidia-smi -q` already refuses twice. `parse ibstat` read it whole, exit 0. Listed twice:
    not whole, exit 1, naming the GUID; the real capture still reads whole."""
    text, guid = _twice_guid(strip_source_header(IBSTAT.read_text()), "Node GUID:")
    (f := tmp_path / "ibstat.txt").write_text(text)
    r = _cli("parse", "ibstat", f)
    assert r.exit_code == 1 and f"node_guid {guid} is listed twice" in r.output, r.output[-600:]
    (whole := tmp_path / "whole.txt").write_text(strip_source_header(IBSTAT.read_text()))
    assert _cli("parse", "ibstat", whole).exit_code == 0


def test_h21_09_all_zero_guids_are_no_identity(tmp_path: Path) -> None:
    """H21-09, its bound: SR-IOV functions whose node GUID is not set print 0x0000000000000000 alike;
    a placeholder names no adapter, so two of them are not one listed twice."""
    text = strip_source_header(IBSTAT.read_text())
    guids = re.findall(r"Node GUID:\s*(\S+)", text)
    for g in guids[:2]:
        text = text.replace(g, "0x0000000000000000")
    (f := tmp_path / "ibstat.txt").write_text(text)
    r = _cli("parse", "ibstat", f)
    assert r.exit_code == 0 and "listed twice" not in r.output, r.output[-600:]


@pytest.mark.parametrize("address, reads", [("010.0.0.1", "8.0.0.1"), ("10.0.12", "10.0.0.12"), ("127.1", "127.0.0.1"),
                                            ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"),
                                            ("127.0.0.1:2222", "a port goes in 'port'")],
                         ids=["octal", "three-parts", "two-parts", "one-number", "hex", "with-port"])
def test_h21_18_an_address_the_resolver_reads_as_another(tmp_path: Path, address: str, reads: str) -> None:
    """H21-18: a host's `address: 010.0.0.1` (zero-padded, as a spreadsheet writes it), `10.0.12` (an
    octet lost), `127.1`, `2130706433`, `0x7f000001`: `inventory check` said ok, and getaddrinfo
    (paramiko connects through it; glibc tries inet_aton before DNS) resolves 8.0.0.1, 10.0.0.12,
    127.0.0.1: a machine no one named, measured under h1's name. `127.0.0.1:2222` was taken too (then unreachable as a name). An IPv4
    address is four numbers 0-255 without leading zeros; refused at the line, saying what the
    resolver would have reached. A canonical address, a name and an IPv6 address still load."""
    base = "name: s\nsupernodes:\n  - {name: sn0, hosts: 'h[1-2]', cards_per_host: 1}\nhosts:\n"
    line = one_line_error(_cli("inventory", "check", _inv(tmp_path, base + f"  h1: {{address: '{address}'}}\n")))
    assert line.startswith("sncheck: error: ") and "inv.yaml:5" in line and reads in line, line
    for good in ("10.0.0.1", "node-1.example.com", "::1"):
        assert _cli("inventory", "check", _inv(tmp_path, base + f"  h1: {{address: '{good}'}}\n")).exit_code == 0
    from sncheck.config.inventory import is_address  # the ssh config's HostName and Slurm's NodeAddr too

    assert not is_address(address) and is_address("10.0.0.1")


# -- held --------------------------------------------------------------------------------------------

def test_h21_10_two_gpus_of_one_listing_with_one_uuid(tmp_path: Path) -> None:
    """H21-10 (held): `nvidia-smi -q` of 8 H100s whose second GPU prints the first's UUID: not
    whole, exit 1, naming the UUID."""
    text, uuid = _twice_guid(strip_source_header(SMI_Q.read_text()), "GPU UUID\\s*:")
    (f := tmp_path / "q.txt").write_text(text)
    r = _cli("parse", "nvidia-smi-q", f)
    assert r.exit_code == 1 and uuid in r.output and "listed twice" in r.output, r.output[-600:]


@pytest.mark.parametrize("entity", ["h%", "h_/gpu0", "%"])
def test_h21_11_history_of_sql_wildcards(tmp_path: Path, entity: str) -> None:
    """H21-11 (held): `history 'h%'` (`h_/gpu0`, `%`) over a store holding h1-h3: the store looks an
    entity up by equality, not LIKE: 'no such entity', exit 2, no other entity's history shown."""
    sd = tmp_path / "sd"
    r = _cli("connectivity", "-i", _inv(tmp_path), "--backend", "mock", "-q", "--seed", "1", "--out",
             tmp_path / "run", "--state-dir", sd)
    assert r.exit_code == 0, r.output
    line = one_line_error(_cli("history", entity, "--state-dir", sd))
    assert "no such entity" in line, line


@pytest.mark.parametrize("text", [
    "name: a\nname: b\nsupernodes:\n  - {name: sn0, hosts: 'h[1-2]', cards_per_host: 1}\n",
    "name: a\nsupernodes:\n  - {name: sn0, hosts: 'h[1-2]', cards_per_host: 1, cards_per_host: 8}\n",
], ids=["top", "flow"])
def test_h21_12_an_inventory_giving_a_key_twice(tmp_path: Path, text: str) -> None:
    """H21-12 (held): YAML's duplicate keys (`name` twice, `cards_per_host: 1, cards_per_host: 8`):
    refused at the line, as JSON's now are (H21-04)."""
    line = one_line_error(_cli("inventory", "check", _inv(tmp_path, text)))
    assert "duplicate key" in line and "inv.yaml:" in line, line


def test_h21_13_an_output_file_that_is_a_link_to_a_precious_file(tmp_path: Path) -> None:
    """H21-13 (held): `baseline make RUN --out LINK`, LINK a symlink to a file the operator keeps:
    the link is replaced by the baseline, never written through; the file keeps its text."""
    r = _cli("connectivity", "-i", _inv(tmp_path), "--backend", "mock", "-q", "--seed", "1", "--out",
             tmp_path / "run")
    assert r.exit_code == 0, r.output
    (precious := tmp_path / "precious.txt").write_text("keep me\n")
    (link := tmp_path / "base.json").symlink_to(precious)
    r = _cli("baseline", "make", tmp_path / "run", "--out", link)
    assert r.exit_code == 0, r.output
    assert precious.read_text() == "keep me\n" and not link.is_symlink()
    assert json.loads(link.read_text())["schema"] == "sncheck.baseline/1"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_h21_14_a_fabric_topology_that_is_no_file(tmp_path: Path, kind: str) -> None:
    """H21-14 (held): `fabric check --topology` of a FIFO (no writer: a read would hang) or
    /dev/zero (never ends): refused unread, exit 2, naming it."""
    if kind == "fifo":
        os.mkfifo(topo := tmp_path / "topo.fifo")
    else:
        topo = Path("/dev/zero")
    r = _cli("fabric", "check", "-i", _inv(tmp_path), "--topology", topo)
    assert r.exit_code == 2 and "not a regular file" in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("extra, says", [
    ("hosts:\n  h9: {address: 10.0.0.9}\n", "in no supernode"),
    ("ssh: {user: '-oProxyCommand=touch PWNED'}\n", "not allowed"),
], ids=["override-of-no-host", "ssh-user-option"])
def test_h21_15_inventory_overrides_that_are_no_hosts_or_options(tmp_path: Path, extra: str, says: str) -> None:
    """H21-15 (held): overrides for `h9`, a host of no supernode (a typo for h1: its address would be
    used by no one); `ssh.user: -oProxyCommand=...` (an option for ssh): refused at the line."""
    line = one_line_error(_cli("inventory", "check", _inv(tmp_path, SMALL + extra)))
    assert says in line and "inv.yaml:" in line, line
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("faults, says", [
    ("  - {type: slow_card, target: h1/gpu0, factor: 0.5}\n  - {type: slow_card, target: h1/gpu0, factor: 0.9}\n",
     "a second slow_card on h1/gpu0"),
    ("  - {type: slow_card, target: h1/gpu0, factor: 0.5, transient: 'no'}\n", "must be true or false"),
], ids=["one-fault-twice", "transient-as-text"])
def test_h21_16_fault_plans_that_contradict_themselves(tmp_path: Path, faults: str, says: str) -> None:
    """H21-16 (held): one card slowed twice with two factors (compounded, or the last kept?);
    `transient: 'no'` (a non-empty string is true to Python): refused at the line."""
    (f := tmp_path / "faults.yaml").write_text("faults:\n" + faults)
    line = one_line_error(_cli("connectivity", "-i", _inv(tmp_path), "--backend", "mock", "-q", "--faults", f,
                               "--out", tmp_path / "run"))
    assert says in line and "faults.yaml:" in line, line
    assert not (tmp_path / "run").exists()


# -- round 20's H20-11, without sshd -----------------------------------------------------------------

def _ib_rows(host: str, text: str) -> list[dict]:
    from sncheck.vendors.facts import Expect
    from sncheck.vendors.infiniband.checks import check_ib_ports
    from sncheck.vendors.infiniband.ibstat import parse_ibstat

    return check_ib_ports(host, parse_ibstat(text), Expect(cards=8))


def _shared(listings: dict[str, str]) -> list[dict]:
    from sncheck.vendors import hostjudge

    rows: list[dict] = []

    def fan_out(todo, reached, lost) -> None:  # noqa: ANN001, ARG001 -- FactJudge.read's fan-out
        for h in todo:
            reached(h, "ssh", "connected", rows=_ib_rows(h, listings[h]))

    hostjudge.FactJudge(None).read(tuple(listings), fan_out, rows.append)
    return [r for r in rows if r["fact"] == "devices_shared"]


def test_h21_17_two_hosts_listing_one_adapter_node_guid() -> None:
    """H21-17 (H20-11's mend, its class without sshd): node2's ibstat lists node1's adapters (their
    node GUIDs, one IEEE EUI-64 each): the ib_ports fact now carries the GUIDs as the adapters'
    identities, so the two hosts are each said to share them (devices_shared), as two hosts listing
    one GPU UUID are; each host's own adapters (the harnesses' own_ids moves a GUID as it moves a
    UUID: one-to-one, its own inverse) are not."""
    from sncheck.vendors.identity import own_ids

    text = strip_source_header(IBSTAT.read_text())
    one, two = own_ids(text, "node1"), own_ids(text, "node2")
    assert one != two and own_ids(one, "node1") == text
    assert _ib_rows("node1", one)[0]["ids"] and _shared({"node1": one, "node2": two}) == []
    shared = _shared({"node1": one, "node2": one})
    assert sorted(r["host"] for r in shared) == ["node1", "node2"], shared
    assert all("(also node" in r["message"] and r["tool"] == "ibstat" for r in shared), shared
    zeros = re.sub(r"Node GUID: 0x[0-9a-f]{16}", "Node GUID: 0x0000000000000000", text)
    assert _shared({"node1": zeros, "node2": zeros}) == []  # a GUID of none names no adapter
