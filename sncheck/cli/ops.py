"""Operations on isolation state: ``status``, ``isolate``, ``release``, ``capacity``.

``sncheck.cli.main`` loads them when they are invoked; ``register(group)`` adds the four to
any other group. The batch logic they
share with a run lives in :mod:`sncheck.actions.batch`, free of Click.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import click

from sncheck.actions import ACTIONS, ActionRequest, AuditLog, CommandRunner, LocalRunner, SshRunner
from sncheck.actions.base import AUDIT_NAME
from sncheck.actions.slurm import describe, is_ours, node_states
from sncheck.cli.errors import handle_errors, shown
from sncheck.cli.numbers import finite, whole
from sncheck.cli.paths import directory, input_file, input_ref
from sncheck.config.hostlist import check_name, quoted
from sncheck.errors import CapBlocked, ConfigError, HarnessError
from sncheck.config.playbook import ParallelLayout, Playbook
from sncheck.health.capacity import capacity
from sncheck.ledger.memory import MAX_DEGREE
from sncheck.health.policy import DEFAULT_CAP
from sncheck.config.inventory import Inventory, local_inventory
from sncheck.run.inputs import load_inventory
from sncheck.model import card_of, is_switch
from sncheck.report import outputs
from sncheck.store.state import DB_NAME, StateStore, default_state_dir
from sncheck.store.statedir import refuse_foreign_dir
from sncheck.store.rundir import new_run_id
from sncheck.topology import Topology, natural_key

from sncheck.actions.batch import DEFAULT_VIA, MEASURED_BY, BatchResult, reconcile_store, run_batch
from sncheck.actions.transaction import DeferredSignals, StateLock
from sncheck.transport import Connection, resolve_host
from sncheck.run.inputs import load_playbook
F = TypeVar("F", bound=Callable[..., Any])



# -- Click plumbing -----------------------------------------------------------------

def _state_dir(path: str | None) -> Path:
    if path:
        return Path(path).expanduser()
    sdir = default_state_dir()
    if shown(str(sdir)) != str(sdir):  # as --state-dir's own check: a newline there forged 'audit:' lines
        raise ConfigError("has a control or bidi character in its name ($XDG_STATE_HOME or $HOME); give "
                          "--state-dir, or set them to a path without one", shown(str(sdir)))  # hostile r23, H23-13
    return sdir


def _inventory(path: str | None) -> Inventory:
    return load_inventory(path) if path else local_inventory()


state_dir_option = click.option(
    "--state-dir", type=directory(),
    help="State directory (default $XDG_STATE_HOME/sncheck or ~/.local/state/sncheck).")
inventory_option = click.option(
    "-i", "--inventory", "inventory_path", type=input_file("yaml"),
    help="Inventory YAML. Default: this machine (the embedded local inventory).")
via_option = click.option(
    "--via", multiple=True, type=click.Choice(list(ACTIONS)),
    help=f"Isolation mechanism; repeat for several. Default: {', '.join(DEFAULT_VIA)}.")
apply_option = click.option("--apply", is_flag=True, help="Run the commands (default: dry run, runs nothing).")


def _action_options(fn: F) -> F:
    for d in reversed([
        via_option, apply_option,
        click.option("--control-host", help="Run Slurm/Kubernetes commands on this host over SSH."),
        click.option("--ssh-config", type=input_file("ssh config"), help="SSH config instead of ~/.ssh/config."),
        click.option("--known-hosts", type=input_file("known_hosts"), help="known_hosts for the control host."),
        state_dir_option, inventory_option,
    ]):
        fn = d(fn)
    return fn


def _runner(control_host: str | None, inventory: Inventory, ssh_config: str | None,
            known_hosts: str | None) -> CommandRunner:
    if not control_host:
        return LocalRunner()
    check_name(control_host, "--control-host")  # '-oProxyCommand=...' is no host (hostile round 9)

    host = inventory.hosts.get(control_host)
    overrides = {k: getattr(host, k) for k in ("address", "port", "user", "identity_file")
                 if host is not None and getattr(host, k) is not None}
    ssh = inventory.ssh
    defaults = {k: v for k, v in (("user", ssh.user), ("port", ssh.port),
                                  ("identity_file", ssh.identity_file)) if v is not None}
    spec = resolve_host(control_host, overrides, defaults, ssh_config)
    conn = Connection(spec, connect_timeout=ssh.connect_timeout, known_hosts=known_hosts or ssh.known_hosts)
    return SshRunner(conn, timeout=ssh.command_timeout)


def _classify(entity: str, topo: Topology) -> str:
    """The kind of an entity of the inventory; anything else is refused (exit 2)."""
    inv = topo.inventory
    if entity.startswith("-") or not entity.strip():
        raise ConfigError(f"{quoted(entity, 80)} is not an entity name: names never begin with '-'")
    if entity in topo.by_id:
        return "card"
    if entity in inv.hosts:
        return "host"
    if card_of(entity) != entity and card_of(entity) in topo.by_id:  # a NIC: the card of its rail
        return "nic"
    if "<->" in entity and topo.is_entity(entity):
        return "link"
    if entity in topo.supernode_names:
        return "supernode"
    if is_switch(entity) and topo.is_entity(entity):
        return "switch"
    raise ConfigError(f"{quoted(entity, 80)} is not a card, host or switch of inventory {inv.name} ({inv.source}), "
                      "nor a NIC or link of it; cards are named <host>/gpu<index>, e.g. node003/gpu2, NICs "
                      "<host>/nic<rail>, switches leaf:<name> or spine:<name>")


def _print_batch(batch: BatchResult, apply: bool, audit_path: Path) -> None:
    if not apply:
        click.echo("dry run: nothing was changed; add --apply to run these commands")
    for r in batch.records:
        head = f"{r['entity']} ({r['kind']}) {r['action']} via {r['via']}"
        if r.get("blocked_by_cap"):
            click.echo(f"{head}: skipped (fleet cap)")
        elif r["outcome"] == "dry-run":
            click.echo(shown(f"{head}: dry run" + (f" ({r['summary']})" if r["summary"] else "")))
            for line in r["plan"]:
                click.echo(f"    would {shown(line)}")
        else:
            click.echo(shown(f"{head}: {r['outcome']}: {r['message']}"))
    if batch.forced:
        assert batch.cap is not None
        click.echo(f"sncheck: warning: over the fleet cap, forced ({batch.forced!r}, in the audit): "
                   f"{batch.cap.message.split('. Nothing')[0]}", err=True)
    click.echo(shown(f"audit: {audit_path}"), err=True)


def _finish(batch: BatchResult, audit_path: Path) -> None:
    if batch.blocked:
        assert batch.cap is not None
        raise CapBlocked(batch.cap.message)
    if batch.failed:
        raise HarnessError(f"{len(batch.failed)} of {len(batch.records)} actions failed; see {audit_path}")


# -- commands -----------------------------------------------------------------------

@click.command("status")
@click.argument("entities", nargs=-1)
@click.option("--history", is_flag=True, help="Every decision (of the ENTITIES given, else of all), oldest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--slurm", "with_slurm", is_flag=True,
              help="Show each entity's Slurm node state (sinfo) beside sncheck's, and nodes drained by others.")
@click.option("--check", "check", is_flag=True,
              help="List the state store's rows that do not decode (set aside); exit 1 if there are any.")
@state_dir_option
@handle_errors
def status(entities: tuple[str, ...], history: bool, as_json: bool, with_slurm: bool, check: bool,
           state_dir: str | None) -> None:
    """What is quarantined or isolated now, since when, and why.

    \b
    Examples:
      sncheck status
      sncheck status --slurm
      sncheck status --history node003/gpu2
      sncheck status --check
    """
    if check:
        _check(_state_dir(state_dir), as_json)
        return
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    from sncheck.health.history import known_entity  # noqa: PLC0415 -- pandas: the CLI starts without it
    with _existing(state_dir) as store:
        for e in entities:  # a mistyped name is refused, never 'nothing isolated'
            if store is not None:
                known_entity(store, e, str(store.dir), "status")
        if store is not None and history:
            rows = [r for e in entities for r in store.history(e)] if entities else store.history()
        elif store is not None:
            rows = [r for r in store.current_status() if not entities or r["entity"] in entities]
        runs = store.runs() if store is not None else []
    slurm_states = node_states(LocalRunner()) if with_slurm else None
    if slurm_states is not None:
        for r in rows:
            st = slurm_states.get(r["entity"].split("/", 1)[0])
            r["slurm"] = None if st is None else {"state": st[0], "reason": st[1], "sncheck": is_ours(st[1])}
    if as_json:
        doc: dict[str, Any] = {"history" if history else "status": rows, "runs": runs}
        if slurm_states is not None:
            doc["slurm"] = {n: {"state": s, "reason": why, "sncheck": is_ours(why)}
                            for n, (s, why) in slurm_states.items()}
        click.echo(json.dumps(doc, indent=2))
        return
    time_key = "ts" if history else "since"
    if rows:
        slurm_col = slurm_states is not None
        table = [("ENTITY", "KIND", "ACTION", "SINCE" if not history else "WHEN", "RUN", "RULE",
                  *(("SLURM",) if slurm_col else ()), "REASON")]
        for r in rows:
            state = r["action"] + ("" if r["action"] == "quarantine" or r["applied"] else " (not applied)")
            slurm = ((describe(slurm_states.get(r["entity"].split("/", 1)[0])),)  # type: ignore[union-attr]
                     if slurm_col else ())
            table.append((r["entity"], r["entity_kind"], state, r[time_key][:19] + "Z", r["run_id"],
                          r["rule"] or "-", *slurm, r["reason"] or "-"))
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
        for row in table:
            click.echo(shown("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1]))
    elif not os.path.lexists(_state_dir(state_dir)):  # a mistyped --state-dir is no all-clear
        click.echo(shown(f"no state directory at {_state_dir(state_dir)}: nothing recorded"))
    else:
        click.echo("no decisions recorded" if history else "nothing is quarantined or isolated")
    if slurm_states is not None:
        mine = {r["entity"].split("/", 1)[0] for r in rows}
        for node, (node_state, why) in sorted(slurm_states.items(), key=lambda kv: natural_key(kv[0])):
            if node not in mine and why is not None:
                click.echo(shown(f"slurm: {node} {describe((node_state, why))}"))  # Slurm's reason: anyone's text
    if runs:  # the store's rows as written (an edited row forged a line here; hostile round 25, H25-05)
        last = runs[0]
        click.echo(shown(f"{len(runs)} runs recorded; latest {last['run_id']} ({last['playbook']}, "
                         f"{last['verdict']}, {last['finished'] or last['started']})"))


@contextmanager
def _existing(state_dir: str | None) -> Iterator[StateStore | None]:
    """The state store a query (status, capacity) reads, or None where no run or action made
    one: a query creates no directory and no database as a side effect."""
    sdir = _state_dir(state_dir)
    if not os.path.lexists(sdir / DB_NAME):
        # No store yet: nothing is recorded, unless the path could never hold one (a file
        # where a directory must be: the misconfiguration is said, not read as "nothing").
        above = next(p for p in (sdir, *sdir.parents) if os.path.lexists(p))
        if not above.is_dir():
            raise ConfigError(f"cannot use the state directory: {above} is not a directory", str(sdir))
        refuse_foreign_dir(sdir)  # another program's directory is no state directory with nothing in it
    store = StateStore(sdir) if os.path.lexists(sdir / DB_NAME) else None
    with store if store is not None else nullcontext():
        yield store


def _check(sdir: Path, as_json: bool) -> None:
    """``status --check``: every row that does not decode, by table and key."""
    with _existing(str(sdir)) as store:
        bad = [b.to_dict() for b in store.check()] if store is not None else []
    if as_json:
        click.echo(json.dumps({"set_aside": bad}, indent=2))
    elif bad:
        for b in bad:
            click.echo(f"{b['table']}  {b['key']}  {b['row']}: {b['problem']}")
        click.echo(f"{len(bad)} rows of {sdir / 'state.db'} do not decode and are set aside "
                   "(left as they are; every command goes on without them)")
    else:
        click.echo(f"every row of {sdir / 'state.db'} decodes")
    if bad:
        raise click.exceptions.Exit(1)


def _for_the_record(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A reason or rule the audit records: blank would be a decision with no why."""
    if not value.strip():
        raise click.BadParameter("must not be blank: it goes into the state store and the audit", ctx, param)
    return value


@click.command("isolate")
@click.argument("entities", nargs=-1, required=True)
@click.option("--kind", type=click.Choice(["card", "host", "switch"]), help="Check that every ENTITY is of this kind.")
@click.option("--reason", default="isolated by an operator", show_default=True, callback=_for_the_record,
              help="Why, for the record.")
@click.option("--rule", default="manual", show_default=True, callback=_for_the_record,
              help="Rule name for the record.")
@click.option("--cap", type=finite(0, 1), default=DEFAULT_CAP, show_default=True,
              help="The fleet cap: refuse when sncheck's isolations (those in the state store and these) "
                   "would keep more than this share of the cards or hosts out of service.")
@click.option("--force-cap", "force_cap", metavar="REASON",
              help="Isolate even over the fleet cap; REASON goes into every audit record of the batch.")
@_action_options
@handle_errors
def isolate(entities: tuple[str, ...], kind: str | None, reason: str, rule: str, cap: float,
            force_cap: str | None, via: tuple[str, ...], apply: bool, control_host: str | None,
            ssh_config: str | None, known_hosts: str | None, state_dir: str | None,
            inventory_path: str | None) -> None:
    """Take cards, hosts or scale-out switches out of service (a dry run unless --apply).

    A switch (leaf:<name>, spine:<name>) is recorded as a switch and reported "repair switch":
    its rail is drained on the hosts it serves, no card is masked.

    \b
    Examples:
      sncheck isolate node003/gpu2 -i cluster.yaml --via cuda_visible_devices
      sncheck isolate leaf:su0-rail3 -i cluster.yaml --via hostfile
      sncheck isolate node007 -i cluster.yaml --via slurm --via hostfile --apply
      sncheck isolate node007 -i cluster.yaml --via kubernetes --control-host admin01 --apply
    """
    inventory = _inventory(inventory_path)
    topo = Topology(inventory)
    run_id = new_run_id()
    requests = []
    for entity in dict.fromkeys(entities):
        k = _classify(entity, topo)
        if k not in ("card", "nic", "host", "switch"):
            raise ConfigError(f"{entity!r} is a {k}; only cards, hosts and switches can be isolated, and NICs "
                              f"(isolate {'one of its cards' if k == 'link' else 'its hosts'})")
        if kind is not None and k != kind:
            raise ConfigError(f"{entity!r} is a {k}, not a {kind}")
        requests.append(ActionRequest(entity, k, "isolate", reason, rule, {"source": "sncheck isolate"}, run_id))
    if force_cap is not None and not force_cap.strip():
        raise ConfigError("--force-cap needs a reason (it goes into the audit)")
    _operate(requests, inventory, via, apply, control_host, ssh_config, known_hosts, state_dir, cap,
             "manual isolate", force_cap)


@click.command("release")
@click.argument("entities", nargs=-1, required=True)
@click.option("--reason", default="released by an operator", show_default=True, callback=_for_the_record,
              help="Why, for the record.")
@click.option("--after-repair", is_flag=True,
              help="First run the scoped validation of ENTITIES (--playbook, --targets them); release only on a pass.")
@click.option("--playbook", "playbook_ref", default="post-delivery", show_default=True, type=input_ref("yaml"),
              help="With --after-repair: the playbook to run, scoped to ENTITIES.")
@click.option("--backend", help="With --after-repair: override the inventory's backend.")
@click.option("--faults", type=input_file("yaml"), help="With --after-repair: a fault plan (mock).")
@click.option("--seed", type=whole(0, 2**32 - 1), default=0, show_default=True, help="With --after-repair: the run's seed.")
@click.option("--out", type=directory(), help="With --after-repair: the validation's run directory.")
@_action_options
@handle_errors
def release(entities: tuple[str, ...], reason: str, after_repair: bool, playbook_ref: str, backend: str | None,
            faults: str | None, seed: int, out: str | None, via: tuple[str, ...], apply: bool,
            control_host: str | None, ssh_config: str | None, known_hosts: str | None, state_dir: str | None,
            inventory_path: str | None) -> None:
    """Put isolated cards or hosts back into service (a dry run unless --apply).

    Slurm nodes are resumed and Kubernetes nodes uncordoned only where sncheck drained
    or cordoned them. With --after-repair, the scoped validation of ENTITIES runs first
    (every pair touching them, their stress groups, golden on their hosts) and nothing
    is released unless it passes (exit 1).

    \b
    Examples:
      sncheck release node007 -i cluster.yaml --via slurm --apply
      sncheck release node003/gpu2 --after-repair -i cluster.yaml --via cuda_visible_devices --apply
    """
    inventory = _inventory(inventory_path)
    topo = Topology(inventory)
    run_id = new_run_id()
    with _existing(state_dir) as store:  # a release refused below leaves no state store behind (hostile round 12)
        known = {r["entity"]: r for r in store.current_status()} if store is not None else {}
    requests = []
    for entity in dict.fromkeys(entities):
        try:
            k = _classify(entity, topo)  # in the inventory, whatever the state store holds
        except ConfigError:
            if entity not in known:
                raise
            if after_repair:
                raise ConfigError(f"{entity} is not in inventory {inventory.name}: --after-repair cannot validate "
                                  "it; release it without --after-repair") from None
            # taken out, then dropped from the inventory: still released (it stayed isolated for good)
            k = known[entity]["entity_kind"]
            click.echo(f"note: {entity} is not in inventory {inventory.name}; released as the {k} the state "
                       "store holds", err=True)
        if entity not in known:
            click.echo(f"note: {entity} is not quarantined or isolated in the state store", err=True)
        rule = known[entity]["rule"] if entity in known else "manual"
        requests.append(ActionRequest(entity, k, "release", reason, rule, {"source": "sncheck release"}, run_id))
    if after_repair:
        _measures(load_playbook(playbook_ref), entities, known)
        verdict, run_dir = _validate_scoped(entities, inventory, playbook_ref, backend, faults, seed, out)
        if verdict != "pass":
            click.echo(f"scoped validation of {', '.join(entities)}: {verdict}; nothing released (see {run_dir})")
            raise click.exceptions.Exit(1)
        click.echo(f"scoped validation of {', '.join(entities)}: pass ({run_dir})")
        requests = [ActionRequest(r.entity, r.kind, r.action, f"{r.reason}; after repair, scoped validation "
                                  f"passed (run {run_dir.name})", r.rule,
                                  {**r.evidence, "validation_run": str(run_dir)}, r.run_id) for r in requests]
    _operate(requests, inventory, via, apply, control_host, ssh_config, known_hosts, state_dir, None,
             "manual release")


def _measures(playbook: Playbook, entities: tuple[str, ...], known: dict[str, dict]) -> None:
    """Refuse (exit 2, before anything runs) a validation playbook without the layer that measures
    each entity's symptom again: its isolating finding's layer (batch.MEASURED_BY), connectivity (the
    layer that measures each card, link and host by itself) for one isolated by hand. A golden-only
    playbook 'validated' a card still at 0.3x and released it (hostile round 26, H26-03)."""
    ran = {layer.name for layer in playbook.layers}
    for entity in dict.fromkeys(entities):
        row = known.get(entity) or {}
        evidence = row["evidence"] if "evidence" in row else None  # the store's row: its recorded evidence
        layer = str(evidence.get("layer")) if isinstance(evidence, dict) and evidence.get("layer") else None
        needed = MEASURED_BY.get(layer or "", ("connectivity",))
        if not set(needed) & ran:
            why = f"the {layer} layer found it" if layer in MEASURED_BY else "the layer that measures each card, " \
                "link and host by itself"
            raise ConfigError(f"--playbook {playbook.name!r} runs {', '.join(sorted(ran))}, not "
                              f"{' or '.join(needed)} ({why}): it cannot validate {entity}; give a playbook "
                              f"with {needed[0]}")


def _validate_scoped(entities: tuple[str, ...], inventory: Inventory, playbook_ref: str, backend: str | None,
                     faults: str | None, seed: int, out: str | None) -> tuple[str, Path]:
    """Run ``playbook_ref`` scoped to ``entities`` (--targets); (verdict, run directory)."""
    from sncheck.run.runner import Run, RunOptions  # noqa: PLC0415 -- pandas and pyarrow: the CLI starts without them

    opts = RunOptions(backend=backend, faults=faults, seed=seed, out=out, targets=tuple(entities),
                      reports=outputs(("html",)))
    result = Run(load_playbook(playbook_ref), inventory, opts).execute()
    return result.verdict.value, result.out_dir


def _operate(requests: list[ActionRequest], inventory: Inventory, via: tuple[str, ...], apply: bool,
             control_host: str | None, ssh_config: str | None, known_hosts: str | None,
             state_dir: str | None, cap: float | None, playbook: str, force_cap: str | None = None) -> None:
    """Plan, or under the state directory's lock reconcile and then apply, one transaction a
    request (sncheck.actions.transaction); SIGTERM/SIGINT finish the host in progress, exit 3."""
    sdir = _state_dir(state_dir)
    via = tuple(dict.fromkeys(via)) or DEFAULT_VIA  # a mechanism named twice is applied once
    runner = _runner(control_host, inventory, ssh_config, known_hosts) if apply else None
    started = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    run_id = requests[0].run_id or new_run_id()
    audit = AuditLog([sdir], held=False)
    try:
        with DeferredSignals() as signals, StateLock(sdir, signals=signals) if apply else nullcontext(), \
                StateStore(sdir) as store:
            for line in reconcile_store(store, inventory, runner, sdir, one_fleet=True):
                click.echo(f"sncheck: reconciled: {line}", err=True)
            batch = run_batch(requests, store=store, inventory=inventory, via=via, apply=apply, runner=runner,
                              audit=audit, out_dirs=[sdir], cap=cap, force_cap=force_cap, run_id=run_id,
                              signals=signals)
            if apply and not batch.blocked:
                store.record_run({"run_id": run_id, "playbook": playbook, "backend": ",".join(via),
                                  "inventory": inventory.name, "started": started, "finished": _stamp(),
                                  "verdict": "fail" if batch.failed or batch.interrupted else "pass"})
    finally:
        if isinstance(runner, SshRunner):
            runner.connection.close()
    _print_batch(batch, apply, sdir / AUDIT_NAME)
    if signals.fired:
        raise HarnessError(batch.interrupted or f"interrupted ({signals.fired}) after the last host: "
                           "everything was done and recorded")
    _finish(batch, sdir / AUDIT_NAME)


def _stamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@click.command("capacity")
@inventory_option
@click.option("--tp", type=whole(1, MAX_DEGREE), default=1, show_default=True, help="Tensor-parallel size.")
@click.option("--ep", type=whole(1, MAX_DEGREE), default=1, show_default=True, help="Expert-parallel size (divides TP x DP).")
@click.option("--pp", type=whole(1, MAX_DEGREE), default=1, show_default=True, help="Pipeline-parallel size.")
@click.option("--dp", type=whole(1, MAX_DEGREE), default=1, show_default=True, help="Data-parallel size.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@state_dir_option
@handle_errors
def capacity_cmd(inventory_path: str | None, tp: int, ep: int, pp: int, dp: int, as_json: bool,
                 state_dir: str | None) -> None:
    """Does a TP/EP/PP/DP layout still fit once quarantined and isolated entities are out?

    TP and EP groups must each sit inside one supernode; world = TP x PP x DP.
    Exits 1 when the layout does not fit.

    \b
    Examples:
      sncheck capacity -i cluster.yaml --tp 8 --ep 16 --pp 4 --dp 32
    """
    inventory = _inventory(inventory_path)
    layout = ParallelLayout(tp=tp, ep=ep, pp=pp, dp=dp)
    with _existing(state_dir) as store:
        out = [r["entity"] for r in store.current_status()] if store is not None else []
    report = capacity(Topology(inventory), out, layout)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(f"{layout}: placement unit {layout.unit} cards (lcm of TP and EP) inside one supernode")
        for s in report.supernodes:
            out_list = ", ".join(sorted(s.hosts_out + s.cards_out, key=natural_key)) or "none"
            click.echo(f"  {s.name}: {s.healthy}/{s.cards} healthy; {s.tp_groups} TP groups, "
                       f"{s.ep_groups} EP groups, {s.units} units, {s.stranded} stranded; out: {out_list}")
        verdict = "fits" if report.fits else "does NOT fit"
        click.echo(f"layout {verdict}: needs {report.units_needed} units, {report.units_available} available "
                   f"({report.healthy_cards}/{report.total_cards} healthy cards); largest DP that fits: "
                   f"{report.max_dp}")
        for w in report.warnings:
            click.echo(f"warning: {w}", err=True)
        for note in report.taken + report.ignored:
            click.echo(f"note: {note}", err=True)
    if not report.fits:
        raise click.exceptions.Exit(1)


COMMANDS = (status, isolate, release, capacity_cmd)


def register(main: click.Group) -> None:
    """Add ``status``, ``isolate``, ``release`` and ``capacity`` to the ``sncheck`` group."""
    for command in COMMANDS:
        main.add_command(command)
