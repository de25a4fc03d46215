"""``sncheck node-check``: a health gate for ONE node, run by Slurm as ``HealthCheckProgram``
or in a prolog, in the manner of NHC.

What it checks, in order, within a time budget (default 30 s):

1. host facts: the fact commands of the node's platform (its vendor plug-in,
   :mod:`sncheck.vendors.registry`; NVIDIA's defaults when no inventory names one:
   ``nvidia-smi`` query, topology, NVLink, ``-q``; ``ibstat``; ``dcgmi diag -r 1``) run
   here, judged by the same checks as the SSH backend's. A problem the tool names a card
   for (a pending row remap, uncorrectable ECC, a narrow PCIe link, a thermal slowdown in
   GPU section ``i`` of a whole ``nvidia-smi -q`` listing; NVLink under ``GPU i:``) names
   ``<node>/gpu<i>``, as the run's findings do; an excerpt or truncated listing names the node;
2. the intra-host card pairs (p2p, every pair of this node's cards);
3. a small all-reduce over all its cards.

2 and 3 run only when the facts pass (like NHC, stop at the first failure: the node is
sick already, and the budget is short) and go through the local backend (torch.distributed,
nccl on GPUs, gloo on CPU). Without design values (``-i INVENTORY`` with ``design:``),
they judge only what is wrong on its own: wrong data, a pair or collective that did not
complete (``fixtures/rules/node-check.yaml``); with them, the backend's full rules.

A missing tool (no ``dcgmi`` on the node) is a warning, never a pass of that check and
never a drain. Exit status, NHC practice with sncheck's codes: 0 healthy, 1 unhealthy
(the node is drained unless ``--no-drain``), 2 bad input, 3 the check itself could not run.

Drains: the reason is ``sncheck: node-check: <culprit> <rule>: <what>``. A node already
drained or down for a reason that is not sncheck's is left as it is. On a pass, the node is
resumed only when the reason is node-check's own (``sncheck: node-check:``): a drain by
an operator, by NHC, or by an sncheck run's isolation is never resumed here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sncheck.actions.base import CommandRunner, LocalRunner
from sncheck.transport.result import MAX_OUTPUT_BYTES
from sncheck.actions.slurm import MAX_REASON, REASON_PREFIX, drain_argv, is_ours, parse_reason, query_argv, resume_argv
from sncheck.config.hostlist import check_name
from sncheck.errors import ConfigError, HarnessError, ParseError
from sncheck.model import Severity
from sncheck.config.inventory import MAX_CARDS_PER_HOST, Host, Inventory, Supernode
from sncheck.vendors import facts as vfacts
from sncheck.vendors import registry
from sncheck.vendors.base import Vendor
from sncheck.vendors.hostjudge import FactJudge
from sncheck.slurm.cluster import parse_gres_gpus, parse_scontrol_records
from sncheck.config.playbook import LayerSpec, Playbook

OWN_PREFIX = f"{REASON_PREFIX} node-check:"
DEFAULT_BUDGET_S = 30.0
TOOL_TIMEOUT_S = 10.0
@dataclass(frozen=True)
class Problem:
    entity: str      # the culprit: <node>/gpu<i>, or the node
    rule: str        # the fact or rule that failed
    message: str


@dataclass
class NodeReport:
    node: str
    cards: int
    cards_source: str
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    error: str | None = None          # the check itself could not run
    slurm: str | None = None          # what node-check did in Slurm
    elapsed_s: float = 0.0

    @property
    def exit_code(self) -> int:
        if self.problems:
            return 1
        return 3 if self.error else 0

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "cards": self.cards, "cards_source": self.cards_source,
                "verdict": {0: "pass", 1: "fail", 3: "error"}[self.exit_code],
                "problems": [p.__dict__ for p in self.problems], "warnings": self.warnings,
                "ran": self.ran, "error": self.error, "slurm": self.slurm,
                "elapsed_s": round(self.elapsed_s, 2)}


class BudgetExceeded(Exception):
    pass


# -- which node, how many cards ------------------------------------------------------

def this_node(explicit: str | None = None) -> str:
    """``--node``, else ``SLURMD_NODENAME`` (slurmd sets it for HealthCheckProgram and prologs),
    else the short host name."""
    name = explicit if explicit is not None else (
        os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0])
    return check_name(name, "node name (--node, $SLURMD_NODENAME or the host name)")


def gres_gpus(scontrol_show_node: str, node: str) -> int | None:
    """GPUs in ``Gres=`` of ``node``'s record in ``scontrol show node`` (``gpu:4``, ``gpu:a100:8(S:0-1)``,
    several kinds summed). Another node's record is no answer (an alias, a wrapper, a stale cache
    answered n7's ``gpu:8`` for n1, taken as n1's count: hostile round 18, H18-19). Nor is an answer
    whose records of ``node`` disagree (two reads spliced: the first was taken), or a count no host
    holds (``gpu:99999999999``): what ``inventory from-slurm`` refuses (hostile round 24, H24-17)."""
    counts = {parse_gres_gpus(rec.get("Gres", "")) for rec in parse_scontrol_records(scontrol_show_node)
              if rec.get("NodeName", "").lower().rstrip(".") == node.lower().rstrip(".")}
    if len(counts) != 1:
        return None
    (n,) = counts
    return n if n is None or n <= MAX_CARDS_PER_HOST else None


def expected_cards(node: str, inventory: Inventory | None, cards: int | None,
                   runner: CommandRunner) -> tuple[int | None, str]:
    if cards is not None:
        return cards, "--cards"
    if inventory is not None:
        if node not in inventory.hosts:
            raise ConfigError(f"node {node!r} is not a host of inventory {inventory.name} ({inventory.source})")
        return inventory.hosts[node].cards, f"inventory {inventory.name}"
    res = runner.run(["scontrol", "show", "node", node, "-o"])
    if res.ok:
        n = gres_gpus(res.stdout, node)
        if n:
            return n, "Slurm GRES"
    return None, listing_tool(inventory, node)


def _vendor(inventory: Inventory | None, node: str) -> Vendor:
    known = inventory is not None and node in inventory.hosts
    return registry.vendor_of(inventory.platform_of(node) if inventory is not None and known else None)


def listing_tool(inventory: Inventory | None, node: str) -> str:
    """The tool whose listing gives the node's cards when nothing else does (nvidia-smi)."""
    vendor = _vendor(inventory, node)
    listing = vendor.card_listing
    return vendor.commands[listing.command].tool if listing else f"{vendor.name}'s card listing"


# -- 1. host facts -------------------------------------------------------------------

def check_facts(node: str, cards: int | None, deadline: float, report: NodeReport,
                inventory: Inventory | None = None,
                run: Callable[[list[str], float], Any] | None = None) -> None:
    """The fact commands of this node's platform (its vendor's plug-in; NVIDIA's without
    one), judged as every backend judges them (:class:`sncheck.vendors.hostjudge.FactJudge`):
    a failed fact at critical severity is a problem of the device it names (else the
    node); a warning (NVL72 Limited Capacity) and a missing tool are warnings."""
    run = run or (lambda argv, timeout: LocalRunner(timeout=timeout, max_output=MAX_OUTPUT_BYTES).run(argv))
    judge = FactJudge(inventory if inventory is not None and node in inventory.hosts else None, window_s=0.0)
    expect = cards
    outputs: dict[tuple[str, ...], Any] = {}

    def read(cmd: vfacts.FactCommand) -> Any:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceeded(f"host facts: {cmd.display}")
        key = tuple(cmd.argv)
        if key not in outputs:
            outputs[key] = run(list(cmd.argv), min(TOOL_TIMEOUT_S, left))
            report.ran.append(cmd.display)
            if left < TOOL_TIMEOUT_S and getattr(outputs[key], "timed_out", False):
                # stopped by the budget, not by its own timeout: the budget's failure, never the tool's fault
                raise BudgetExceeded(f"host facts: {cmd.display}")
        return outputs[key]

    listing = _vendor(inventory, node).card_listing
    if expect is None and listing:  # no inventory, no GRES: as many cards as the vendor's listing shows
        probe = next((c for c in judge.commands(node) if c.name == listing.command), None)
        if probe is not None:
            res = read(probe)
            if res.ok:
                with contextlib.suppress(ParseError):
                    expect = listing.count(probe.parse(res.stdout))
                    report.cards = expect
    rows: dict[str, list[dict]] = {node: []}

    def fan_out(_todo, reached, _lost) -> None:
        reached(node, "node-check", "checked on the node itself", read, cards=expect or 0)

    def keep(row: dict) -> None:
        if row["host"] == node:
            rows[node].append(row)

    judge.read((node,), fan_out, keep)
    for row in rows[node]:
        if row["ok"] or row["fact"] == "reachable":
            continue
        if row["status"] == "missing_tool" or row.get("severity") == "warning":
            report.warnings.append(row["message"])
            continue
        report.problems.append(Problem(row.get("entity") or node, row["fact"], row["message"]))


# -- 2 and 3. pairs and all-reduce through the local backend --------------------------

def check_collectives(node: str, cards: int, deadline: float, report: NodeReport,
                      inventory: Inventory | None = None) -> None:
    """The node's card pairs, then a small all-reduce: a :class:`sncheck.run.runner.Run` of the
    local backend that measures and judges, and writes no run directory."""
    if cards < 2:
        report.warnings.append(f"{node} has {cards} card(s): no card pairs or all-reduce to run")
        return
    if deadline - time.monotonic() <= 1:  # before the imports below: on a busy node they take seconds
        raise BudgetExceeded("before the card pairs")
    from sncheck.run.runner import Run, RunOptions  # noqa: PLC0415 -- pandas and the backends: only when the node's collectives run

    design = dict(inventory.design) if inventory is not None else {}
    inv = Inventory(name=f"node-check-{node}", supernodes=(Supernode(node, (node,)),),
                    hosts={node: Host(node, node, cards)}, design=design, backend="local",
                    source="<node-check>")
    left = deadline - time.monotonic()
    if left <= 1:
        raise BudgetExceeded("before the card pairs")
    playbook = Playbook("node-check", (
        LayerSpec("connectivity", {"bw_bytes": 1 << 20, "lat_iters": 10, "bw_iters": 2}),
        LayerSpec("stress", {"collectives": ("all_reduce",), "min_bytes": 1 << 10, "max_bytes": 1 << 20,
                             "step_factor": 1 << 10, "warmup": 1, "iters": 2, "narrow_sizes": ()})), confirm=False)
    options = RunOptions(backend="local", calibrate=False,
                         rules=None if design else "node-check",  # without design values: only what is wrong on its own
                         backend_options={"op_timeout_s": max(1.0, left), "start_timeout_s": max(1.0, left),
                                          "serialize_pairs": True})
    rows: list[dict] = []
    with Run(playbook, inv, options) as run:
        try:
            with _alarm(deadline):
                for layer in run.measure(rows.append, rows):
                    if layer.error is not None:
                        raise layer.error
                    report.ran.append({"connectivity": f"{cards * (cards - 1) // 2} card pairs",
                                       "stress": f"all_reduce over {cards} cards"}[layer.spec.name])
                    for f in layer.findings:
                        if f.severity == Severity.CRITICAL:
                            report.problems.append(Problem(f.entity, f.rule, f.message))
                        elif f.severity == Severity.WARNING:
                            report.warnings.append(f"{f.entity} {f.rule}: {f.message}")
                    if report.problems:
                        return
        except HarnessError as e:
            if time.monotonic() >= deadline - 0.5:
                raise BudgetExceeded(str(e)) from e
            raise


@contextlib.contextmanager
def _alarm(deadline: float) -> Iterator[None]:
    """Raise BudgetExceeded in the main thread at ``deadline`` (a hung worker start or collective)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise BudgetExceeded("no time left")
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; the backend's own timeouts still hold
        return

    def fire(_signum: int, _frame: object) -> None:
        raise BudgetExceeded("the card pairs or all-reduce")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- Slurm: drain our node, resume only our own drain ----------------------------------

def drain_reason(problem: Problem, more: int = 0) -> str:
    """``sncheck: node-check: <culprit> <rule>[ (+N more)]: <what>``, one line, at most 120 characters."""
    extra = f" (+{more} more)" if more else ""
    text = f"{OWN_PREFIX} {problem.entity} {problem.rule}{extra}: {problem.message}"
    return " ".join(text.split())[:MAX_REASON]


def _headline(problems: list[Problem]) -> tuple[Problem, int]:
    """The problem a drain reason names: a card's before the node's (the more exact culprit)."""
    first = next((p for p in problems if "/" in p.entity), problems[0])
    return first, len(problems) - 1


def act_in_slurm(report: NodeReport, runner: CommandRunner) -> None:
    node = report.node
    res = runner.run(query_argv(node))
    if not res.ok:
        report.slurm = f"could not read {node}'s Slurm state: {res}"
        report.error = report.error or report.slurm
        return
    current = parse_reason(res.stdout)
    if report.problems:
        if current is not None and not is_ours(current):
            report.slurm = f"left alone: {node} is already drained/down for another reason ({current!r})"
            return
        reason = drain_reason(*_headline(report.problems))
        if current == reason:
            report.slurm = f"already drained: {reason}"
            return
        done = runner.run(drain_argv(node, reason))
        report.slurm = f"drained {node}: {reason}" if done.ok else f"could not drain {node}: {done}"
        if not done.ok:
            report.error = report.slurm
        return
    if report.error:
        return  # not a pass: neither drain nor resume
    # node-check's own drain only: a reason holding a newline is nobody's sncheck wrote, even when
    # its first line reads as node-check's (an operator's note after it; hostile round 20, H20-12)
    if is_ours(current) and current is not None and current.startswith(OWN_PREFIX):
        done = runner.run(resume_argv(node))
        report.slurm = (f"resumed {node} (node-check had drained it: {current!r})" if done.ok
                        else f"could not resume {node}: {done}")
        if not done.ok:
            report.error = report.slurm
    elif current is not None:
        report.slurm = f"healthy, but left drained: the reason is not node-check's ({current!r})"


# -- the whole check ---------------------------------------------------------------------

def node_check(node: str | None = None, budget_s: float = DEFAULT_BUDGET_S, inventory: Inventory | None = None,
               cards: int | None = None, collectives: bool = True, drain: bool = True,
               runner: CommandRunner | None = None) -> NodeReport:
    start = time.monotonic()
    deadline = start + budget_s
    runner = runner or LocalRunner(timeout=TOOL_TIMEOUT_S, max_output=MAX_OUTPUT_BYTES)
    name = this_node(node)
    slurm_here = shutil.which("scontrol") is not None
    n, source = expected_cards(name, inventory, cards, runner) if (slurm_here or cards or inventory) \
        else (None, listing_tool(inventory, name))
    report = NodeReport(name, n or 0, source)
    try:
        check_facts(name, n, deadline, report, inventory)
        if collectives and not report.problems:
            check_collectives(name, report.cards, deadline, report, inventory)
    except BudgetExceeded as e:
        report.problems.append(Problem(name, "node-check-budget",
                                       f"did not finish within the {budget_s:g}s budget (at {e})"))
    except HarnessError as e:
        report.error = str(e)
    report.elapsed_s = time.monotonic() - start
    if drain:
        if slurm_here:
            act_in_slurm(report, runner)
        else:
            report.slurm = "scontrol not found: not in a Slurm cluster, nothing drained"
    return report

