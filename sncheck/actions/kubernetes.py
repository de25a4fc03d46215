"""Kubernetes: taint a node with an isolated card, taint and cordon an isolated host.

The inventory's host name is taken to be the Kubernetes node name.

- Isolate a card: ``kubectl taint nodes node003 sncheck.io/unhealthy=gpu2:NoSchedule --overwrite``.
  The taint keeps new pods that do not tolerate it off the node; its value names the
  isolated cards (``gpu2.gpu3`` for two), so one key covers them all.
- Isolate a host: the taint (its value is the reason, slugified) plus ``kubectl cordon``.
- Release: the taint is rewritten for what stays isolated on that node, or removed
  (``kubectl taint nodes node003 sncheck.io/unhealthy-``) when nothing does.

Ownership of a cordon: when sncheck cordons a node it also annotates it
``sncheck.io/cordoned=<run id>``. A release uncordons only a node that carries that
annotation; a node cordoned by someone else (already unschedulable before sncheck came)
is never annotated and never uncordoned. The mark is written before the cordon, so a
command killed between them leaves a mark the next one completes, never a cordon no
release lifts; a refused cordon takes its mark back (left, it claimed a later cordon of
someone else's).

Every run first reads the node (``kubectl get node NAME -o json``) and changes only
what differs, so running an action twice is harmless.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sncheck.actions.base import ActionContext, ActionRequest, CommandRunner, Outcome, Plan, Step, Tracker, switch_plan
from sncheck.config.hostlist import check_name

TAINT_KEY = "sncheck.io/unhealthy"
TAINT_EFFECT = "NoSchedule"
CORDON_ANNOTATION = "sncheck.io/cordoned"
MAX_LABEL = 63
_INVALID = re.compile(r"[^A-Za-z0-9._-]+")


def label_value(text: str, default: str = "unhealthy") -> str:
    """``text`` as a valid label (and taint) value: ``[A-Za-z0-9._-]``, at most 63
    characters, beginning and ending with a letter or digit."""
    slug = _INVALID.sub("-", text)
    slug = slug[:MAX_LABEL].strip("._-")
    return slug or default


def desired_taint(ctx: ActionContext, host: str) -> str | None:
    """The taint value ``host`` should carry once the batch is done, or None for no taint."""
    whole, cards = ctx.isolated_on_host(host)
    if whole:
        return label_value(ctx.isolated[host].label or "host")
    if cards:
        return label_value(".".join(c.rsplit("/", 1)[1] for c in cards))
    return None


def get_argv(host: str) -> list[str]:
    check_name(host)
    return ["kubectl", "get", "node", host, "-o", "json"]


def taint_argv(host: str, value: str) -> list[str]:
    check_name(host)
    return ["kubectl", "taint", "nodes", host, f"{TAINT_KEY}={value}:{TAINT_EFFECT}", "--overwrite"]


def untaint_argv(host: str) -> list[str]:
    check_name(host)
    return ["kubectl", "taint", "nodes", host, f"{TAINT_KEY}-"]


def cordon_argv(host: str) -> list[str]:
    check_name(host)
    return ["kubectl", "cordon", host]


def uncordon_argv(host: str) -> list[str]:
    check_name(host)
    return ["kubectl", "uncordon", host]


def mark_argv(host: str, run_id: str | None) -> list[str]:
    return ["kubectl", "annotate", "node", host, f"{CORDON_ANNOTATION}={run_id or 'manual'}", "--overwrite"]


def unmark_argv(host: str) -> list[str]:
    return ["kubectl", "annotate", "node", host, f"{CORDON_ANNOTATION}-"]


class KubernetesAction:
    name = "kubernetes"
    external = True

    def observe(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> bool | None:  # noqa: ARG002 -- the Action interface: the cluster is asked, not the files
        """A host: isolate, cordoned with sncheck's mark; release, not marked. A card: its
        taint names it (isolate only: a release of one card may leave the taint for others)."""
        host = req.host
        if host is None:
            return None
        res = runner.run(get_argv(host))
        if not res.ok:
            return None
        try:
            node = json.loads(res.stdout)
        except json.JSONDecodeError:
            return None
        taint = _our_taint(node)
        if req.kind == "host":
            # Any step of a host's action counts (hostile round 9): an isolation killed after its
            # taint left the node tainted, and a release killed after its untaint left it without
            # one, while the cordon mark alone said "not taken effect" and the store said otherwise.
            marked = CORDON_ANNOTATION in (node.get("metadata", {}).get("annotations") or {})
            ours = taint is not None and taint.get("value") == label_value(req.label or "host")
            if req.action == "isolate":
                return marked or ours
            return not marked or not ours or not node.get("spec", {}).get("unschedulable")
        named = taint is not None and req.entity.rsplit("/", 1)[-1] in str(taint.get("value", "")).split(".")
        return named if req.action == "isolate" else None

    def plan(self, req: ActionRequest, ctx: ActionContext) -> Plan:
        if (switch := switch_plan(req, ctx)) is not None:
            return switch
        host = req.host
        if host is None:
            return Plan(skip=f"a {req.kind} cannot be isolated in Kubernetes; isolate a card or a host")
        steps = [Step("read the node's taints, cordon and sncheck annotation", tuple(get_argv(host)))]
        value = desired_taint(ctx, host)
        if value is not None:
            steps.append(Step("taint", tuple(taint_argv(host, value))))
        else:
            steps.append(Step("remove the sncheck taint if present", tuple(untaint_argv(host))))
        whole, _ = ctx.isolated_on_host(host)
        if whole:
            steps += [Step("mark the cordon as sncheck's, unless already cordoned", tuple(mark_argv(host, req.run_id))),
                      Step("cordon", tuple(cordon_argv(host)))]
        elif req.kind == "host":
            steps += [Step("uncordon only if sncheck cordoned it", tuple(uncordon_argv(host))),
                      Step("remove the sncheck mark", tuple(unmark_argv(host)))]
        return Plan(tuple(steps), summary=f"{req.action} {req.entity} on node {host}")

    def apply(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> Outcome:
        host = req.host
        if host is None:
            return Outcome("skipped", self.plan(req, ctx).skip or "")
        t = Tracker(runner)
        res = t.run(get_argv(host))
        if not res.ok:
            return t.failed(f"reading node {host}", res)
        try:
            node = json.loads(res.stdout)
        except json.JSONDecodeError:
            return t.outcome("failed", f"kubectl get node {host} printed no JSON: {res.tail(3)!r}")
        current = _our_taint(node)
        cordoned = bool(node.get("spec", {}).get("unschedulable"))
        marked = CORDON_ANNOTATION in (node.get("metadata", {}).get("annotations") or {})
        done: list[str] = []
        notes: list[str] = []

        value = desired_taint(ctx, host)
        if value is not None and (current is None or current.get("value") != value
                                  or current.get("effect") != TAINT_EFFECT):
            res = t.run(taint_argv(host, value))
            if not res.ok:
                return t.failed(f"tainting {host}", res)
            done.append(f"tainted {TAINT_KEY}={value}:{TAINT_EFFECT}")
        elif value is None and current is not None:
            res = t.run(untaint_argv(host))
            if not res.ok:
                return t.failed(f"removing the taint of {host}", res)
            done.append(f"removed taint {TAINT_KEY}")

        whole, _ = ctx.isolated_on_host(host)
        if whole and not cordoned:
            # the mark first: a cordon killed before its mark was a cordon no release would lift
            res = t.run(mark_argv(host, req.run_id))
            if not res.ok:
                return t.failed(f"marking {host} as cordoned by sncheck (not cordoned)", res)
            res = t.run(cordon_argv(host))
            if not res.ok:
                if res.timed_out or res.exit_code is None:  # it may have cordoned: the mark stays
                    return t.failed(f"cordoning {host} (marked as sncheck's: a release lifts the mark)", res)
                # a refused cordon takes its mark back: left, it claimed an admin's later cordon
                # of the node as sncheck's, and a release lifted it (review of 961f32d)
                kept = "" if t.run(unmark_argv(host)).ok else "; its mark could not be removed either"
                return t.failed(f"cordoning {host} (not cordoned{kept})", res)
            done.append("cordoned")
        elif whole and not marked:
            notes.append("already cordoned by someone else; sncheck will not uncordon it")
        elif not whole and marked:
            res = t.run(uncordon_argv(host))
            if not res.ok:
                return t.failed(f"uncordoning {host}", res)
            res = t.run(unmark_argv(host))
            if not res.ok:
                return t.failed(f"removing the sncheck mark of {host}", res)
            done.append("uncordoned")
        elif not whole and cordoned and req.kind == "host":
            notes.append("cordoned by someone else, not sncheck; left cordoned")

        message = f"node {host}: " + ("; ".join(done + notes) if done or notes else "already as wanted")
        return t.outcome("ok" if done else "skipped", message)


def _our_taint(node: dict[str, Any]) -> dict[str, Any] | None:
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("key") == TAINT_KEY:
            return taint
    return None
