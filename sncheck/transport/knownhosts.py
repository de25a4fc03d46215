"""known_hosts as OpenSSH reads it (sshd(8), "SSH_KNOWN_HOSTS FILE FORMAT"), for the SSH runner.

A line is ``[marker] hostnames keytype base64-key [comment]``. The markers: ``@cert-authority``
(the key is a CA that signs host certificates) and ``@revoked`` (the key must never be accepted,
whatever another line says). paramiko's reader raised ``InvalidHostKey`` on a marker line (it
took the marker for the host names and decoded the key type as base64), an error nothing caught:
every host of a run failed "unexpectedly" where OpenSSH connects (hostile round 18, H18-26). Here:

- a plain line is a known key, as paramiko reads it; a line whose key does not decode is skipped,
  as OpenSSH skips it;
- ``@cert-authority`` is skipped: sncheck checks host keys, not host certificates (a host whose
  only entry is a CA's is an unknown host, refused unless ``--accept-new-host-keys``);
- ``@revoked`` keys are kept apart: :func:`revoked_at` names the line of one that matches the
  host and the key offered, and the runner refuses it (never recorded as new either).

Host patterns match as OpenSSH's do: comma-separated, ``*`` and ``?`` wildcards, ``!`` negation,
hashed ``|1|salt|hash`` names, ``[host]:port`` for a port other than 22; without case.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass, field

import paramiko
from paramiko.hostkeys import HostKeyEntry, InvalidHostKey

from sncheck.config.fileio import read_input

MARKERS = ("@cert-authority", "@revoked")


@dataclass
class KnownHosts:
    keys: list[HostKeyEntry] = field(default_factory=list)          # plain lines
    revoked: list[tuple[int, str, str, str]] = field(default_factory=list)  # (line, patterns, keytype, base64)


def load(path: str | os.PathLike[str]) -> KnownHosts:
    """The file's lines (a missing file: none); not a regular file or past 16 MiB: ConfigError."""
    if not os.path.lexists(path):
        return KnownHosts()
    out = KnownHosts()
    text = read_input(path, "known_hosts").decode("utf-8", errors="replace")
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            marker, _, rest = line.partition(" ")
            parts = rest.split()
            if marker == "@revoked" and len(parts) >= 3:
                out.revoked.append((number, parts[0], parts[1], parts[2]))
            continue  # @cert-authority, or a marker OpenSSH does not know: no key of a host
        try:
            entry = HostKeyEntry.from_line(line, number)
        except (InvalidHostKey, paramiko.SSHException, ValueError):
            entry = None
        if entry is not None:
            out.keys.append(entry)
    return out


def host_keys(known: KnownHosts, into: paramiko.HostKeys | None = None) -> paramiko.HostKeys:
    """The plain lines as paramiko's HostKeys (``into``: a client's own, ``get_host_keys()``)."""
    keys = paramiko.HostKeys() if into is None else into
    for entry in known.keys:
        for name in entry.hostnames:
            keys.add(name, entry.key.get_name(), entry.key)
    return keys


def matches(patterns: str, name: str) -> bool:
    """Whether ``name`` is one of a line's host ``patterns`` (a negated match excludes it)."""
    hit = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        pattern = pattern[1:] if negated else pattern
        if pattern.startswith("|1|"):
            found = hmac.compare_digest(paramiko.HostKeys.hash_host(name, pattern), pattern)
        else:
            found = glob(pattern.lower(), name.lower())
        if found and negated:
            return False
        hit = hit or found
    return hit


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
    for number, patterns, keytype, blob in known.revoked:
        if keytype == key.get_name() and blob == key.get_base64() and matches(patterns, name):
            return number
    return None
