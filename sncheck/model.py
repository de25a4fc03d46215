"""The typed names every layer shares: Severity, Verdict, Status, Tier, EntityKind, Basis, About,
Action; the run's record, RunRecord of Finding and IsolationStep values; the entity ids
(card_id, link_id, host_of, card_of, ...).

Each name is a ``StrEnum`` whose values are the strings results.json has always held, so
a member compares equal to (and serialises as) its string: ``Severity.CRITICAL == "critical"``.

This module imports only the standard library: the worker (which runs on the hosts) and
the control side both import it.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from functools import lru_cache
from typing import Any

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

    @classmethod
    def most_severe_first(cls) -> tuple[Severity, ...]:
        return tuple(reversed(_SEVERITY_ORDER))


_SEVERITY_ORDER = tuple(Severity)


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
    # The confirmation retest could not tell on a busy machine, or a near-bar suspect no retest may
    # judge (exit 4): not a pass, nothing isolated.
    INCONCLUSIVE = "inconclusive"


class ExitCode(IntEnum):
    """sncheck's exit codes (DESIGN.md): one table for every command, never a count."""
    PASS = 0          # the gate passed; a command did what it was asked
    FAIL = 1          # the gate failed (a finding at the gate, a layer that could not run), or a check found a failure
    BAD_INPUT = 2     # usage, config or input error: one line naming the file, line, host or command
    HARNESS = 3       # sncheck itself could not run (no backend, workers died, interrupted, a crash)
    INCONCLUSIVE = 4  # the retest could not tell on a busy machine, or a near-bar suspect no retest may judge: nothing isolated or released for it

    @classmethod
    def of(cls, verdict: Verdict) -> ExitCode:
        """A run's exit code: pass 0, fail 1, error 3, inconclusive 4 (anything else is not a pass)."""
        return {Verdict.PASS: cls.PASS, Verdict.ERROR: cls.HARNESS,
                Verdict.INCONCLUSIVE: cls.INCONCLUSIVE}.get(verdict, cls.FAIL)


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


class About(StrEnum):
    """What a finding blames: the entity's hardware (it may be quarantined and isolated), or
    the check that could not measure or judge there (a missing tool, no golden reference):
    never isolated for it, it still gates."""
    HARDWARE = "hardware"
    CHECK = "check"


@dataclass
class Finding:
    """One finding: the culprit, the rule that found it and what it rests on.

    Built once by the code that finds it (a rule op, an invariant, the retest, ``watch``):
    the kind, the severity, ``basis`` and ``about`` are set there, as members (a string
    is taken for its member; any other value is refused, a bug). Merging and the retest
    may still fold symptoms into ``evidence`` and release a finding to ``info`` before
    :meth:`RunRecorder.finish <sncheck.run.recorder.RunRecorder.finish>` freezes the run.
    """

    entity: str
    entity_kind: EntityKind
    layer: str
    rule: str
    severity: Severity
    message: str
    evidence: dict = field(default_factory=dict)
    basis: Basis = Basis.MEASURED
    about: About = About.HARDWARE
    # The findings folded into this one while the run is recorded (``evidence.related`` is
    # their brief in results.json): the retest reads what each rests on.
    folded: list[Finding] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.entity_kind = EntityKind(self.entity_kind)
        self.severity = Severity(self.severity)
        self.basis = Basis(self.basis)
        self.about = About(self.about)

    @property
    def not_measured(self) -> bool:
        """Something was not measured (unreachable, not run, a tool missing, timed out)."""
        return self.basis == Basis.NOT_MEASURED

    @property
    def not_judged(self) -> bool:
        """Something measured was not judged (no golden reference, no baseline, no rule)."""
        return self.basis == Basis.NOT_JUDGED

    @property
    def about_check(self) -> bool:
        return self.about == About.CHECK

    @property
    def names_culprit(self) -> bool:
        """A hardware finding whose pairs later rules set aside (drift, pairwise collectives):
        not one named only as near its bar (:attr:`near_only`), whose own pairs are still judged."""
        return self.about == About.HARDWARE and not self.near_only

    @property
    def held_suspect(self) -> bool:
        """The run held its entity suspect: a hardware finding raised at warning or worse
        (quarantined at the first anomaly), whatever its retest made of it (released to info:
        ``evidence.severity_before_retest``). A finding at info from the start (an error
        counter already above zero before the run: on record, not tonight's failure) is not."""
        before = self.evidence.get("severity_before_retest")
        raised = Severity(before) if before in tuple(Severity) else self.severity
        return self.about == About.HARDWARE and max(raised.rank, self.severity.rank) >= Severity.WARNING.rank

    @property
    def near_only(self) -> bool:
        """Named only as near its bar, inside it (``evidence.near_bar`` without ``beyond``): a
        suspect to re-measure (sncheck.run.nearbar), not a culprit."""
        near = self.evidence.get("near_bar")
        return bool(near) and not (isinstance(near, dict) and near.get("beyond"))

    @property
    def inconclusive(self) -> bool:
        """The confirmation retest could not tell on a busy machine, or a suspect near its bar was
        not judged, no retest allowed (sncheck.run.nearbar): exit 4 when only these gate."""
        return bool(self.evidence.get("inconclusive"))

    @property
    def related(self) -> list[dict]:
        """The symptoms folded into this finding, as results.json holds them (``evidence.related``)."""
        return list(self.evidence.get("related") or [])

    def rests_on_no_measurement(self) -> bool:
        """Not measured, itself or a symptom folded into it: a retest never releases it."""
        return self.not_measured or any(g.rests_on_no_measurement() for g in self.folded)

    def gates(self, gate: Severity | str) -> bool:
        """At or above the gate severity."""
        return self.severity.rank >= Severity(gate).rank

    def layers(self) -> set[str]:
        """Its layer and those of the symptoms folded into it."""
        return {self.layer} | {str(r.get("layer")) for r in self.related if r.get("layer")}


@dataclass
class IsolationStep:
    """One step of the isolation policy: quarantine, isolate or release (a dry run until applied)."""

    entity: str
    entity_kind: EntityKind
    action: Action
    reason: str
    applied: bool = False
    rule: str | None = None

    def __post_init__(self) -> None:
        self.entity_kind = EntityKind(self.entity_kind)
        self.action = Action(self.action)


@dataclass(frozen=True)
class LayerRecord:
    """One layer of a run: its summary, and whether it was cut short or skipped. Its verdict
    is the record's to decide (:meth:`RunRecord.layer_verdict`)."""

    name: str
    summary: dict = field(default_factory=dict)
    cut_short: bool = False  # a harness error or a signal stopped it (``summary.cut_short`` says why)
    skipped: bool = False


RUN_SCHEMA = "sncheck.run/1"  # results.json's version (DESIGN.md)


@dataclass(frozen=True)
class RunRecord:
    """A run as every output reads it, decided once: the verdict, each layer's and each
    finding's flags are properties of what was found, never stored beside it.

    Built by :class:`sncheck.run.recorder.RunRecorder` (``run`` and ``watch``) and by the
    JSON reader (:func:`sncheck.store.results.from_json`, every layout written so far).
    The extension sections (``design``, ``inputs``, ``tools``, ``topology``, ...) are data
    as results.json holds them.
    """

    run_id: str
    playbook: str
    backend: str
    inventory: str
    started: str
    finished: str | None = None  # None: the run has not finished (a partial record), its verdict error
    gate: Severity = Severity.CRITICAL
    seed: int | None = None
    layers: tuple[LayerRecord, ...] = ()
    findings: tuple[Finding, ...] = ()
    isolation: tuple[IsolationStep, ...] = ()
    error: str | None = None  # why the run could not finish (the harness, a full disk, the state store)
    isolation_blocked: str | None = None  # the safety cap refused the isolations
    schema: str = RUN_SCHEMA
    design: dict | None = None
    inputs: dict | None = None
    tools: dict | None = None
    topology: dict | None = None
    scope: dict | None = None  # a scoped run (--targets): its targets, cards and hosts
    baseline: dict | None = None
    capacity: dict | None = None
    history: dict | None = None  # the changes since the last run (the state store's trends)
    confirm: list | None = None  # watch: the scoped runs that confirm its quarantines
    reconciled: list | None = None  # what an interrupted isolation had left half done, put right first
    extra: dict = field(default_factory=dict)  # keys a newer or older writer added, kept as read

    def __post_init__(self) -> None:
        object.__setattr__(self, "gate", Severity(self.gate))  # frozen: the one coercion, at construction

    def gates(self, f: Finding) -> bool:
        return f.gates(self.gate)

    def flags(self, f: Finding) -> dict[str, bool]:
        """A finding's flags as results.json writes them."""
        return {"gates": self.gates(f), "not_measured": f.not_measured, "not_judged": f.not_judged}

    def gating_layers(self, inconclusive: bool) -> set[str]:
        """Layers with a gating finding (counting the symptoms folded into it), of the
        findings the retest could (not) judge on a busy machine."""
        return {name for f in self.findings if self.gates(f) and f.inconclusive == inconclusive for name in f.layers()}

    def layer_verdict(self, layer: LayerRecord) -> Verdict:
        """error (cut short), fail (a finding of it, or folded into one, gates), inconclusive,
        not judged (a not-judged finding below the gate), skipped, or pass."""
        if layer.cut_short:
            return Verdict.ERROR
        failing = self.gating_layers(inconclusive=False)
        if layer.name in failing:
            return Verdict.FAIL
        if layer.name in self.gating_layers(inconclusive=True) - failing:
            return Verdict.INCONCLUSIVE
        if any(f.not_judged for f in self.findings if f.layer == layer.name):
            return Verdict.NOT_JUDGED
        return Verdict.SKIPPED if layer.skipped else Verdict.PASS

    @property
    def verdict(self) -> Verdict:
        """error (unfinished, an error, a layer cut short, or no layer measured), fail (a layer fails, a finding
        gates, the safety cap blocked the isolations), inconclusive (every gating finding is one
        the retest could not judge on a busy machine: exit 4), or pass."""
        verdicts = [self.layer_verdict(layer) for layer in self.layers]
        # No layer recorded, or every one skipped, is nothing measured: never a pass (H10: a
        # hand-made '"layers": []', or every layer's '"verdict": "skipped"').
        measured = [v for v in verdicts if v != Verdict.SKIPPED]
        if self.finished is None or self.error is not None or not measured or Verdict.ERROR in verdicts:
            return Verdict.ERROR
        if Verdict.FAIL in verdicts or self.isolation_blocked \
                or any(self.gates(f) and not f.inconclusive for f in self.findings):
            return Verdict.FAIL
        if Verdict.INCONCLUSIVE in verdicts or any(self.gates(f) for f in self.findings):
            return Verdict.INCONCLUSIVE
        return Verdict.PASS

    def finding_of(self, entity: str) -> Finding | None:
        return next((f for f in self.findings if f.entity == entity), None)

    @property
    def duration(self) -> tuple[float | None, str | None]:
        """(seconds from ``started`` to ``finished``, None with why when unknown): :func:`run_duration`."""
        return run_duration(self.started, self.finished)


def _when(text: object) -> dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def run_duration(started: object, finished: object) -> tuple[float | None, str | None]:
    """A run's length in seconds from its wall-clock ``started`` and ``finished`` (ISO times with
    their zone), or None and why it is unknown: the run did not finish, a time is not one, or
    ``finished`` is before ``started``. The last is a clock stepped back mid-run (NTP, a VM
    resumed, a host's clock set): the record is the run's all the same, only its length is lost."""
    if finished is None:
        return None, "the run did not finish"
    t0, t1 = _when(started), _when(finished)
    if t0 is None or t1 is None:
        return None, f"started {started!r} or finished {finished!r} is no time with its zone"
    if t1 < t0:
        return None, f"finished {finished} is before started {started}: the clock stepped back mid-run (NTP, a VM resumed)"
    return (t1 - t0).total_seconds(), None


LINK_SEP = "<->"


@lru_cache(maxsize=65536)
def natural_key(s: str) -> tuple:
    """Sort key that orders ``gpu2`` before ``gpu10``."""
    # ASCII digit runs only (odd places of the split): '\d' and isdecimal() take every script's
    # digits, so 'h٣' sorted as h3 (hostile round 21)
    return tuple(int(t) if i % 2 else t for i, t in enumerate(_DIGITS.split(s)))


_DIGITS = re.compile(r"([0-9]+)")
# an index as card, NIC and switch port ids write it: ASCII digits, no leading zero. 'nic٣' or
# 'leaf:a[٣]' (int() reads any script's digits) and 'nic03' are no id sncheck writes: a finding,
# --targets or the fabric never spells them (hostile rounds 18 and 21)
_INDEX = re.compile(r"0|[1-9][0-9]*")


def index_of(tail: str, prefix: str) -> int | None:
    """The index of an id's last part as sncheck writes it (``gpu3`` with ``prefix`` 'gpu', ``nic0``),
    or None for another spelling (:data:`_INDEX`)."""
    if not tail.startswith(prefix) or not _INDEX.fullmatch(tail, len(prefix)):
        return None
    return int(tail[len(prefix):])


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
_SWITCH = re.compile(r"^(?P<kind>leaf|spine):(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[(?P<port>0|[1-9][0-9]*)\])?$")


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


def is_uplink(entity: str) -> bool:
    """Whether ``entity`` is a leaf-to-spine cable, ``leaf:<a>[<p>]<->spine:<b>[<q>]`` (DESIGN.md
    "Identifiers"): a link between two switch ports, not between two cards."""
    a, sep, b = entity.partition(LINK_SEP)
    return bool(sep) and parse_switch(a) is not None and parse_switch(b) is not None


def is_cable(entity: str) -> bool:
    """Whether ``entity`` is a cable (DESIGN.md "Identifiers"): a NIC's to its leaf,
    ``<host>/nic<r><->leaf:<name>[<port>]``, or an uplink: a link with a switch port at an end."""
    a, sep, b = entity.partition(LINK_SEP)
    return bool(sep) and (parse_switch(a) is not None or parse_switch(b) is not None)


CARD_ENDS = ("card", "host", "supernode")  # culprits that act on a pair as its ends' card speed


def on_fabric(entity: str, kind: str) -> bool:
    """Whether a culprit (entity, kind) is a switch or a leaf-to-spine cable: what carries
    scale-out pairs only, holds no card, and is on a pair's path by the fabric's routes
    (``Fabric.through``), never by the pair's ends."""
    return kind == "switch" or kind == "link" and is_uplink(entity)


def host_of(entity: str) -> str:
    """The host of a card (``h/gpu3``) or a NIC (``h/nic3``); a host names itself."""
    return entity.rsplit("/", 1)[0]


def hosts_of(entity: str) -> list[str]:
    """The host of each end of a link (``a/gpu0<->b/gpu1``), or of a card, NIC or host."""
    return [host_of(part) for part in entity.split(LINK_SEP)]


def card_of(entity: str) -> str:
    """The card a card or NIC entity stands for: rail *r*'s NIC serves card *r* (DESIGN.md)."""
    host, _, leaf = entity.rpartition("/")
    if host and (rail := index_of(leaf, "nic")) is not None:
        return f"{host}/gpu{rail}"
    return entity


def entity_kind(entity: str) -> str:
    """The kind an identifier names by its shape: link, card, nic, switch or host (DESIGN.md identifiers).

    A supernode name cannot be told from a host name by shape; callers that accept
    supernodes check the topology first.
    """
    if "<->" in entity:
        return "link"
    if entity.startswith(("leaf:", "spine:")) and "[" not in entity:  # sncheck.fabric: a scale-out switch
        return "switch"
    host, sep, tail = entity.rpartition("/")
    if sep and host and index_of(tail, "gpu") is not None:
        return "card"
    if sep and host and index_of(tail, "nic") is not None:
        return "nic"
    return "host"


def scope_holds(kind: str, entity: str, scope: Mapping[str, Any] | None) -> bool:
    """Whether a run of ``scope`` (results.json ``scope``; None or empty: the whole inventory)
    measured ``entity`` whole: a card, a NIC (its card), a host, a card-to-card link whose two
    cards are in it, a NIC's cable to its leaf (its NIC's card), and a switch or leaf-to-spine
    cable the run's targets named (``scope.fabric``: every pair through it measured); a
    supernode only a whole run measures (reviews20 #14: a scoped run of a switch or NIC
    measured it, and neither released its quarantine nor said it re-measured it)."""
    if not scope:
        return True
    cards = set(scope.get("cards") or ())
    if kind in (EntityKind.CARD, EntityKind.NIC):
        return card_of(entity) in cards
    if kind == EntityKind.HOST:
        return entity in set(scope.get("hosts") or ())
    if kind == EntityKind.LINK and not is_uplink(entity) and any(parse_switch(p) is None for p in entity.split(LINK_SEP)):
        return all(card_of(p) in cards for p in entity.split(LINK_SEP) if parse_switch(p) is None)
    if kind in (EntityKind.SWITCH, EntityKind.LINK):
        return entity in set(scope.get("fabric") or ())
    return False
