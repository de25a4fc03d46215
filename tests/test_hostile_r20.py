"""Hostile inputs, round 20: round 19's leftovers (digits Click reads and the tools never print,
results.json times out of order, SIGTERM while the CLI starts, a state directory under a link, the
ssh config's host-key directives) and new ground where the remote side lies or misbehaves: a kernel
log read that prints bytes that are not UTF-8, NUL bytes or never ends, a fact command whose child
holds stderr open, a login that prints before its machine identity, two hosts whose InfiniBand
HCA is one, a Slurm node's task printing bytes that are not text, a drain reason that only starts
as node-check's; `watch`'s confirmation playbook, `plan`'s numbers and fabric maps at their edges.
Each test names its case id; the README's round 20 table lists them. New instances only: no case of
an earlier round is tested again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "real"
RAS = REAL / "nccl-ras" / "01_mismatch_allgather_2.26.2_issue1911.txt"


def _inv(tmp_path: Path, text: str = SMALL, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


def _mock(tmp_path: Path, *extra: object, inv: Path | None = None, out: str = "run"):
    return _cli("connectivity", "-i", inv or _inv(tmp_path), "--backend", "mock", "-q", "--out", tmp_path / out,
                *extra)


# -- round 19's leftovers ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("connectivity", "--seed", "\u0661"),        # Arabic-Indic 1
    ("connectivity", "--seed", "\uff11"),        # full-width 1
    ("connectivity", "--seed", "1_0"),           # int() reads 10
    ("plan", "--params", "7B", "--layout", "tp=1,dp=1", "--card-memory", "80GB", "--seq", "\u0664\u0660\u0669\u0666"),
    ("node-check", "--cards", "\u0664", "--no-collectives", "--no-drain", "--budget", "1s", "--node", "n1"),
    ("node-check", "--budget", "\u0663\u0660s", "--no-collectives", "--no-drain", "--cards", "1", "--node", "n1"),
    ("plan", "--params", "7B", "--layout", "tp=1,dp=1", "--card-memory", "80GB", "--mfu", "\u0660.\u0664"),
], ids=["seed-arabic", "seed-fullwidth", "seed-underscore", "plan-seq", "node-check-cards", "node-check-budget",
        "plan-mfu-float"])
def test_h20_01_an_integer_option_in_digits_no_tool_prints(tmp_path: Path, args: tuple[str, ...]) -> None:
    """H20-01: `--seed ١` (Arabic-Indic), `--seed １` (full-width), `--seed 1_0`, `plan --seq ٤٠٩٦`,
    `node-check --cards ٤`, `node-check --budget ٣٠s`, `plan --mfu ٠.٤`: Click's INT and FLOAT read them
    as 1, 1, 10, 4096, 4, 30 s, 0.4 (Python's int() and float() take any Unicode decimal digit and
    underscores; `\\d` matches them), so a run recorded 'seed 1' that no one typed. Every number option
    takes ASCII digits only: exit 2 naming the option."""
    extra: tuple[object, ...] = ()
    if args[0] == "connectivity":
        extra = ("-i", _inv(tmp_path), "--backend", "mock", "-q", "--out", tmp_path / "run")
    r = _cli(*args, *extra)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "ASCII digits" in r.output, r.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option, value", [("--layout", "tp=\u0668,dp=1"), ("--params", "\u0667B"),
                                           ("--card-memory", "\u0668\u0660GB"), ("--expert-params", "\uff11B")])
def test_h20_02_plan_numbers_in_digits_no_tool_prints(option: str, value: str) -> None:
    """H20-02: `plan --layout tp=٨`, `--params ٧B`, `--card-memory ٨٠GB`, `--expert-params １B`: read
    as 8, 7e9, 80 GiB and 1e9 (`\\d` and str.isdecimal() take every script's digits). Refused, exit 2,
    naming the value."""
    base = {"--params": "7B", "--layout": "tp=1,dp=1", "--card-memory": "80GB"}
    base[option] = value
    r = _cli("plan", *[x for kv in base.items() for x in kv])
    line = one_line_error(r)
    digit = next(c for c in value if not c.isascii())
    assert digit in line or ascii(digit)[1:-1] in line, line


def _record(tmp_path: Path) -> Path:
    r = _mock(tmp_path, "--seed", "1")
    assert r.exit_code == 0, r.output
    return tmp_path / "run"


@pytest.mark.parametrize("edit", [{"started": "yesterday"}, {"started": "2026-13-45T99:00:00Z"}],
                         ids=["not-a-time", "no-such-date"])
def test_h20_03_results_json_times_that_are_no_times(tmp_path: Path, edit: dict) -> None:
    """H20-03: a results.json whose `started` is 'yesterday' or 2026-13-45 (an edit, another tool's
    file): `diff` and `baseline make` read it as a run. sncheck writes both as UTC times; another
    record is refused naming the field. (A `finished` before `started` is a clock stepped back mid-run,
    no edit: read, its duration unknown: tests/test_clock_stepped.py.)"""
    run = _record(tmp_path)
    data = json.loads((run / "results.json").read_text())
    data.update(edit)
    (run / "results.json").write_text(json.dumps(data))
    (tmp_path / "b").mkdir()
    other = _record(tmp_path / "b")
    line = one_line_error(_cli("diff", run, other))
    assert "results.json" in line and ("started" in line or "finished" in line), line
    line = one_line_error(_cli("baseline", "make", run, "--out", tmp_path / "base.json"))
    assert "started" in line or "finished" in line, line
    assert not (tmp_path / "base.json").exists()


_STOP_WHILE_IMPORTING = """
import os, signal, sys, runpy
class Stop:
    def find_spec(self, name, path=None, target=None):
        if name == "sncheck.cli.main":  # the CLI, before its imports (click, the backends, the config)
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # a signal is handled between bytecodes: give it some
                pass
        return None
sys.meta_path.insert(0, Stop())
sys.argv = ["sncheck", *sys.argv[1:]]
runpy.run_module("sncheck", run_name="__main__", alter_sys=True)
"""


def test_h20_04_sigterm_while_the_cli_imports_is_one_line_and_exit_3(tmp_path: Path) -> None:
    """H20-04: SIGTERM while the CLI is still importing (pandas, pyarrow, torch: about 7 s on a busy
    2-core machine, the window a scheduler's stop or a `timeout` most often lands in): Python's
    default ended the process, exit 143, nothing said and nothing written. The CLI's handler is in
    place before the heavy imports: one line naming the signal, exit 3, no run directory begun."""
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-c", _STOP_WHILE_IMPORTING, "connectivity", "-i", str(_inv(tmp_path)),
                        "--backend", "mock", "-q", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert p.returncode == 3, (p.returncode, p.stderr[-2000:])
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "interrupted (SIGTERM)" in lines[0] and "Traceback" not in p.stderr, p.stderr
    assert not (out / "results.json").exists()


def test_h20_05_a_state_dir_under_a_linked_parent_is_written_whole(tmp_path: Path) -> None:
    """H20-05 (held, by decision): `isolate h1/gpu0 --apply --state-dir PARENT/sd` where PARENT is a
    symlink to a directory (as /var/lib or /scratch are on many machines). A link above the state
    directory is followed as every program follows it; only the state directory itself may not be a
    link (H19-01). The isolation is written whole through it: exit 0, the store, the hostfile and
    `status` agree, nothing written beside the real directory."""
    (real := tmp_path / "real").mkdir()
    (tmp_path / "parent").symlink_to(real)
    sd = tmp_path / "parent" / "sd"
    r = _cli("isolate", "h1/gpu0", "-i", _inv(tmp_path), "--state-dir", sd, "--via", "hostfile", "--apply")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in real.iterdir()) == ["sd"]
    assert "h1/gpu0" in (real / "sd" / "hostfile.txt").read_text() or "h1" in (real / "sd" / "hostfile.txt").read_text()
    status = _cli("status", "--state-dir", sd)
    assert status.exit_code == 0 and "h1/gpu0" in status.output and " isolate " in status.output, status.output


@pytest.mark.sshd
def test_h20_06_ssh_config_host_key_directives_never_switch_the_check_off(sshd_cluster, tmp_path: Path) -> None:
    """H20-06 (held): the ssh config says `StrictHostKeyChecking no` and `UserKnownHostsFile /dev/null`
    for every host, and --known-hosts holds no key of node2: sncheck does not read those directives
    (its known_hosts is --known-hosts), so node2 is an unknown host, not measured, never accepted; the
    known_hosts file is left as it was."""
    from test_ssh_backend import backend_for, collect, install_profile, write_inventory

    cluster = sshd_cluster(2, ["node1", "node2"])
    for h in cluster:
        install_profile(h, "a100", cards=1)
    inv = write_inventory(tmp_path / "inv.yaml", cluster)
    known = tmp_path / "known_hosts"
    known.write_text(cluster["node1"].known_hosts_line + "\n")
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n\n"
                   + cluster.ssh_config.read_text())
    backend = backend_for(inv, cluster, known_hosts=str(known), ssh_config=str(cfg))
    try:
        rows = collect(backend.host_facts, ("node1", "node2"))
    finally:
        backend.close()
    node2 = [r for r in rows if r.get("host") == "node2"]
    assert node2 and not any(r["ok"] for r in node2), node2
    assert any("host key" in r["message"] for r in node2), [r["message"] for r in node2]
    assert any(r["ok"] for r in rows if r.get("host") == "node1")
    assert known.read_text() == cluster["node1"].known_hosts_line + "\n"


# -- the remote side lies: over real sshd -------------------------------------------------------------

_XID79 = b"2026-12-07T01:02:03,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid=2712, name=%s, GPU has fallen off the bus.\n"


@pytest.mark.parametrize("name, locale", [pytest.param(b"py\x00thon", "C", id="nul"),
                                          pytest.param(b"py\xff\xfethon", "C.UTF-8", id="not-utf8-utf8-locale"),
                                          pytest.param(b"py\xff\xfethon", "C", id="not-utf8-c-locale")])
def test_h20_07_an_xid_line_holding_bytes_that_are_not_text(tmp_path: Path, name: bytes, locale: str) -> None:
    """H20-07: a host's dmesg prints its Xid 79 (GPU fallen off the bus) with the process name holding a
    NUL byte, or bytes 0xff 0xfe where the login's locale is UTF-8 (a corrupted journal, a process
    naming itself so). The host read (`kernel_log.read_command`, run here as an SSH host runs it) greps
    the log; GNU grep takes such a line for binary data and prints 'binary file matches' instead of
    it: the Xid was lost and the host's kernel log read clean. (Bytes 0xff in the C locale held.)"""
    from sncheck.vendors.kernel_log import parse_kernel_log, read_command

    (tmp_path / "log").write_bytes(b"2026-12-07T01:00:00,000000+00:00 usb 1-1: new device\n" + _XID79 % name)
    for tool, body in (("dmesg", f"exec cat '{tmp_path / 'log'}'"), ("journalctl", "exit 0")):
        (tmp_path / tool).write_text(f"#!/bin/sh\n{body}\n")
        (tmp_path / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "LC_ALL": locale}
    out = subprocess.run(["sh", "-c", read_command()], env=env, capture_output=True, timeout=60).stdout
    events = parse_kernel_log(out.decode("utf-8", "replace"))["events"]
    assert [(e["code"], e["bus_id"]) for e in events] == [(79, "0000:3b:00")], out[-400:]


@pytest.mark.sshd
def test_h20_07_over_ssh_the_xid_beside_a_nul_is_judged(sshd_cluster, tmp_path: Path) -> None:
    """H20-07 over real sshd: node2's dmesg as above (a NUL in the name): its kernel log read '0
    reports', the host passed. The Xid is judged (a kernel-xid finding on node2); node1 stays clean."""
    from sshd_harness import install_fake_tool
    from test_hostile_r10 import _two_hosts
    from vendor_ssh import host_facts

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    for h in cluster:
        (data := h.directory / "dmesg.bin").write_bytes(_XID79 % b"py\x00thon" if h.name == "node2" else b"")
        install_fake_tool(h, "dmesg", f"#!/bin/sh\nexec cat '{data}'\n")
        install_fake_tool(h, "journalctl", "#!/bin/sh\nexit 0\n")
    rows, findings = host_facts(inv, cluster)
    kernel = {r["host"]: r for r in rows if r.get("fact") == "kernel_log"}
    assert [e["code"] for e in kernel["node2"]["value"]["events"]] == [79], kernel["node2"]["message"]
    assert [f.entity for f in findings if f.rule == "kernel-xid"] == ["node2"], findings


@pytest.mark.sshd
def test_h20_08_a_kernel_log_read_that_never_ends_is_no_quiet_log(sshd_cluster, tmp_path: Path) -> None:
    """H20-08: node2's dmesg prints one healthy line and then never ends (a wedged /dev/kmsg read, a
    `--follow` wrapper): the read is cut by its timeout and says so; the host's kernel log is not
    judged clean, and the other host's read is not held up."""
    from sshd_harness import install_fake_tool
    from test_hostile_r10 import _two_hosts
    from vendor_ssh import host_facts

    cluster, inv = _two_hosts(sshd_cluster, tmp_path, extra="ssh: {command_timeout: 3}\n")
    install_fake_tool(cluster["node2"], "dmesg", "#!/bin/sh\necho '2026-12-07T01:00:00,000000+00:00 usb 1-1: new "
                                                 "device'\nexec sleep 120\n")
    for h in cluster:
        install_fake_tool(h, "journalctl", "#!/bin/sh\nexit 0\n")
    started = time.monotonic()
    rows, findings = host_facts(inv, cluster)
    assert time.monotonic() - started < 60
    kernel = {r["host"]: r for r in rows if r.get("fact") == "kernel_log"}
    assert kernel["node1"]["ok"], kernel["node1"]
    assert not kernel["node2"]["ok"] and "timed out" in kernel["node2"]["message"], kernel["node2"]
    assert any(f.entity.startswith("node2") for f in findings)


@pytest.mark.sshd
def test_h20_09_a_child_holding_stderr_open_is_bounded(sshd_cluster, tmp_path: Path) -> None:
    """H20-09: `nvidia-smi -q` prints its whole listing and exits 0, leaving a child that closed
    stdout but holds stderr open for 60 s (a daemon started by a wrapper, logging to stderr): the
    channel ends only when both streams do. Bounded by the command timeout, not measured, never a
    pass (H10-07 held stdout)."""
    from test_hostile_r10 import Q_FACTS, _facts, _q_does, _two_hosts

    cluster, inv = _two_hosts(sshd_cluster, tmp_path, extra="ssh: {command_timeout: 3}\n")
    _q_does(cluster["node2"], 'cat "$D/q"; (exec sleep 60 >/dev/null &); exit 0')
    started = time.monotonic()
    bad, findings = _facts(inv, cluster)
    assert time.monotonic() - started < 40
    assert {(r["fact"], r["status"]) for r in bad["node2"]} >= {(f, "timeout") for f in Q_FACTS}, bad["node2"]
    assert findings and all(f.entity.startswith("node2") for f in findings)


@pytest.mark.sshd
def test_h20_10_a_login_that_prints_before_the_machine_identity(sshd_cluster, tmp_path: Path) -> None:
    """H20-10: node1 and node2 behind SSH gateways land on one machine, and node2's login prints a
    line before every command's output (a `.bashrc` echo, a wrapper's banner): its machine identity
    read as two lines, which the check skipped, so the one machine was measured as two hosts. The
    identity is the answer's last word: the twins are refused, exit 2, nothing measured."""
    from sshd_harness import install_fake_tool
    from test_ssh_backend import gateway_pair

    cluster, inv = gateway_pair(sshd_cluster, tmp_path, ("node1", "node2"))
    install_fake_tool(cluster["node2"], "cat", '#!/bin/sh\necho "Welcome to node2 (managed by ops)"\n'
                                               'exec /bin/cat "$@"\n')
    line = one_line_error(_cli("connectivity", "-i", inv, "--backend", "ssh", "--known-hosts", cluster.known_hosts,
                               "--ssh-config", cluster.ssh_config, "-q", "--out", tmp_path / "run"))
    assert "answer as one machine" in line and "node1" in line and "node2" in line, line
    assert not (tmp_path / "run").exists()


@pytest.mark.sshd
def test_h20_11_two_hosts_listing_one_infiniband_hca(sshd_cluster, tmp_path: Path) -> None:
    """H20-11: node2's `ibstat` lists node1's HCA (its node and port GUIDs: a wrapper replaying
    another machine's output, or node2's name reaching node1's machine): a GUID is one adapter's
    (IEEE EUI-64), as a GPU UUID is one GPU's (H16-02). Two hosts listing it are not two measured
    machines: each is said to share it."""
    from test_hostile_r10 import _facts, _two_hosts

    cluster, inv = _two_hosts(sshd_cluster, tmp_path)
    one, two = (cluster[h].directory / "data" / "ibstat" for h in ("node1", "node2"))
    assert one.exists() and two.exists(), sorted(p.name for p in one.parent.iterdir())
    two.write_text(one.read_text())
    bad, findings = _facts(inv, cluster)
    assert {"node1", "node2"} <= set(bad), bad
    for h, other in (("node1", "node2"), ("node2", "node1")):
        assert any(f"(also {other})" in r["message"] for r in bad[h]), [r["message"] for r in bad[h]]


# -- Slurm ------------------------------------------------------------------------------------------

class _Slurm:
    """A CommandRunner answering `sinfo` with ``reason`` and recording every argv it is given."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.ran: list[list[str]] = []

    def run(self, argv, **_kw):
        from sncheck.transport.result import Result

        self.ran.append(list(argv))
        return Result("local", " ".join(argv), self.reason if argv[0] == "sinfo" else "", "", 0, 0.0)


@pytest.mark.parametrize("reason", ["sncheck: node-check: n1/gpu0 ecc: 3 uncorrectable\nadmin: keep drained, RMA 4411",
                                    "sncheck: node-check: n1/gpu0 ecc\n\nops hold"])
def test_h20_12_a_drain_reason_that_only_begins_as_node_checks_is_not_resumed(reason: str) -> None:
    """H20-12: node-check passes on n1, which is drained with a reason whose first line is
    node-check's own and whose next is an operator's (`scontrol update ... Reason=$'...\\n...'`, or a
    wrapper appending its note): node-check resumed it, undoing the operator's hold. A reason holding
    a newline is nobody's that sncheck wrote (H12-01): left drained, said so."""
    from sncheck.run.nodecheck import NodeReport, act_in_slurm

    report = NodeReport("n1", 1, "test")
    slurm = _Slurm(reason + "\n")
    act_in_slurm(report, slurm)
    assert not [a for a in slurm.ran if a[0] == "scontrol"], slurm.ran
    assert "left drained" in (report.slurm or ""), report.slurm


@pytest.mark.slurm
@pytest.mark.parametrize("junk", ["printf 'BOOT\\377\\376\\000\\n'", "printf '\\000\\000\\000'"],
                         ids=["not-utf8", "nul"])
def test_h20_13_a_slurm_task_printing_bytes_that_are_not_text(shared_slurm_cluster, tmp_path: Path, monkeypatch,
                                                               junk: str) -> None:
    """H20-13: node2's task of the facts step prints bytes 0xff 0xfe and a NUL (or NULs alone)
    before its answer (a prolog's binary banner, a tty reset): the step's output is one stream for
    every node. node2's facts are judged or said unread, the other nodes' stay judged, nothing
    raises."""
    from test_hostile_r16 import _slurm_facts
    from test_srun_launcher import _setup

    rows = _slurm_facts(_setup(shared_slurm_cluster, tmp_path, monkeypatch), monkeypatch, junk)
    assert all(r["ok"] for n in ("node1", "node3", "node4") for r in rows[n]), \
        {n: [r["message"] for r in rows[n] if not r["ok"]] for n in ("node1", "node3", "node4")}
    assert rows["node2"], rows


# -- watch, plan, fabric ----------------------------------------------------------------------------

@pytest.mark.parametrize("playbook", ["x; touch PWNED #", "nightly-strss", "$(id)"])
def test_h20_14_a_confirmation_playbook_that_is_no_playbook(tmp_path: Path, playbook: str) -> None:
    """H20-14: `watch --confirm-playbook 'x; touch PWNED #'` (or a misspelt shipped name): every
    quarantine carried `sncheck run x; touch PWNED # --targets CARD` as the command that confirms it,
    in results.json, the report and the state store, for an operator or a script to run. The
    playbook is resolved as `run` resolves it (a shipped name or a playbook file), before any dump is
    read: refused, exit 2, naming it."""
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_text("".join(ln for ln in RAS.read_text().splitlines(True) if not ln.startswith("# source")))
    line = one_line_error(_cli("watch", d, "--once", "--out", tmp_path / "out", "--confirm-playbook", playbook))
    assert "--confirm-playbook" in line or "playbook" in line, line
    assert not (tmp_path / "out").exists()


def test_h20_15_a_confirmation_playbook_file_with_a_space_is_quoted(tmp_path: Path) -> None:
    """H20-15: `watch --confirm-playbook 'my playbooks/gate.yaml'` (a real file whose path holds a
    space): the confirmation command is given to a shell by whoever runs it; it is quoted so that it
    runs that playbook."""
    import shlex

    from sncheck.watch.judge import _confirm_command

    cmd = _confirm_command("my playbooks/gate.yaml", "h1/gpu0")
    assert shlex.split(cmd) == ["sncheck", "run", "my playbooks/gate.yaml", "--targets", "h1/gpu0"], cmd


_TWO = "name: t\nsupernodes:\n  - {name: sn0, hosts: 'n[1-2]', cards_per_host: 2}\n"


def test_h20_16_one_nic_on_two_ports_of_one_leaf_is_said_so(tmp_path: Path) -> None:
    """H20-16: a leaf whose `hosts`/`rail` puts n1/nic0 on port 1 and whose `ports` puts it on port 7
    too (two cables from one NIC to one switch): refused as 'hangs off two leaves: a and a'. Said as
    what it is: the NIC on two ports of leaf a."""
    (p := tmp_path / "inv.yaml").write_text(_TWO + "fabric:\n  leaves:\n    - {name: a, rail: 0, hosts: 'n[1-2]', "
                                            "ports: {n1/nic0: 7}}\n    - {name: b, rail: 1, hosts: 'n[1-2]'}\n")
    line = one_line_error(_cli("inventory", "check", p))
    assert "two leaves" not in line and "leaf a" in line and "1" in line and "7" in line, line


def test_h20_17_plan_layout_with_an_empty_or_doubled_degree(tmp_path: Path) -> None:
    """H20-17 (held): `plan --layout 'tp=,dp=1'` and `tp=8=8`: refused, exit 2, naming the value."""
    for layout in ("tp=,dp=1", "tp=8=8,dp=1"):
        line = one_line_error(_cli("plan", "--params", "7B", "--layout", layout, "--card-memory", "80GB"))
        assert "tp" in line, line


# -- held: the same output twice, names from the environment, maps naming one rank twice ------------------

@pytest.mark.parametrize("view, capture, said", [
    ("nvidia-smi-q", "nvidia-smi-q/01_q_d_page_retirement_8gpu_a100_clean.txt", "is listed twice"),
    ("ibstat", "ib/04_ibstat_h100_roce_12CA_all_active_eth.txt", "is listed twice")])
def test_h20_18_a_tool_run_twice_by_its_wrapper(tmp_path: Path, view: str, capture: str, said: str) -> None:
    """H20-18 (held): a host's `nvidia-smi -q` (or `ibstat`) is a wrapper that ran the tool twice and
    printed both (a retry loop): every device twice. Not whole, exit 1, naming the device."""
    from sncheck.vendors.parsers import strip_source_header

    text = strip_source_header((REAL / capture).read_text())
    (f := tmp_path / "twice.txt").write_text(text + text)
    r = _cli("parse", view, f)
    assert r.exit_code == 1 and said in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("name", ["n1\nn2", "..", "n[1-2]"])
def test_h20_19_a_node_name_from_the_environment_slurm_would_misread(monkeypatch, name: str) -> None:
    """H20-19 (held): node-check without --node reads $SLURMD_NODENAME; a prolog's environment holding
    `n1<LF>n2`, `..` or a hostlist `n[1-2]`: refused before any tool runs, exit 2, shown escaped."""
    monkeypatch.setenv("SLURMD_NODENAME", name)
    line = one_line_error(_cli("node-check", "--no-collectives", "--no-drain", "--budget", "1s", "--cards", "1"))
    assert "bad node name" in line and "SLURMD_NODENAME" in line, line


def test_h20_20_a_rank_map_naming_one_rank_on_two_hosts(tmp_path: Path) -> None:
    """H20-20 (held): `watch --rank-map` whose rank 0 is on n1 and on n2: refused, exit 2, naming it."""
    (rm := tmp_path / "ranks.json").write_text(json.dumps([{"rank": 0, "host": "n1", "local_rank": 0},
                                                          {"rank": 0, "host": "n2", "local_rank": 0}]))
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_text("".join(ln for ln in RAS.read_text().splitlines(True) if not ln.startswith("# source")))
    line = one_line_error(_cli("watch", d, "--once", "--out", tmp_path / "out", "--rank-map", rm))
    assert "rank 0 appears twice" in line, line


def test_h20_21_watch_writing_inside_the_watched_directory_reads_only_the_dumps(tmp_path: Path) -> None:
    """H20-21 (held): `watch DIR --once --out DIR/run1`, then again with `--out DIR/run2`: the second look
    reads DIR's one dump, not the first look's results.json or report as a dump."""
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "ras.txt").write_text("".join(ln for ln in RAS.read_text().splitlines(True) if not ln.startswith("# source")))
    first = _cli("watch", d, "--once", "--out", d / "run1", "-q")
    assert first.exit_code in (0, 1), first.output
    second = _cli("watch", d, "--once", "--out", d / "run2", "-q", "--json")
    assert second.exit_code == first.exit_code, second.output
    summary = json.loads(second.output)["layers"][0]["summary"]
    assert (summary["dumps"], summary["unreadable"]) == (1, 0), summary


@pytest.mark.parametrize("view", ["ibstat", "nvidia-smi-q", "kernel-log"])
def test_h20_22_a_tool_that_prints_only_blank_lines(tmp_path: Path, view: str) -> None:
    """H20-22 (held but the kernel log): a host's tool exits 0 printing three blank lines (a wrapper
    whose real command was not found and whose error went nowhere): the listings are parse failures,
    exit 1; a kernel log of blank lines is a quiet log (dmesg may well print nothing new) only when it
    carries no report, which `parse kernel-log` says as 0 reports."""
    (f := tmp_path / "blank.txt").write_text("\n\n\n")
    r = _cli("parse", view, f)
    assert "Traceback" not in r.output, r.output
    assert r.exit_code == (0 if view == "kernel-log" else 1), r.output


@pytest.mark.parametrize("entry", ["{severity: warning, count: 3, window: \u0662\u0664h}",
                                   "{severity: warning, drivers: '>=\u0665\u0665\u0660'}",
                                   "{severity: warning, count: 3, window: \uff12\uff14h}"],
                         ids=["window-arabic", "drivers-arabic", "window-fullwidth"])
def test_h20_23_a_kernel_log_entry_in_digits_no_tool_prints(tmp_path: Path, entry: str) -> None:
    """H20-23 (written after the count, fell short on main 4848b70): a rules file's kernel-xid entry
    with `window: ٢٤h` or `drivers: '>=٥٥٠'` (Arabic-Indic), `window: ２４h` (full-width): read as 24 h
    and driver 550 (`\\d` takes every script's digits), `rules check` exit 0. Refused at the line, as
    H20-01's options are."""
    (p := tmp_path / "rules.yaml").write_text(f"extends: default\nrules:\n  - name: kernel-xid\n    table:\n"
                                              f"      13: {entry}\n")
    line = one_line_error(_cli("rules", "check", p))
    assert line.startswith(f"sncheck: error: {p}:") and ("window" in line or "drivers" in line), line
