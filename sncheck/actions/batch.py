"""A batch of isolation decisions: record them in the state store, check the safety
cap, plan or apply the actions, and append every action to the audit log.

Shared by ``sncheck isolate``/``release`` and by runs (``sncheck run --state-dir``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sncheck.errors import ConfigError, HarnessError
from sncheck.model import LINK_SEP, Action, EntityKind, Finding, IsolationStep, RunRecord, Verdict, card_of, host_of, hosts_of
from sncheck.health.policy import DEFAULT_CAP, OVER_CAP, CapResult, check_cap
from sncheck.config.inventory import Inventory
from sncheck.store.state import StateStore
from sncheck.actions import ACTIONS, ActionContext, ActionRequest, AuditLog, CommandRunner, Isolated, LocalRunner, get_action, perform
from sncheck.actions.scope import measured_whole
from sncheck.actions.transaction import DeferredSignals, StateLock, apply_each, check_outputs, reconcile

DEFAULT_VIA = ("hostfile", "cuda_visible_devices")



@dataclass
class BatchResult:
    records: list[dict[str, Any]] = field(default_factory=list)  # one audit record per request and action
    applied: dict[str, bool] = field(default_factory=dict)  # entity -> taken out / put back for real
    cap: CapResult | None = None  # None when nothing was to be isolated or no cap applies
    forced: str | None = None  # the --force-cap reason that let an over-cap batch through
    recorded: bool = False  # the decisions are in the state store already (applied as transactions)
    interrupted: str | None = None  # a signal stopped the batch after a whole host: what was and was not done
    held: list[tuple[ActionRequest, str]] = field(default_factory=list)  # isolations over the cap (fit_cap), why

    @property
    def blocked(self) -> bool:
        return self.cap is not None and not self.cap.ok and not self.forced

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


def in_fleet(entity: Isolated, inventory: Inventory) -> bool:
    """Whether an isolation keeps part of this inventory's fleet out of service: a host, card or
    NIC of its hosts, one of its supernodes, a switch (counted by what it takes out: cap_check). One the
    inventory no longer has (a host retired while isolated) is no share of the fleet the cap
    bounds: counted, 2 of 15 hosts blocked the first isolation of the fleet (hostile round 9)."""
    if entity.kind == EntityKind.SUPERNODE:
        return any(sn.name == entity.entity for sn in inventory.supernodes)
    if entity.kind in (EntityKind.HOST, EntityKind.CARD, EntityKind.NIC):
        return host_of(entity.entity) in inventory.hosts
    return True


def refuse_other_fleet(store: StateStore, inventory: Inventory | None) -> None:
    """Refuse (ConfigError, exit 2, nothing written) acting for ``inventory`` on a store whose
    quarantines or isolations are of another fleet: entities no card, host or supernode of
    ``inventory`` is, decided by runs of another inventory. The launcher files were rewritten
    from the store for this fleet alone, so two isolations of the other fleet were undone in what
    its scheduler reads (hostile round 26, H26-05). A host retired from this inventory while
    isolated (its runs this inventory's) is no other fleet (hostile round 9)."""
    if inventory is None:
        return
    other: dict[str, list[str]] = {}
    for q in store.current_status():
        if in_fleet(Isolated(q["entity"], q["entity_kind"]), inventory):
            continue
        fleet = (store.run(q["run_id"]) or {}).get("inventory") if q.get("run_id") else None
        if fleet and fleet != inventory.name:
            other.setdefault(str(fleet), []).append(q["entity"])
    if other:
        fleet, entities = next(iter(other.items()))
        shown = ", ".join(entities[:3]) + (f" and {len(entities) - 3} more" if len(entities) > 3 else "")
        raise ConfigError(f"holds isolations of inventory {fleet!r} ({shown}), of no card or host of inventory "
                          f"{inventory.name!r}: one state directory serves one fleet (this one's launcher files "
                          "would be rewritten without them); give each inventory its own --state-dir",
                          str(store.dir))


def cap_check(isolated: Mapping[str, Isolated], inventory: Inventory, cap: float) -> CapResult:
    """The fleet cap over what would be out of service (``isolated``: :func:`in_service_after`), the
    inventory's fleet only (:func:`in_fleet`). A switch counts what its isolation takes out: under every
    action it is repair advice (:func:`sncheck.actions.base.switch_plan`: "drain that rail ... no card is
    masked"), so none; a confirmed leaf counted its rail's 16 cards and blocked a confirmed card's mask
    beside it (reviews20 #17)."""
    return check_cap([{"entity": i.entity, "entity_kind": i.kind, "action": "isolate"} for i in isolated.values()
                      if in_fleet(i, inventory)],
                     inventory.card_count, len(inventory.hosts), cap,
                     host_cards={h: spec.cards for h, spec in inventory.hosts.items()},
                     supernode_hosts={sn.name: sn.hosts for sn in inventory.supernodes}, switch_cards={})


SEVERITY_ORDER = {"critical": 0, "warning": 1}


def evidence_order(req: ActionRequest, takes: int) -> tuple[int, int, int]:
    """Which isolation the cap admits first: the more severe finding, then one its retest confirmed,
    then the one taking fewer cards out (``takes``)."""
    return (SEVERITY_ORDER.get(str(req.evidence.get("severity")), 2), 0 if req.evidence.get("confirmed") is True else 1,
            takes)


def fit_cap(requests: Sequence[ActionRequest], store: StateStore, inventory: Inventory,
            cap: float) -> tuple[list[ActionRequest], list[tuple[ActionRequest, str]]]:
    """A run's isolations within the fleet cap, entity by entity in order of evidence
    (:func:`evidence_order`): each is admitted when what is out of service with it (the store's,
    the releases and the isolations admitted before it) stays within the cap; one that does not is
    held, not applied, and said. Each entity stays whole (a host or a domain is never cut down to
    fit). Returns the requests to carry out (in their order) and the held ones with why. A bogus
    32-card domain in a run's batch kept its confirmed sick card in service: "nothing was applied"
    (reviews20 #5, #17)."""
    base = [r for r in requests if r.action != "isolate"]
    isolates = [r for r in requests if r.action == "isolate"]
    takes = {r.entity: cap_check(in_service_after(store, base + [r]), inventory, 1.0).cards -
             cap_check(in_service_after(store, base), inventory, 1.0).cards for r in isolates}
    admitted: list[ActionRequest] = []
    held: list[tuple[ActionRequest, str]] = []
    for r in sorted(isolates, key=lambda r: evidence_order(r, takes[r.entity])):
        c = cap_check(in_service_after(store, base + admitted + [r]), inventory, cap)
        if c.ok:
            admitted.append(r)
            continue
        held.append((r, f"{r.kind} {r.entity} not applied: with it {c.cards} of {inventory.card_count} cards "
                        f"({c.card_share:.1%}) and {c.hosts} of {len(inventory.hosts)} hosts ({c.host_share:.1%}) "
                        f"would be out of service, over the fleet cap of {cap:.0%} (at least one host and its "
                        "cards in all)"))
    keep = {id(r) for r in base + admitted}
    return [r for r in requests if id(r) in keep], held


def run_batch(requests: Sequence[ActionRequest], *, store: StateStore, inventory: Inventory | None,
              via: Sequence[str], apply: bool, runner: CommandRunner | None, audit: AuditLog,
              out_dirs: Sequence[Path], cap: float | None = DEFAULT_CAP, force_cap: str | None = None,
              run_id: str | None = None, signals: DeferredSignals | None = None,
              now: datetime | None = None, partial: bool = False) -> BatchResult:
    """Plan (dry run) or apply ``via`` actions for every request, within the fleet cap.

    The cap counts the store's current isolations plus this batch's (:func:`cap_check`). A run's
    batch (``partial``) is capped entity by entity (:func:`fit_cap`): what fits is carried out, each
    isolation that does not is held (a ``skipped`` audit record saying why, ``held``). Otherwise, when
    they are over it, nothing is applied (every request gets a ``skipped`` audit record with the cap's
    message) unless ``force_cap`` gives a reason, which every audit record of the batch
    carries. A dry run only reads the store. ``apply`` runs each request as a transaction
    (:func:`sncheck.actions.transaction.apply_each`: recorded as it goes, ``recorded`` set);
    the caller holds the state directory's lock around it."""
    actions = [get_action(v) for v in via]
    result = BatchResult()
    extra: dict[str, Any] = {}
    if cap is not None and any(r.action == "isolate" for r in requests):
        if inventory is None:
            raise ConfigError("the fleet cap needs the inventory's size: give -i INVENTORY")
        if partial and not force_cap:
            requests, result.held = fit_cap(requests, store, inventory, cap)
        result.cap = cap_check(in_service_after(store, requests), inventory, cap)
        extra = {"cap": cap, "cap_check": result.cap.message}
        if not result.cap.ok and force_cap:
            result.forced = force_cap
            extra["force_cap"] = force_cap
    isolated = in_service_after(store, requests)
    stamp = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds").replace("+00:00", "Z")
    for req, why in result.held:  # (a run's batch: each held isolation said, the rest carried out)
        for action in actions:
            record = _record(req, action.name, stamp, "skipped", f"safety cap: {why}. {OVER_CAP}", apply)
            record["blocked_by_cap"] = True
            audit.append(record)
            result.records.append(record)
    if result.blocked:
        assert result.cap is not None
        for req in requests:
            for action in actions:
                record = _record(req, action.name, stamp, "skipped", result.cap.message, apply)
                record["blocked_by_cap"] = True
                audit.append(record)
                result.records.append(record)
            result.applied[req.entity] = False
        return result
    if apply:
        check_outputs(actions, out_dirs, audit)
        records, result.applied, result.interrupted = apply_each(
            requests, store=store, actions=actions, isolated_after=lambda req: in_service_after(store, [req]),
            inventory=inventory, runner=runner or LocalRunner(), audit=audit, out_dirs=out_dirs,
            run_id=run_id or (requests[0].run_id if requests else None) or "", extra=extra, signals=signals or DeferredSignals(), now=now)
        result.records += records
        result.recorded = True
        return result
    ctx = ActionContext(isolated, inventory, tuple(out_dirs))
    for req in requests:
        for action in actions:
            record = perform(action, req, ctx, runner, False, None, now)
            record.update(extra)
            audit.append(record)
            result.records.append(record)
        result.applied[req.entity] = False  # a dry run: recorded, not applied
    return result


def _record(req: ActionRequest, via: str, ts: str, outcome: str, message: str, apply: bool) -> dict[str, Any]:
    return {"ts": ts, "run_id": req.run_id, "entity": req.entity, "kind": req.kind, "action": req.action,
            "via": via, "rule": req.rule, "reason": req.reason, "evidence": dict(req.evidence),
            "argv": [], "files": [], "applied": apply, "outcome": outcome, "message": message, "plan": [],
            "summary": ""}


@dataclass
class RunActions:
    """What the state store did with a run's isolation steps: the steps as recorded (each
    ``applied`` set; a scoped run's releases added), the audit records, the safety cap's
    refusal if it blocked them (nothing applied), and what an interrupted command had left
    half done and was reconciled first."""

    steps: list[IsolationStep]
    records: list[dict[str, Any]]
    blocked: str | None = None
    reconciled: list[str] = field(default_factory=list)


def apply_run_isolation(run: RunRecord, inventory: Inventory, state_dir: str | Path,
                        via: Sequence[str], apply: bool, runner: CommandRunner | None = None, *,
                        run_dir: str | Path | None = None, cap: float = DEFAULT_CAP,
                        results_path: str | Path | None = None, notes: Callable[[str], None] | None = None,
                        now: datetime | None = None) -> RunActions:
    """Record a decided run in the state store and act on its isolation steps.

    Under the state directory's lock: first what an interrupted command left half done is
    reconciled (``notes`` gets a line for each; ``RunActions.reconciled`` keeps them). Then
    the run, its findings and every isolation step (quarantine, isolate, release; in order;
    with the evidence of the entity's finding) are recorded. Steps whose action is
    ``isolate`` or ``release`` are planned through ``via`` actions, and with ``apply`` run
    (through ``runner``, default this machine), one transaction each, unless the fleet cap
    blocks them. Returns the steps as recorded (the latest of each entity ``applied`` when it
    took effect; the record given is a value, never changed) and the audit records (also in
    ``<state_dir>/audit.jsonl`` and ``<run_dir>/audit.jsonl``). A signal during the actions
    stops them after the host in progress: the rest are recorded as not applied, and
    HarnessError says what was done.
    """
    run_id = run.run_id
    steps = [replace(e) for e in run.isolation]
    sdir = Path(state_dir)
    out_dirs = [sdir] + ([Path(run_dir)] if run_dir is not None else [])
    with DeferredSignals() as signals, StateLock(sdir, signals=signals), StateStore(sdir) as store:
        done = reconcile_store(store, inventory, runner or LocalRunner() if apply else None, sdir)
        for line in done:
            (notes or (lambda _: None))(line)
        store.record_run(run, results_path)
        store.record_findings(run_id, run.findings, ts=now)
        status = store.current_status()
        steps += released_by_scope(run, status)
        prior = {q["entity"]: q["evidence"] for q in status}  # a quarantine kept: its evidence, as recorded
        latest = {e.entity: e for e in steps}  # the last decision about an entity is the one acted on
        acted = [e for e in latest.values() if e.action in (Action.ISOLATE, Action.RELEASE)]
        for e in steps:  # what is not acted on first: the acted-on decisions are each entity's latest
            if all(e is not a for a in acted):
                e.applied = False
                store.record_action(run_id, e, _evidence(e, run.findings, prior), ts=now)
        requests = [ActionRequest(e.entity, e.entity_kind.value, e.action.value, e.reason or "",
                                  e.rule, _evidence(e, run.findings, prior), run_id) for e in acted]
        audit = AuditLog(out_dirs, held=not apply)  # applied: written ahead, as each transaction goes
        batch = run_batch(requests, store=store, inventory=inventory, via=via, apply=apply, runner=runner,
                          audit=audit, out_dirs=out_dirs, cap=cap, run_id=run_id, signals=signals, now=now,
                          partial=True)
        for e in acted:
            e.applied = batch.applied.get(e.entity, False)
            if not batch.recorded or e.entity not in batch.applied:  # a dry run, blocked, or not begun
                store.record_action(run_id, e, _evidence(e, run.findings, prior), ts=now)
        audit.commit()  # a dry run's records: only once the state store holds the actions
    if signals.fired:  # held while the actions ran: now the run stops, everything begun is whole
        raise HarnessError(batch.interrupted or f"interrupted ({signals.fired}) while the isolation steps were "
                           "recorded; all of them were recorded and done")
    blocked = next((r for r in batch.records if r.get("blocked_by_cap")), None)
    if batch.held:
        held = {r.entity for r, _ in batch.held}
        fit = [e.entity for e in acted if e.action == Action.ISOLATE and e.entity not in held]
        said = "; ".join(why for _, why in batch.held)
        return RunActions(steps, batch.records, f"safety cap: {said}; within the cap and " + (
            f"{'applied' if apply else 'planned'}: {', '.join(fit)}" if fit else "no other isolation") + f". {OVER_CAP}",
            done)
    return RunActions(steps, batch.records, blocked["message"] if blocked else None, done)


def reconcile_store(store: StateStore, inventory: Inventory | None, runner: CommandRunner | None,
                    state_dir: Path, *, one_fleet: bool = False) -> list[str]:
    """:func:`sncheck.actions.transaction.reconcile` with every action and the state
    directory's launcher files (the caller holds the lock). ``one_fleet``: a store of another fleet is
    refused first (isolate, release; a run checks when it opens the store, before it measures; a job's
    watch, whose inventory is its rank map's hosts, quarantines into the fleet's store)."""
    if one_fleet:
        refuse_other_fleet(store, inventory)
    return reconcile(store, actions_by_name=dict(ACTIONS), isolated_now=lambda: in_service_after(store, ()),
                     inventory=inventory, runner=runner, audit=AuditLog([state_dir]), out_dirs=[state_dir],
                     file_actions=[a for a in ACTIONS.values() if not a.external])


# The layers that measure a quarantining finding's symptom (its evidence's ``layer``) again: its own;
# an in-job signal (sncheck watch: a straggler, a hung or desynchronised rank) the collectives or pairs.
MEASURED_BY = {"connectivity": ("connectivity",), "stress": ("stress",), "golden": ("golden",),
               "watch": ("stress", "connectivity")}
KEPT = " [quarantine kept by the scoped run "


def released_by_scope(run: RunRecord, status: Sequence[Mapping[str, Any]]) -> list[IsolationStep]:
    """A scoped run (``--targets``) is the confirmation of what is quarantined in its
    scope (``sncheck watch`` quarantines from a job's own signals): a quarantined card,
    host, NIC, link, cable or switch it measured whole (:func:`measured_whole`) and found
    nothing on is released. Measured: the run ran, whole, a
    layer that measures the quarantining finding's symptom (:data:`MEASURED_BY`); a
    golden-only scoped run released a card quarantined for its p2p latency (reviews19 #6):
    such a quarantine stays, and the run says why (a quarantine step, its reason a note).
    Nothing is released by a run that ended in error, or one with any finding on the
    entity (a finding there makes its own decision), on a NIC's or a link's card, or on the host of a card, or from
    outside the run's scope."""
    scope = run.scope
    if not scope or run.error is not None or run.verdict == Verdict.ERROR:
        return []
    touched = {f.entity for f in run.findings} | {e.entity for e in run.isolation}
    touched |= {h for e in touched for h in hosts_of(e)} | {card_of(e) for e in touched}  # (a NIC's card)
    found_hosts = {f.entity for f in run.findings if f.entity_kind == EntityKind.HOST} | \
        {e.entity for e in run.isolation if e.entity_kind == EntityKind.HOST}
    ran = {layer.name for layer in run.layers if not layer.skipped and not layer.cut_short}
    out = []
    for q in status:
        e = q["entity"]
        if q["action"] != Action.QUARANTINE or {e, *map(card_of, e.split(LINK_SEP))} & touched:  # (a NIC's, link's cards)
            continue
        if q["entity_kind"] == EntityKind.CARD and host_of(e) in found_hosts:
            continue
        if measured_whole(q["entity_kind"], e, scope, run.findings):  # a card, host, NIC, link, cable or switch
            layer = (q["evidence"] if isinstance(q["evidence"], Mapping) else {}).get("layer")
            if not set(MEASURED_BY.get(str(layer), ())) & ran:
                first = str(q.get("reason") or "").split(KEPT)[0]
                out.append(IsolationStep(e, q["entity_kind"], Action.QUARANTINE,
                                         f"{first}{KEPT}{run.run_id}: it ran {', '.join(sorted(ran)) or 'no layer'}, "
                                         f"not the {layer or 'unrecorded'} layer that found it, so it did not measure "
                                         "the symptom]", rule=q.get("rule")))
                continue
            out.append(IsolationStep(e, q["entity_kind"], Action.RELEASE,
                                     f"the scoped confirmation run {run.run_id} measured it and found nothing; "
                                     f"released (quarantined by run {q.get('run_id')}: {q.get('reason')})",
                                     rule=q.get("rule")))
    return out


def _evidence(step: IsolationStep, findings: Sequence[Finding],
              prior: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The evidence of the entity's finding (the one of the step's rule, else its first);
    with none, a quarantine kept (:func:`released_by_scope`) keeps its recorded evidence."""
    same = [f for f in findings if f.entity == step.entity]
    best = next((f for f in same if f.rule == step.rule), same[0] if same else None)
    if best is None:
        kept = (prior or {}).get(step.entity) if step.action == Action.QUARANTINE else None
        return dict(kept) if isinstance(kept, Mapping) else {}
    return {"layer": best.layer, "rule": best.rule, "severity": best.severity.value,
            "message": best.message, **best.evidence}
