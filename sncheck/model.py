"""The typed names every layer shares: Severity, Verdict, Status, Tier, EntityKind, Basis, Action;
the run's values, Finding and IsolationStep; host_of, card_of.

Each name is a ``StrEnum`` whose values are the strings results.json has always held, so
a member compares equal to (and serialises as) its string: ``Severity.CRITICAL == "critical"``.

This module imports only the standard library: the worker (which runs on the hosts) and
the control side both import it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, dataclass, field
from enum import Enum
from functools import lru_cache

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10, which has no enum.StrEnum
    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)


class Severity(StrEnum):
    """A finding's severity, least first: ``rank`` orders them."""
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _SEVERITY_ORDER.index(self)


_SEVERITY_ORDER = tuple(Severity)


def severity_rank(severity: str) -> int:
    """The rank of a severity given as a member or its string (``ValueError`` on others)."""
    return Severity(severity).rank


def at_or_above(severity: str, gate: str) -> bool:
    """Whether ``severity`` reaches the gate severity ``gate``."""
    return severity_rank(severity) >= severity_rank(gate)


class Verdict(StrEnum):
    """One set of verdict words for the run, each layer and every output.

    The run is pass, fail, inconclusive or error. A layer may also be skipped (it did not run) or
    not judged (it ran, but nothing judged its rows): neither is ever a pass.
    """
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"
    NOT_JUDGED = "not_judged"
    # The confirmation retest could not tell on a busy machine (exit 4): not a pass, nothing isolated.
    INCONCLUSIVE = "inconclusive"


class Status(StrEnum):
    """A result row's status (sncheck/rows.py): ``ok`` or why nothing was measured."""
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    MISSING_TOOL = "missing_tool"
    PARSE_FAILED = "parse_failed"
    NOT_RUN = "not_run"
    SKIPPED = "skipped"  # a host fact the inventory switched off (``checks: {tool: false}``)
    NOT_MEASURED = "not_measured"  # the tool ran and skipped the test (dcgmi ``Skip``): nothing judged


# A check that could not run, whose output could not be read, or whose tool skipped what it
# was to measure: about the check, not the hardware.
CHECK_STATUSES = (Status.MISSING_TOOL, Status.PARSE_FAILED, Status.NOT_MEASURED)


class Tier(StrEnum):
    """The tier of the link between two cards."""
    INTRA_HOST = "intra_host"
    SCALE_UP = "scale_up"
    SCALE_OUT = "scale_out"


class EntityKind(StrEnum):
    """What a finding names (DESIGN.md, identifiers)."""
    CARD = "card"
    NIC = "nic"
    LINK = "link"
    HOST = "host"
    SUPERNODE = "supernode"
    SWITCH = "switch"  # a scale-out leaf or spine: ``leaf:<name>``, ``spine:<name>`` (sncheck.fabric)


class Basis(StrEnum):
    """What a finding rests on: a measurement of the hardware, or a check that did not measure
    (a missing tool, an unreachable peer) or did not judge (no golden reference, no baseline)."""
    MEASURED = "measured"
    NOT_MEASURED = "not_measured"
    NOT_JUDGED = "not_judged"


class Action(StrEnum):
    """An isolation step's action (DESIGN.md, results.json ``isolation``)."""
    QUARANTINE = "quarantine"
    ISOLATE = "isolate"
    RELEASE = "release"


@dataclass
class Finding:
    entity: str
    entity_kind: str  # card | link | host | supernode | nic
    layer: str
    rule: str
    severity: str
    message: str
    evidence: dict = field(default_factory=dict)
    # "hardware": the entity is at fault. "check": a check did not run or could not judge
    # there (a missing tool, no golden reference): never isolated, still fails the gate.
    about: str = "hardware"

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["about"] == "hardware":
            d.pop("about")  # results.json: the key appears only on findings about a check
        return d


@dataclass
class IsolationStep:
    entity: str
    entity_kind: str
    action: str  # quarantine | isolate | release
    reason: str
    applied: bool = False
    rule: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["rule"] is None:
            d.pop("rule")
        return d


LINK_SEP = "<->"


@lru_cache(maxsize=65536)
def natural_key(s: str) -> tuple:
    """Sort key that orders ``gpu2`` before ``gpu10``."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s))


def link_id(a: str, b: str) -> str:
    """The link between two cards: both ids joined with ``<->`` in natural sort order."""
    x, y = sorted((a, b), key=natural_key)
    return f"{x}{LINK_SEP}{y}"


def card_id(host: str, index: int) -> str:
    return f"{host}/gpu{index}"


def nic_id(host: str, rail: int) -> str:
    """A card's scale-out port, one per rail: ``<host>/nic<rail>`` (rail r serves card r)."""
    return f"{host}/nic{rail}"


def split_link(link: str) -> tuple[str, str]:
    a, _, b = link.partition("<->")
    return a, b


def rail_of(card: str) -> int:
    return int(card.rsplit("/gpu", 1)[1])


def nic_of(card: str) -> str:
    """The rail NIC that serves a card (rail r serves card r on rail-aligned clusters)."""
    return nic_id(host_of(card), rail_of(card))


# The scale-out fabric's switches (sncheck.fabric): ``leaf:<name>``, ``spine:<name>``, and a
# cabled switch port ``leaf:<name>[<port>]``.
LEAF, SPINE = "leaf", "spine"
_SWITCH = re.compile(r"^(?P<kind>leaf|spine):(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[(?P<port>\d+)\])?$")


def switch_id(kind: str, name: str) -> str:
    """``leaf:<name>`` or ``spine:<name>``."""
    return f"{kind}:{name}"


def port_id(switch: str, port: int) -> str:
    """A switch port: ``leaf:<name>[<port>]``."""
    return f"{switch}[{port}]"


def parse_switch(entity: str) -> tuple[str, str, int | None] | None:
    """``(kind, name, port)`` of a switch or switch port id (port None for a switch), or None."""
    m = _SWITCH.match(entity)
    if m is None:
        return None
    return m["kind"], m["name"], int(m["port"]) if m["port"] is not None else None


def is_switch(entity: str) -> bool:
    """Whether ``entity`` is written as a switch (``leaf:x``, ``spine:y``), not a port."""
    parsed = parse_switch(entity)
    return parsed is not None and parsed[2] is None


def host_of(entity: str) -> str:
    """The host of a card (``h/gpu3``) or a NIC (``h/nic3``); a host names itself."""
    return entity.rsplit("/", 1)[0]


def hosts_of(entity: str) -> list[str]:
    """The host of each end of a link (``a/gpu0<->b/gpu1``), or of a card, NIC or host."""
    return [host_of(part) for part in entity.split(LINK_SEP)]


def card_of(entity: str) -> str:
    """The card a card or NIC entity stands for: rail *r*'s NIC serves card *r* (DESIGN.md)."""
    host, _, leaf = entity.rpartition("/")
    if host and leaf.startswith("nic") and leaf[3:].isdigit():
        return f"{host}/gpu{leaf[3:]}"
    return entity
