"""What every isolation action shares: runners, requests, plans, outcomes, the audit log.

An action turns one request ("isolate node003", "release node003/gpu2") into commands
for one mechanism (Slurm, Kubernetes, files for launchers). It first *plans*: the
commands it would run, with what each is for. A dry run stops there and runs nothing
at all, not even read-only queries. ``apply=True`` runs the plan through a
:class:`CommandRunner`, on this machine or on a control host over SSH.

Remote commands are argv lists only; they are quoted once, by
:func:`sncheck.transport.build_command`, when they travel over SSH.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sncheck.model import LINK_SEP, card_of, host_of, is_uplink
from sncheck.errors import ConfigError, TransportError
from sncheck.config.fileio import append_text
from sncheck.config.inventory import Inventory
from sncheck.fabric import Fabric
from sncheck.transport.command import build_command
from sncheck.transport.local import run_local
from sncheck.transport.result import CONTROL_OUTPUT_BYTES, Result

if TYPE_CHECKING:
    from sncheck.transport.connection import Connection

AUDIT_NAME = "audit.jsonl"
DEFAULT_TIMEOUT = 60.0
REQUEST_ACTIONS = ("isolate", "release")


# -- runners -------------------------------------------------------------------

class CommandRunner(Protocol):
    """Runs one argv and returns its :class:`Result`; a non-zero exit is data."""

    @property
    def host(self) -> str: ...

    def run(self, argv: list[str]) -> Result: ...


class LocalRunner:
    """Runs commands on this machine (an argv list, no shell; bounded: :func:`sncheck.transport.local.run_local`).
    ``max_output``: the bytes a command may print before it is cut and killed: the fleet's reads
    (fabric discovery, Slurm's node list) CONTROL_OUTPUT_BYTES; a host's own fact tools (node-check)
    MAX_OUTPUT_BYTES, as over SSH (reviews13: 64 MiB for every local command cut ibnetdiscover of a
    131,072-card fabric)."""

    host = "localhost"

    def __init__(self, timeout: float | None = None, max_output: int = CONTROL_OUTPUT_BYTES) -> None:
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout  # read when made, not when defined
        self.max_output = max_output

    def run(self, argv: list[str]) -> Result:
        return run_local(argv, self.timeout, self.max_output, host=self.host)


class SshRunner:
    """Runs commands on a control host (a Slurm or Kubernetes admin node) over SSH."""

    def __init__(self, connection: Connection, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.connection = connection
        self.timeout = timeout

    @property
    def host(self) -> str:
        return self.connection.host

    def run(self, argv: list[str]) -> Result:
        return self.connection.run(list(argv), timeout=self.timeout)


# -- requests, context, plans, outcomes ------------------------------------------

@dataclass(frozen=True)
class ActionRequest:
    """Take ``entity`` out of service (``isolate``) or put it back (``release``)."""

    entity: str
    kind: str  # card | nic | host | link | supernode
    action: str  # isolate | release
    reason: str = ""
    rule: str | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None

    def __post_init__(self) -> None:
        if self.action not in REQUEST_ACTIONS:
            raise ValueError(f"an action request is isolate or release, not {self.action!r}")
        if not self.entity or self.entity.startswith("-"):  # it would reach scontrol/kubectl as an option
            raise ConfigError(f"{self.entity!r} is not an entity name (names never begin with '-')")

    @property
    def host(self) -> str | None:
        """The host a card, NIC or host request acts on; None for links and supernodes."""
        if self.kind in ("card", "nic"):
            return host_of(self.entity)
        return self.entity if self.kind == "host" else None

    @property
    def label(self) -> str:
        """A short reason for a node's drain reason or taint: the rule, else the reason."""
        return self.rule or self.reason or "isolated"


@dataclass(frozen=True)
class Isolated:
    """One entity that stays out of service after the batch."""

    entity: str
    kind: str
    label: str = ""


@dataclass(frozen=True)
class ActionContext:
    """What an action may need beyond its request.

    ``isolated`` is every entity out of service once the whole batch is done (so a
    release of one card on a host keeps the host's taint when another card stays out).
    File actions rewrite their files from it, into each of ``out_dirs``.
    """

    isolated: Mapping[str, Isolated] = field(default_factory=dict)
    inventory: Inventory | None = None
    out_dirs: tuple[Path, ...] = ()

    def isolated_on_host(self, host: str) -> tuple[bool, list[str]]:
        """(host isolated whole, isolated card ids on it: a NIC's card is masked with it)."""
        whole = self.isolated.get(host, Isolated(host, "")).kind == "host"
        cards = {card_of(e) for e, i in self.isolated.items() if i.kind in ("card", "nic") and host_of(e) == host}
        return whole, sorted(cards, key=_card_index)


def _card_index(card: str) -> int:
    tail = card.rsplit("/gpu", 1)[-1]
    return int(tail) if tail.isdecimal() else -1


@dataclass(frozen=True)
class Step:
    """One command (``argv``) or one file write (``path``) of a plan, and what it is for."""

    purpose: str
    argv: tuple[str, ...] = ()
    path: str | None = None

    def describe(self) -> str:
        if self.argv:
            return f"{self.purpose}: {build_command(list(self.argv))}"
        return f"{self.purpose} {self.path}"


@dataclass(frozen=True)
class Plan:
    """The steps an action would take; ``skip`` says why it takes none."""

    steps: tuple[Step, ...] = ()
    skip: str | None = None
    summary: str = ""


OUTCOMES = ("ok", "skipped", "failed", "dry-run")


@dataclass
class Outcome:
    status: str  # ok | skipped | failed  (dry-run for a plan not run)
    message: str
    ran: list[list[str]] = field(default_factory=list)  # argv of every command run
    written: list[str] = field(default_factory=list)  # files written


def switch_plan(req: ActionRequest, ctx: ActionContext) -> Plan | None:
    """A switch is acted on as a switch (DESIGN.md): its rail drained from use on the hosts it
    serves, or the switch repaired; never as a mask on each card it serves. Every action says
    so and leaves it to the fabric's operator (None: not a switch). A leaf-to-spine cable likewise:
    repaired, its leaf port shut until then (the leaf's other uplinks carry its pairs)."""
    if req.action == "release" and (req.kind == "switch" or req.kind == "link" and is_uplink(req.entity)):
        # (it said "repair switch ...; until then drain that rail" on a release, reviews20 #14's scoped release)
        what = "its rail into use again on the hosts it serves (NCCL_IB_HCA with its adapter)" \
            if req.kind == "switch" else f"port {req.entity.split(LINK_SEP)[0]} up again"
        return Plan(skip=f"{req.entity} released: put {what}; no card was masked, none is unmasked")
    if req.kind == "link" and is_uplink(req.entity):
        return Plan(skip=f"repair cable {req.entity}; until then shut port {req.entity.split(LINK_SEP)[0]} so that the "
                         f"fabric routes over the leaf's other uplinks; no card is masked, no host drained")
    if req.kind != "switch":
        return None
    served = ""
    if ctx.inventory is not None:
        fabric = Fabric(ctx.inventory)
        try:
            hosts, rails = fabric.hosts_of(req.entity), fabric.rails_of(req.entity)
        except KeyError:
            served = f" (not a switch of inventory {ctx.inventory.name})"
        else:
            shown = ", ".join(hosts[:4]) + (f" and {len(hosts) - 4} more" if len(hosts) > 4 else "")
            served = f": it carries rail {', '.join(map(str, rails))} of {len(hosts)} hosts ({shown})"
    return Plan(skip=f"repair switch {req.entity}{served}; until then drain that rail from use on those hosts "
                     f"(NCCL_IB_HCA without its adapter); no card is masked")


class Action(Protocol):
    name: str
    # True: the action changes something outside the state directory (a scheduler's state),
    # so a half-done one must be looked at there before it is completed or rolled back.
    external: bool

    def plan(self, req: ActionRequest, ctx: ActionContext) -> Plan: ...

    def apply(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> Outcome: ...

    def observe(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> bool | None:
        """Whether ``req`` has taken effect there (a drain in place, a file that leaves the
        host out), for a transaction an interruption left half done; None: cannot tell."""
        ...


class Tracker:
    """Runs steps through a runner and remembers what ran, for the outcome and audit."""

    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner
        self.ran: list[list[str]] = []

    def run(self, argv: Sequence[str]) -> Result:
        self.ran.append(list(argv))
        return self.runner.run(list(argv))

    def outcome(self, status: str, message: str) -> Outcome:
        return Outcome(status, message, self.ran)

    def failed(self, what: str, result: Result) -> Outcome:
        detail = result.tail(5).strip() or str(result)
        status = "timed out" if result.timed_out else f"exit {result.exit_code}"
        return Outcome("failed", f"{what} failed on {result.host} ({status}): {detail}", self.ran)


# -- the audit log ---------------------------------------------------------------

class AuditLog:
    """Appends one JSON line per action to ``audit.jsonl`` in each directory given.

    Lines are written whole under an exclusive lock, so concurrent runs never
    interleave them.
    """

    def __init__(self, dirs: Iterable[str | os.PathLike[str]], held: bool = False) -> None:
        self.paths = [Path(d) / AUDIT_NAME for d in dirs]
        # held: records wait in memory until commit(), called once the state store's
        # transaction for them has committed, so the log never claims what was not recorded.
        self.held = held
        self.pending: list[str] = []

    def append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, default=str) + "\n"
        if self.held:
            self.pending.append(line)
        else:
            self._write(line)

    def commit(self) -> None:
        """Write the held records (after their state-store transaction committed)."""
        lines, self.pending = "".join(self.pending), []
        if lines:
            self._write(lines)

    def _write(self, line: str) -> None:
        for path in self.paths:
            path.parent.mkdir(parents=True, exist_ok=True)
            append_text(path, line)  # whole, under flock; never through a link or into a FIFO


def read_audit(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    p = Path(path)
    if p.is_dir():
        p = p / AUDIT_NAME
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- performing ------------------------------------------------------------------

def perform(action: Action, req: ActionRequest, ctx: ActionContext, runner: CommandRunner | None,
            apply: bool, audit: AuditLog | None = None, now: datetime | None = None) -> dict[str, Any]:
    """Plan one action and, with ``apply``, run it; returns (and logs) its audit record.

    A dry run runs nothing at all. A failure to reach the control host is a ``failed``
    outcome of this action, not an exception: the other actions of a batch still run.
    """
    plan = action.plan(req, ctx)
    if plan.skip is not None:
        outcome = Outcome("skipped", plan.skip)
    elif not apply:
        lines = "; ".join(f"would {s.describe()}" for s in plan.steps)
        outcome = Outcome("dry-run", f"{plan.summary}: {lines}" if plan.summary else lines,
                          [list(s.argv) for s in plan.steps if s.argv])
    else:
        if runner is None:
            runner = LocalRunner()
        try:
            outcome = action.apply(req, ctx, runner)
        except TransportError as e:
            outcome = Outcome("failed", str(e))
    record = {
        "ts": (now or datetime.now(timezone.utc)).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "run_id": req.run_id, "entity": req.entity, "kind": req.kind, "action": req.action,
        "via": action.name, "rule": req.rule, "reason": req.reason, "evidence": dict(req.evidence),
        # applied: this was the --apply pass (not a dry run); outcome says what came of it.
        "argv": outcome.ran, "files": outcome.written, "applied": apply,
        "outcome": outcome.status, "message": outcome.message,
        "plan": [s.describe() for s in plan.steps], "summary": plan.summary,
    }
    if audit is not None:
        audit.append(record)
    return record
