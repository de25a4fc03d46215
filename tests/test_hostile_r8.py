"""Hostile inputs, round 8: round 7's four leftovers (H8-01..H8-04) and attacks on what the
last sessions changed (H8-05..H8-24): perfquery and ibqueryerrors judged as ib-counters, ``fabric
check --since``, the new parse views, the run store's parts, ``plan --measured``, SSH and Slurm
inputs, links and FIFOs, YAML aliases, huge inputs, runs sharing a directory, results.json of
another schema. Each test names its case id; the README's round 8 table lists them."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.health.cabling import counter_growth_findings
from sncheck.store.state import StateStore
from test_hardening import one_line_error
from test_hostile_r5 import _run_dir

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "inventories" / "demo-2sn.yaml"
REAL = ROOT / "fixtures" / "real"
PERFQUERY = next((REAL / "harvest8" / "perfquery").glob("03_*"))   # perfquery -x, LID 1719 ports 1 and 2
PORTS = next((REAL / "harvest7" / "ibnetdiscover").glob("01_*"))   # ibnetdiscover -p
ROCM_JSON = next((REAL / "harvest8" / "rocm-smi").glob("02_*"))    # rocm-smi --json, four MI100
TORCH = next((REAL / "harvest8" / "torch-nccl").glob("03_*"))      # the watchdog's async NCCL error


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _p2p_run(tmp_path: Path, name: str, bw: list[float], tiers: list[str]) -> Path:
    """A passed run whose p2p part holds these bandwidths (one pair each, both directions)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = _run_dir(tmp_path, name, layers=[{"name": "connectivity", "verdict": "pass"}])
    (run / "rows" / "p2p").mkdir()
    n = len(bw)
    pq.write_table(pa.table({"kind": ["p2p"] * n, "layer": ["connectivity"] * n, "status": ["ok"] * n,
                             "src": [f"n{i}/gpu0" for i in range(n)], "dst": [f"n{i}/gpu1" for i in range(n)],
                             "tier": tiers, "bw_GBps": bw, "bw_rev_GBps": bw, "lat_us": [3.0] * n}),
                   run / "rows" / "p2p" / "part-000001.parquet")
    return run


# -- H8-01: a non-finite bandwidth drops its tier from a baseline ---------------------------------

def test_h8_01_a_part_with_inf_bandwidth_is_refused_not_its_tier_dropped(tmp_path: Path) -> None:
    """H8-01 (round 7's leftover): every scale_out pair at inf GB/s was left out of the norm, so
    'baseline make' wrote intra_host alone, exit 0: the tier gone without a word."""
    run = _p2p_run(tmp_path, "a", [450.0, 451.0, float("inf"), float("inf")],
                   ["intra_host", "intra_host", "scale_out", "scale_out"])
    line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "b.json"))
    assert str(run) in line and "2 measured p2p row(s) hold a bw_GBps no measurement gives (first: inf, " \
        "n2/gpu0<->n2/gpu1, tier scale_out)" in line, line
    assert not (tmp_path / "b.json").exists()
    whole = _p2p_run(tmp_path, "b", [450.0, 451.0, 50.0, 51.0], ["intra_host", "intra_host", "scale_out", "scale_out"])
    assert _cli("baseline", "make", whole, "--out", tmp_path / "b.json").exit_code == 0
    assert sorted(json.loads((tmp_path / "b.json").read_text())["metrics"]["p2p_bandwidth"]["tier"]) == \
        ["intra_host", "scale_out"]


# -- H8-02: an IB counter going backwards counted as growth ---------------------------------------

SYSFS = "/sys/class/infiniband/mlx5_0/ports/1/counters/{}:{}\n"


def _sysfs(tmp_path: Path, name: str, symbol_error: int) -> Path:
    path = tmp_path / name
    path.write_text(SYSFS.format("symbol_error", symbol_error) + SYSFS.format("link_downed", 0) + "# end of counters\n")
    return path


@pytest.mark.parametrize("after", [0, 3])
def test_h8_02_a_counter_that_went_down_is_not_judged_never_its_value_as_growth(tmp_path: Path, after: int) -> None:
    """H8-02 (round 7's leftover): symbol_error 500 before and 0 after (a driver reload, perfquery
    -R, a swapped port) was growth 0: exit 0; 3 after was growth +3. The growth is unknown."""
    r = _cli("parse", "ib-counters", _sysfs(tmp_path, "after.txt", after), "--since", _sysfs(tmp_path, "b.txt", 500))
    assert r.exit_code == 1 and f"not judged: IB port error counters went down during the run (reset, wrapped, " \
        f"or another port read): their growth is unknown: mlx5_0 port 1 symbol_error 500 -> {after}" in r.output, r.output
    judged = json.loads(r.stdout)["judged"]
    assert [j["counters"][0]["growth"] for j in judged if j["rule"] == "ib-port-errors-grew"] == [None]
    assert "+3" not in r.output
    grew = _cli("parse", "ib-counters", _sysfs(tmp_path, "c.txt", 503), "--since", _sysfs(tmp_path, "b.txt", 500))
    assert grew.exit_code == 1 and "symbol_error +3 (500 -> 503)" in grew.output and "went down" not in grew.output


def test_h8_02_perfquery_since_a_read_whose_counter_went_down_is_not_judged(tmp_path: Path) -> None:
    """H8-02, perfquery (one judgement): the same counter read through perfquery -x."""
    earlier = tmp_path / "before.txt"
    earlier.write_text(PERFQUERY.read_text().replace("SymbolErrorCounter:..............0",
                                                     "SymbolErrorCounter:..............900", 1))
    r = _cli("parse", "perfquery", PERFQUERY, "--since", earlier)
    assert r.exit_code == 1 and "not judged" in r.output and "symbol_error 900 -> 0" in r.output, r.output


# -- H8-03: a stray SQLite side file marked a directory as sncheck's -----------------------------

@pytest.mark.parametrize("side", ["state.db-wal", "state.db-journal", "state.db-shm"])
def test_h8_03_a_side_file_alone_is_no_state_directory(tmp_path: Path, side: str) -> None:
    """H8-03 (round 7's leftover): a directory holding another program's files and a stray
    state.db-wal was taken for sncheck's: state.db made beside it (SQLite may replay that WAL)."""
    d = tmp_path / "other"
    d.mkdir()
    (d / side).write_bytes(b"not ours")
    (d / "job.sh").write_text("#!/bin/sh\n")
    line = one_line_error(_cli("status", "--state-dir", d))
    assert f"holds 'job.sh', '{side}' and no sncheck state (state.db): another program's directory" in line, line
    assert sorted(p.name for p in d.iterdir()) == ["job.sh", side]
    with StateStore(tmp_path / "ours"):
        pass
    (tmp_path / "ours" / side).write_bytes(b"")   # beside its database it is the database's
    assert _cli("status", "--state-dir", tmp_path / "ours").exit_code == 0


# -- H8-04: a kernel table key YAML reads as a float (or a bool) ----------------------------------

@pytest.mark.parametrize("key,says", [("13.0", "table key 13.0: YAML reads a float"),
                                      ("on", "table key True: YAML reads a bool")])
def test_h8_04_a_kernel_table_key_that_is_no_code_is_refused_at_its_line(tmp_path: Path, key: str, says: str) -> None:
    """H8-04 (round 7's leftover): '13.0:' equals 13 as a key, so merged over the default table it
    replaced Xid 13's entry (info -> critical) and 'rules check' said ok."""
    path = tmp_path / "r.yaml"
    path.write_text(f"extends: default\nrules:\n  - name: kernel-xid\n    table:\n      {key}: "
                    "{severity: critical, action: reset_gpu}\n")
    line = one_line_error(_cli("rules", "check", path))
    assert f"{path}:5: rule 'kernel-xid': {says}, not a code" in line, line
    path.write_text(path.read_text().replace(f"      {key}:", "      13:"))
    assert _cli("rules", "check", path).exit_code == 0


# -- H8-05, H8-06: fabric check --since, counters that went down and ports not in both reads ----

def _bars():  # the shipped rules' counter bars, as fabric check --since judges by them
    from sncheck.health.cabling import growth_bars
    from sncheck.health.rules import load_rules

    return growth_bars(load_rules().rules)


def test_h8_05_a_switch_port_counter_that_went_down_is_not_judged() -> None:
    """H8-05: fabric check --since judged only growth above 0: a switch port whose symbol_error
    went from 40 to 0 (cleared, or another port's read) passed, exit 0."""
    found = counter_growth_findings({"leaf:a[3]": {"symbol_error": 40, "link_downed": 0}},
                                    {"leaf:a[3]": {"symbol_error": 0, "link_downed": 0}}, None, _bars())
    assert [(f.entity, f.not_judged) for f in found] == [("leaf:a[3]", True)]
    assert "not judged: symbol_error 40 -> 0 went down (reset, wrapped, or another port read): the growth is " \
        "unknown" in found[0].message
    assert found[0].evidence["counters"] == {"symbol_error": {"before": 40, "after": 0, "growth": None}}


def test_h8_06_a_port_in_one_read_only_is_not_judged_not_passed() -> None:
    """H8-06 (held: main's 46ade99 made these not judged during this session): a port read now
    that the saved counters lack (a new cable) and one saved and no longer read (its link gone)."""
    found = counter_growth_findings({"leaf:a[1]": {"symbol_error": 0}, "leaf:a[2]": {"symbol_error": 0}},
                                    {"leaf:a[1]": {"symbol_error": 0}, "leaf:a[9]": {"symbol_error": 7}}, None,
                                    _bars())
    said = {f.entity: f.message for f in found if f.not_judged}
    assert sorted(said) == ["leaf:a[2]", "leaf:a[9]"], found
    assert "read before and not now" in said["leaf:a[2]"] and "read only now: its growth is unknown" in said["leaf:a[9]"]
    assert counter_growth_findings({"leaf:a[1]": {"symbol_error": 0}}, {"leaf:a[1]": {"symbol_error": 0}}, None,
                                   _bars()) == []


# -- H8-07..H8-08, H8-13: the parse views added last session --------------------------------------

@pytest.mark.parametrize("port", ["256", "4294967295"])
def test_h8_07_a_port_number_beyond_a_byte_is_no_line_of_ibnetdiscover(tmp_path: Path, port: str) -> None:
    """H8-07: the switch gap check built every number from 1 to a switch's highest port: a
    line claiming port 4294967295 ran out of memory (main under ulimit -v 4 GB: "out of memory", exit 3, after
    14 s at 2.3 GB resident)."""
    path = tmp_path / "p.txt"
    path.write_text(PORTS.read_text().replace("SW  1781 80 ", f"SW  1781 {port} ", 1))
    r = _cli("parse", "ibnetdiscover", path)
    assert r.exit_code == 1 and f"a line the grammar does not hold: \"SW  1781 {port} 0x08c0eb0300add20e" in r.output
    assert "switch 0x08c0eb0300add20e:" not in r.output, r.output  # no gap check over its claimed ports


def test_h8_08_a_json_key_given_twice_is_not_one_document(tmp_path: Path) -> None:
    """H8-08: rocm-smi --json with 'card0' twice (two reads spliced) kept the last: 4 cards read
    whole, exit 0, the other card0's values gone."""
    text = ROCM_JSON.read_text()
    body = json.loads(text[text.index("{"):])
    path = tmp_path / "dup.json"
    path.write_text(text.replace('"card1": {', '"card0": ' + json.dumps(body["card0"]) + ',\n    "card1": {', 1))
    r = _cli("parse", "rocm-smi", path)
    assert r.exit_code == 1 and "the key 'card0' is given twice in one object: two outputs spliced" in r.output, \
        r.output
    assert _cli("parse", "rocm-smi", ROCM_JSON).exit_code == 0


def test_h8_13_a_parse_failure_prints_the_input_s_controls_escaped(tmp_path: Path) -> None:
    """H8-13: parse's failure lines printed the input's text raw: a right-to-left override in an
    NCCL error string reordered the line on the reader's terminal (every other line is shown())."""
    path = tmp_path / "w.txt"
    path.write_text(TORCH.read_text().replace("remote process exited", "remote process\u202e\x07 exited", 1))
    r = _cli("parse", "torch-nccl", path)
    assert r.exit_code == 1 and "remote process\\u202e\\u0007 exited" in r.output, r.output
    assert "\u202e" not in r.output and "\x07" not in r.output


# -- H8-09..H8-11: what a run directory gives plan --measured and baseline make ------------------

PLAN = ("plan", "--params", "70B", "--layout", "tp=4,pp=4,dp=2", "--hidden", 8192, "--layers", 80,
        "--card-memory", "80GB", "--measured")


@pytest.mark.parametrize("schema", ["sncheck.run/2", "sncheck.run/0", None])
def test_h8_09_plan_measured_refuses_a_run_of_another_schema(tmp_path: Path, schema: str | None) -> None:
    """H8-09: diff and baseline refuse a results.json of another schema; plan --measured read its
    rows and design as v1's, exit 0/1 (a newer writer's rows may mean something else)."""
    run = _p2p_run(tmp_path, "a", [450.0, 50.0], ["scale_up", "scale_out"])
    doc = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**doc, "schema": schema}))
    line = one_line_error(_cli(*PLAN, run))
    assert f"results.json of schema {schema!r}: this sncheck reads sncheck.run/1" in line, line


def test_h8_10_plan_measured_refuses_an_infinite_bandwidth(tmp_path: Path) -> None:
    """H8-10: plan --measured took 'scale_out inf GB/s' from a part of inf bandwidths: its
    send/recv cost its latency alone and the share fell (H8-01's class, in the ledger)."""
    run = _p2p_run(tmp_path, "a", [450.0, float("inf")], ["scale_up", "scale_out"])
    line = one_line_error(_cli(*PLAN, run))
    assert str(run) in line and "hold a bw_GBps no measurement gives (first: inf, tier scale_out)" in line, line


def test_h8_11_a_run_still_writing_is_no_baseline(tmp_path: Path) -> None:
    """H8-11: a run directory whose run holds its lock and has no results.json yet was read as a
    run killed before it: its rows, judged by nothing yet, became the baseline (exit 0)."""
    run = _p2p_run(tmp_path, "a", [450.0, 451.0, 452.0], ["scale_up"] * 3)
    (run / "results.json").unlink()
    fd = os.open(run / ".sncheck.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "b.json"))
        assert f"{run}: a run is still writing this run directory (it holds its lock)" in line, line
    finally:
        os.close(fd)
    assert _cli("baseline", "make", run, "--out", tmp_path / "b.json").exit_code == 0  # killed: as before


# -- H8-12, H8-14..H8-16: SSH and Slurm inputs -----------------------------------------------------

@pytest.mark.parametrize("user", ["root;id", "-oProxyCommand=touch_x", "r$(id)"])
def test_h8_12_the_ssh_user_is_held_to_the_host_user_s_rule(tmp_path: Path, user: str) -> None:
    """H8-12: hosts.NAME.user refused 'root;id'; the inventory-wide ssh.user took it (typed as a
    path), exit 0."""
    path = tmp_path / "inv.yaml"
    path.write_text(DEMO.read_text() + f"ssh: {{user: '{user}'}}\n")
    line = one_line_error(_cli("inventory", "check", path))
    assert f"ssh.user: {user!r} has characters that are not allowed" in line, line
    # real login names pass, in both places (hosts.NAME.user refused svc_gpu and ops@corp.example before)
    for name in ("svc_gpu", "ops@corp.example", "_sncheck", "host01$"):
        path.write_text(DEMO.read_text() + f"ssh: {{user: '{name}'}}\nhosts:\n  node001: {{user: '{name}'}}\n")
        assert _cli("inventory", "check", path).exit_code == 0, name


@pytest.mark.parametrize("hosts,says", [
    ("'n1;reboot'", "bad host name 'n1;reboot'"), ("'n$(id)'", "bad host name 'n$(id)'"),
    ("'-oProxyCommand=x'", "bad host name '-oProxyCommand=x'"), ("'node[1-0]'", "range '1-0' runs backwards"),
    ("'node[001-1000000]'", "names more than 100000 hosts"), ("'node[1-3,2]'", "host 'node2' is listed twice"),
])
def test_h8_14_host_names_that_a_shell_or_ssh_would_read_are_refused(tmp_path: Path, hosts: str, says: str) -> None:
    """H8-14 (held): a hostlist naming a command, an option, a backwards or huge range, or a host
    twice is refused at its line."""
    path = tmp_path / "inv.yaml"
    path.write_text(DEMO.read_text().replace("hosts: node[001-008]", f"hosts: {hosts}", 1))
    line = one_line_error(_cli("inventory", "check", path))
    assert f"{path}:8:" in line and says in line, line


@pytest.mark.parametrize("text", [
    "Host *\n  ProxyCommand\ttouch {pwn}\n", "Host *\n ProxyCommand=touch {pwn}\n",
    "Host *\n  \u00a0ProxyCommand touch {pwn}\n", "Match host x exec\"touch {pwn}\"\n",
    "Host *\n  KnownHostsCommand touch {pwn}\n", "\ufeffProxyCommand touch {pwn}\n",
])
def test_h8_15_ssh_config_directives_that_run_commands_are_refused(tmp_path: Path, text: str) -> None:
    """H8-15 (held): a tab, '=', a no-break space, exec glued to its quote, a byte-order mark:
    each refused (or unparsable) before paramiko looks a host up; nothing runs."""
    from sncheck.errors import ConfigError
    from sncheck.transport.sshconfig import load_ssh_config, resolve_host

    pwn = tmp_path / "pwn"
    cfg = tmp_path / "config"
    cfg.write_text(text.format(pwn=pwn))
    with pytest.raises(ConfigError, match="runs a local command|invalid ssh config"):
        resolve_host("node001", config=load_ssh_config(cfg))
    assert not pwn.exists()


def test_h8_16_ssh_config_directives_paramiko_never_runs_are_inert(tmp_path: Path) -> None:
    """H8-16 (held): RemoteCommand, PKCS11Provider, SecurityKeyProvider load and are never used
    (paramiko opens no such provider and sncheck runs its own command)."""
    from sncheck.transport.sshconfig import resolve_host

    cfg = tmp_path / "config"
    cfg.write_text(f"Host *\n  RemoteCommand touch {tmp_path / 'pwn'}\n  PKCS11Provider {tmp_path / 'evil.so'}\n")
    spec = resolve_host("node001", config=str(cfg))
    assert (spec.hostname, spec.proxy_jump) == ("node001", None) and not (tmp_path / "pwn").exists()


# -- H8-17..H8-24: parts, schemas, aliases, huge inputs, a shared directory, views (held) ----------

@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "other-run"])
def test_h8_17_a_part_that_is_not_a_regular_file_of_the_run_is_refused(tmp_path: Path, kind: str) -> None:
    """H8-17 (held): a part that is a FIFO (a read would hang), a link to /dev/zero (endless)
    or a link to another run's part (its rows read as this run's)."""
    other = _p2p_run(tmp_path, "other", [450.0], ["scale_up"])
    run = _run_dir(tmp_path, "a", layers=[{"name": "connectivity", "verdict": "pass"}])
    (run / "rows" / "p2p").mkdir()
    part = run / "rows" / "p2p" / "part-000001.parquet"
    if kind == "fifo":
        os.mkfifo(part)
    else:
        part.symlink_to("/dev/zero" if kind == "dev-zero" else other / "rows" / "p2p" / "part-000001.parquet")
    line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "b.json"))
    assert f"{part}: not a regular file" in line, line


@pytest.mark.parametrize("schema", ["sncheck.run/2", "sncheck.run/1.1", 1])
def test_h8_18_diff_and_baseline_refuse_a_results_json_of_another_schema(tmp_path: Path, schema: object) -> None:
    run = _p2p_run(tmp_path, "a", [450.0], ["scale_up"])
    doc = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**doc, "schema": schema}))
    for args in (("diff", run, run), ("baseline", "make", run, "--out", tmp_path / "b.json")):
        assert f"results.json of schema {schema!r}" in one_line_error(_cli(*args))


def _bomb() -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("what", ["rules", "faults", "playbook"])
def test_h8_19_billion_laughs_in_every_yaml_input_is_refused(tmp_path: Path, what: str) -> None:
    """H8-19 (held): round 2 bounded the inventory's aliases; rules, fault plans and playbooks
    go through the same loader."""
    path = tmp_path / f"{what}.yaml"
    if what == "rules":
        path.write_text(_bomb() + "rules: *a8\n")
        args: tuple[object, ...] = ("rules", "check", path)
    elif what == "faults":
        path.write_text(_bomb() + "faults: *a8\n")
        args = ("run", "post-delivery", "-i", DEMO, "--backend", "mock", "--faults", path, "--out", tmp_path / "r", "-q")
    else:
        path.write_text(_bomb() + "name: x\nlayers: *a8\n")
        args = ("run", path, "-i", DEMO, "--backend", "mock", "--out", tmp_path / "r", "-q")
    assert "expands to more than 1000000 nodes through its aliases" in one_line_error(_cli(*args))


@pytest.mark.parametrize("args,cap", [(("inventory", "check"), "yaml is larger than 16 MiB"),
                                      (("rules", "check"), "yaml is larger than 16 MiB"),
                                      (("parse", "nccl-tests"), "log is larger than 4 MiB")])
def test_h8_20_a_2_gb_line_is_refused_at_the_cap_never_read_whole(tmp_path: Path, args: tuple, cap: str) -> None:
    """H8-20 (held): a 2 GiB file of one line (sparse: no disk used) is refused at its kind's cap;
    the reader stops one byte past it."""
    path = tmp_path / "huge"
    with open(path, "wb") as f:
        f.truncate(2 * 1024 ** 3)
    assert cap in one_line_error(_cli(*args, path))


def test_h8_21_a_second_run_into_a_directory_in_use_is_refused(tmp_path: Path) -> None:
    """H8-21 (held): two runs with one --out: the second is refused while the first holds the
    lock, even with --force (which empties a finished run's directory, never a running one's)."""
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / ".sncheck.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        line = one_line_error(_cli("run", "post-delivery", "-i", DEMO, "--backend", "mock", "--out", out, "-q",
                                   "--force"))
        assert "another sncheck run is using this run directory" in line, line
    finally:
        os.close(fd)


def test_h8_22_a_perfquery_port_read_twice_is_not_whole(tmp_path: Path) -> None:
    """H8-22 (held): two reads of one port pasted into one file (the first with 900 errors)."""
    lines = PERFQUERY.read_text().splitlines(True)
    second = next(i for i, ln in enumerate(lines) if ln.startswith("# Port") and "port 2" in ln)
    first = lines[1:second]
    bad = [ln.replace("SymbolErrorCounter:..............0", "SymbolErrorCounter:..............900") for ln in first]
    path = tmp_path / "twice.txt"
    path.write_text(lines[0] + "".join(bad + first + lines[second:]))
    r = _cli("parse", "perfquery", path)
    assert r.exit_code == 1 and "port 1719 1 is listed twice: output spliced or repeated" in r.output, r.output


def test_h8_23_json_nested_past_any_tool_s_is_said_not_a_crash(tmp_path: Path) -> None:
    """H8-23 (held): rocm-smi --json nested 100,000 deep: 'nested too deep', exit 1."""
    path = tmp_path / "deep.json"
    path.write_text('{"card0": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    r = _cli("parse", "rocm-smi", path)
    assert r.exit_code == 1 and "JSON nested too deep" in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("option,value,says", [
    ("--params", "1e999B", "parameter count must be positive and below 1e16"),
    ("--params", "nanB", "is not a parameter count"),
    ("--layout", "tp=99999999999999999999999,pp=1,dp=1", "tp must be a positive integer of at most 1000000"),
    ("--layout", "tp=8;pp=4", "tp must be a positive integer"),
    ("--card-memory", "1e999GB", "is not a memory size"),
])
def test_h8_24_plan_numbers_out_of_any_range_are_refused(option: str, value: str, says: str) -> None:
    """H8-24 (held)."""
    args = {"--params": "70B", "--layout": "tp=8,pp=4,dp=2", "--card-memory": "80GB", option: value}
    r = _cli("plan", *[x for kv in args.items() for x in kv], "--hidden", 8192, "--layers", 80)
    assert says in one_line_error(r)



# -- H8-25, H8-26: Slurm's node list, watch's dumps -------------------------------------------------

@pytest.mark.parametrize("node,says", [
    ("NodeName=gpu$(id) NodeAddr=10.0.0.3", "NodeName 'gpu$(id)' is not a host name"),
    ("NodeName=gpu03 NodeAddr=10.0.0.3;touch${IFS}x", "node gpu03: NodeAddr '10.0.0.3;touch${IFS}x' is not an address"),
    ("NodeName=-oProxyCommand=x NodeAddr=10.0.0.3", "NodeName '-oProxyCommand=x' is not a host name"),
])
def test_h8_25_from_slurm_refuses_a_node_no_inventory_takes(tmp_path: Path, node: str, says: str) -> None:
    """H8-25: 'inventory from-slurm' wrote what scontrol printed: hosts 'gpu$(id)' and an address
    'a;touch x' in an inventory that then failed to load (exit 0 when written)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text("#!/bin/sh\n[ \"$2\" = nodes ] || exit 1\n"
                        f"printf '%s\\n' 'NodeName=gpu01 NodeAddr=10.0.0.1 Gres=gpu:4' '{node} Gres=gpu:4'\n")
    scontrol.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = CliRunner().invoke(main, ["inventory", "from-slurm", "--out", str(tmp_path / "inv.yaml")], env=env)
    line = one_line_error(r)
    assert line.startswith("sncheck: error: scontrol show nodes -o: ") and says in line, line
    assert not (tmp_path / "inv.yaml").exists()
    scontrol.write_text(scontrol.read_text().replace(node, "NodeName=gpu02 NodeAddr=gpu02.ib"))
    r = CliRunner().invoke(main, ["inventory", "from-slurm", "--out", str(tmp_path / "inv.yaml")], env=env)
    assert r.exit_code == 0 and _cli("inventory", "check", tmp_path / "inv.yaml").exit_code == 0, r.output


def test_h8_26_watch_reads_no_fifo_or_device_as_a_dump(tmp_path: Path) -> None:
    """H8-26 (held): a dump that is a FIFO (a read would hang) or a link to /dev/zero (endless) is
    'dump unreadable', a finding that fails the gate; watch --once ends."""
    (tmp_path / "ranks.json").write_text('[{"rank": 0, "host": "n1", "local_rank": 0}]')
    os.mkfifo(tmp_path / "fr_0.json")
    (tmp_path / "fr_1.pkl").symlink_to("/dev/zero")
    r = _cli("watch", tmp_path, "--once", "--out", tmp_path / "run")
    assert r.exit_code == 1, r.output
    assert "fr_0.json: dump unreadable: is a FIFO" in r.output and "fr_1.pkl: dump unreadable: is a character device" \
        in r.output, r.output


def test_h8_25b_from_slurm_refuses_a_node_name_the_actions_would_refuse() -> None:
    """final review: from-slurm's name check (hostlist.is_host_name) was check_name without its
    255-character bound, so a 256-character NodeName went into an inventory whose Slurm and
    Kubernetes actions then refused it. One rule now: check_name's."""
    from sncheck.errors import ConfigError
    from sncheck.slurm.cluster import _refuse_unusable

    # 255 characters in DNS labels of 63 (hostile r15: a label holds at most 63)
    _refuse_unusable({".".join(["n" * 63] * 4): {"NodeAddr": "10.0.0.1"}})
    with pytest.raises(ConfigError, match="is not a host name"):
        _refuse_unusable({".".join(["n" * 63] * 3 + ["n" * 62, "n"]): {"NodeAddr": "10.0.0.1"}})
    with pytest.raises(ConfigError, match="is not a host name"):
        _refuse_unusable({"n" * 64: {"NodeAddr": "10.0.0.1"}})
