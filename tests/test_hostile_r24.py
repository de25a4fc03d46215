"""Hostile inputs, round 24: kinds a held-out set holds and rounds 3-23 did not try -- hostlist
expressions as Slurm's parser reads them (nested brackets, mixed zero-padding, 10^8 hosts), Slurm's
answers that lie as a real cluster's do (a topology whose Nodes= is no hostlist or names 10^8 hosts,
switch names no inventory takes, sinfo naming nodes scontrol does not), records of one fleet used for
another (`plan -i A --measured RUN-OF-B`), a watch rank map placing two ranks on one card, and
further instances on the subcommands earlier rounds touched least (plan, node-check, history,
status, parse, watch). Each test names its case id; the README's round 24 table lists them. New
instances only: no case of an earlier round is tested again."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

from sncheck.cli.main import main


def _file(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


# -- hostlist expressions as Slurm's parser reads them ----------------------------------------------

@pytest.mark.parametrize("hosts", ["h[1-2[3]]", "h[1[2-3]]", "h[[1-2]]"])
def test_h24_01_a_bracket_inside_a_bracket(tmp_path: Path, hosts: str) -> None:
    """H24-01: a hostlist with a bracket inside a bracket: the innermost was expanded first, so
    `h[1-2[3]]` named h1..h23 (23 hosts, exit 0), `h[1[2-3]]` h12 and h13, `h[[1-2]]` h1 and h2: hosts the
    file never wrote. Slurm's parser takes ranges inside a bracket, never a bracket: refused at the
    line, and in --targets, exit 2."""
    bad = _file(tmp_path, SMALL.replace("'h[1-3]'", f"'{hosts}'"))
    got = one_line_error(_cli("inventory", "check", bad))
    assert got.startswith(f"sncheck: error: {bad}:5: ") and "'[' inside a bracket" in got, got
    got = one_line_error(_cli("connectivity", "-i", _file(tmp_path, SMALL, "ok.yaml"), "--backend", "mock",
                              "--targets", hosts, "--out", tmp_path / "o", "-q"))
    assert "--targets" in got and "'[' inside a bracket" in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("hosts, first, last, n", [
    ("h[08-10]", "h08", "h10", 3), ("h[8-010]", "h8", "h10", 3), ("h[1-010]", "h1", "h10", 10),
    ("r[1-2]n[01-02]", "r1n01", "r2n02", 4),
], ids=["padded-low", "padded-high-only", "padded-high-long", "two-brackets"])
def test_h24_07_mixed_zero_padding_reads_as_slurm_does(tmp_path: Path, hosts: str, first: str, last: str,
                                                       n: int) -> None:
    """H24-07 (held): a range whose bounds are padded to different widths: the low bound's width is
    the names' (Slurm's hostlist.c takes the width from the low bound), `h[8-010]` is h8, h9, h10;
    two brackets are their product."""
    got = _cli("inventory", "check", _file(tmp_path, SMALL.replace("'h[1-3]'", f"'{hosts}'")))
    assert got.exit_code == 0, got.output
    assert f"sn0: {n} hosts ({first}..{last})" in got.output, got.output


@pytest.mark.parametrize("targets, says", [
    ("h[1-100000000]", "names more than 100000 hosts"), ("h[3-1]", "runs backwards"),
    ("h[01-02]", "'h01' is not a card, host or supernode"),
], ids=["1e8-hosts", "reversed", "padded-other-names"])
def test_h24_07_targets_that_name_no_such_hosts(tmp_path: Path, targets: str, says: str) -> None:
    """H24-07 (held): --targets of 10^8 hosts (refused before anything is expanded), a reversed range,
    a zero-padded range of an unpadded inventory (h01 is not h1): refused, exit 2, nothing run."""
    got = one_line_error(_cli("connectivity", "-i", _file(tmp_path, SMALL), "--backend", "mock",
                              "--targets", targets, "--out", tmp_path / "o", "-q"))
    assert got.startswith("sncheck: error: --targets: ") and says in got, got
    assert not (tmp_path / "o").exists()


# -- Slurm's answers that lie --------------------------------------------------------------------------

NODES = "NodeName=g1 Gres=gpu:4\nNodeName=g2 Gres=gpu:4\nNodeName=g3 Gres=gpu:4\n"


def _from_slurm(tmp_path: Path, nodes: str = NODES, topology: str = "", sinfo: str = "",
                partition: str | None = None, topology_stderr: str = ""):
    """`inventory from-slurm` against a fake scontrol (nodes, topology) and sinfo on the PATH."""
    b = tmp_path / "bin"
    b.mkdir()
    for name, text in (("nodes.txt", nodes), ("topology.txt", topology), ("sinfo.txt", sinfo),
                       ("topology-stderr.txt", topology_stderr)):
        (b / name).write_text(text)
    (b / "scontrol").write_text(f"#!/bin/sh\n[ \"$2\" = nodes ] && exec cat {b}/nodes.txt\n"
                                f"[ \"$2\" = topology ] && cat {b}/topology-stderr.txt >&2 && exec cat {b}/topology.txt\n"
                                "exit 1\n")
    (b / "sinfo").write_text(f"#!/bin/sh\nexec cat {b}/sinfo.txt\n")
    for tool in ("scontrol", "sinfo"):
        (b / tool).chmod(0o755)
    args = ["inventory", "from-slurm", "--out", str(tmp_path / "inv.yaml")] + (["-p", partition] if partition else [])
    return CliRunner().invoke(main, args, env={"PATH": f"{b}:{os.environ['PATH']}"})


@pytest.mark.parametrize("nodes_expr, says", [
    ("g[1-100000000]", "names more than 100000 hosts"), ("g[1-", "unbalanced '['"),
    ("g[1-2[3]]", "'[' inside a bracket"),
], ids=["1e8-hosts", "unbalanced", "nested"])
def test_h24_02_a_topology_whose_nodes_are_no_hostlist(tmp_path: Path, nodes_expr: str, says: str) -> None:
    """H24-02: `scontrol show topology` answering a leaf switch with Nodes=g[1-100000000] (or a cut or
    nested expression): 'internal error in sncheck inventory from-slurm: HostlistTooLarge', exit 3, a
    crash log. Refused naming the command and the switch, exit 2, nothing written."""
    got = one_line_error(_from_slurm(tmp_path, topology=f"SwitchName=s0 Level=0 LinkSpeed=1 Nodes={nodes_expr}\n"))
    assert got.startswith("sncheck: error: scontrol show topology: SwitchName=s0 Nodes ") and says in got, got
    assert not (tmp_path / "inv.yaml").exists()


@pytest.mark.parametrize("sinfo, says", [
    ("g1\ng2\ng3\ng4\ng5\n", "partition 'gpu' lists 'g[4-5]', which 'scontrol show nodes -o' does not"),
    ("g1\ng[2-\n", "partition 'gpu': node 'g[2-' is no hostlist"),
], ids=["unknown-nodes", "cut-expression"])
def test_h24_03_a_partition_of_nodes_slurm_does_not_list(tmp_path: Path, sinfo: str, says: str) -> None:
    """H24-03: `sinfo -N -p gpu` naming g4 and g5, which `scontrol show nodes` does not list (two reads
    of a changing cluster, or one lying): the inventory of partition gpu left them out, exit 0.
    Refused naming sinfo's command line and the nodes, nothing written."""
    got = one_line_error(_from_slurm(tmp_path, sinfo=sinfo, partition="gpu"))
    assert got.startswith("sncheck: error: sinfo -h -N -p gpu -o %N: ") and says in got, got
    assert not (tmp_path / "inv.yaml").exists()


@pytest.mark.parametrize("sinfo", ["g[1-2]\n", "g1\ng1\ng2\n"], ids=["hostlist", "twice"])
def test_h24_03_sinfo_read_as_hostlists(tmp_path: Path, sinfo: str) -> None:
    """H24-03's other side: sinfo's %N is a hostlist (`g[1-2]`, which read as no node: 'Slurm reports
    no nodes', exit 3), and a node it lists twice is one node: the partition's two nodes."""
    got = _from_slurm(tmp_path, sinfo=sinfo, partition="gpu")
    assert got.exit_code == 0, got.output
    assert "hosts: 'g[1-2]', cards_per_host: 4" in (tmp_path / "inv.yaml").read_text()


@pytest.mark.parametrize("topology, says", [
    ("SwitchName= Level=0 LinkSpeed=1 Nodes=g[1-3]\n", "supernodes[0].name: must be a non-empty string"),
    ("SwitchName=a;rm Level=0 Nodes=g[1-2]\nSwitchName=s1 Level=0 Nodes=g3\n", "'a;rm' has characters"),
    ("BlockName=b\u202e1 BlockIndex=0 Nodes=g[1-3] BlockSize=3\n", "has characters"),
], ids=["empty-switch", "shell-switch", "bidi-block"])
def test_h24_04_a_topology_name_no_inventory_takes(tmp_path: Path, topology: str, says: str) -> None:
    """H24-04: a leaf switch named '' or 'a;rm', a block named with a bidi control: from-slurm wrote an
    inventory (exit 0) that `inventory check` then refused. What from-slurm writes is loaded first:
    refused naming the command whose answer made it, exit 2, nothing written."""
    got = one_line_error(_from_slurm(tmp_path, topology=topology))
    assert got.startswith("sncheck: error: scontrol show topology: ") and says in got and "nothing written" in got, got
    assert "\u202e" not in got and not (tmp_path / "inv.yaml").exists()


def test_h24_20_a_topology_that_was_not_read(tmp_path: Path) -> None:
    """H24-20: `scontrol show topology` failing to reach the controller after `show nodes` did (a
    failover, a restart between the two): scontrol says so only on stderr ('slurm_load_topo error:
    Unable to contact slurm controller') and exits 0, as it did on this machine. from-slurm wrote one
    supernode of every node, 'no Slurm topology plugin', exit 0. Refused: the topology was not read,
    exit 3, naming scontrol's line, nothing written."""
    got = one_line_error(_from_slurm(tmp_path, topology_stderr="slurm_load_topo error: Unable to contact slurm "
                                                              "controller (connect failure)\n"), 3)
    assert "could not read Slurm's topology (scontrol show topology: slurm_load_topo error: Unable to contact" in got, got
    assert not (tmp_path / "inv.yaml").exists()


def test_h24_20_no_topology_plugin_is_one_supernode(tmp_path: Path) -> None:
    """H24-20's other side: no topology plugin (scontrol's 'No topology information available' on
    stderr, nothing on stdout) is one supernode of all the nodes, said in the file, as before."""
    got = _from_slurm(tmp_path, topology_stderr="scontrol: error: No topology information available\n")
    assert got.exit_code == 0, got.output
    text = (tmp_path / "inv.yaml").read_text()
    assert "no Slurm topology plugin" in text and "{name: all, hosts: 'g[1-3]', cards_per_host: 4}" in text


def test_h24_16_scontrol_fields_it_does_not_know(tmp_path: Path) -> None:
    """H24-16 (held): scontrol records with fields no Slurm version prints (`FutureField=`), a Reason
    quoting another Gres, and `scontrol show topology` failing: the nodes' own Gres counts, one
    supernode of all."""
    got = _from_slurm(tmp_path, nodes="NodeName=g1 Gres=gpu:4 FutureField=x=y Reason=was Gres=gpu:64\n"
                                      "NodeName=g2 Arch=x86_64 Gres=gpu:4 Weird/Key:1=2\n")
    assert got.exit_code == 0, got.output
    assert "{name: all, hosts: 'g[1-2]', cards_per_host: 4}" in (tmp_path / "inv.yaml").read_text()


class _Answer:
    """A CommandRunner answering every command with ``text`` (what `scontrol show node N -o` printed)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def run(self, argv, **_kw):  # noqa: ANN001, ANN201 -- CommandRunner's interface
        from sncheck.transport.result import Result  # noqa: PLC0415
        return Result("local", " ".join(argv), self.text, "", 0, 0.0)


@pytest.mark.parametrize("answer", [
    "NodeName=n1 Gres=gpu:4 State=IDLE\nNodeName=n1 Gres=gpu:8 State=IDLE\n",
    "NodeName=n1 Gres=gpu:4 State=IDLE\nNodeName=N1. Gres=gpu:8 State=IDLE\n",
    "NodeName=n1 Gres=gpu:99999999999 State=IDLE\n",
], ids=["twice", "twice-by-dns", "no-hosts-count"])
def test_h24_17_node_checks_slurm_count_that_lies(answer: str) -> None:
    """H24-17: node-check on n1 asks `scontrol show node n1 -o`, which answers n1's record twice with
    4 and 8 GPUs (two reads spliced, a wrapper's cache; the second as N1.), or a count of 10^11: the
    first (the absurd) count was taken as the cards n1 must show. Neither is Slurm's count of n1: the
    card listing's is taken (as without Slurm), the way `inventory from-slurm` refuses both answers."""
    from sncheck.run.nodecheck import expected_cards  # noqa: PLC0415
    n, source = expected_cards("n1", None, None, _Answer(answer))
    assert n is None and source != "Slurm GRES", (n, source)
    assert expected_cards("n1", None, None, _Answer("NodeName=n1 Gres=gpu:4\nNodeName=n7 Gres=gpu:8\n")) \
        == (4, "Slurm GRES")


# -- records of one fleet used for another -------------------------------------------------------------

@pytest.fixture(scope="module")
def two_fleets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The inventory `small` and a run (and its baseline) of another inventory, `other`, ten times slower."""
    root = tmp_path_factory.mktemp("fleets")
    inv = _file(root, SMALL)
    other = _file(root, SMALL.replace("small", "other").replace("h[1-3]", "g[1-4]").replace("450 GB/s", "45 GB/s"),
                  "other.yaml")
    assert _cli("connectivity", "-i", other, "--backend", "mock", "--out", root / "orun", "-q").exit_code == 0
    assert _cli("baseline", "make", root / "orun", "--out", root / "obase.json").exit_code == 0
    return inv, root / "orun", root / "obase.json"


@pytest.mark.parametrize("which", ["run", "baseline"])
def test_h24_05_plan_measured_on_another_fleet(two_fleets: tuple[Path, Path, Path], which: str) -> None:
    """H24-05: `plan -i small --measured RUN` where RUN (or the baseline) measured inventory 'other':
    small's collectives were costed at the other fleet's 45 GB/s, exit 0, where `run --baseline`
    refuses another inventory's baseline. Refused naming both inventories, exit 2."""
    inv, orun, obase = two_fleets
    ref = orun if which == "run" else obase
    got = one_line_error(_cli("plan", "--params", "7B", "--layout", "tp=2,pp=1,dp=1", "-i", inv, "--measured", ref))
    assert "on inventory 'other'; -i is inventory 'small'" in got, got


def test_h24_05_plan_measured_without_an_inventory(two_fleets: tuple[Path, Path, Path]) -> None:
    """H24-05's other side: without -i the run's own fleet is the plan's: its tiers are taken."""
    _, orun, _ = two_fleets
    got = _cli("plan", "--params", "7B", "--layout", "tp=2,pp=1,dp=1", "--measured", orun)
    assert got.exit_code in (0, 1) and f"(measured {orun})" in got.output, got.output


@pytest.mark.parametrize("edit, says", [
    (lambda d: d["metrics"]["p2p_bandwidth"]["tier"].update(intra_host=1e-300, scale_up=1e-300),
     "p2p_bandwidth.tier.intra_host is 1e-300 GB/s, outside what any link does"),
    (lambda d: d.update(inventory=5), "field inventory: Input should be a valid string"),
    (lambda d: d.update(inventory=["other", "small"]), "field inventory: Input should be a valid string"),
], ids=["1e-300-GBps", "inventory-5", "inventory-list"])
def test_h24_19_plan_measured_by_a_baseline_no_run_made(two_fleets: tuple[Path, Path, Path], tmp_path: Path,
                                                        edit, says: str) -> None:  # noqa: ANN001 -- a function of the JSON
    """H24-19: `plan --measured BASELINE` whose tiers are 1e-300 GB/s (an `inventory` of 5, or a list):
    read its own way, the step was costed at 10^292 s (exit 1), the inventory taken; `run --baseline`
    refuses the same file. Held as `run --baseline` holds it: refused, exit 2, naming the field."""
    _, _, obase = two_fleets
    data = json.loads(obase.read_text())
    edit(data)
    (bad := tmp_path / "b.json").write_text(json.dumps(data))
    got = one_line_error(_cli("plan", "--params", "7B", "--layout", "tp=2,pp=1,dp=1", "--measured", bad))
    assert got.startswith(f"sncheck: error: {bad}: baseline: field ") and says in got, got


def test_h24_06_a_rank_map_with_two_ranks_on_one_card(tmp_path: Path) -> None:
    """H24-06: a rank map placing ranks 0 and 1 on n1 local_rank 0 (the second spelt N1): read, so a
    stall of rank 1 was named, and quarantined, as rank 0's card. NCCL refuses two ranks on one GPU:
    refused, exit 2, naming the entry and both ranks."""
    (d := tmp_path / "d").mkdir()
    (d / "ranks.json").write_text(json.dumps([{"rank": 0, "host": "n1", "local_rank": 0},
                                              {"rank": 1, "host": "N1", "local_rank": 0}]))
    (d / "fr_0.json").write_text("garbage")
    got = one_line_error(_cli("watch", d, "--once", "--out", tmp_path / "o"))
    assert f"{d / 'ranks.json'}: entry 1: rank 1 is on N1 local_rank 0, as rank 0 is" in got, got
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("entity, kind, shape", [
    ("g1/gpu0", "host", "card"), ("g1", "card", "host"), ("g1/gpu0<->g2/gpu0", "card", "link"),
    ("g1/nic0", "card", "nic"),
], ids=["card-as-host", "host-as-card", "link-as-card", "nic-as-card"])
def test_h24_08_a_finding_whose_kind_its_name_contradicts(two_fleets: tuple[Path, Path, Path], tmp_path: Path,
                                                          entity: str, kind: str, shape: str) -> None:
    """H24-08: a run's results.json with a finding on 'g1/gpu0' of kind host (a host name, a link, a
    NIC as a card): diff listed 'host g1/gpu0', a host no inventory has, exit 0. The record's reader
    holds a finding's kind to its name's shape (DESIGN.md identifiers): refused, exit 2, by diff and
    baseline make alike."""
    _, orun, _ = two_fleets
    run = tmp_path / "run"
    shutil.copytree(orun, run)
    data = json.loads((run / "results.json").read_text())
    data["findings"].append({"entity": entity, "entity_kind": kind, "layer": "connectivity",
                             "rule": "p2p-bandwidth-below-design", "severity": "critical", "message": "edited",
                             "evidence": {}})
    data["verdict"] = data["layers"][0]["verdict"] = "fail"
    (run / "results.json").write_text(json.dumps(data))
    for args in (("diff", run, orun), ("baseline", "make", run, "--out", tmp_path / "b.json")):
        got = one_line_error(_cli(*args))
        assert f"names {entity!r} a {kind}, where its name is a {shape}'s" in got, got
    assert not (tmp_path / "b.json").exists()


def test_h24_14_an_output_that_is_a_link_to_a_runs_record(two_fleets: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """H24-14 (held): `baseline make RUN --out LINK` where LINK is a symbolic link to RUN/results.json
    (and --out through a link to the run directory): the link itself is replaced by the baseline (a
    regular file), the run's record is never written through it; the path inside the run is refused."""
    _, orun, _ = two_fleets
    before = (orun / "results.json").read_bytes()
    (link := tmp_path / "b.json").symlink_to(orun / "results.json")
    assert _cli("baseline", "make", orun, "--out", link).exit_code == 0
    assert not link.is_symlink() and json.loads(link.read_text())["schema"] == "sncheck.baseline/1"
    (tmp_path / "runlink").symlink_to(orun)
    got = _cli("baseline", "make", orun, "--out", tmp_path / "runlink" / "b.json")
    assert got.exit_code == 2 and "is inside the run directory" in got.output, got.output
    assert (orun / "results.json").read_bytes() == before and not (orun / "b.json").exists()


# -- the subcommands earlier rounds touched least ------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (("--params", "1e400", "--layout", "tp=8,pp=1,dp=1"), "below 1e16"),
    (("--params", "70B", "--layout", "tp=0,pp=1,dp=1"), "positive integer"),
    (("--params", "70B", "--layout", "tp=8,tp=4,dp=1"), "names tp twice"),
    (("--params", "70B", "--layout", "tp=\u0668,pp=1,dp=1"), "positive integer"),
    (("--params", "70B", "--layout", "tp=8,pp=1,dp=1", "--card-memory", "-80GB"), "not a memory size"),
    (("--params", "70B", "--expert-params", "80B", "--layout", "tp=8,pp=1,dp=1"), "below --params"),
], ids=["1e400-params", "tp-0", "tp-twice", "arabic-digit", "negative-memory", "experts-over-all"])
def test_h24_09_plan_of_no_model(args: tuple[str, ...], says: str) -> None:
    """H24-09 (held): `plan` with 1e400 parameters, TP 0, TP twice, an Arabic-Indic digit, -80GB of
    card memory, more expert parameters than parameters: refused, exit 2."""
    got = one_line_error(_cli("plan", *args))
    assert got.startswith("sncheck: error: ") and says in got, got


@pytest.mark.parametrize("budget, node, says", [
    ("0s", "h1", "above 0"), ("-1s", "h1", "not a duration"), ("1e400s", "h1", "not a duration"),
    ("30s", "h1\nsncheck: pass", "bad node name"), ("30s", "zz", "not a host of inventory small"),
], ids=["zero", "negative", "1e400", "newline-node", "other-node"])
def test_h24_10_node_check_of_no_budget_or_node(tmp_path: Path, budget: str, node: str, says: str) -> None:
    """H24-10 (held): node-check with a budget of 0 s, -1 s or 1e400 s, a --node holding a forged
    line, a node the inventory lacks: refused before any tool runs, exit 2, escaped."""
    r = _cli("node-check", "--budget", budget, "--node", node, "-i", _file(tmp_path, SMALL), "--no-drain")
    assert r.exit_code == 2 and "Traceback" not in r.output and says in r.output, r.output
    assert not any(ln.startswith("sncheck: pass") for ln in r.output.splitlines()), r.output


@pytest.fixture
def isolated(tmp_path: Path) -> tuple[Path, Path]:
    inv = _file(tmp_path, SMALL)
    assert _cli("isolate", "h1/gpu0", "h2/gpu1", "-i", inv, "--via", "cuda_visible_devices", "--apply",
                "--state-dir", tmp_path / "st").exit_code == 0
    return inv, tmp_path / "st"


def test_h24_11_state_rows_of_no_kind_or_a_future_time(isolated: tuple[Path, Path]) -> None:
    """H24-11 (held): the state store's isolation row of h1/gpu0 edited to kind 'gpu', that of h2/gpu1
    to 2099: the first is left out and said (status warns, `status --check` lists it, exit 1); the
    second is still isolated, and a release now ends it (decisions follow their order, not their clocks)."""
    inv, st = isolated
    with sqlite3.connect(st / "state.db") as db:
        db.execute("UPDATE isolation SET entity_kind = 'gpu' WHERE entity = 'h1/gpu0'")
        db.execute("UPDATE isolation SET ts = '2099-01-01T00:00:00.000000Z' WHERE entity = 'h2/gpu1'")
    db.close()
    got = _cli("status", "--state-dir", st)
    assert "entity_kind 'gpu' is not one of" in got.output and "h2/gpu1  card  isolate" in got.output, got.output
    assert _cli("status", "--check", "--state-dir", st).exit_code == 1
    assert _cli("release", "h2/gpu1", "-i", inv, "--via", "cuda_visible_devices", "--apply",
                "--state-dir", st).exit_code == 0
    assert "h2/gpu1" not in _cli("status", "--state-dir", st).output


def test_h24_12_parse_and_watch_of_no_file(tmp_path: Path) -> None:
    """H24-12 (held): `parse` of a Unix socket or of a link to a FIFO, `watch` of a FIFO or of a plain
    file: refused by what each is, exit 2, nothing blocks."""
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        os.mkfifo(tmp_path / "fifo")
        (tmp_path / "link").symlink_to("fifo")
        (tmp_path / "file").write_text("x")
        for args, says in ((("parse", "nccl-tests", tmp_path / "sock"), "is a socket"),
                           (("parse", "nvidia-smi-qx", tmp_path / "link"), "is a FIFO"),
                           (("watch", tmp_path / "fifo", "--once"), "is a FIFO, not a directory"),
                           (("watch", tmp_path / "file", "--once"), "is a file, not a directory")):
            r = _cli(*args, "--out", tmp_path / "o") if args[0] == "watch" else _cli(*args)
            assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output, r.output
    finally:
        sock.close()


def test_h24_13_history_of_a_name_that_forges_a_line(isolated: tuple[Path, Path]) -> None:
    """H24-13 (held): `history 'h1/gpu0<LF>sncheck: verdict pass<U+202E>'`: nothing recorded, said with
    the name escaped, never a forged line or a reversed rest."""
    _, st = isolated
    got = _cli("history", "h1/gpu0\nsncheck: verdict pass\u202e", "--state-dir", st)
    assert "nothing recorded" in got.output and "\u202e" not in got.output, got.output
    assert not any(ln.startswith("sncheck: verdict pass") for ln in got.output.splitlines()), got.output


def test_h24_15_a_host_and_its_card_at_once(tmp_path: Path) -> None:
    """H24-15 (held): `isolate h1 h1/gpu0 h1/gpu0 --cap 0.4 --apply`: one host of three (under the cap),
    its card once; status lists the host and the card, the launcher file hides the host."""
    inv = _file(tmp_path, SMALL)
    got = _cli("isolate", "h1", "h1/gpu0", "h1/gpu0", "-i", inv, "--via", "cuda_visible_devices", "--cap", "0.4",
               "--apply", "--state-dir", tmp_path / "st")
    assert got.exit_code == 0, got.output
    status = _cli("status", "--state-dir", tmp_path / "st").output
    assert [ln.split()[0] for ln in status.splitlines()[1:3]] == ["h1/gpu0", "h1"], status
    assert "hosts excluded: h1" in got.output


@pytest.mark.parametrize("card", ["h1/gpu00", "h1/gpu+0", "h1/GPU0", "h1//gpu0", "h1/gpu0/"])
def test_h24_18_a_card_by_another_spelling_of_its_index(tmp_path: Path, card: str) -> None:
    """H24-18 (held): a card named by another spelling of its id (`gpu00`, `gpu+0`, `GPU0`, a doubled or
    trailing '/'): int() reads the index of the first two as 0, so each could have been taken for
    h1/gpu0. A fault plan's target, `isolate` and --targets refuse each, exit 2, nothing run."""
    inv = _file(tmp_path, SMALL)
    plan = _file(tmp_path, f"faults:\n  - {{type: slow_card, target: '{card}', factor: 0.5}}\n", "faults.yaml")
    for args, says in ((("connectivity", "-i", inv, "--backend", "mock", "--faults", plan), f"{plan}:2: slow_card target"),
                       (("connectivity", "-i", inv, "--backend", "mock", "--targets", card), "--targets: "),
                       (("isolate", card, "-i", inv, "--via", "cuda_visible_devices", "--apply",
                         "--state-dir", tmp_path / "st"), "is not a card, host or switch")):
        got = one_line_error(_cli(*args, *(("--out", tmp_path / "o", "-q") if args[0] == "connectivity" else ())))
        assert says in got and repr(card) in got, got
    assert not (tmp_path / "o").exists() and not (tmp_path / "st" / "cuda_visible_devices.json").exists()
