"""known_hosts as OpenSSH reads it (sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT"), for the SSH runner.

A line is ``[marker] hostnames keytype base64-key [comment]``. The markers: ``@cert-authority``
(the key is a CA that signs host certificates) and ``@revoked`` (the key must never be accepted,
whatever another line says). paramiko's reader raised ``InvalidHostKey`` on a marker line (it
took the marker for the host names and decoded the key type as base64), an error nothing caught:
every host of a run failed "unexpectedly" where OpenSSH connects (hostile round 18, H18-26). Here:

- a plain line is a known key; a line whose key does not decode is skipped, as OpenSSH skips it;
- ``@cert-authority`` is skipped: sncheck checks host keys, not host certificates (a host whose
  only entry is a CA's is an unknown host, refused unless ``--accept-new-host-keys``);
- ``@revoked`` keys are kept apart: never accepted, never recorded as new.

A host is judged by :func:`check` as OpenSSH's check_host_key (sshconnect.c) and
check_hostkeys_by_key_or_type (hostfile.c, openssh-portable 0ef0f5a) judge it, over every line
whose host field matches the name: ``ok`` where one of them lists the key offered, ``changed``
where some match and none lists it (whatever their key types: OpenSSH's "REMOTE HOST
IDENTIFICATION HAS CHANGED", refused even under accept-new), ``new`` where none matches, and
``revoked`` over all of these. Off port 22 a new ``[host]:port`` is still ``ok`` where a line
for the bare ``host`` lists the key ("checking without port identifier"; a key revoked for
the bare host is refused there too, where OpenSSH would go on to "new"). paramiko's own
HostKeys looked names up literally, so a fleet listed under ``*.cluster`` was unknown on every
host, and a host offering another key than its wildcard line was recorded as new (reviews16 #2).

The files are OpenSSH's: the user's (``--known-hosts``, the inventory's ``ssh.known_hosts``,
else ``~/.ssh/known_hosts``) first, then the system's (:data:`SYSTEM_FILES`, ssh_config's
GlobalKnownHostsFile default), read into one list as sshconnect.c's check_host_key loads them
(load_hostkeys over the user files, then the system files) and judged over all of it: a host
listed in /etc/ssh/ssh_known_hosts alone is known, a key the system file lists otherwise is
changed, naming that file and line (review16 #13: the system file was not read, so a fleet keyed
there was unknown everywhere, pushing operators to --accept-new-host-keys). New keys are
recorded in the user's file only, as OpenSSH does.

Host fields match as hostfile.c's match_maybe_hashed: a field starting ``|`` is one hashed name
``|1|salt|hash`` (HMAC-SHA1 of the name); any other is match.c's match_hostname: comma-separated
patterns, ``*`` and ``?`` wildcards, ``!`` negation (a negated match excludes the name whatever
else matches), without case. The name is ``host`` on port 22, ``[host]:port`` on another.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from typing import Literal

import paramiko
from paramiko.hostkeys import HostKeyEntry, InvalidHostKey

from sncheck.config.fileio import read_input

MARKERS = ("@cert-authority", "@revoked")
SSH_PORT = 22
# ssh_config(5) GlobalKnownHostsFile's default (pathnames.h _PATH_SSH_SYSTEM_HOSTFILE, _2)
SYSTEM_FILES: tuple[str, ...] = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


@dataclass(frozen=True)
class Line:
    """A plain line: its number in the file, its host field, its key."""

    number: int
    patterns: str
    key: paramiko.PKey
    path: str = ""  # the file it is in


@dataclass
class KnownHosts:
    keys: list[Line] = field(default_factory=list)                          # plain lines
    revoked: list[tuple[int, str, str, str]] = field(default_factory=list)  # (line, patterns, keytype, base64)
    revoked_in: list[str] = field(default_factory=list)  # the file of each revoked entry


@dataclass(frozen=True)
class Found:
    """:func:`check`'s answer: the status and the line that decided it (none for ``new``)."""

    status: Literal["ok", "changed", "new", "revoked"]
    name: str                  # the name looked up: host, or [host]:port
    line: Line | None = None   # ok: the line listing the key; changed: a matching line with another
    revoked_line: int = 0      # revoked: the @revoked line's number
    revoked_path: str = ""     # ... and its file


def load_all(user: str | os.PathLike[str]) -> KnownHosts:
    """The user's file, then the system's (:data:`SYSTEM_FILES`), as one list (the module's docstring)."""
    out = KnownHosts()
    for path in (user, *SYSTEM_FILES):
        load(path, out)
    return out


def load(path: str | os.PathLike[str], into: KnownHosts | None = None) -> KnownHosts:
    """The file's lines (a missing file: none), after ``into``'s; not a regular file or past
    16 MiB: ConfigError."""
    out = into if into is not None else KnownHosts()
    if not os.path.lexists(path):
        return out
    name = os.fspath(path)
    text = read_input(path, "known_hosts").decode("utf-8", errors="replace")
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            # hostfile.c check_markers: the marker ends at a space or a tab (reviews17 #2: split at a space
            # alone, '@revoked<TAB>host key' was no @revoked line and the revoked key connected)
            marker, *rest = line.split(None, 1)
            parts = rest[0].split() if rest else []
            if marker == "@revoked" and len(parts) >= 3:
                out.revoked.append((number, parts[0], parts[1], parts[2]))
                out.revoked_in.append(name)
            continue  # @cert-authority, or a marker OpenSSH does not know: no key of a host
        try:
            entry = HostKeyEntry.from_line(line, number)
        except (InvalidHostKey, paramiko.SSHException, ValueError):
            entry = None
        if entry is not None:
            out.keys.append(Line(number, line.split()[0], entry.key, name))
    return out


def key_name(host: str, port: int) -> str:
    """The name a host's key is kept under (OpenSSH's put_host_port; paramiko's too)."""
    return host if port == SSH_PORT else f"[{host}]:{port}"


def check(known: KnownHosts, host: str, port: int, key: paramiko.PKey) -> Found:
    """OpenSSH's verdict on ``key`` offered by ``host`` on ``port`` (the module's docstring)."""
    name = key_name(host, port)
    found = _check_name(known, name, key)
    if found.status == "new" and port != SSH_PORT:
        bare = _check_name(known, host, key)  # sshconnect.c: "checking without port identifier"
        if bare.status == "ok":
            return Found("ok", name, bare.line)
        if bare.status == "revoked":  # OpenSSH goes on to "new" here; a revoked key is never taken
            return Found("revoked", name, revoked_line=bare.revoked_line, revoked_path=bare.revoked_path)
    return found


def _check_name(known: KnownHosts, name: str, key: paramiko.PKey) -> Found:
    found = Found("new", name)
    for line in known.keys:
        if not matches(line.patterns, name):
            continue
        if _same(line.key, key):
            found = Found("ok", name, line)
            break
        found = Found("changed", name, line)  # a matching line with another key
    for (number, patterns, keytype, blob), path in zip(known.revoked, known.revoked_in, strict=True):
        if keytype == key.get_name() and blob == key.get_base64() and matches(patterns, name):
            return Found("revoked", name, revoked_line=number, revoked_path=path)
    return found


def _same(a: paramiko.PKey, b: paramiko.PKey) -> bool:
    return a.get_name() == b.get_name() and a.asbytes() == b.asbytes()


def key_order(known: KnownHosts, name: str, algorithms: list[str]) -> list[str]:
    """The host key algorithms to offer, as sshconnect2.c's order_hostkeyalgs orders them: as
    they are where a line for ``name`` lists a key of the first one's type, else the types those
    lines list first (in their order), then the rest; so a host that has several keys shows the
    one known_hosts lists, never a key of another type that would read "changed"."""
    known_types = {line.key.get_name() for line in known.keys if matches(line.patterns, name)}
    if not algorithms or _key_type(algorithms[0]) in known_types:
        return list(algorithms)
    first = [a for a in algorithms if _key_type(a) in known_types]
    return first + [a for a in algorithms if a not in first]


def _key_type(algorithm: str) -> str:
    """The key type an algorithm signs with (sshkey_type_plain): rsa-sha2-* are ssh-rsa keys."""
    plain = algorithm.removesuffix("-cert-v01@openssh.com")
    return "ssh-rsa" if plain in ("rsa-sha2-256", "rsa-sha2-512") else plain


def matches(patterns: str, name: str) -> bool:
    """Whether ``name`` is one of a line's host ``patterns`` (hostfile.c match_maybe_hashed)."""
    name = name.lower()
    if patterns.startswith("|"):  # one hashed name, the whole field
        return _hashed(patterns, name)
    hit = False
    for pattern in patterns.lower().split(","):  # match.c match_pattern_list
        negated = pattern.startswith("!")
        found = glob(pattern[1:] if negated else pattern, name)
        if found and negated:
            return False
        hit = hit or found
    return hit


def _hashed(field: str, name: str) -> bool:
    """hostfile.c host_hash: ``|1|`` base64(salt of 20 bytes) ``|`` base64(HMAC-SHA1(salt, name)),
    the whole field compared (a salt that does not decode, or of another length: no match)."""
    parts = field.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return False
    try:
        salt = base64.b64decode(parts[2], validate=True)
    except binascii.Error:
        return False
    if len(salt) != hashlib.sha1().digest_size:
        return False
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    ours = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
    return hmac.compare_digest(ours.encode(), field.encode())


def glob(pattern: str, name: str) -> bool:
    """OpenSSH's match_pattern (match.c): ``*`` any run of characters, ``?`` one, every other
    character itself, ``[`` and ``]`` too (``[host]:2222`` is a name, never fnmatch's character
    class: that read '[node1]:2222' as one letter of n,o,d,e,1 then ':2222', so a revoked key of a
    host on another port was never matched). Greedy with one backtrack point: steps at most
    len(pattern) x len(name), whatever the stars (a regex of many stars backtracks exponentially)."""
    p = n = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and pattern[p] in ("?", name[n]) and pattern[p] != "*":
            p, n = p + 1, n + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, n, p + 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            n = mark
        else:
            return False
    return pattern[p:].strip("*") == ""


def revoked_at(known: KnownHosts, name: str, key: paramiko.PKey) -> int | None:
    """The line of an ``@revoked`` entry for host ``name`` holding ``key``, or None."""
    found = _check_name(known, name, key)
    return found.revoked_line if found.status == "revoked" else None
