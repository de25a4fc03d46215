"""Slurm: drain an isolated host, resume it on release, and never touch anyone else's drain.

Isolate a host::

    sinfo -h -N -n node003 -o %E                       # read the current drain reason
    scontrol update NodeName=node003 State=DRAIN "Reason=sncheck: <rule> (run <id>)"

Release a host::

    sinfo -h -N -n node003 -o %E
    scontrol update NodeName=node003 State=RESUME      # only if the reason starts with "sncheck:"

Ownership lives in the drain reason itself: sncheck's reasons start with ``sncheck:``.
A node that is drained, down or failed for another reason (``maintenance by ops``,
``Not responding``) is left exactly as it is, on isolate (the foreign reason is not
overwritten) and on release (never resumed); the outcome is ``skipped`` and says why.

Cards: Slurm drains whole nodes, and a GPU cannot portably be taken out of a node's
GRES at run time (it means editing gres.conf/slurm.conf and restarting slurmd). So a
card isolation does not drain its node: that would take its healthy siblings out too.
The card is isolated through the CUDA_VISIBLE_DEVICES map (``--via
cuda_visible_devices``), and Slurm skips it. The node is drained only when the policy
isolates the host itself. Links and supernodes are skipped likewise.
"""

from __future__ import annotations

import re

from sncheck.config.hostlist import check_name, quoted
from sncheck.errors import HarnessError
from sncheck.transport import Result
from sncheck.actions.base import ActionContext, ActionRequest, CommandRunner, Outcome, Plan, Step, Tracker, switch_plan

REASON_PREFIX = "sncheck:"
MAX_REASON = 120
SHOWN_REASON = 200  # a foreign reason in a message: cut there, with its length (hostile round 12)
_NO_REASON = {"", "none", "(null)"}
# Slurm's refusals at a line's start: slurm_perror's 'MSG: STRERROR' ('slurm_update error: ...',
# 'slurm_load_node: Unable to contact slurm controller ...') and error()'s '[PROG: ]error: ...'.
# A word 'error' elsewhere (a wrapper echoing a reason 'sncheck: pcie-error') is none (review s43o).
_PERROR_LINE = re.compile(r"^\s*slurm_\w+: ")
_ERROR_LINE = re.compile(r"^\s*(?:[\w./-]+:? )?error:|" + _PERROR_LINE.pattern, re.IGNORECASE)


def drain_reason(req: ActionRequest) -> str:
    """``sncheck: <rule or reason> (run <id>)``, one printable line, at most 120 characters."""
    text = req.label + (f" (run {req.run_id})" if req.run_id else "")
    text = re.sub(r"[^\x20-\x7e]+", " ", text).strip()
    return f"{REASON_PREFIX} {text}"[:MAX_REASON]


def query_argv(host: str) -> list[str]:
    check_name(host)
    return ["sinfo", "-h", "-N", "-n", host, "-o", "%E"]


def drain_argv(host: str, reason: str) -> list[str]:
    check_name(host)
    return ["scontrol", "update", f"NodeName={host}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(host: str) -> list[str]:
    check_name(host)
    return ["scontrol", "update", f"NodeName={host}", "State=RESUME"]


def parse_reason(sinfo_stdout: str) -> str | None:
    """The node's reason from ``sinfo -h -N -n HOST -o %E``; None when it has none.

    A node in several partitions prints one line per partition, all alike: that line is
    the reason. Lines that differ, or a blank line before the text, are one reason that
    holds a newline (someone's ``Reason=$'hold\\nsncheck: x'``): returned whole, never
    cut to the line that reads like sncheck's (hostile round 12). sncheck writes none.
    Blank lines after the text, empty or whitespace only (a wrapper's ``echo " "``, a CRLF
    pipe), end the output and are no part of the reason: a whitespace-only last line made
    sncheck's own reason read as someone else's (its node never resumed; stop 43's note).
    A reason that is whitespace only (``Reason="   "``: Slurm keeps it, and sinfo prints it
    where a node without one prints ``none``) is someone's reason, never none: read as none,
    sncheck drained over it and later resumed the operator's drain (leftops2).
    """
    raw = [line.rstrip("\r\n") for line in sinfo_stdout.splitlines()]
    lines = [line.strip() for line in raw]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        return next((line for line in raw if line), None)  # whitespace only: a reason, not none
    if len(set(lines)) > 1:
        return "\n".join(lines)
    text = lines[0] if lines else ""
    return None if text.lower() in _NO_REASON else text


def refused(res: Result) -> bool:
    """Whether ``scontrol update`` failed: its exit, or an error it printed beside exit 0.
    It prints nothing when the update is done; its refusals are ``slurm_update error: ...``
    and ``scontrol: error: ...`` (slurm_perror, error()), and a wrapper or an older build
    that printed one and exited 0 was taken for a drain done (hostile round 12)."""
    return not res.ok or any(_ERROR_LINE.search(line) for line in (res.stdout + "\n" + res.stderr).splitlines())


def unread(res: Result) -> bool:
    """Whether ``sinfo`` failed to read a reason: its exit, slurm_perror's or error()'s line on
    stderr, or slurm_perror's on stdout beside exit 0 (a wrapper's 2>&1; review s43o: read as a
    foreign reason, or on stderr as no reason). An operator's reason 'error: ...' on stdout stays a
    reason: only 'slurm_...: ' there is sinfo's."""
    return (not res.ok or any(_ERROR_LINE.search(line) for line in res.stderr.splitlines())
            or any(_PERROR_LINE.match(line) for line in res.stdout.splitlines()))


def is_ours(reason: str | None) -> bool:
    return reason is not None and reason.startswith(REASON_PREFIX) and "\n" not in reason


class SlurmAction:
    name = "slurm"
    external = True

    def observe(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> bool | None:  # noqa: ARG002 -- the Action interface: Slurm is asked, not the files
        """Isolate: the node is drained with sncheck's reason; release: it is not (any more)."""
        if req.kind != "host":
            return None  # cards, links: Slurm is not how they are isolated
        res = runner.run(query_argv(req.entity))
        if unread(res):
            return None
        ours = is_ours(parse_reason(res.stdout))
        return ours if req.action == "isolate" else not ours

    def plan(self, req: ActionRequest, ctx: ActionContext) -> Plan:
        if (switch := switch_plan(req, ctx)) is not None:
            return switch
        if req.kind != "host":
            why = (f"Slurm drains whole nodes; a {req.kind} is isolated by masking its card in the "
                   "CUDA_VISIBLE_DEVICES map (HIP_/ASCEND_RT_VISIBLE_DEVICES on AMD/Ascend, --via "
                   "cuda_visible_devices), not by draining its healthy siblings"
                   if req.kind in ("card", "nic") else f"a {req.kind} cannot be drained in Slurm; only hosts are")
            return Plan(skip=why)
        host = req.entity
        check = Step("check the drain reason", tuple(query_argv(host)))
        if req.action == "isolate":
            return Plan((check, Step("drain unless drained for a reason not sncheck's",
                                     tuple(drain_argv(host, drain_reason(req))))),
                        summary=f"drain {host}")
        return Plan((check, Step("resume only if the reason starts with 'sncheck:'",
                                 tuple(resume_argv(host)))), summary=f"resume {host}")

    def apply(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> Outcome:
        plan = self.plan(req, ctx)
        if plan.skip is not None:
            return Outcome("skipped", plan.skip)
        host = req.entity
        t = Tracker(runner)
        res = t.run(query_argv(host))
        if unread(res):
            return t.failed(f"reading the drain reason of {host}", res)
        current = parse_reason(res.stdout)
        if current is not None and not is_ours(current):
            verb = "drain" if req.action == "isolate" else "resume"
            return t.outcome("skipped", f"{host} is already unavailable for another reason "
                                        f"({quoted(current, SHOWN_REASON)}); not sncheck's, so sncheck did not "
                                        f"{verb} it")
        if req.action == "isolate":
            reason = drain_reason(req)
            res = t.run(drain_argv(host, reason))
            if refused(res):
                return t.failed(f"draining {host}", res)
            return t.outcome("ok", f"drained {host} (Reason={reason})")
        if current is None:
            return t.outcome("skipped", f"{host} is not drained; nothing to resume")
        res = t.run(resume_argv(host))
        if refused(res):
            return t.failed(f"resuming {host}", res)
        return t.outcome("ok", f"resumed {host} (was drained: {current!r})")


# -- what Slurm says about its nodes (``sncheck status --slurm``) ---------------------

NODE_STATES_ARGV = ["sinfo", "-h", "-N", "-o", "%N|%T|%E"]


def parse_node_states(sinfo_stdout: str) -> dict[str, tuple[str, str | None]]:
    """``{node: (state, reason)}`` from ``sinfo -h -N -o '%N|%T|%E'``.

    A node in several partitions prints one line each, alike; the first wins. The state
    is sinfo's long form in lower case (``idle``, ``drained``, ``draining``, ``down``...)
    with its flag characters (``*`` not responding, ``~`` powered off...) kept.
    """
    out: dict[str, tuple[str, str | None]] = {}
    for line in sinfo_stdout.splitlines():
        parts = line.rstrip("\r\n").split("|", 2)
        parts[0] = parts[0].strip()
        if len(parts) < 2 or not parts[0]:
            continue
        raw = parts[2].rstrip("\r\n") if len(parts) == 3 else ""
        reason = raw.strip() or raw  # whitespace only is someone's reason (parse_reason)
        out.setdefault(parts[0], (parts[1].strip().lower(), None if reason.lower() in _NO_REASON else reason))
    return out


def node_states(runner: CommandRunner) -> dict[str, tuple[str, str | None]]:
    """Every node's Slurm state and reason; raises HarnessError when sinfo cannot answer."""
    res = runner.run(list(NODE_STATES_ARGV))
    if not res.ok:
        raise HarnessError(f"could not read Slurm node states: {res}")
    return parse_node_states(res.stdout)


def describe(state: tuple[str, str | None] | None) -> str:
    """``idle``, ``drained (sncheck: pcie-width (run ...))``, ``drained (not sncheck's: maintenance)``."""
    if state is None:
        return "not in Slurm"
    name, reason = state
    if reason is None:
        return name
    return f"{name} ({reason})" if is_ours(reason) else f"{name} (not sncheck's: {reason})"
