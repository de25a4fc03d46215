"""History commands: ``history``, ``diff`` and ``baseline make`` (from run directories
or from the state store). What a run with ``--state-dir`` reads and records is
:mod:`sncheck.run.state`.

``sncheck.cli.main`` loads them when they are invoked (``baseline make`` builds from run
directories or, with ``--from-state``, from the state store).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from sncheck.cli.errors import shown
from sncheck.cli.numbers import MAX_RUNS, whole
from sncheck.cli.paths import directory, input_ref, output_file
from sncheck.errors import ConfigError
from sncheck.health.history import RunRef, baseline_from_state, diff, entity_history
from sncheck.store.statedir import has_store
from sncheck.cli.main import handle_errors
from sncheck.store.results import write_json
from sncheck.run.inputs import load_inventory
from sncheck.store.state import StateStore
from sncheck.health.baseline import BASELINE_METRICS, make_baseline


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.1%}"


# ---------------------------------------------------------------------- commands
@click.command("history")
@click.argument("entity", required=False)
@click.option("--state-dir", required=True, type=directory(), help="The state store.")
@click.option("--last", type=whole(1, MAX_RUNS), help="Only the last N runs.")
@click.option("--runs", "list_runs", is_flag=True, help="List the recorded runs instead.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def history_cmd(entity: str | None, state_dir: str, last: int | None, list_runs: bool, as_json: bool) -> None:
    """An ENTITY's measurements and findings over time (card, host, link, tier such as
    scale_up, or collective such as all_reduce/domain)."""

    handle_errors(_history)(entity, state_dir, last, list_runs, as_json)


def _history(entity, state_dir, last, list_runs, as_json) -> None:
    if list_runs and entity is not None:  # the entity was dropped unsaid, the runs listed
        raise ConfigError(f"give ENTITY ({entity!r}) or --runs, not both")
    if list_runs or entity is None:
        if not has_store(state_dir):
            raise ConfigError("no state store here (no state.db)", state_dir)
        with StateStore(state_dir) as st:
            runs = st.runs(last)
        if as_json:
            click.echo(json.dumps(runs, indent=2))
            return
        for r in runs:
            _say(f"{r['run_id']}  {r['started'] or '-':<22} {r['verdict'] or '-':<6} "
                       f"{r['playbook'] or '-'} {r['inventory'] or '-'} {r['backend'] or '-'}")
        return
    h = entity_history(state_dir, entity, last)
    if as_json:
        click.echo(json.dumps(h, indent=2, default=str))
    else:
        _history_text(entity, h, state_dir, last)
    if h["set_aside"]:  # a history with rows left out is no clean answer (status --check's exit)
        raise click.exceptions.Exit(1)


def _history_text(entity: str, h: dict, state_dir: str, last: int | None) -> None:
    if h["set_aside"]:
        _say(f"{entity}: {len(h['set_aside'])} rows of {state_dir} do not decode and are left out of this "
             "history (sncheck status --check lists them)")
    if not h["runs"] and not h["isolation"]:
        within = f"the last {last} runs of " if last else ""  # measured before them, or found in no run kept
        if not h["set_aside"]:
            _say(f"{entity}: nothing recorded in {within}{state_dir}")
        return
    metrics = sorted({m for r in h["runs"] for m in r["metrics"]})
    _say(f"{entity}: {len(h['runs'])} runs")
    header = ["run", "verdict"] + metrics + ["findings"]
    _say("  ".join(header))
    for r in h["runs"]:
        cells = [r["run_id"], r["verdict"] or "-"]
        cells += [_fmt(r["metrics"][m]["value"]) if m in r["metrics"] else "-" for m in metrics]
        cells.append("; ".join(f"[{f['severity']}] {f['rule']}" for f in r["findings"]) or "-")
        _say("  ".join(cells))
    for a in h["isolation"]:
        _say(f"  {a['ts']} {a['action']} ({a['rule'] or '-'}) run {a['run_id']}")


def _say(text: str) -> None:
    """One line of the text view: names and rules from the store (an operator's ``--rule``, an
    ENTITY as typed) with their controls and bidi marks shown, never sent to the terminal."""
    click.echo(shown(text))


@click.command("diff")
@click.argument("run_a", type=input_ref("results", dirs=True))
@click.argument("run_b", type=input_ref("results", dirs=True))
@click.option("--state-dir", type=directory(), help="Where run ids are looked up.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def diff_cmd(run_a: str, run_b: str, state_dir: str | None, as_json: bool) -> None:
    """What changed from RUN_A to RUN_B (run ids with --state-dir, or run directories):
    per-tier and per-collective deltas, cards and links that moved beyond the noise,
    findings new, resolved (RUN_B re-measured them), not re-measured by RUN_B and persisting."""

    handle_errors(_diff)(run_a, run_b, state_dir, as_json)


def _diff(run_a, run_b, state_dir, as_json) -> None:
    d = diff(RunRef(run_a, state_dir), RunRef(run_b, state_dir))
    if as_json:
        click.echo(json.dumps(d, indent=2, default=str))
        return
    # every line through _say: a run id, an entity or a rule read from a results.json may hold a
    # newline or a bidi mark (a run_id 'x\nsncheck: verdict pass' forged a line: hostile round 18, H18-12)
    _say(f"diff {d['a']['run_id']} ({d['a']['verdict']}) -> {d['b']['run_id']} ({d['b']['verdict']})")
    for note in d["notes"]:
        _say(f"note: {note}")
    click.echo("tiers and collectives:")
    for r in d["aggregates"]:
        _say(f"  {r['kind']:<11} {r['entity']:<22} {r['metric']:<16} {_fmt(r['a']):>10} -> "
             f"{_fmt(r['b']):>10}  {_pct(r['rel'])}")
    _say(f"moved beyond the noise (|z| >= {d['noise']['z']:g} and >= {d['noise']['rel']:.0%}): "
         f"{len(d['moved'])}")
    for r in d["moved"][:50]:
        _say(f"  {r['kind']:<5} {r['entity']:<40} {r['metric']:<26} {_fmt(r['a'])} -> {_fmt(r['b'])} "
             f"{_pct(r['rel'])} (z {_fmt(r['z'])})")
    if len(d["moved"]) > 50:
        _say(f"  ... and {len(d['moved']) - 50} more (--json for all)")
    for part, label in (("new", "new"), ("resolved", "resolved"), ("not_remeasured", "not re-measured by RUN_B"),
                        ("persisting", "persisting")):
        items = d["findings"][part]
        _say(f"findings {label}: {len(items)}")
        for f in items:
            _say(f"  [{f['severity']}] {f['entity_kind']} {f['entity']}: {f['rule']}"
                 + (f" ({f['why']})" if f.get("why") else ""))


@click.command("make")
@click.argument("run_dirs", nargs=-1, type=directory())
@click.option("--out", "out_path", type=output_file(), help="Write the baseline JSON here.")
@click.option("--from-state", "state_dir", type=directory(),
              help="Build it from the runs kept in this state store (instead of RUN_DIRS) and store it there.")
@click.option("--last", type=whole(1, MAX_RUNS), help="With --from-state: the last N runs only.")
@click.option("--passed-only", is_flag=True, help="With --from-state: only runs that passed.")
@click.option("--name", help="Its name in the state store (default: the --out file's stem, or 'default').")
@click.option("-i", "--inventory", "inventory_name", type=input_ref("yaml"), help="With --from-state: runs of this inventory name only.")
@click.option("--backend", help="With --from-state: runs of this backend only.")
def baseline_make(run_dirs, out_path, state_dir, last, passed_only, name, inventory_name, backend) -> None:
    """Build a per-tier and per-card baseline from RUN_DIRS (outliers dropped), or
    from the state store (--from-state DIR [--last N] [--passed-only])."""

    handle_errors(_baseline_make)(run_dirs, out_path, state_dir, last, passed_only, name, inventory_name, backend)


def refuse_empty(data: dict, where: str) -> None:
    """A baseline with no metrics compares nothing: every run against it would be judged by
    nothing it holds (reviews19 #5: nightly runs made ``"metrics": {}``, exit 0). Refused, naming why."""
    if not data.get("metrics"):
        raise ConfigError(f"the runs ({len(data.get('runs') or ())}) hold no pair levels "
                          f"({', '.join(BASELINE_METRICS)}: the connectivity layer's) to make a baseline of; "
                          "a stress or golden run measures none: make it from runs with the connectivity layer", where)


def _baseline_make(run_dirs, out_path, state_dir, last, passed_only, name, inventory_name, backend) -> None:
    name = name or (Path(out_path).stem if out_path else "default")
    if state_dir:
        if run_dirs:
            raise ConfigError("give RUN_DIRS or --from-state, not both")
        if inventory_name and Path(inventory_name).is_file():
            inventory_name = load_inventory(inventory_name).name
        data = baseline_from_state(state_dir, name, last=last, passed_only=passed_only,
                                   inventory=inventory_name, backend=backend)
        refuse_empty(data, state_dir)
        if data.get("left_out"):
            click.echo(shown(f"note: left out the card levels of what the runs' findings named, released or "
                             f"not: {', '.join(data['left_out'][:20])}" + (" ..." if len(data["left_out"]) > 20 else "")),
                       err=True)
        with StateStore(state_dir) as st:
            st.save_baseline(name, data)
        where = f"state store {state_dir} as {name!r}"
    else:
        if not run_dirs:
            raise ConfigError("give RUN_DIRS, or --from-state DIR")
        if not out_path:
            raise ConfigError("--out FILE is required with RUN_DIRS")
        if last or passed_only:
            raise ConfigError("--last and --passed-only go with --from-state")

        data = make_baseline(list(run_dirs), name, note=lambda line: click.echo(shown(f"note: {line}"), err=True))
        refuse_empty(data, ", ".join(run_dirs))
        where = None
    if out_path:
        write_json(Path(out_path), data)
    tiers = {m: {t: round(v, 2) for t, v in d["tier"].items()} for m, d in data["metrics"].items()}
    src = f"{len(data['runs'])} runs" if state_dir else f"{len(run_dirs)} runs"
    targets = ", ".join(x for x in (out_path, where) if x)
    click.echo(f"{targets}: baseline from {src}: {tiers}")
