"""A batch of isolation decisions: record them in the state store, check the safety
cap, plan or apply the actions, and append every action to the audit log.

Shared by ``sncheck isolate``/``release`` and by runs (``sncheck run --state-dir``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sncheck.errors import ConfigError
from sncheck.fabric import Fabric
from sncheck.model import card_of, hosts_of
from sncheck.health.policy import DEFAULT_CAP, CapResult, check_cap
from sncheck.config.inventory import Inventory
from sncheck.store.state import StateStore
from sncheck.actions import ActionContext, ActionRequest, AuditLog, CommandRunner, Isolated, get_action, perform

DEFAULT_VIA = ("hostfile", "cuda_visible_devices")



@dataclass
class BatchResult:
    records: list[dict[str, Any]] = field(default_factory=list)  # one audit record per request and action
    applied: dict[str, bool] = field(default_factory=dict)  # entity -> taken out / put back for real
    cap: CapResult | None = None  # None when nothing was to be isolated or no cap applies

    @property
    def blocked(self) -> bool:
        return self.cap is not None and not self.cap.ok

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["outcome"] == "failed"]


def in_service_after(store: StateStore, requests: Iterable[ActionRequest]) -> dict[str, Isolated]:
    """What is out of service once ``requests`` are done: applied isolations in the
    store, plus this batch's isolations, minus its releases (the latest request wins)."""
    out = {r["entity"]: Isolated(r["entity"], r["entity_kind"], r["rule"] or r["reason"] or "")
           for r in store.current_status() if r["action"] == "isolate" and r["applied"]}
    for req in requests:
        if req.action == "isolate":
            out[req.entity] = Isolated(req.entity, req.kind, req.label)
        else:
            out.pop(req.entity, None)
    return out


def switch_cards(inventory: Inventory, isolated: Mapping[str, Isolated]) -> dict[str, list[str]]:
    """The cards whose rail each isolated switch carries (what draining it takes from the
    cap's count); a name that is no switch of the inventory's fabric counts nothing."""
    switches = [e for e, i in isolated.items() if i.kind == "switch"]
    if not switches:
        return {}
    fabric = Fabric(inventory)
    out = {}
    for s in switches:
        try:
            out[s] = [card_of(n) for n in fabric.nics_of(s)]
        except KeyError:
            continue
    return out


def run_batch(requests: Sequence[ActionRequest], *, store: StateStore, inventory: Inventory | None,
              via: Sequence[str], apply: bool, runner: CommandRunner | None, audit: AuditLog,
              out_dirs: Sequence[Path], cap: float | None = DEFAULT_CAP,
              now: datetime | None = None) -> BatchResult:
    """Plan (dry run) or apply ``via`` actions for every request, within the safety cap.

    When the isolations would exceed the cap, nothing is applied: every request gets a
    ``skipped`` audit record with the cap's message. The state store is only read here.
    """
    actions = [get_action(v) for v in via]
    isolated = in_service_after(store, requests)
    result = BatchResult()
    if cap is not None and any(r.action == "isolate" for r in requests):
        if inventory is None:
            raise ConfigError("the safety cap needs the inventory's size: give -i INVENTORY")
        result.cap = check_cap(
            [{"entity": i.entity, "entity_kind": i.kind, "action": "isolate"} for i in isolated.values()],
            inventory.card_count, len(inventory.hosts), cap,
            host_cards={h: spec.cards for h, spec in inventory.hosts.items()},
            supernode_hosts={sn.name: sn.hosts for sn in inventory.supernodes},
            before=[{"entity": i.entity, "entity_kind": i.kind, "action": "isolate"}
                    for i in in_service_after(store, ()).values()],
            switch_cards=switch_cards(inventory, isolated))
    ctx = ActionContext(isolated, inventory, tuple(out_dirs))
    stamp = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds").replace("+00:00", "Z")
    for req in requests:
        outcomes = []
        for action in actions:
            if result.blocked:
                assert result.cap is not None
                record = _record(req, action.name, stamp, "skipped", result.cap.message, apply)
                record["blocked_by_cap"] = True
                audit.append(record)
            else:
                record = perform(action, req, ctx, runner, apply, audit, now)
            result.records.append(record)
            outcomes.append(record["outcome"])
        # Applied: something took effect and nothing failed (no actions: only recorded, not applied).
        result.applied[req.entity] = (apply and not result.blocked and "failed" not in outcomes
                                      and "ok" in outcomes)
    return result


def _record(req: ActionRequest, via: str, ts: str, outcome: str, message: str, apply: bool) -> dict[str, Any]:
    return {"ts": ts, "run_id": req.run_id, "entity": req.entity, "kind": req.kind, "action": req.action,
            "via": via, "rule": req.rule, "reason": req.reason, "evidence": dict(req.evidence),
            "argv": [], "files": [], "applied": apply, "outcome": outcome, "message": message, "plan": [],
            "summary": ""}


def apply_run_isolation(results: dict[str, Any], inventory: Inventory, state_dir: str | Path,
                        via: Sequence[str], apply: bool, runner: CommandRunner | None = None, *,
                        run_dir: str | Path | None = None, cap: float = DEFAULT_CAP,
                        results_path: str | Path | None = None,
                        now: datetime | None = None) -> list[dict[str, Any]]:
    """Record a finished run in the state store and act on its isolation decisions.

    Records the run, its findings and every ``results["isolation"]`` entry (quarantine,
    isolate, release; in order; with the evidence of the entity's finding). Entries whose
    action is ``isolate`` or ``release`` are planned through ``via`` actions, and with
    ``apply`` run (through ``runner``, default this machine) unless the safety cap blocks
    them. Sets each entry's ``applied`` in place, so results.json can be rewritten.
    Returns the audit records (also in ``<state_dir>/audit.jsonl`` and ``<run_dir>/audit.jsonl``).
    """
    run_id = results["run_id"]
    entries: list[dict[str, Any]] = results.get("isolation") or []
    findings: list[dict[str, Any]] = results.get("findings") or []
    out_dirs = [Path(state_dir)] + ([Path(run_dir)] if run_dir is not None else [])
    with StateStore(state_dir) as store:
        store.record_run(results, results_path)
        store.record_findings(run_id, findings, ts=now)
        extra = released_by_scope(results, store.current_status())
        if extra:
            results["isolation"] = entries = entries + extra
        latest = {e["entity"]: e for e in entries}  # the last decision about an entity is the one acted on
        requests = [ActionRequest(e["entity"], e["entity_kind"], e["action"], e.get("reason") or "",
                                  e.get("rule"), _evidence(e, findings), run_id)
                    for e in latest.values() if e["action"] in ("isolate", "release")]
        audit = AuditLog(out_dirs, held=True)
        batch = run_batch(requests, store=store, inventory=inventory, via=via, apply=apply, runner=runner,
                          audit=audit, out_dirs=out_dirs, cap=cap, now=now)
        for e in entries:
            e["applied"] = bool(e is latest[e["entity"]] and batch.applied.get(e["entity"], False))
            store.record_action(run_id, e, _evidence(e, findings), ts=now)
        audit.commit()  # only once the state store holds the actions
    return batch.records


def released_by_scope(results: Mapping[str, Any], status: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A scoped run (``--targets``) is the confirmation of what is quarantined in its
    scope (``sncheck watch`` quarantines from a job's own signals): a quarantined card
    or host it measured and found nothing on is released. Nothing is released by a run
    that ended in error, or one with any finding on the entity (a finding there makes
    its own decision), or from outside the run's scope."""
    scope = results.get("scope")
    if not scope or results.get("verdict") == "error" or "error" in results:
        return []
    cards, hosts = set(scope.get("cards") or ()), set(scope.get("hosts") or ())
    touched = {f["entity"] for f in results.get("findings") or []} | {e["entity"] for e in results.get("isolation") or []}
    touched |= {h for e in touched for h in hosts_of(e)}
    out = []
    for q in status:
        e = q["entity"]
        if q["action"] != "quarantine" or e in touched:
            continue
        if (q["entity_kind"] == "card" and e in cards) or (q["entity_kind"] == "host" and e in hosts):
            out.append({"entity": e, "entity_kind": q["entity_kind"], "action": "release", "applied": False,
                        "rule": q.get("rule"), "reason": f"the scoped confirmation run {results['run_id']} measured "
                        f"it and found nothing; released (quarantined by run {q.get('run_id')}: {q.get('reason')})"})
    return out


def _evidence(entry: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    if entry.get("evidence"):
        return dict(entry["evidence"])
    same = [f for f in findings if f["entity"] == entry["entity"]]
    best = next((f for f in same if f.get("rule") == entry.get("rule")), same[0] if same else None)
    if best is None:
        return {}
    return {"layer": best.get("layer"), "rule": best.get("rule"), "severity": best.get("severity"),
            "message": best.get("message"), **dict(best.get("evidence") or {})}

