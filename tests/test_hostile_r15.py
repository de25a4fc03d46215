"""Hostile inputs, round 15: new instances of the outside probe's classes
(``../shared/adversarial-r3``), where rounds 1-14 did not look: the views and readers of the last
two stops (NCCL RAS JSON, NCCL_DEBUG's per-host NET lines, ibportstate, amd-smi's upper-case keys)
fed documents whose own counts contradict their lists, spliced blocks and another tool's log; the
Slurm rank map under a node list naming a node twice or two plane sizes; `watch` over a dump that
is a symlink loop or a dangling link; host names YAML takes and DNS does not; rules whose bars judge
every entity or none; path options given empty (an unset shell variable); a golden band that holds
any loss; `plan`'s time account of a card of no speed; results.json, inputs and state stores that
are huge sparse files or loops. Each test names its case id; the README's round 15 table lists
them."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli
from test_hostile_r14 import _parse, _run

from sncheck.errors import ConfigError
from sncheck.watch.rankmap import from_slurm

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "real"
H17 = REAL / "harvest17"
RAS_JSON = next((H17 / "nccl-ras").glob("03_*"))
RAS_TEXT = REAL / "nccl-ras" / "01_mismatch_allgather_2.26.2_issue1911.txt"
IBPORTSTATE = next((H17 / "ibportstate").glob("03_*"))
RCCL_DEBUG = next((REAL / "harvest18" / "nccl-debug").glob("01_*"))


@pytest.fixture
def inv3(tmp_path: Path) -> Path:
    """Round 13's inventory: three hosts of two cards."""
    (p := tmp_path / "small.yaml").write_text(SMALL)
    return p


# -- NCCL RAS JSON (ncclras -f json, NCCL 2.28+) ---------------------------------------------------

def _ras_doc() -> dict:
    """The RAS docs' JSON sample (a communicator of 2: rank 0 listed, rank 1 missing, unresponsive)."""
    text = RAS_JSON.read_text()
    return json.loads(text[text.index("{"):])


def _healthy() -> dict:
    """The sample made whole: a communicator of one rank, none missing (exit 0)."""
    doc = _ras_doc()
    comm = doc["communicators"][0]
    comm.update(size=1, ranks_count=1, missing_ranks_count=0, missing_ranks=[])
    return doc


def _ras(tmp_path: Path, doc: dict) -> tuple[int, dict]:
    return _parse(tmp_path, "nccl-ras", json.dumps(doc, indent=2))


def test_h15_01_ras_json_a_communicator_larger_than_its_ranks(tmp_path: Path) -> None:
    """H15-01: a RAS JSON communicator of `size` 4 listing one rank and none missing (three ranks cut
    from the document, or edited out): exit 0, 'no errors'. rasDumpCommsToJSON prints every rank
    it gathered and `commNRanks - nRanks` missing ones (collectives.cc): the two lists hold the
    communicator whole."""
    assert _ras(tmp_path, _healthy())[0] == 0
    doc = _healthy()
    doc["communicators"][0]["size"] = 4
    code, data = _ras(tmp_path, doc)
    assert code == 1, data
    assert data["errors"] == ["communicator ae94423cfbb2ef4a: size 4, but 1 rank(s) listed and 0 missing: "
                              "3 rank(s) not accounted for (the document cut or edited)"], data["errors"]


@pytest.mark.parametrize("field,value,says", [
    ("missing_ranks_count", 1, "missing_ranks_count 1, but 0 missing rank(s) listed"),
    ("ranks_count", 2, "ranks_count 2, but 1 rank(s) listed"),
    ("communicators_count", 3, "communicators_count 3, but 1 communicator(s) listed")],
    ids=["missing-count", "ranks-count", "communicators-count"])
def test_h15_02_ras_json_counts_that_are_not_their_lists(tmp_path: Path, field: str, value: int, says: str) -> None:
    """H15-02: a document whose own counts (`missing_ranks_count` 1 over an empty list, `ranks_count`
    2 over one rank, `communicators_count` 3 over one communicator) say more than it lists: the
    unresponsive rank, a rank or two communicators lost, exit 0. jsonStartCommunicator and
    jsonWriteHeader print each count from the list they then print."""
    doc = _healthy()
    (doc if field == "communicators_count" else doc["communicators"][0])[field] = value
    code, data = _ras(tmp_path, doc)
    assert code == 1 and any(says in e for e in data["errors"]), data["errors"]


def _two_ranks() -> dict:
    doc = _healthy()
    comm = doc["communicators"][0]
    comm.update(size=2, ranks_count=2)
    comm["ranks"].append(copy.deepcopy(comm["ranks"][0]))
    comm["ranks"][1]["rank"] = 1
    return doc


@pytest.mark.parametrize("edit,says", [
    (lambda c: c["ranks"][1].update(rank=0), "rank 0 is listed twice"),
    (lambda c: c["ranks"][1].update(rank=5), "rank 5 is outside the communicator's ranks 0 to 1"),
    (lambda c: c.update(missing_ranks=[{**c["ranks"][1], "rank": 0, "status": {"unresponsive": True,
                                                                             "considered_dead": False}}],
                        missing_ranks_count=1, size=3), "rank 0 is listed twice")],
    ids=["rank-twice", "rank-beyond-size", "present-and-missing"])
def test_h15_03_ras_json_a_rank_twice_or_outside_its_communicator(tmp_path: Path, edit, says: str) -> None:
    """H15-03: a communicator of 2 listing rank 0 twice (rank 1 lost), rank 5, or rank 0 both among
    its ranks and missing: exit 0 (or the missing one read as rank 0's state). Each rank of a
    communicator is listed once, 0 to size-1."""
    assert _ras(tmp_path, _two_ranks())[0] == 0
    doc = _two_ranks()
    edit(doc["communicators"][0])
    code, data = _ras(tmp_path, doc)
    assert code == 1 and any(says in e for e in data["errors"]), data["errors"]


@pytest.mark.parametrize("edit", [lambda r: r.update(status="ERROR"), lambda r: r.update(collective_counts=[1, 2])],
                         ids=["status-a-string", "counts-a-list"])
def test_h15_04_ras_json_a_rank_s_status_that_is_no_object(tmp_path: Path, edit) -> None:
    """H15-04: a rank whose `status` is the string "ERROR": 'internal error' (AttributeError), exit 3;
    one whose `collective_counts` is a list read as no counts. Now: not RAS JSON, exit 1, one line
    naming the file."""
    doc = _healthy()
    edit(doc["communicators"][0]["ranks"][0])
    path = tmp_path / "ras.json"
    path.write_text(json.dumps(doc))
    line = one_line_error(_cli("parse", "nccl-ras", path, "--json"), 1)
    assert f"{path}: nccl-ras: not NCCL RAS JSON: communicator ae94423cfbb2ef4a: rank 0" in line, line


def test_h15_04_ras_json_ranks_that_are_no_objects_are_not_dropped(tmp_path: Path) -> None:
    """The same for a `ranks` or `missing_ranks` item that is no object (`["rank1"]`): it was dropped,
    the rest read, exit 0."""
    doc = _ras_doc()
    doc["communicators"][0]["missing_ranks"] = ["rank1"]
    path = tmp_path / "ras.json"
    path.write_text(json.dumps(doc))
    line = one_line_error(_cli("parse", "nccl-ras", path, "--json"), 1)
    assert "missing_ranks[0] is not an object" in line, line


# -- NCCL_DEBUG: every host's own network ----------------------------------------------------------

def _host_lines(host: str, addr: str, net: str) -> str:
    p = f"{host}:{100 if host == 'h1' else 200}:{100 if host == 'h1' else 200} [0] NCCL INFO "
    head = f"{p}NCCL version 2.21.5+cuda12.4\n{p}Bootstrap : Using eth0:{addr}<0>\n"
    if net == "IB":
        return head + f"{p}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:{addr}<0>\n{p}Using network IB\n"
    return head + f"{p}NET/IB : No device found.\n{p}NET/Socket : Using [0]eth0:{addr}<0>\n{p}Using network Socket\n"


def test_h15_05_nccl_debug_one_host_fell_back_to_sockets(tmp_path: Path) -> None:
    """H15-05: a two-host log where h1 runs on IB and h2, finding no HCA ('NET/IB : No device
    found.'), on sockets: exit 0, and `net` said network Socket with h1's two IB devices. A job's
    ranks connect over one network (net.cc picks it a process): two are a fault."""
    code, data = _parse(tmp_path, "nccl-debug", _host_lines("h1", "10.0.0.1", "IB") + _host_lines("h2", "10.0.0.2", "Socket"))
    assert code == 1, data
    assert "2 networks in one log (IB on h1, Socket on h2): a host fell back to another transport" in \
        " ".join(data["faults"]), data["faults"]
    assert [(h["host"], h["network"]) for h in data["net_hosts"]] == [("h1", "IB"), ("h2", "Socket")]
    assert set(data["net"]) == {"network", "devices", "oob"}, data["net"]
    both = _host_lines("h1", "10.0.0.1", "IB") + _host_lines("h2", "10.0.0.2", "IB")
    assert _parse(tmp_path, "nccl-debug", both)[0] == 0


# -- ibportstate ------------------------------------------------------------------------------------

def test_h15_06_ibportstate_a_field_twice_in_one_port_block(tmp_path: Path) -> None:
    """H15-06: a query's port block with `LinkState` given twice, Down then Active (two outputs
    spliced line by line, or an edit): the later kept, exit 0. mad_dump_portinfo prints each field
    once a block."""
    text = IBPORTSTATE.read_text().replace("LinkState:.......................Active",
                                           "LinkState:.......................Down\nLinkState:.......................Active", 1)
    code, data = _parse(tmp_path, "ibportstate", text)
    assert code == 1, data
    assert "CA/RT port 2 (lid 12): LinkState is listed twice (Down, then Active): outputs spliced" in data["errors"], data
    assert "CA/RT port 2 (lid 12): LinkState Down" in data["faults"], data["faults"]
    assert _parse(tmp_path, "ibportstate", IBPORTSTATE.read_text())[0] == 0


# -- another tool's output -------------------------------------------------------------------------

def test_h15_07_amd_smi_fed_an_rccl_log_of_upper_case_hosts(tmp_path: Path) -> None:
    """H15-07: `parse amd-smi` of an RCCL NCCL_DEBUG log whose hosts are named in upper case
    (`MI300X-GRN-1:744139:744139 [0] NCCL INFO ...`, harvest 18): each host read as a key of a GPU
    of no id, exit 0 at 496c0e3 (the upper-case rule let it through). parse28f's amd-smi key
    vocabulary (7b61ef0, landed during this round) refuses it: exit 1, one line naming the file."""
    line = one_line_error(_cli("parse", "amd-smi", RCCL_DEBUG, "--json"), 1)
    assert str(RCCL_DEBUG) in line, line


@pytest.mark.parametrize("view,other", [("ibportstate", "mlxlink"), ("mlxlink", "ibportstate"),
                                        ("ibv-devinfo", "ibstatus"), ("ethtool-mlx5", "perfquery"),
                                        ("nccl-inspector", "nccl-ras"), ("nccl-ras", "nccl-inspector"),
                                        ("amd-smi-monitor", "rocm-smi-showtopo")])
def test_h15_08_the_last_stops_views_fed_each_other_s_captures(view: str, other: str) -> None:
    """H15-08: the views added in the last stops, each fed another's real capture (harvest 17):
    exit 1 naming the file (held; ibv-devinfo reads ibstatus' ports as ports cut from their
    `hca_id:` line, and says so)."""
    capture = next(p for p in sorted((H17 / other).iterdir()))
    r = _cli("parse", view, capture, "--json")
    assert r.exit_code == 1 and "Traceback" not in r.output and str(capture) in r.output, r.output


# -- Slurm's environment ---------------------------------------------------------------------------

@pytest.mark.parametrize("env", [
    {"SLURM_JOB_NODELIST": "n1,n1", "SLURM_TASKS_PER_NODE": "2(x2)"},
    {"SLURM_JOB_NODELIST": "n[1-2],n1", "SLURM_TASKS_PER_NODE": "1(x3)", "SLURM_DISTRIBUTION": "cyclic"},
    {"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_STEP_NODELIST": "n1,n1", "SLURM_STEP_TASKS_PER_NODE": "1,1"}],
    ids=["job-list", "cyclic", "step-list"])
def test_h15_09_a_node_list_naming_a_node_twice_makes_no_rank_map(env: dict[str, str]) -> None:
    """H15-09: `SLURM_JOB_NODELIST=n1,n1` (or a step's): ranks 0 and 2 both placed on n1/gpu0, two
    ranks on one card. Slurm's node lists name a node once (an allocation holds it once): no map."""
    assert from_slurm(env) is None
    assert from_slurm({"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "2(x2)"}) is not None


def test_h15_10_two_plane_sizes_make_no_rank_map() -> None:
    """H15-10: `SLURM_DISTRIBUTION=plane=2` beside `SLURM_DIST_PLANESIZE=4`: dealt in planes of 2,
    the other size unsaid. srun sets both from one `-m plane=N`: two sizes contradict, no map."""
    env = {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_DISTRIBUTION": "plane=2"}
    assert from_slurm({**env, "SLURM_DIST_PLANESIZE": "4"}) is None
    m = from_slurm({**env, "SLURM_DIST_PLANESIZE": "2"})
    assert m is not None and [(p.host, p.local_rank) for p in m.placements.values()][:3] == \
        [("n1", 0), ("n1", 1), ("n2", 0)]


# -- watch -----------------------------------------------------------------------------------------

def test_h15_11_watch_a_dump_that_is_a_symlink_loop(tmp_path: Path) -> None:
    """H15-11: a dump directory holding a symlink loop (`a -> b -> a`) beside a RAS dump: 'internal
    error ... RuntimeError: Symlink loop', exit 3, nothing judged. Now the loop is an unreadable
    dump (a finding, exit 1) and the RAS dump is judged."""
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_bytes(RAS_TEXT.read_bytes())
    os.symlink(d / "b.json", d / "a.json")
    os.symlink(d / "a.json", d / "b.json")
    r = _cli("watch", d, "--once", "--out", tmp_path / "out")
    assert r.exit_code == 1 and "Traceback" not in r.output and "internal error" not in r.output, r.output
    assert "a.json: dump unreadable" in r.output, r.output
    rules = sorted(f["rule"] for f in json.loads((tmp_path / "out" / "results.json").read_text())["findings"])
    assert rules.count("watch-ras-mismatch") == 2 and "watch-dump-unreadable" in rules, rules


def test_h15_12_watch_a_dangling_link_is_an_unreadable_dump(tmp_path: Path) -> None:
    """H15-12: a dangling link among the dumps: 'dump unreadable', exit 1, the rest judged (held)."""
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_bytes(RAS_TEXT.read_bytes())
    os.symlink(tmp_path / "nowhere", d / "rank3.json")
    r = _cli("watch", d, "--once", "--out", tmp_path / "out")
    assert r.exit_code == 1 and "rank3.json: dump unreadable: cannot read" in r.output, r.output


# -- inventories -----------------------------------------------------------------------------------

@pytest.mark.parametrize("host,why", [("h1..x", "an empty label"), ("h1-", "a label ending in '-'"),
                                      ("h1.-x", "a label starting with '-'"), ("a" * 64, "a label of 64 characters")],
                         ids=["empty-label", "trailing-dash", "dash-label", "label-64"])
def test_h15_13_a_host_name_yaml_takes_and_dns_does_not(tmp_path: Path, host: str, why: str) -> None:
    """H15-13: hosts `h1..x`, `h1-`, `h1.-x`, a 64-character label: accepted; none is a DNS name
    (RFC 1123: labels of 1 to 63 characters, no '-' at either end; a resolver cannot even send the
    first and the last), so the host is 'unreachable' for a reason the inventory could have said.
    Refused at its line now."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(SMALL.replace("'h[1-3]'", f"['h2', '{host}']"))
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:5:" in line and why in line, line


@pytest.mark.parametrize("hosts", ["[]", "'h[3-1]'", "SECOND"], ids=["empty-list", "backwards-range", "second-empty"])
def test_h15_14_a_supernode_of_zero_hosts(tmp_path: Path, hosts: str) -> None:
    """H15-14: a supernode whose hosts are `[]`, `h[3-1]`, or a second supernode of none: refused at
    its line (held)."""
    inv = tmp_path / "inv.yaml"
    inv.write_text(SMALL + "  - {name: sn1, hosts: [], cards_per_host: 2}\n" if hosts == "SECOND"
                   else SMALL.replace("'h[1-3]'", hosts))
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:{6 if hosts == 'SECOND' else 5}:" in line, line


def test_h15_15_a_faults_file_naming_one_link_both_ways(tmp_path: Path, inv3: Path) -> None:
    """H15-15: one link degraded twice, written `a<->b` then `b<->a`: refused at the second (held)."""
    faults = tmp_path / "f.yaml"
    faults.write_text("faults:\n  - {type: degraded_link, target: 'h1/gpu0<->h1/gpu1', factor: 0.5}\n"
                      "  - {type: degraded_link, target: 'h1/gpu1<->h1/gpu0', factor: 0.9}\n")
    line = one_line_error(_cli("connectivity", "-i", inv3, "--backend", "mock", "-q", "--out", tmp_path / "r",
                               "--faults", faults))
    assert f"{faults}:3: a second degraded_link" in line, line


# -- rules -----------------------------------------------------------------------------------------

def _rules(tmp_path: Path, rule: str) -> Path:
    p = tmp_path / "rules.yaml"
    p.write_text("extends: default\nrules:\n  - {name: x, " + rule + "}\n")
    return p


@pytest.mark.parametrize("rule,says", [
    ("op: counter_growth, metric: fabric_counters, counters: [crc_errors], above: -1, severity: critical",
     "above: -1: every count (0 or more) is above it"),
    ("op: behind_peers, metric: fr_not_entered, min_peer_share: 2, severity: critical",
     "min_peer_share: 2: a share is 0 to 1"),
    ("op: behind_peers, metric: fr_not_entered, min_peer_share: 0, severity: critical",
     "min_peer_share: 0: a share is 0 to 1"),
    ("op: straggler, metric: fr_arrival, min_collectives: -1, severity: warning", "min_collectives: -1: at least 1"),
    ("op: drift, metric: p2p_bandwidth, scope: card, below: 0.95, min_runs: 1, severity: warning",
     "min_runs: 1: at least 2"),
    ("op: drift, metric: p2p_bandwidth, scope: card, below: 0.95, z: -3, severity: warning", "z: -3: at least 0"),
    ("op: peer_outlier, metric: p2p_latency, method: ratio, above: 1.3, min_excess: -5, per: card, scope: card, "
     "severity: warning", "min_excess: -5: at least 0"),
    ("op: peer_outlier, metric: p2p_bandwidth, method: ratio, below: 0.8, min_peers: 0, severity: critical",
     "min_peers: 0: at least 1")],
    ids=["growth-above-minus-1", "peer-share-2", "peer-share-0", "collectives-minus-1", "drift-one-run",
         "drift-z-minus-3", "excess-minus-5", "min-peers-0"])
def test_h15_16_rule_bars_that_judge_every_entity_or_none(tmp_path: Path, rule: str, says: str) -> None:
    """H15-16: bars no value can cross or every value crosses, in the ops the in-job and history
    rules added: counter growth above -1 (every link a finding), a hung rank only when 200% of its
    peers entered, 0 collectives or 1 run on record enough, a noise bar of -3 z, an excess of -5 us,
    a median of no peers. Accepted; refused at the line now, as a ratio's bar below 0 is."""
    rules = _rules(tmp_path, rule)
    line = one_line_error(_cli("rules", "check", rules))
    assert f"{rules}:3: rule 'x': {says}" in line, line


@pytest.mark.parametrize("rule", [
    "op: straggler, metric: fr_arrival, share_above: .nan, severity: warning",
    "op: behind_peers, metric: fr_not_entered, min_peer_share: .inf, severity: critical",
    "op: drift, metric: p2p_bandwidth, scope: card, below: 0.95, z: .nan, severity: warning"],
    ids=["share-nan", "peer-share-inf", "z-nan"])
def test_h15_17_rule_bars_of_nan_or_infinity(tmp_path: Path, rule: str) -> None:
    """H15-17: NaN or infinity in the same ops' bars: refused at the line (held)."""
    rules = _rules(tmp_path, rule)
    assert f"{rules}:3:" in one_line_error(_cli("rules", "check", rules))


# -- options given empty or twice ------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--out", "--faults", "--rules", "--baseline", "--state-dir"])
def test_h15_18_a_path_option_given_empty(tmp_path: Path, inv3: Path, option: str) -> None:
    """H15-18: `--faults "$FAULTS"` with the variable unset: `--faults ''` ran without faults, exit 0
    (a mock gate passing what it was told to inject); `--rules ''` judged by the shipped rules,
    `--baseline ''` against none, `--state-dir ''` recorded nothing, `--out ''` wrote to
    runs/<id>. An empty path names no file: refused, exit 2, naming the option."""
    r = _cli("connectivity", "-i", inv3, "--backend", "mock", "--seed", "1", "-q",
             *(["--out", tmp_path / "run"] if option != "--out" else []), option, "")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"Invalid value for '{option}'" in r.output and "an empty path names no file" in r.output, r.output
    assert not (tmp_path / "run" / "results.json").exists()


def test_h15_18_watch_rank_map_given_empty(tmp_path: Path) -> None:
    """The same for `watch --rank-map ''`: the dumps were judged with no map, exit 0."""
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_bytes(RAS_TEXT.read_bytes())
    r = _cli("watch", d, "--once", "--out", tmp_path / "out", "--rank-map", "")
    assert r.exit_code == 2 and "Invalid value for '--rank-map'" in r.output, r.output


@pytest.mark.parametrize("args", [("--format", "html", "--format", "junit"), ("--targets", "h1", "--seed", "2")],
                         ids=["format-twice", "seed-twice"])
def test_h15_19_an_option_of_one_value_given_twice(tmp_path: Path, inv3: Path, args: tuple[str, ...]) -> None:
    """H15-19: `--format` or `--seed` given twice, an isolation's `--cap` twice (a wrapper's cap
    replaced by the operator's): refused, exit 2 (held)."""
    r = _cli("connectivity", "-i", inv3, "--backend", "mock", "--seed", "1", "-q", "--out", tmp_path / "r", *args)
    assert r.exit_code == 2 and "given twice" in r.output, r.output
    r = _cli("isolate", "h1", "-i", inv3, "--cap", "0.1", "--cap", "1", "--via", "hostfile", "--apply",
             "--state-dir", tmp_path / "state")
    assert r.exit_code == 2 and "option --cap given twice" in r.output, r.output
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").iterdir())


# -- the golden band, plan's time account ----------------------------------------------------------

@pytest.mark.parametrize("band", [{"step_rel": 100}, {"final_rel": 1.0}, {"step_rel": 1.5, "final_rel": 0.03}])
def test_h15_20_a_golden_band_that_holds_any_loss(tmp_path: Path, band: dict) -> None:
    """H15-20: a golden reference whose band is 100 (10,000%) or 1 (100%): every loss from 0 to
    101 (or 2) times the reference is within it, a diverged model passes the golden gate. A band of
    1 or more holds a loss of 0: refused when the reference loads (exit 2, naming the file)."""
    from sncheck.layers.golden import load_reference

    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"schema": "sncheck.golden/1", "loss": [2.3, 2.1, 1.9], "band": band}))
    with pytest.raises(ConfigError) as e:
        load_reference(str(ref))
    assert str(ref) in str(e.value) and "less than 1" in str(e.value), str(e.value)
    ref.write_text(json.dumps({"schema": "sncheck.golden/1", "loss": [2.3, 2.1, 1.9], "band": {"step_rel": 0.5}}))
    assert load_reference(str(ref))["band"]["step_rel"] == 0.5


def test_h15_20_golden_record_of_runs_too_far_apart_writes_no_such_band() -> None:
    """`golden record` made its band 3 times the runs' widest spread: runs 50% off their mean wrote a band of
    1.5, which the reference now refuses when it loads. Refused when recorded instead."""
    from sncheck.run.recording import curve_from_runs

    def run(scale: float) -> list[dict]:
        return [{"kind": "golden", "stage": "group", "step": s, "loss": scale * (2.0 - 0.1 * s)} for s in range(4)]

    with pytest.raises(ConfigError, match="these are not clean runs of one model"):
        curve_from_runs([run(1.0), run(3.0)], "t", "mock", {})
    assert curve_from_runs([run(1.0), run(1.01)], "t", "mock", {})["band"]["step_rel"] < 1


@pytest.mark.parametrize("option,value", [("--peak-tflops", "1e-300"), ("--mfu", "1e-300")])
def test_h15_21_plan_of_a_card_of_no_speed(option: str, value: str) -> None:
    """H15-21: `plan --peak-tflops 1e-300` (or `--mfu 1e-300`): a step of 10^290 seconds printed in
    full, 'communication is 0% of the step ... leave the network alone', exit 0. Refused, exit 2."""
    r = _cli("plan", "--params", "7B", "--layout", "tp=2,dp=3", "--card-memory", "80GB", "--hidden", "4096",
             "--layers", "32", "--domain", "6", option, value)
    assert r.exit_code == 2 and f"Invalid value for '{option}'" in r.output, r.output


# -- records, inputs and stores that are not what they say -----------------------------------------

def test_h15_22_a_results_json_finding_on_a_link_to_a_ghost(tmp_path: Path, inv3: Path) -> None:
    """H15-22: a passing run's results.json given a finding on the link `h1/gpu0<->ghost/gpu1`, and
    one on `ghost/gpu0` that claims `evidence.mapped: false` (watch's own mark, in a run that is not
    watch's): `diff` refuses both, exit 2 (held)."""
    _run(inv3, tmp_path / "a")
    for entity, kind, evidence in (("h1/gpu0<->ghost/gpu1", "link", {}), ("ghost/gpu0", "card", {"mapped": False})):
        edited = tmp_path / f"e-{kind}"
        edited.mkdir()
        doc = json.loads((tmp_path / "a" / "results.json").read_text())
        doc["findings"].append({"entity": entity, "entity_kind": kind, "layer": "connectivity", "rule": "p2p-bw",
                                "severity": "info", "message": "edited", "evidence": evidence})
        (edited / "results.json").write_text(json.dumps(doc))
        line = one_line_error(_cli("diff", tmp_path / "a", edited))
        assert "not of the run's own topology" in line, line


@pytest.mark.parametrize("what", ["inventory", "rules", "parse", "dump"])
def test_h15_23_a_ten_gigabyte_sparse_file_is_refused_unread(tmp_path: Path, what: str) -> None:
    """H15-23: a 10 GB sparse file (`truncate -s 10G`) as an inventory, a rules file, a capture or a
    watch dump: refused by its size before a byte is read (held)."""
    big = tmp_path / ("dumps" if what == "dump" else "") / "big.yaml"
    big.parent.mkdir(exist_ok=True)
    with open(big, "wb") as f:
        f.truncate(10 << 30)
    if what == "dump":
        r = _cli("watch", big.parent, "--once", "--out", tmp_path / "out")
        assert r.exit_code == 1 and "more than the 64 MB a dump may be" in r.output, r.output
        return
    args = {"inventory": ("inventory", "check", big), "rules": ("rules", "check", big),
            "parse": ("parse", "ibstat", big)}[what]
    line = one_line_error(_cli(*args))
    assert str(big) in line and "larger than" in line, line


@pytest.mark.parametrize("option", ["--rules", "--baseline"])
def test_h15_24_a_rules_or_baseline_path_that_is_a_symlink_loop(tmp_path: Path, inv3: Path, option: str) -> None:
    """H15-24: `--rules` (or `--baseline`) naming a symlink loop: 'no such rules file or shipped rules
    name', as if the path were a name never written. Now the loop is said."""
    loop = tmp_path / "loop.yaml"
    os.symlink(tmp_path / "loop2.yaml", loop)
    os.symlink(loop, tmp_path / "loop2.yaml")
    line = one_line_error(_cli("connectivity", "-i", inv3, "--backend", "mock", "-q", "--out", tmp_path / "r",
                               option, loop))
    assert str(loop) in line and "Too many levels of symbolic links" in line, line


@pytest.mark.parametrize("what", ["sparse", "loop"])
def test_h15_25_a_state_store_that_is_a_sparse_file_or_a_loop(tmp_path: Path, what: str) -> None:
    """H15-25: a state directory whose state.db is a 3 GB sparse file, or a state directory that is a
    symlink loop: `history --runs` and `status` exit 2 naming it (held)."""
    state = tmp_path / "state"
    if what == "sparse":
        state.mkdir()
        with open(state / "state.db", "wb") as f:
            f.truncate(3 << 30)
    else:
        os.symlink(tmp_path / "other", state)
        os.symlink(state, tmp_path / "other")
    for args in (("history", "--runs"), ("status",)):
        line = one_line_error(_cli(*args, "--state-dir", state))
        assert str(state) in line, line


def test_h15_26_a_baseline_made_of_a_watch_run(tmp_path: Path) -> None:
    """H15-26: `baseline make` of a `watch` run (findings, no measurement rows): refused, exit 2,
    never an empty baseline that judges nothing (held)."""
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_bytes(RAS_TEXT.read_bytes())
    assert _cli("watch", d, "--once", "--out", tmp_path / "w", "-q").exit_code == 0
    line = one_line_error(_cli("baseline", "make", tmp_path / "w", "--out", tmp_path / "b.json"))
    assert "no measurement rows" in line, line
    assert not (tmp_path / "b.json").exists()
