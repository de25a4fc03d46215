"""The SSH transport against real sshd servers on loopback (127.0.1.x)."""

from __future__ import annotations

import logging
import os
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import paramiko
import pytest
from sshd_harness import (
    SshdCluster,
    descendants,
    install_fake_tool,
    known_hosts_name,
    sshd_unavailable_reason,
)

from sncheck.errors import AuthError, ConfigError, ConnectError, HostKeyError, TransportError
from sncheck.transport import Connection, GroupResult, HostSpec, HostTaskError, Result, build_command, fan_out, resolve_host, run_on_all

SSHD = pytest.mark.sshd
PASSWORD = "pw-Zq8-do-not-leak"
NASTY = [
    "$(touch {d}/pwned); rm -rf x",
    "`touch {d}/pwned2`",
    "a;b|c&d>{d}/pwned3 <e $HOME ${{PATH}} *",
    'it\'s "quoted" \\ back\nslash',
    "-n",
    "",
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    """Three hosts shared by the tests that leave them as they found them."""
    reason = sshd_unavailable_reason()
    if reason:
        pytest.skip(f"real sshd tests need OpenSSH: {reason}")
    with SshdCluster(3, tmp_path_factory.mktemp("shared")) as c:
        yield c


def _alive(pid: int) -> bool:
    """A process exists and is not a zombie (this container's init does not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _tcp_socket_owners(local_port: int) -> set[int]:
    """PIDs holding the TCP socket bound to ``local_port`` (Linux /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == local_port:
                inodes.add(f"socket:[{fields[9]}]")
    owners = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                    owners.add(int(proc.name))
            except OSError:
                continue
    return owners


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


# -- Result and build_command (no sshd) -------------------------------------


def test_result_ok_and_tail() -> None:
    r = Result("n1", "x", "a\nb\nc\n", "e1\ne2", 0, 0.5, False)
    assert r.ok
    assert r.tail(3) == "c\ne1\ne2"
    assert r.tail(0) == ""
    assert not Result("n1", "x", "", "", 1, 0.1, False).ok
    assert not Result("n1", "x", "", "", None, 1.0, True).ok
    assert not Result("n1", "x", "", "", 0, 1.0, True).ok  # timed out wins over a stale exit code


def test_build_command_quotes_every_word() -> None:
    assert build_command(["echo", "a b", "$(x)"]) == "echo 'a b' '$(x)'"
    assert shlex.split(build_command(["printf", "%s", "a;b|c&$()"])) == ["printf", "%s", "a;b|c&$()"]
    cmd = build_command(["ls", "-l"], env={"LC_ALL": "C", "X": "a b"}, cwd="/tmp/my dir")
    assert cmd == "cd -- '/tmp/my dir' && env LC_ALL=C 'X=a b' ls -l"


@pytest.mark.parametrize(
    ("argv", "kwargs", "error"),
    [
        ("ls -l", {}, TypeError),
        (b"ls", {}, TypeError),
        ([], {}, ValueError),
        (["ls", 3], {}, TypeError),
        (["ls", "a\0b"], {}, ValueError),
        (["A=1"], {}, ValueError),
        (["ls"], {"env": {"BAD-NAME": "1"}}, ValueError),
        (["ls"], {"env": {"X;rm": "1"}}, ValueError),
        (["ls"], {"env": {"X": 1}}, TypeError),
    ],
)
def test_build_command_refuses(argv: object, kwargs: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        build_command(argv, **kwargs)  # type: ignore[arg-type]


# -- ssh config resolution (no sshd) ----------------------------------------


def test_resolve_host_from_ssh_config_and_inventory_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host node1\n  HostName 10.9.8.7\n  Port 2201\n  User admin\n  IdentityFile ~/.ssh/node_key\n"
        "Host *\n  User fallback\n"
    )
    home = Path.home()  # the autouse fixture's temporary HOME
    spec = resolve_host("node1", config=cfg)
    assert spec == HostSpec("node1", "10.9.8.7", 2201, "admin", (str(home / ".ssh/node_key"),), None)

    over = {"address": "127.0.1.9", "port": 2222, "user": "root", "identity_file": "~/k2"}
    spec = resolve_host("node1", over, defaults={"user": "dflt", "port": 23}, config=cfg)
    assert (spec.hostname, spec.port, spec.user, spec.identity_files) == (
        "127.0.1.9",
        2222,
        "root",
        (str(home / "k2"),),
    )
    # The inventory's ssh: section fills in only what the config leaves open.
    spec = resolve_host("other", defaults={"user": "dflt", "port": 23, "identity_file": "/k"}, config=cfg)
    assert (spec.hostname, spec.port, spec.user, spec.identity_files) == ("other", 23, "fallback", ("/k",))


def test_resolve_host_defaults_to_user_ssh_config(tmp_path: Path) -> None:
    ssh_dir = Path.home() / ".ssh"
    ssh_dir.mkdir()
    (ssh_dir / "config").write_text("Host n5\n  Port 2205\n")
    assert resolve_host("n5").port == 2205
    assert resolve_host("n6").port == 22


def test_resolve_host_proxy_jump(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host bastion\n  HostName 127.0.1.1\n  Port 2200\n  User ops\n"
        "Host n*\n  ProxyJump bastion\n"
        "Host x1\n  ProxyJump jumper@bastion:2299\n"
        "Host x2\n  ProxyJump a,b\n"
        "Host x4\n  ProxyJump n1\n"
    )
    spec = resolve_host("n1", config=cfg)
    assert spec.proxy_jump == HostSpec("bastion", "127.0.1.1", 2200, "ops", (), None)
    jump = resolve_host("x1", config=cfg).proxy_jump
    assert jump is not None and (jump.hostname, jump.port, jump.user) == ("127.0.1.1", 2299, "jumper")
    with pytest.raises(ConfigError, match="only one jump host"):
        resolve_host("x2", config=cfg)
    with pytest.raises(ConfigError, match="only one hop"):
        resolve_host("x4", config=cfg)  # n1 itself jumps through bastion


@pytest.mark.parametrize(
    ("overrides", "match"),
    [({"port": 0}, "port"), ({"port": "ssh"}, "port"), ({"adress": "x"}, "unknown field")],
)
def test_resolve_host_refuses_bad_fields(tmp_path: Path, overrides: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        resolve_host("n1", overrides, config=paramiko.SSHConfig())


def test_resolve_host_names_a_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read ssh config") as info:
        resolve_host("n1", config=tmp_path / "nope")
    assert info.value.where == str(tmp_path / "nope")


# -- running commands ---------------------------------------------------------


@SSHD
def test_run_returns_stdout_and_exit_code(cluster: SshdCluster) -> None:
    with cluster.connection("node2") as conn:
        r = conn.run(["sh", "-c", 'echo "hello from $SNCHECK_TEST_HOST"'])
    assert r.ok, r
    assert (r.host, r.stdout, r.stderr, r.exit_code, r.timed_out) == (
        "node2",
        "hello from node2\n",
        "",
        0,
        False,
    )
    assert r.command == "sh -c 'echo \"hello from $SNCHECK_TEST_HOST\"'"
    assert 0 < r.duration < 10


@SSHD
def test_nonzero_exit_is_a_result(cluster: SshdCluster) -> None:
    with cluster.connection("node1") as conn:
        r = conn.run(["sh", "-c", "echo out; echo err >&2; exit 7"])
        assert (r.exit_code, r.ok, r.stdout, r.stderr) == (7, False, "out\n", "err\n")
        assert r.tail(1) == "err"
        missing = conn.run(["no-such-tool-xyz"])
        assert missing.exit_code == 127 and "not found" in missing.stderr


@SSHD
def test_stdin_is_at_eof_and_no_lone_eof_races_the_servers_close(
        cluster: SshdCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command reading stdin ends at once (stdin is /dev/null), and run() never sends the
    channel's EOF on its own: paramiko sends it after releasing the channel's lock, so a
    command that ended at once could see the server's CLOSE answered first, and OpenSSH drops
    the whole connection on an EOF for a freed channel ('ieof packet referred to nonexistent
    channel'), every parallel read of the host with it (an NVL72 tray lost under load)."""
    import threading

    import paramiko

    def lone_eof(self: paramiko.Channel) -> None:
        raise AssertionError("run() sent a lone EOF (shutdown_write)")

    monkeypatch.setattr(paramiko.Channel, "shutdown_write", lone_eof)
    with cluster.connection("node1") as conn:
        r = conn.run(["cat"], timeout=20)
        assert (r.exit_code, r.stdout, r.timed_out) == (0, "", False) and r.duration < 10
        results: list = []

        def burst() -> None:
            results.extend(conn.run(["true"], timeout=20) for _ in range(5))

        threads = [threading.Thread(target=burst) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 30 and all(x.exit_code == 0 for x in results)


@SSHD
def test_fake_tools_come_first_on_path(cluster: SshdCluster) -> None:
    install_fake_tool(cluster["node3"], "nvidia-smi", '#!/bin/sh\necho fake smi on $SNCHECK_TEST_HOST "$@"\n')
    r3 = run_on_all(cluster.specs(), ["nvidia-smi", "-L"], timeout=10, known_hosts=cluster.known_hosts)
    assert r3["node3"].stdout == "fake smi on node3 -L\n"  # type: ignore[union-attr]
    other = r3["node1"]  # no fake there: the real tool if the machine has one, else "not found"
    assert isinstance(other, Result) and "fake smi" not in other.stdout


@SSHD
def test_env_and_cwd_arrive(cluster: SshdCluster, tmp_path: Path) -> None:
    workdir = tmp_path / "dir with space;$x"
    workdir.mkdir()
    with cluster.connection("node1") as conn:
        r = conn.run(
            ["sh", "-c", 'printf "%s|%s" "$SN_VALUE" "$PWD"'],
            env={"SN_VALUE": "a b $HOME;`x`"},
            cwd=str(workdir),
        )
    assert r.stdout == f"a b $HOME;`x`|{workdir}"


@SSHD
def test_hostile_arguments_arrive_literally(cluster: SshdCluster, tmp_path: Path) -> None:
    args = [a.format(d=tmp_path) for a in NASTY]
    with cluster.connection("node1") as conn:
        for arg in args:
            r = conn.run(["printf", "%s", arg])
            assert r.ok, r
            assert r.stdout == arg
        spec_like = conn.run(["printf", "%s|", "node1;reboot", "x|y", "a&b", "$(id)", "(x)"])
    assert spec_like.stdout == "node1;reboot|x|y|a&b|$(id)|(x)|"
    assert list(tmp_path.iterdir()) == []  # nothing was executed by a shell


@SSHD
def test_large_output_on_both_streams_does_not_deadlock(cluster: SshdCluster) -> None:
    script = "head -c 3000000 /dev/zero | tr '\\0' o; head -c 3000000 /dev/zero | tr '\\0' e >&2; exit 3"
    with cluster.connection("node1") as conn:
        r = conn.run(["sh", "-c", script], timeout=30)
    assert (r.timed_out, r.exit_code, len(r.stdout), len(r.stderr)) == (False, 3, 3_000_000, 3_000_000)
    assert set(r.stdout) == {"o"} and set(r.stderr) == {"e"}


@SSHD
def test_timeout_kills_the_remote_process_group_and_keeps_output(cluster: SshdCluster) -> None:
    install_fake_tool(
        cluster["node2"],
        "slowtool",
        '#!/bin/sh\necho "tool $$"\nsleep 30 &\necho "child $!"\n'
        "echo partial-err >&2\nsleep 30\necho never\n",
    )
    with cluster.connection("node2") as conn:
        r = conn.run(["slowtool"], timeout=1)
        assert r.timed_out and r.exit_code is None and not r.ok
        assert 1 <= r.duration < 6
        assert "never" not in r.stdout and r.stderr == "partial-err\n"  # our pid marker is stripped
        pids = [int(line.split()[1]) for line in r.stdout.splitlines()]
        assert len(pids) == 2, r.stdout
        deadline = time.monotonic() + 5
        while any(map(_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_alive, pids)), f"remote processes survived: {pids}"
        # ... as the host itself sees it, and the connection is still usable.
        check = conn.run(["ps", "-o", "stat=", "-p", ",".join(map(str, pids))])
        assert all(s.strip().startswith("Z") for s in check.stdout.splitlines()), check.stdout
        assert conn.run(["true"]).ok


@SSHD
def test_close_twice_and_reopen(cluster: SshdCluster) -> None:
    conn = cluster.connection("node1")
    conn.close()  # never opened
    assert not conn.is_open
    assert conn.run(["true"]).ok and conn.is_open
    conn.close()
    conn.close()
    assert not conn.is_open
    assert conn.run(["true"]).ok  # opens again on use
    with conn:
        pass
    assert not conn.is_open


# -- host keys -----------------------------------------------------------------


@SSHD
def test_unknown_host_key_is_refused_by_default(
    cluster: SshdCluster, caplog: pytest.LogCaptureFixture
) -> None:
    default_known_hosts = Path.home() / ".ssh" / "known_hosts"  # empty HOME: nothing is known
    with pytest.raises(HostKeyError) as info:
        Connection(cluster["node1"].spec(), retries=3).run(["true"])
    msg = str(info.value)
    assert msg.startswith("node1: unknown host key for [127.0.1.1]:")
    assert "--accept-new-host-keys" in msg and str(default_known_hosts) in msg
    assert not default_known_hosts.exists()
    assert "connect attempt" not in caplog.text  # never retried


@SSHD
def test_accept_new_host_key_records_it(cluster: SshdCluster, tmp_path: Path) -> None:
    known = tmp_path / "new" / "known_hosts"
    host = cluster["node3"]
    with Connection(host.spec(), known_hosts=known, accept_new_host_keys=True) as conn:
        assert conn.run(["true"]).ok
    key_type, key = host.host_key_pub.split()[:2]
    assert known.read_text() == f"{known_hosts_name(host.address, host.port)} {key_type} {key}\n"
    assert known_hosts_name(host.address, host.port).startswith("[127.0.1.3]:")
    # Now known: a strict connection trusts it, and a second accept-new adds nothing.
    assert Connection(host.spec(), known_hosts=known).run(["true"]).ok
    assert Connection(host.spec(), known_hosts=known, accept_new_host_keys=True).run(["true"]).ok
    assert len(known.read_text().splitlines()) == 1
    # OpenSSH reads what we wrote.
    assert paramiko.HostKeys(str(known)).lookup(f"[{host.address}]:{host.port}") is not None


@SSHD
def test_accept_new_from_many_threads_records_each_host_once(cluster: SshdCluster, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("# comment kept")  # no final newline: we must add one
    results = run_on_all(cluster.specs(), ["true"], known_hosts=known, accept_new_host_keys=True, forks=8)
    assert set(results.succeeded) == set(cluster.names)
    lines = known.read_text().splitlines()
    assert lines[0] == "# comment kept" and sorted(lines[1:]) == sorted(h.known_hosts_line for h in cluster)


@SSHD
def test_changed_host_key_is_always_refused(sshd_cluster: Callable[..., SshdCluster]) -> None:
    c = sshd_cluster(1)
    before = c.known_hosts.read_text()
    c["node1"].regenerate_host_key()
    for accept_new in (False, True):
        with pytest.raises(HostKeyError, match="has CHANGED") as info:
            c.connection("node1", accept_new_host_keys=accept_new).run(["true"])
        assert "ssh-keygen -R" in str(info.value)
    assert c.known_hosts.read_text() == before


# -- connect failures, retries, auth --------------------------------------------


def test_refused_connection_is_retried_then_connect_error(caplog: pytest.LogCaptureFixture) -> None:
    spec = HostSpec("ghost", "127.0.1.200", _free_port("127.0.1.200"), "root")
    caplog.set_level(logging.WARNING, logger="sncheck.transport")
    start = time.monotonic()
    with pytest.raises(ConnectError) as info:
        Connection(spec, retries=2, backoff=0.05).run(["true"])
    elapsed = time.monotonic() - start
    retries = [r for r in caplog.records if "connect attempt" in r.getMessage()]
    assert [r.getMessage().split(" failed")[0] for r in retries] == [
        "ghost: connect attempt 1/3",
        "ghost: connect attempt 2/3",
    ]
    assert info.value.host == "ghost"
    assert "connection refused" in str(info.value) and "gave up after 3 attempts" in str(info.value)
    assert isinstance(info.value.__cause__, ConnectionRefusedError)
    assert 0.15 <= elapsed < 5  # back-off of 0.05 + 0.10 s


def test_silent_server_is_a_handshake_timeout_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    # Accepts TCP but never speaks SSH, like a hung sshd: the connect timeout must fire.
    with socket.socket() as server:
        server.bind(("127.0.1.202", 0))
        server.listen(8)
        spec = HostSpec("mute", "127.0.1.202", server.getsockname()[1], "root")
        start = time.monotonic()
        with pytest.raises(ConnectError, match="SSH handshake with 127.0.1.202:.* failed") as info:
            Connection(spec, connect_timeout=0.3, retries=1, backoff=0.01).run(["true"])
    assert time.monotonic() - start < 5
    assert "gave up after 2 attempts" in str(info.value)
    assert "mute: connect attempt 1/2 failed" in caplog.text


@SSHD
def test_harness_kill_and_restart(sshd_cluster: Callable[..., SshdCluster]) -> None:
    c = sshd_cluster(2, names=["alpha", "beta"])
    alpha = c["alpha"]
    port = alpha.port
    with c.connection("alpha", retries=0) as conn:
        assert conn.run(["sh", "-c", "echo $SNCHECK_TEST_HOST"]).stdout == "alpha\n"
        alpha.kill()
        assert alpha.pid is None
        with pytest.raises(ConnectError):
            conn.run(["true"])  # the live session died with the host
        alpha.restart()
        assert alpha.port == port and alpha.pid is not None
        assert conn.run(["true"]).ok  # reconnects; same host key, so still trusted


@SSHD
def test_a_close_the_dead_connection_cannot_send_keeps_the_runs_outcome(
        sshd_cluster: Callable[..., SshdCluster], monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing a channel sends CLOSE unless paramiko has already seen it closed; once the peer
    is gone that send raises EOFError (CI's random-order suite: sshd killed mid-command, the
    host's facts read `host_facts: error` from the EOFError instead of `unreachable`). Here
    every close raises as on a dead socket: a finished command still gives its Result, and a
    command whose host dies gives ConnectError."""
    def dead_close(chan: paramiko.Channel) -> None:
        raise EOFError

    monkeypatch.setattr(paramiko.Channel, "close", dead_close)
    c = sshd_cluster(1, names=["alpha"])
    with c.connection("alpha", retries=0) as conn:
        done = conn.run(["sh", "-c", "echo fine"])
        assert (done.stdout, done.exit_code) == ("fine\n", 0)
        killer = threading.Timer(1.0, c["alpha"].kill)
        killer.start()
        try:
            with pytest.raises(ConnectError, match="alpha"):
                conn.run(["sleep", "30"], timeout=20)
        finally:
            killer.join()


@SSHD
def test_wrong_key_is_auth_error_and_not_retried(
    cluster: SshdCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other_key = tmp_path / "other_key"
    paramiko.ECDSAKey.generate().write_private_key_file(str(other_key))
    host = cluster["node1"]
    spec = HostSpec("node1", host.address, host.port, host.user, (str(other_key),))
    with pytest.raises(AuthError, match="authentication as 'root' failed") as info:
        Connection(spec, known_hosts=cluster.known_hosts, password=PASSWORD).run(["true"])
    assert "connect attempt" not in caplog.text
    for text in (str(info.value), repr(info.value), repr(info.value.args), caplog.text):
        assert PASSWORD not in text


@SSHD
def test_password_never_shown(cluster: SshdCluster) -> None:
    conn = cluster.connection("node1", password=PASSWORD)
    assert conn.run(["true"]).ok  # the key works; the password is never needed
    for text in (repr(conn), str(conn), repr(conn.spec)):
        assert PASSWORD not in text
    conn.close()


# -- ssh config + ProxyJump against real servers ---------------------------------


@SSHD
def test_connect_through_ssh_config(cluster: SshdCluster) -> None:
    spec = cluster.resolve("node2")
    assert (spec.hostname, spec.port) == (cluster["node2"].address, cluster["node2"].port)
    with Connection(spec, known_hosts=cluster.known_hosts) as conn:
        assert conn.run(["sh", "-c", "echo $SNCHECK_TEST_HOST"]).stdout == "node2\n"
    # An inventory address wins over HostName: node2's name, node3's server.
    spec = cluster.resolve("node2", address=cluster["node3"].address, port=cluster["node3"].port)
    with Connection(spec, known_hosts=cluster.known_hosts) as conn:
        assert conn.run(["sh", "-c", "echo $SNCHECK_TEST_HOST"]).stdout == "node3\n"


@SSHD
def test_proxy_jump_through_a_real_host(cluster: SshdCluster) -> None:
    cfg = (
        cluster.ssh_config.read_text()
        + "\nHost via-jump\n  HostName {}\n  Port {}\n  IdentityFile {}\n  ProxyJump node1\n".format(
            cluster["node3"].address, cluster["node3"].port, cluster.client_key
        )
    )
    cfg_path = cluster.root / "ssh_config_jump"
    cfg_path.write_text(cfg)
    spec = resolve_host("via-jump", config=cfg_path)
    assert spec.proxy_jump is not None and spec.proxy_jump.name == "node1"
    conn = Connection(spec, known_hosts=cluster.known_hosts)
    try:
        r = conn.run(["sh", "-c", "echo $SNCHECK_TEST_HOST $SSH_CONNECTION"])
        assert "node1" in repr(conn)
        name, _client_ip, client_port, _ip, _port = r.stdout.split()
        assert name == "node3"
        # The TCP connection node3 sees comes from node1's sshd, not from us.
        owners = _tcp_socket_owners(int(client_port))
        assert owners and owners <= set(descendants(cluster["node1"].proc.pid)), owners  # type: ignore[union-attr]
    finally:
        conn.close()
        conn.close()


@SSHD
def test_proxy_jump_to_a_dead_target_is_connect_error(cluster: SshdCluster) -> None:
    dead = HostSpec("dead", "127.0.1.201", _free_port("127.0.1.201"), "root", (), cluster["node1"].spec())
    with pytest.raises(ConnectError, match="jump host node1 could not connect"):
        Connection(dead, known_hosts=cluster.known_hosts, retries=1, backoff=0.01).run(["true"])


# -- fan-out -----------------------------------------------------------------------


@SSHD
def test_fan_out_survives_a_host_killed_mid_run(
    sshd_cluster: Callable[..., SshdCluster], tmp_path: Path
) -> None:
    c = sshd_cluster(4)
    marks = tmp_path / "marks"
    marks.mkdir()
    script = f'touch {marks}/"$SNCHECK_TEST_HOST"; sleep 1; echo done'

    def killer() -> None:
        deadline = time.monotonic() + 10
        while not (marks / "node3").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        c["node3"].kill()

    t = threading.Thread(target=killer)
    t.start()
    try:
        results = fan_out(
            c.specs(),
            lambda conn: conn.run(["sh", "-c", script], timeout=20),
            forks=4,
            known_hosts=c.known_hosts,
            backoff=0.01,
        )
    finally:
        t.join()
    assert isinstance(results, GroupResult) and list(results) == ["node1", "node2", "node3", "node4"]
    assert set(results.succeeded) == {"node1", "node2", "node4"}
    assert all(r.stdout == "done\n" for r in results.succeeded.values())
    assert list(results.failed) == list(results.errors) == ["node3"]
    err = results["node3"]
    assert isinstance(err, ConnectError) and err.host == "node3", err
    # With the host still down, the next round is refused (after retries), the others still run.
    again = run_on_all(c.specs(), ["true"], known_hosts=c.known_hosts, backoff=0.01)
    assert set(again.succeeded) == {"node1", "node2", "node4"}
    assert isinstance(again["node3"], ConnectError) and "refused" in str(again["node3"])


@SSHD
def test_fan_out_captures_unexpected_errors_per_host(cluster: SshdCluster) -> None:
    conns = [cluster.connection(n) for n in cluster.names]

    def fn(conn: Connection) -> Result:
        if conn.host == "node2":
            raise RuntimeError("bug in a probe")
        return conn.run(["sh", "-c", "exit 1"] if conn.host == "node3" else ["true"])

    try:
        results = fan_out(conns, fn, forks=2)
        assert all(c.is_open for c in conns if c.host != "node2")  # caller's connections stay open
    finally:
        for c in conns:
            c.close()
    assert list(results.succeeded) == ["node1"]
    assert list(results.failed) == ["node2", "node3"]
    assert list(results.errors) == ["node2"]
    err = results["node2"]
    assert isinstance(err, HostTaskError) and isinstance(err, TransportError)
    assert isinstance(err.__cause__, RuntimeError) and "bug in a probe" in str(err)


def test_fan_out_refuses_duplicates_and_bad_argv() -> None:
    spec = HostSpec("a", "127.0.1.1", 22, "root")
    with pytest.raises(ValueError, match="more than once"):
        fan_out([spec, spec], lambda c: c.run(["true"]))
    with pytest.raises(TypeError):
        run_on_all([spec], "true")  # type: ignore[arg-type]
    assert fan_out([], lambda c: c.run(["true"])) == {}


@pytest.mark.parametrize("directive", [
    'Match exec "touch {marker}"',
    "Match host n1 exec \"touch {marker}\"",
    "MATCH !EXEC 'touch {marker}'",
    "Match all exec=touch\\ {marker}",
    "  ProxyCommand touch {marker}",
    "ProxyCommand=touch {marker}",
    "LocalCommand touch {marker}",
    "KnownHostsCommand /bin/sh -c 'touch {marker}'",
])
def test_ssh_config_that_runs_a_command_is_refused_before_it_runs(tmp_path: Path, directive: str) -> None:
    """paramiko runs ``Match exec`` (through invoke) while it looks a host up: the file is
    refused from its text, with file:line and the directive, and the command never runs."""
    marker = tmp_path / "ran"
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host bastion\n  HostName 127.0.1.1\n\n" + directive.format(marker=marker) + "\n  User x\n")
    with pytest.raises(ConfigError) as e:
        resolve_host("n1", config=cfg)
    assert str(e.value).startswith(f"{cfg}:4: ")
    assert not marker.exists()


def test_ssh_config_without_commands_still_loads(tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text("# ProxyCommand nc %h %p (a comment)\nHost n1\n  ProxyCommand none\n  HostName 127.0.1.9\n"
                   "Match host n2\n  Port 2202\n")
    assert resolve_host("n1", config=cfg).hostname == "127.0.1.9"
    assert resolve_host("n2", config=cfg).port == 2202


def test_measurement_jobs_are_never_cut_at_the_fact_tools_bound():
    """transport.MAX_OUTPUT_BYTES (64 MiB, hostile round 16) bounds what a fact tool may print;
    a launcher's own output (mpirun gathers every rank's stdout: NCCL_DEBUG=INFO's init lines
    come before the result table) and torchrun's logs are the measurement: each `run` of a job
    in sncheck/backends/sshjobs.py passes max_output=None (the review of stop 47: cut, a large
    job's table was dropped and read 'parse failed', never saying it was cut)."""
    import ast

    from sncheck.backends import sshjobs

    tree = ast.parse(Path(sshjobs.__file__).read_text())
    jobs = [c for c in ast.walk(tree) if isinstance(c, ast.Call)
            and any(isinstance(k.value, ast.Attribute) and k.value.attr == "job_timeout_s" for k in c.keywords)]
    assert len(jobs) >= 2
    for call in jobs:
        kw = {k.arg: k.value for k in call.keywords}
        assert "max_output" in kw and isinstance(kw["max_output"], ast.Constant) and kw["max_output"].value is None, \
            ast.unparse(call)
