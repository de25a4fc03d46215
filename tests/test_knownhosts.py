"""known_hosts host patterns as OpenSSH matches them (transport/knownhosts.glob): '*' and '?'
wildcards, every other character itself. reviews14 #8: fnmatch read '[node1]:2222' as a
character class, so an @revoked line for a host on a port other than 22 never matched its host."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from collections.abc import Iterator

import paramiko
import pytest

from sncheck.errors import HostKeyError
from sncheck.transport import Connection, knownhosts
from sncheck.transport.sshconfig import HostSpec


@pytest.mark.parametrize(("pattern", "name", "hit"), [
    ("[node1]:2222", "[node1]:2222", True),
    ("[node1]:2222", "e:2222", False),            # fnmatch: a character class, matched
    ("[127.0.1.1]:2222", "[127.0.1.1]:2222", True),
    ("[127.0.1.?]:22*", "[127.0.1.7]:2222", True),
    ("node*", "node17", True), ("node*", "nod", False), ("n?de1", "node1", True), ("n?de1", "nde1", False),
    ("*", "", True), ("", "", True), ("", "a", False), ("a*b*c", "aXbYc", True), ("a*b*c", "aXbYcZ", False),
    ("*.example.org", "h1.example.org", True), ("*.example.org", "example.org", False),
    ("**a", "ba", True), ("a**", "a", True), ("?*", "", False),
])
def test_glob_is_openssh_match_pattern(pattern, name, hit):
    assert knownhosts.glob(pattern, name) is hit


def test_many_stars_never_backtrack_exponentially():
    """A hostile line of 200 stars against a 250-character name that does not match: at most
    pattern x name steps (a regex of stars backtracks exponentially and hangs the run)."""
    assert not knownhosts.glob("*a" * 100 + "b", "a" * 250)


def _key() -> paramiko.PKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    pem = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()).decode()
    return paramiko.Ed25519Key.from_private_key(io.StringIO(pem))


@pytest.mark.parametrize("name", ["node1", "[node1]:2222", "[127.0.1.1]:2222"])
def test_a_revoked_key_is_found_on_any_port(tmp_path, name):
    """Each name a connection looks up (connection._key_name: '[host]:port' off port 22) finds
    the @revoked line that names it, even where a plain line lists the same key (failed for the
    two bracketed names before: revoked_at returned None and the runner connected)."""
    key = _key()
    path = tmp_path / "known_hosts"
    path.write_text(f"{name} {key.get_name()} {key.get_base64()}\n@revoked {name} {key.get_name()} {key.get_base64()}\n")
    assert knownhosts.revoked_at(knownhosts.load(path), name, key) == 2
    assert knownhosts.revoked_at(knownhosts.load(path), "e:2222", key) is None


# -- reviews16 #2: every plain line matched as OpenSSH matches it (hostfile.c check_hostkeys_by_key_or_type)


def _line(patterns: str, key: paramiko.PKey) -> str:
    return f"{patterns} {key.get_name()} {key.get_base64()}\n"


def _check(tmp_path, text: str, host: str, port: int, key: paramiko.PKey) -> knownhosts.Found:
    (path := tmp_path / "known_hosts").write_text(text)
    return knownhosts.check(knownhosts.load(path), host, port, key)


def test_a_pattern_line_is_the_hosts_key_and_another_key_is_changed(tmp_path):
    """A fleet listed under a pattern: its key is known on every host the pattern names, and a
    host offering another key is CHANGED at that line, whatever the type (before: paramiko looked
    '[10.0.0.*]:*' up literally, every host was new, and accept-new recorded the intruder's key)."""
    fleet, other = _key(), _key()
    rsa = paramiko.RSAKey.generate(1024)
    text = "# the fleet\n" + _line("[10.0.0.*]:*,!10.0.0.9", fleet)
    assert (_check(tmp_path, text, "10.0.0.7", 2222, fleet).status, _check(tmp_path, text, "10.0.0.7", 2222, fleet).line.number) == ("ok", 2)
    changed = _check(tmp_path, text, "10.0.0.7", 2222, other)
    assert (changed.status, changed.name, changed.line.number) == ("changed", "[10.0.0.7]:2222", 2)
    assert _check(tmp_path, text, "10.0.0.7", 2222, rsa).status == "changed"   # OpenSSH: any other key
    assert _check(tmp_path, text, "10.0.0.7", 22, other).status == "new"       # '[..]:*' is never port 22
    assert _check(tmp_path, _line("*.CLUSTER,!bad.cluster", fleet), "n1.cluster", 22, other).status == "changed"
    assert _check(tmp_path, _line("*.cluster,!bad.cluster", fleet), "bad.cluster", 22, other).status == "new"
    assert _check(tmp_path, _line("n?.cluster", fleet), "n12.cluster", 22, other).status == "new"


def test_a_key_any_matching_line_lists_is_known_and_revoked_wins(tmp_path):
    """A host with a wildcard line and its own line of another key: either key is known (paramiko
    took the first line of the type and refused the other as changed); @revoked over both."""
    fleet, own = _key(), _key()
    text = _line("node*", fleet) + _line("node1", own)
    assert _check(tmp_path, text, "node1", 22, own).status == "ok"
    assert _check(tmp_path, text, "node1", 22, fleet).status == "ok"
    revoked = _check(tmp_path, text + f"@revoked * {own.get_name()} {own.get_base64()}\n", "node1", 22, own)
    assert (revoked.status, revoked.revoked_line) == ("revoked", 3)


def test_hashed_names_and_the_bare_host_off_port_22(tmp_path):
    """A hashed field is one name (HMAC-SHA1, without case); a bad hash matches nothing. Off
    port 22 a new [host]:port takes the bare host's line when it lists the key (sshconnect.c
    "checking without port identifier"), never when it lists another."""
    key, other = _key(), _key()
    hashed = paramiko.HostKeys.hash_host("node1.cluster")
    assert knownhosts.matches(hashed, "NODE1.cluster") and not knownhosts.matches(hashed, "node2.cluster")
    assert not knownhosts.matches(hashed + ",node2", "node2")                # the whole field is the hash
    assert not knownhosts.matches("|1|bm90IDIwIGJ5dGVz|AAAA", "node1")       # a salt of another length
    assert not knownhosts.matches("|1|%%%|AAAA", "node1")
    assert _check(tmp_path, _line(hashed, key), "node1.cluster", 22, other).status == "changed"
    assert _check(tmp_path, _line("node1", key), "node1", 2222, key).status == "ok"
    assert _check(tmp_path, _line("node1", key), "node1", 2222, other).status == "new"
    revoked = f"@revoked node1 {key.get_name()} {key.get_base64()}\n"
    assert _check(tmp_path, _line("node1", key) + revoked, "node1", 2222, key).status == "revoked"


def test_the_known_key_type_is_asked_for_first():
    """sshconnect2.c order_hostkeyalgs: the first algorithm kept where its type is known, else
    the known types first; rsa-sha2-* sign with ssh-rsa keys."""
    algs = ["ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512", "rsa-sha2-256"]
    rsa, ed = paramiko.RSAKey.generate(1024), _key()
    known = knownhosts.KnownHosts([knownhosts.Line(1, "node*", rsa)])
    assert knownhosts.key_order(known, "node1", algs) == ["rsa-sha2-512", "rsa-sha2-256", "ssh-ed25519", "ecdsa-sha2-nistp256"]
    assert knownhosts.key_order(known, "other", algs) == algs
    known.keys.append(knownhosts.Line(2, "node1", ed))
    assert knownhosts.key_order(known, "node1", algs) == algs


# -- the runner: paramiko asks the policy for every key, before any authentication -----------------


class _Server(paramiko.ServerInterface):
    def __init__(self) -> None:
        self.logins: list[tuple[str, str]] = []

    def get_allowed_auths(self, username: str) -> str:
        return "password"

    def check_auth_password(self, username: str, password: str) -> int:
        self.logins.append((username, password))
        return paramiko.AUTH_SUCCESSFUL


@contextlib.contextmanager
def _paramiko_host(*host_keys: paramiko.PKey) -> Iterator[tuple[int, _Server]]:
    """An in-process SSH server on 127.0.0.1 offering ``host_keys``; it records every login."""
    server, done = _Server(), threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(10)

        def serve() -> None:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                sock, _ = listener.accept()
                t = paramiko.Transport(sock)
                for key in host_keys:
                    t.add_server_key(key)
                t.start_server(server=server)
                done.wait(10)
                t.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield listener.getsockname()[1], server
        finally:
            done.set()
            thread.join(10)


def _connect(port: int, known_hosts, accept_new: bool = False) -> None:
    conn = Connection(HostSpec("node1", "127.0.0.1", port, "root"), known_hosts=known_hosts, password="s3cret",
                      retries=0, connect_timeout=10, allow_agent=False, look_for_keys=False,
                      accept_new_host_keys=accept_new)
    conn.open()
    conn.close()


def test_a_revoked_key_a_line_also_lists_is_refused_before_the_login(tmp_path):
    """reviews16 #3: paramiko asked the policy only for keys it did not hold, so a revoked key
    that a plain line also listed was refused after client.connect() had logged in: the host
    received the password. Now refused before any authentication."""
    key = _key()
    with _paramiko_host(key) as (port, server):
        (path := tmp_path / "known_hosts").write_text(
            _line(f"[127.0.0.1]:{port}", key) + f"@revoked * {key.get_name()} {key.get_base64()}\n")
        with pytest.raises(HostKeyError, match=rf"marked @revoked in {path}:2"):
            _connect(port, path)
    assert server.logins == []


def test_a_host_with_two_keys_shows_the_one_a_pattern_line_lists(tmp_path):
    """The key types a matching line lists are asked for first (paramiko did this from its own
    HostKeys, which it is no longer given): a host offering ed25519 and ECDSA, known by its
    ECDSA key under a pattern, is known, never 'changed' by the ed25519 key paramiko prefers."""
    ecdsa, ed = paramiko.ECDSAKey.generate(), _key()
    with _paramiko_host(ed, ecdsa) as (port, server):
        (path := tmp_path / "known_hosts").write_text(_line("[127.0.0.*]:*", ecdsa))
        _connect(port, path)
    assert server.logins == [("root", "s3cret")]
    assert path.read_text() == _line("[127.0.0.*]:*", ecdsa)


@pytest.mark.sshd
def test_a_wildcard_line_knows_the_fleet_and_refuses_another_key(sshd_cluster, tmp_path):
    """reviews16 #2 against real sshd: a known_hosts listing the fleet's key under a pattern
    connects without --accept-new-host-keys (before: "unknown host key" on every host); listing
    another key there is CHANGED at that line even with --accept-new-host-keys (before: the
    host's key was recorded as new and used), and the file is left as it was."""
    cluster = sshd_cluster(1)
    host = cluster["node1"]
    kind, blob = host.host_key_pub.split()[:2]
    (path := tmp_path / "known_hosts").write_text(f"# fleet\n[127.0.1.*]:*,!127.0.1.9 {kind} {blob}\n")
    assert cluster.connection("node1", known_hosts=path, retries=0).run(["true"]).ok
    other = _key()
    text = _line("[127.0.1.*]:*", other)
    path.write_text(text)
    with pytest.raises(HostKeyError) as info:
        cluster.connection("node1", known_hosts=path, retries=0, accept_new_host_keys=True).run(["true"])
    assert f"has CHANGED: {path}:1 lists {other.get_name()} {other.fingerprint}" in str(info.value)
    assert "names other hosts too" in str(info.value)
    assert path.read_text() == text


@pytest.mark.parametrize("gap", ["\t", "  ", " \t "])
def test_a_marker_ends_at_a_tab_as_at_a_space(tmp_path, gap):
    """OpenSSH's hostfile.c ends a marker at a space or a tab (reviews17 #2: '@revoked<TAB>node1 ...'
    was read as an unknown marker and skipped, and the revoked key connected)."""
    key = _key()
    text = _line("node1", key) + f"@revoked{gap}node1 {key.get_name()} {key.get_base64()}\n"
    assert _check(tmp_path, text, "node1", 22, key).status == "revoked"
