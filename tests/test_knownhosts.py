"""known_hosts host patterns as OpenSSH matches them (transport/knownhosts.glob): '*' and '?'
wildcards, every other character itself. reviews14 #8: fnmatch read '[node1]:2222' as a
character class, so an @revoked line for a host on a port other than 22 never matched its host."""

from __future__ import annotations

import io

import paramiko
import pytest

from sncheck.transport import knownhosts


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
