"""Hostile inputs, round 22: round 21's leftovers (a file that is no YAML input given as one
echoed its first line, a root password hash among them; design quantities past any physics;
`parse > /dev/full` said the run's files could not be written; the system known_hosts unread)
and new ground: files given where another kind was meant (a private key as an inventory, a
shadow file as an ssh config), JSON numbers past a float's range, baselines no run could
measure, state stores and run directories another process holds. Each test names its case id;
the README's round 22 table lists them. New instances only: no case of an earlier round is
tested again."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

ROOT = Path(__file__).resolve().parents[1]
# what a file that is no YAML input holds: a shadow entry, an OpenSSH private key, a .env, a .netrc
SECRET = "S3cr3tHashValue"
NOT_YAML = {
    "shadow": f"root:$6$salt${SECRET}:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n",
    "private-key": f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE{SECRET}AAAAB\n-----END OPENSSH PRIVATE KEY-----\n",
    "env": f"AWS_SECRET_ACCESS_KEY={SECRET}\nTOKEN=ghp_{SECRET}\n",
    "netrc": f"machine github.com login me password {SECRET}\n",
}


def _inv(tmp_path: Path, text: str = SMALL, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


# -- round 21's leftovers ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, role", [
    *(("shadow", role) for role in ("inventory", "playbook", "fault plan", "rules", "ssh config")),
    ("private-key", "inventory"), ("private-key", "ssh config"), ("env", "playbook"), ("netrc", "rules"),
])
def test_h22_01_a_file_that_is_no_input_is_never_quoted(tmp_path: Path, kind: str, role: str) -> None:
    """H22-01: `sncheck run /etc/shadow` (or a private key, a .env, a .netrc given as the inventory,
    the playbook, the fault plan, the rules or the ssh config): YAML reads a shadow file as a mapping
    whose keys are its lines, and the others as one text, and the error quoted it: "unknown key
    'root:$6$...'", "inventory must be a mapping, got '-----BEGIN OPENSSH PRIVATE KEY----- b3Bl...",
    paramiko's "Unparsable line root:$6$..." -- a password hash or a key in the terminal and the CI
    log. A key that is no name is said by its length, a whole file that is no mapping by its kind and
    length, an ssh config line by its number: the file and line named, nothing of them quoted."""
    bad = _inv(tmp_path, NOT_YAML[kind], kind)
    inv = _inv(tmp_path)
    args = {"inventory": ("inventory", "check", bad),
            "playbook": ("run", bad, "-i", inv, "--backend", "mock", "--out", tmp_path / "o"),
            "fault plan": ("run", "post-delivery", "-i", inv, "--backend", "mock", "--faults", bad,
                           "--out", tmp_path / "o"),
            "rules": ("rules", "check", bad),
            "ssh config": ("connectivity", "-i", inv, "--backend", "ssh", "--ssh-config", bad,
                           "--out", tmp_path / "o")}[role]
    line = one_line_error(_cli(*args))
    assert str(bad) in line and SECRET not in line and "root:" not in line and "BEGIN" not in line, line
    assert "not shown" in line, line
    assert not (tmp_path / "o").exists()


def test_h22_01_a_key_that_is_a_name_is_still_quoted(tmp_path: Path) -> None:
    """H22-01's other side: a YAML input's misspelt key is still named, with the key it meant."""
    line = one_line_error(_cli("inventory", "check", _inv(tmp_path, SMALL + "desing: {}\n")))
    assert "unknown key 'desing' in inventory; did you mean 'design'?" in line, line


@pytest.mark.parametrize("bandwidth, latency", [
    ("1e-300 GB/s", "3 us"), ("1e300 GB/s", "3 us"), ("5e-324", "3 us"), ("0.0000001 GB/s", "3 us"),
    ("20 TB/s", "3 us"), ("450 GB/s", "1e-300 us"), ("450 GB/s", "1e300 s"), ("450 GB/s", "1 ns"),
], ids=["tiny-bw", "huge-bw", "subnormal-bw", "100-B/s", "20-TB/s", "tiny-lat", "huge-lat", "1-ns"])
def test_h22_02_a_design_value_no_link_has(tmp_path: Path, bandwidth: str, latency: str) -> None:
    """H22-02: an inventory's design bandwidth of 1e-300 GB/s (1e300, a subnormal, 100 B/s, 20 TB/s) or
    latency of 1e-300 us (1e300 s, 1 ns) was read as written: at 1e-300 GB/s no pair is below design,
    so the design rules judged nothing. A design value is bounded by what a link can do (units.py:
    1 MB/s to 10 TB/s, 10 ns to 1 s): refused at the line, naming the bounds; `plan --design` alike.
    The slowest design the SSH tests declare (0.001 GB/s, 100 ms) still loads."""
    from sncheck.errors import ConfigError
    from sncheck.ledger.tiers import parse_design

    inv = _inv(tmp_path, SMALL.replace("'450 GB/s'", f"'{bandwidth}'").replace("'3 us'", f"'{latency}'"))
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:3: design.scale_up." in line and "outside what any link does" in line, line
    with pytest.raises(ConfigError, match="outside what any link does"):
        parse_design((f"scale_out={bandwidth}@{latency}".replace(" ", ""),))
    slow = _inv(tmp_path, SMALL.replace("'450 GB/s'", "'0.001 GB/s'").replace("'3 us'", "'100 ms'"), "slow.yaml")
    assert _cli("inventory", "check", slow).exit_code == 0


_WRITER = """
import sys, click
from sncheck.cli.errors import handle_errors
@click.command()
@click.argument("to")
@handle_errors
def cmd(to):
    if to == "file":  # a file of the command's on a full disk: ENOSPC without a name, as stdout's
        with open("/dev/full", "w") as f:
            f.write("x" * 10)
    click.echo("{ \\"rows\\": [] }")
cmd()
"""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("to, says", [("stdout", "cannot write to standard output: No space left on device"),
                                      ("file", "cannot write the command's files: No space left on device")],
                         ids=["stdout", "file"])
def test_h22_03_standard_output_full_is_said_as_such(to: str, says: str) -> None:
    """H22-03: `sncheck parse VIEW FILE > /dev/full` said "cannot write the run's files" (exit 3), for
    a command that writes no file: the OSError has no file name, and every such error was the run's.
    Where the stream that failed is stdout's it is said so; a file's write is said as the command's
    files. One line, exit 3, no traceback. (A small command under cli.errors.handle_errors, as every
    command is: the CLI's whole import costs seconds here.)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-c", _WRITER, to], stdout=full, stderr=subprocess.PIPE, text=True,
                           env=env, timeout=60, check=False)
    assert r.returncode == 3 and r.stderr.strip() == f"sncheck: error: {says}", r.stderr


def test_h22_04_the_system_known_hosts_is_read_after_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """H22-04 (review16 #13): a fleet whose host keys sit in /etc/ssh/ssh_known_hosts (as config
    management puts them) was unknown on every host: sncheck read the user's file only, and the
    way on was --accept-new-host-keys, recording whatever key answered. The system files are read
    after the user's, as OpenSSH's check_host_key loads them: a key listed there connects, nothing
    is recorded in the user's file; another key listed there is CHANGED naming that file and line;
    an @revoked line there refuses before the login. (An in-process SSH server on loopback.)"""
    from test_knownhosts import _connect, _key, _line, _paramiko_host

    from sncheck.errors import HostKeyError
    from sncheck.transport import knownhosts

    system, user = tmp_path / "ssh_known_hosts", tmp_path / "known_hosts"
    monkeypatch.setattr(knownhosts, "SYSTEM_FILES", (str(system),))
    key, other = _key(), _key()
    with _paramiko_host(key) as (port, server):
        system.write_text(_line(f"[127.0.0.1]:{port}", key))
        _connect(port, user)
    assert server.logins and not user.exists()
    with _paramiko_host(key) as (port, server):
        system.write_text("# fleet\n" + _line(f"[127.0.0.1]:{port}", other))
        with pytest.raises(HostKeyError, match=rf"has CHANGED: {system}:2 lists"):
            _connect(port, user, accept_new=True)
    assert server.logins == [] and not user.exists()
    with _paramiko_host(key) as (port, server):
        user.write_text(_line(f"[127.0.0.1]:{port}", key))
        system.write_text(f"@revoked * {key.get_name()} {key.get_base64()}\n")
        with pytest.raises(HostKeyError, match=rf"marked @revoked in {system}:1"):
            _connect(port, user)
    assert server.logins == []


@pytest.mark.parametrize("fault", [
    "{type: high_latency_card, target: h1/gpu0, factor: 1.0e-300}",
    "{type: high_latency_card, target: h1/gpu0, factor: 0.5}",
    "{type: high_latency_link, target: 'h1/gpu0<->h2/gpu0', factor: 1}",
    "{type: jittery_card, target: h1/gpu0, probability: 0.2, factor: 0.1}",
], ids=["latency-1e-300", "latency-half", "link-one", "jitter-tenth"])
def test_h22_05_a_latency_fault_that_makes_the_card_faster(tmp_path: Path, fault: str) -> None:
    """H22-05: a fault plan's `high_latency_card` of factor 1e-300 (0.5; a `high_latency_link` of 1, a
    `jittery_card` spiking by 0.1) was taken: the latency was multiplied by it, the card ran faster,
    and the run passed the fault it had planned (exit 0) -- a plan no run can find, as a slow_card
    of factor 2 would be (refused since round 5). A latency fault's factor is above 1: refused at the
    line, nothing run."""
    plan = _inv(tmp_path, f"faults:\n  - {fault}\n", "plan.yaml")
    line = one_line_error(_cli("run", "post-delivery", "-i", _inv(tmp_path), "--backend", "mock",
                               "--faults", plan, "--out", tmp_path / "o"))
    assert f"{plan}:2: faults[0].factor: must be a number above 1" in line, line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("address, says", [
    ("0.0.0.0", "is the unspecified address"), ("::", "is the unspecified address"),
    ("::ffff:0.0.0.0", "is the unspecified address"), ("224.0.0.1", "is a multicast group"),
    ("ff02::1", "is a multicast group"), ("255.255.255.255", "broadcast"), ("0.0.0.1", "'this network'"),
], ids=["v4-any", "v6-any", "mapped-any", "v4-multicast", "v6-multicast", "broadcast", "this-network"])
def test_h22_06_an_address_that_is_no_hosts(tmp_path: Path, address: str, says: str) -> None:
    """H22-06: a host's `address: 0.0.0.0` (`::`, a multicast group, the broadcast address, 0.0.0.1)
    loaded: Linux takes a connection to the unspecified address as one to itself, so the control
    node answered, was measured and judged as h1 (and 224.0.0.1 is unreachable by design). An address
    is one host's: refused at the line, for the inventory, the ssh config's HostName and Slurm's
    NodeAddr alike (`inventory.is_address`); a loopback or a mapped IPv4 address still loads."""
    from sncheck.config.inventory import is_address

    inv = _inv(tmp_path, SMALL + f"hosts:\n  h1: {{address: '{address}'}}\n")
    line = one_line_error(_cli("inventory", "check", inv))
    assert f"{inv}:7: hosts.h1.address: '{address}' {says}" in line or says in line and f"{inv}:7:" in line, line
    assert not is_address(address)
    assert is_address("127.0.0.1") and is_address("::ffff:10.0.0.1") and is_address("fd00::1")


@pytest.mark.parametrize("answer", [b"", b"\x7f\xff\xff\xff"], ids=["never-answers", "2-GiB-message"])
def test_h22_07_an_ssh_agent_that_stalls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: bytes) -> None:
    """H22-07: `$SSH_AUTH_SOCK` at an agent that accepts and never answers (a forwarded agent whose
    session died) hung the connection for ever, past its connect timeout: paramiko's Agent reads
    the socket with no timeout, so a run's fact read never ended; an agent announcing a 2 GiB
    message was read for it. Each exchange with the agent is bounded by the connect timeout and
    OpenSSH's 256 KiB (transport/agent.py): the agent's keys are not tried, the login fails as
    without them (AuthError, one host's), no hang. (An in-process SSH server on loopback; the
    bound asserted is that it ends, not how fast.)"""
    import socket
    import threading

    from test_knownhosts import _key, _line, _paramiko_host

    from sncheck.errors import AuthError
    from sncheck.transport import Connection
    from sncheck.transport.sshconfig import HostSpec

    path = str(tmp_path / "agent.sock")
    agent, held = socket.socket(socket.AF_UNIX), []
    agent.bind(path)
    agent.listen(4)

    def answer_badly() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = agent.accept()
                held.append(conn)
                conn.sendall(answer)  # nothing, or a length no agent sends

    threading.Thread(target=answer_badly, daemon=True).start()
    monkeypatch.setenv("SSH_AUTH_SOCK", path)
    key, outcome = _key(), []
    with _paramiko_host(key) as (port, _server):
        (kh := tmp_path / "known_hosts").write_text(_line(f"[127.0.0.1]:{port}", key))
        conn = Connection(HostSpec("node1", "127.0.0.1", port, "root"), known_hosts=kh, retries=0,
                          connect_timeout=1, allow_agent=True, look_for_keys=False)

        def connect() -> None:
            try:
                conn.open()
            except AuthError as e:
                outcome.append(e)

        worker = threading.Thread(target=connect, daemon=True)
        worker.start()
        worker.join(60)
        alive = worker.is_alive()
    agent.close()
    for c in held:
        c.close()
    assert not alive, "the connection still waits on the agent"
    assert outcome and "authentication as 'root' failed" in str(outcome[0]), outcome


def test_h22_08_a_results_json_whose_verdict_its_findings_contradict(tmp_path: Path) -> None:
    """H22-08: a failing run's results.json with its findings cut out and its verdict left 'fail' (an
    edit): the reader recomputes the verdict from the findings, so `diff` read the run as a pass and
    `baseline make`, which takes known-good runs only, made a baseline of it, exit 0; a verdict no
    sncheck writes ('maybe', a layer's 'great') was read without a word. sncheck writes the verdicts
    its record makes of itself: one that differs is an edited or spliced record, refused (exit 2)
    naming the file and both verdicts; nothing written. (A recorded failing run: tests/data.)"""
    import json

    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "run-5e5f3b1", run)
    whole = json.loads((run / "results.json").read_text())
    assert whole["verdict"] == "fail" and whole["findings"]
    edits = {"cut": {**whole, "findings": []}, "maybe": {**whole, "verdict": "maybe"},
             "layer": {**whole, "layers": [{**whole["layers"][0], "verdict": "great"}, *whole["layers"][1:]]}}
    for name, edited in edits.items():
        shutil.copytree(run, other := tmp_path / name)
        (other / "results.json").write_text(json.dumps(edited))
        line = one_line_error(_cli("baseline", "make", other, "--out", tmp_path / f"{name}.json"))
        assert f"{other / 'results.json'}: says " in line and "an edited or spliced record" in line, line
        assert not (tmp_path / f"{name}.json").exists()
    assert "an edited or spliced record" in one_line_error(_cli("diff", run, tmp_path / "cut"))


# -- cases that held (kept: each is a class a held-out set holds) --------------------------------------

@pytest.mark.parametrize("plant", ["text", "link", "fifo"])
def test_h22_09_a_state_store_that_is_no_database(tmp_path: Path, plant: str) -> None:
    """H22-09 (held): a state directory whose state.db is a text file, a link to /etc/passwd or a FIFO:
    `status` and `history` refuse it in one line naming it, exit 2; nothing read through the link,
    the FIFO never opened (no hang)."""
    sd = tmp_path / "sd"
    sd.mkdir()
    db = sd / "state.db"
    {"text": lambda: db.write_text(NOT_YAML["shadow"]), "link": lambda: db.symlink_to("/etc/passwd"),
     "fifo": lambda: os.mkfifo(db)}[plant]()
    for args in (("status", "--state-dir", sd), ("history", "h1/gpu0", "--state-dir", sd)):
        line = one_line_error(_cli(*args))
        assert str(db) in line and SECRET not in line, line


@pytest.mark.parametrize("encoding", ["bom", "crlf", "cr", "utf-16"])
def test_h22_10_an_inventory_in_another_editors_encoding(tmp_path: Path, encoding: str) -> None:
    """H22-10 (held): an inventory saved with a UTF-8 byte-order mark, CRLF or CR line ends (Windows,
    old Mac editors) loads as the same inventory; one saved as UTF-16 is refused in one line."""
    data = {"bom": b"\xef\xbb\xbf" + SMALL.encode(), "crlf": SMALL.replace("\n", "\r\n").encode(),
            "cr": SMALL.replace("\n", "\r").encode(), "utf-16": SMALL.encode("utf-16")}[encoding]
    (inv := tmp_path / "inv.yaml").write_bytes(data)
    r = _cli("inventory", "check", inv)
    if encoding == "utf-16":
        assert "is binary (it has NUL bytes), not text" in one_line_error(r)
    else:
        assert r.exit_code == 0 and "small: 1 supernodes, 3 hosts, 6 cards" in r.output, r.output


@pytest.mark.parametrize("plant", ["fifo", "link-out", "cut"])
def test_h22_11_a_runs_rows_replaced(tmp_path: Path, plant: str) -> None:
    """H22-11 (held): a run directory whose rows part is a FIFO, a link to another run's part, or cut
    short (500 bytes of its Parquet): `diff` refuses it in one line naming the part, exit 2, no hang
    (`baseline make` reads the rows through the same reader)."""
    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "run-5e5f3b1", run)
    part = next(p for p in sorted((run / "rows").rglob("*")) if p.is_file())
    data = part.read_bytes()
    part.unlink()
    {"fifo": lambda: os.mkfifo(part), "link-out": lambda: part.symlink_to(ROOT / "tests" / "data" / "run-5e5f3b1" /
                                                                          part.relative_to(run)),
     "cut": lambda: part.write_bytes(data[:500])}[plant]()
    line = one_line_error(_cli("diff", ROOT / "tests" / "data" / "run-5e5f3b1", run))
    assert str(part) in line, line


def test_h22_12_diff_of_a_record_beside_another_runs_rows(tmp_path: Path) -> None:
    """H22-12: a run directory whose results.json names another run than its rows carry (another run's
    record copied over, or its run_id edited): `baseline make` refused it since round 18 (H18-14), but
    `diff` read that record's findings and verdict beside these rows' measurements, exit 0. Both
    refuse it now, naming the two run ids (health.baseline.refuse_other_record)."""
    import json

    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "run-5e5f3b1", run)
    record = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**record, "run_id": "20261201T000000Z-beef"}))
    line = one_line_error(_cli("diff", ROOT / "tests" / "data" / "run-5e5f3b1", run))
    assert "results.json is run 20261201T000000Z-beef, its rows are run " in line and str(run) in line, line
