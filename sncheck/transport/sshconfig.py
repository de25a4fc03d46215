"""Resolve how to reach an inventory host: inventory fields, then ssh config, then defaults.

Precedence, highest first:
1. the host's own inventory entry (``hosts: node001: {address, port, user, identity_file}``);
2. the ssh config file (``~/.ssh/config`` unless another is given);
3. the inventory's ``ssh:`` section (``user``, ``port``, ``identity_file``);
4. port 22 and the local user name, as OpenSSH does.
"""

from __future__ import annotations

import getpass
import glob
import os
import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import paramiko

from sncheck.config.fileio import LIMITS, read_input
from sncheck.config.inventory import is_address, is_login_name
from sncheck.errors import ConfigError

FIELDS = frozenset({"address", "port", "user", "identity_file"})

# ssh_config directives that make the client run a local command. paramiko evaluates
# ``Match exec`` while it looks a host up (through invoke), before sncheck sees the
# result, so these are refused from the file's text, before paramiko parses it.
_EXEC_KEYWORDS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})
_DIRECTIVE = re.compile(r"\s*(?P<key>[A-Za-z]+)\s*(?:=\s*|\s+)?(?P<args>.*)")

# OpenSSH's READCONF_MAX_DEPTH: an Include nested deeper (a file including itself) is an error.
_INCLUDE_DEPTH = 16
# What one config may read through its Includes in all: depth alone bounds no breadth (ten files
# each including the next ten times read it 10^8 times; hostile round 17). As a file read whole,
# at most the ssh config cap of text, and at most this many included files read.
_INCLUDE_FILES = 1024

_JUMP = re.compile(
    r"(?:ssh://)?(?:(?P<user>[^@\s]+)@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:@\s\[\]]+))(?::(?P<port>\d+))?\Z"
)


@dataclass(frozen=True)
class HostSpec:
    """Everything needed to open an SSH connection to one host.

    ``name`` is the inventory name (used in results and messages);
    ``hostname`` is what is dialled and what known_hosts is checked against.
    """

    name: str
    hostname: str
    port: int = 22
    user: str = ""
    identity_files: tuple[str, ...] = ()
    proxy_jump: HostSpec | None = None

    def __str__(self) -> str:
        jump = self.proxy_jump
        via = f" via {jump.name} ({jump})" if jump else ""
        return f"{self.user}@{self.hostname}:{self.port}{via}"


def shared_endpoints(specs: Mapping[str, HostSpec], gateways: Collection[str] = ()) -> list[tuple[str, str, str]]:
    """Hosts that would be dialled at one endpoint (the same address and port, through the
    same jump): ``(earlier host, host, endpoint)`` for each host after the first. One machine
    reached under two inventory names would be measured and judged twice and the second name's
    machine never (hostile round 10). Addresses are compared as DNS compares names (case and a
    trailing dot ignored); two users on one machine are one machine, except at a gateway that
    routes SSH by user (sshpiper): hosts named in ``gateways`` (the inventory's ``ssh_gateway:
    true``) share an endpoint with each other, one user each; never with a host not so named."""
    def key(spec: HostSpec | None) -> tuple | None:
        if spec is None:
            return None
        return (spec.hostname.lower().rstrip("."), spec.port, key(spec.proxy_jump))

    first: dict[tuple | None, str] = {}  # endpoint -> the first host dialled there
    plain: dict[tuple | None, str] = {}  # endpoint -> the first host there not behind a gateway
    routed: dict[tuple, str] = {}  # (endpoint, user) -> the first gateway host dialled there as that user
    out = []
    for name, spec in specs.items():
        k, gateway = key(spec), name in gateways
        earlier = (plain.get(k) or routed.get((k, spec.user))) if gateway else first.get(k)
        if earlier is not None:
            via = f" via {spec.proxy_jump.hostname}" if spec.proxy_jump else ""
            user = f" as user {spec.user}" if gateway and earlier in gateways else ""
            out.append((earlier, name, f"{spec.hostname} port {spec.port}{via}{user}"))
        first.setdefault(k, name)
        if gateway:
            routed.setdefault((k, spec.user), name)
        else:
            plain.setdefault(k, name)
    return out


def peer_names_dialled(specs: Mapping[str, HostSpec], gateways: Collection[str]) -> list[tuple[str, str]]:
    """``(gateway host, host)`` where a host behind an SSH gateway (``gateways``), which the other
    hosts reach by its inventory name, has a name that sncheck dials for a host (another one, or
    the gateway's own name): the others would reach that machine for it (review s43o)."""
    def norm(name: str) -> str:
        return name.lower().rstrip(".")

    at: dict[str, str] = {}
    for name, spec in specs.items():
        at.setdefault(norm(spec.hostname), name)
    return [(g, at[norm(g)]) for g in specs if g in gateways and norm(g) in at]


def load_ssh_config(path: str | os.PathLike[str] | None = None) -> paramiko.SSHConfig:
    """Parse an ssh config file; with no path, ``~/.ssh/config`` if it exists, else nothing."""
    if path is None:
        default = Path("~/.ssh/config").expanduser()
        if not default.is_file():
            return paramiko.SSHConfig()
        path = default
    try:
        raw = read_input(path, "ssh config")
    except ConfigError as e:
        raise ConfigError(f"cannot read ssh config: {e.message}", where=os.fspath(path)) from e
    try:
        text = raw.decode("utf-8", errors="strict")
        refuse_unparsable(text, os.fspath(path))
        refuse_exec_directives(text, os.fspath(path))
        return paramiko.SSHConfig.from_text(_included(text, os.fspath(path), 0, [0, len(raw)]))
    except UnicodeDecodeError as e:
        raise ConfigError(f"ssh config is not UTF-8 text (byte {e.start})", where=os.fspath(path)) from e
    except paramiko.ConfigParseError as e:
        raise ConfigError(f"invalid ssh config: {e}", where=os.fspath(path)) from e


def _included(text: str, where: str, depth: int, read: list[int]) -> str:
    """``text`` with each ``Include`` replaced by the files it names, as OpenSSH reads them
    (paramiko keeps ``include`` as a key and reads nothing: a host's HostName in an included
    file was dropped, and the host dialled at its bare name; hostile round 16). Glob patterns,
    in order; a relative path is under ``~/.ssh`` (a user's config); a file matched by none is
    no error, as in OpenSSH. Each included file is refused as the file itself is (a directive
    that runs a command, naming that file and line) and read as sncheck reads any input. An
    Include inside a Host or Match block includes its files there: after them that block
    goes on (its header is said again where an included file opened blocks of its own).
    ``read``: the included files and bytes read so far, bounded (:data:`_INCLUDE_FILES`, the
    ssh config cap) over the whole config."""
    out: list[str] = []
    header: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        key = m["key"].lower() if m and not line.lstrip().startswith("#") else ""
        if key in ("host", "match"):
            header = line
        if key != "include":
            out.append(line)
            continue
        if depth >= _INCLUDE_DEPTH:
            raise ConfigError(f"Include nested more than {_INCLUDE_DEPTH} deep (a file that includes itself?)",
                              where=f"{where}:{lineno}")
        try:
            patterns = shlex.split(m["args"], comments=True)  # type: ignore[index]
        except ValueError as e:
            raise ConfigError(f"invalid Include: {e}", where=f"{where}:{lineno}") from e
        for pattern in patterns:
            full = os.path.expanduser(pattern)
            if not os.path.isabs(full):
                full = os.path.join(os.path.expanduser("~/.ssh"), full)
            for found in sorted(glob.glob(full)):
                read[0] += 1
                if read[0] > _INCLUDE_FILES:
                    raise ConfigError(f"its Includes read more than {_INCLUDE_FILES} files in all (a file included "
                                      "again and again?)", where=f"{where}:{lineno}")
                try:
                    raw = read_input(found, "ssh config")
                    read[1] += len(raw)
                    if read[1] > LIMITS["ssh config"]:
                        raise ConfigError(f"the ssh config with its Includes is larger than "
                                          f"{LIMITS['ssh config'] >> 20} MiB (the cap of one ssh config)",
                                          where=f"{where}:{lineno}")
                    sub = raw.decode("utf-8", errors="strict")
                except UnicodeDecodeError as e:
                    raise ConfigError(f"ssh config is not UTF-8 text (byte {e.start})", where=found) from e
                refuse_unparsable(sub, found)
                refuse_exec_directives(sub, found)
                body = _included(sub, found, depth + 1, read)
                out.append(body)
                if header is not None and any((d := _DIRECTIVE.match(ln)) and d["key"].lower() in ("host", "match")
                                              for ln in body.splitlines() if not ln.lstrip().startswith("#")):
                    out.append(header)
    return "\n".join(out) + "\n"


# paramiko's SSHConfig.SETTINGS_REGEX: a line it reads is ``Keyword argument`` or ``Keyword=argument``.
_SETTING = re.compile(r"(\w+)(?:\s*=\s*|\s+)(.+)")


def refuse_unparsable(text: str, where: str) -> None:
    """A line that is no ``Keyword argument`` directive, at its file and line, never quoted:
    paramiko's error printed the line, so a file that is no ssh config (a private key, a shadow
    file given as ``--ssh-config``) had its first line in the terminal (hostile round 22, H22-01)."""
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#") and not _SETTING.match(line):
            raise ConfigError(f"invalid ssh config: a line of {len(line)} characters is no 'Keyword argument' "
                              "directive (not shown: is it the right file?)", where=f"{where}:{lineno}")


def refuse_exec_directives(text: str, where: str) -> None:
    """Refuse every directive that would run a local command: ``ProxyCommand`` (other than
    ``none``), ``LocalCommand``, ``KnownHostsCommand`` and a ``Match`` with an ``exec``
    criterion. One line naming the file, line and directive."""
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        key, args = m["key"].lower(), m["args"].strip()
        if key in _EXEC_KEYWORDS and args.strip("\"'").lower() != "none":
            raise ConfigError(f"{m['key']} runs a local command; sncheck refuses it (use ProxyJump for a jump host)",
                              where=f"{where}:{lineno}")
        if key == "match" and any(t.strip("\"'!").lower().startswith("exec") for t in re.split(r"[\s=]+", args)):
            raise ConfigError("Match exec runs a local command for every host looked up; sncheck refuses it",
                              where=f"{where}:{lineno}")


def resolve_host(
    name: str,
    overrides: Mapping[str, object] | None = None,
    defaults: Mapping[str, object] | None = None,
    config: paramiko.SSHConfig | str | os.PathLike[str] | None = None,
) -> HostSpec:
    """Build the :class:`HostSpec` for inventory host ``name``.

    ``overrides`` is the host's inventory entry and ``defaults`` the inventory's
    ``ssh:`` section; both take the keys ``address``, ``port``, ``user`` and
    ``identity_file``. ``config`` is a parsed ssh config or a path to one
    (default ``~/.ssh/config``). Pass a parsed config when resolving many hosts.
    """
    cfg = config if isinstance(config, paramiko.SSHConfig) else load_ssh_config(config)
    return _resolve(name, _checked(overrides, f"hosts.{name}"), _checked(defaults, "ssh"), cfg, True)


def _resolve(
    name: str,
    over: Mapping[str, object],
    dflt: Mapping[str, object],
    cfg: paramiko.SSHConfig,
    follow_jump: bool,
) -> HostSpec:
    found = cfg.lookup(name)
    if "proxycommand" in found and str(found["proxycommand"]).lower() != "none":
        raise ConfigError(f"host {name}: ProxyCommand in ssh config is not supported; use ProxyJump")

    hostname = str(_first(over.get("address"), found.get("hostname"), name))
    port = _port(_first(over.get("port"), found.get("port"), dflt.get("port"), 22), name)
    user = str(_first(over.get("user"), found.get("user"), dflt.get("user")) or getpass.getuser())
    # the ssh config's values held to the inventory's checks (its 'HostName a;touch x' and 'User root;id'
    # were taken where the inventory refuses them: hostile round 18, H18-20)
    if not is_address(hostname):
        raise ConfigError(f"host {name}: HostName {hostname[:80]!r} is not an address (a name, IPv4 or IPv6)")
    if not is_login_name(user):
        raise ConfigError(f"host {name}: User {user[:80]!r} is not a login name (letters, digits, '_', '.', '@', "
                          "'-'; never a leading '-' or a shell metacharacter)")
    if _first(over.get("identity_file")) is not None:
        identity_files: tuple[str, ...] = (_expand(over["identity_file"]),)
    elif found.get("identityfile"):
        identity_files = tuple(_expand(p) for p in found["identityfile"])
    elif _first(dflt.get("identity_file")) is not None:
        identity_files = (_expand(dflt["identity_file"]),)
    else:
        identity_files = ()

    jump = None
    raw_jump = str(found.get("proxyjump") or "").strip()
    if follow_jump and raw_jump and raw_jump.lower() != "none":
        jump = _resolve_jump(name, raw_jump, dflt, cfg)
    return HostSpec(name, hostname, port, user, identity_files, jump)


def _resolve_jump(name: str, raw: str, defaults: Mapping[str, object], cfg: paramiko.SSHConfig) -> HostSpec:
    if "," in raw:
        raise ConfigError(f"host {name}: ProxyJump {raw!r} has several hops; only one jump host is supported")
    m = _JUMP.match(raw)
    if not m:
        raise ConfigError(f"host {name}: cannot parse ProxyJump {raw!r}; expected [user@]host[:port]")
    jump_name = m["v6"] or m["host"]
    if not is_address(jump_name) or jump_name.startswith("-"):
        raise ConfigError(f"host {name}: ProxyJump host {jump_name[:80]!r} is not a host name or address")
    found = cfg.lookup(jump_name)
    # "Host *" blocks often give every host, the jump host included, the same
    # ProxyJump; pointing at itself means "connect directly", as in OpenSSH.
    nested = str(found.get("proxyjump") or "").strip()
    if nested and nested.lower() != "none" and nested != raw:
        raise ConfigError(
            f"host {name}: jump host {jump_name} has its own ProxyJump {nested!r}; only one hop is supported"
        )
    over: dict[str, object] = {"user": m["user"], "port": m["port"]}
    if m["v6"]:
        over["address"] = m["v6"]
    return _resolve(jump_name, {k: v for k, v in over.items() if v}, defaults, cfg, False)


def _checked(fields: Mapping[str, object] | None, where: str) -> dict[str, object]:
    fields = dict(fields or {})
    unknown = set(fields) - FIELDS
    if unknown:
        raise ConfigError(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(FIELDS))}"
        )
    return {k: v for k, v in fields.items() if v is not None}


def _first(*values: object) -> object:
    """The first value that is set (None and "" are not; 0 is, so it can be refused)."""
    return next((v for v in values if v is not None and v != ""), None)


def _port(value: object, name: str) -> int:
    # ASCII digits only: int() reads '٢٢' (Arabic-Indic) as 22 (hostile round 18, H18-20)
    port = int(str(value)) if re.fullmatch(r"[0-9]{1,5}", str(value)) else 0
    if not 1 <= port <= 65535:
        raise ConfigError(f"host {name}: port {value!r} is not a number from 1 to 65535")
    return port


def _expand(path: object) -> str:
    return os.path.expanduser(str(path))
