"""History across runs: record a run's summaries in the state store, read an entity's
history, compare two runs, and build baselines from what was kept.

The state store keeps summaries, not rows (see :mod:`sncheck.health.summaries`), so a
year of nightly runs stays small. A run directory can stand in for a stored run
anywhere a run is named (``sncheck diff RUN_DIR_A RUN_DIR_B``): its summaries are
computed from its rows.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from itertools import islice
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sncheck.errors import ConfigError
from sncheck.health.baseline import SCHEMA as BASELINE_SCHEMA, named_rows, refuse_other_record, released_group_symptom
from sncheck.health.summaries import Summary, summarize
from sncheck.model import (LINK_SEP, EntityKind, Finding, RunRecord, card_of, host_of, is_cable, scope_holds,
                           run_duration)
from sncheck.store.statedir import has_store
from sncheck.store.frames import RowFrames
from sncheck.store.results import finding_from_json, read_record
from sncheck.store.rundir import read_frames
from sncheck.store.state import StateStore

Key = tuple[str, str, str]           # (kind, entity, metric)
Summaries = dict[Key, tuple[float, float, int]]
HISTORY_RUNS = 10                    # recent runs loaded for the drift op (plus the first)
MOVE_Z = 4.0                         # a card or link moved when |delta| > MOVE_Z x noise ...
MOVE_REL = 0.02                      # ... and by at least 2%
LAST_PASS = "last-pass"
PAIR_UNITS = {"p2p_bandwidth": "GB/s", "p2p_latency": "us"}  # what a baseline holds (health.baseline.BASELINE_METRICS)


# ---------------------------------------------------------------------- recording

def record(state_dir: str | Path, run: RunRecord, run_dir: str | Path) -> int:
    """Keep the summaries of a finished run (its rows read back from ``run_dir``), and where its
    results.json is, absolute (diff reads what the run measured there, from any directory)."""
    rows = _rows(Path(run_dir))
    with StateStore(state_dir) as st:
        st.record_run(run, Path(run_dir).absolute() / "results.json")
        return st.record_summaries(run.run_id, summarize(run, rows))


def _rows(run_dir: Path) -> RowFrames:
    """A run's rows, one frame per kind (empty where the run kept none)."""
    return read_frames(run_dir)


def drift_history(state_dir: str | Path, inventory: str, backend: str,
                  recent: int = HISTORY_RUNS) -> dict | None:
    """Earlier runs' per-card summaries for the drift op: the first run of this
    inventory and backend and the ``recent`` latest, oldest first; and the design
    values calibrated on the first of them that calibrated (the local backend).

    ``{"runs": [run_id...], "cards": {card: {metric: [(value, spread) | (None, None)...]}},
    "calibration": {tier: {"bandwidth_GBps": v, "latency_us": v}}}``
    """
    if not has_store(state_dir):
        return None
    with StateStore(state_dir) as st:
        runs = st.summary_runs(inventory=inventory, backend=backend)
        picked = runs[:1] + [r for r in runs[1:][-recent:]]
        if not picked:
            return None
        per_run = [st.run_summaries(r["run_id"]) for r in picked]
    cards: dict[str, dict[str, list]] = {}
    calibration: dict[str, dict[str, float]] = {}
    for summ in per_run:  # the first calibration on record (the local backend's first run)
        found = {(e, m): v for (k, e, m), (v, _s, _n) in summ.items() if k == "calibration"}
        if found:
            for (tier, metric), v in found.items():
                calibration.setdefault(tier, {})[metric] = v
            break
    for i, summ in enumerate(per_run):
        for (kind, entity, metric), (v, s, _n) in summ.items():
            if kind != "card":
                continue
            series = cards.setdefault(entity, {}).setdefault(metric, [(None, None)] * len(per_run))
            series[i] = (v, s)
    return {"runs": [r["run_id"] for r in picked], "cards": cards, "calibration": calibration}


# ---------------------------------------------------------------------- runs by name
class RunRef:
    """A run named on the command line: a run id in the state store, or a run directory."""

    def __init__(self, ref: str, state_dir: str | Path | None) -> None:
        self.ref = ref
        if not ref.strip():  # Path('') is the working directory, and '' the prefix of every run id
            raise ConfigError("an empty run name: give a run id (sncheck history --runs lists them) or a run "
                              "directory", repr(ref))
        path = Path(ref)
        # anything at results.json but a missing file goes through the one reader: a FIFO, a
        # device or a link to one there is refused naming it (is_file() said "no results.json")
        if path.is_dir() and os.path.lexists(path / "results.json"):
            run = read_record(path / "results.json")
            rows = _rows(path)
            refuse_other_record(run.run_id, rows.kind("p2p"), path)
            self.run_id = run.run_id or ref
            self.summaries = {(s.kind, s.entity, s.metric): (s.value, s.spread, s.n)
                              for s in summarize(run, rows)}
            self.findings = [_brief(f) for f in run.findings]
            self.playbook: str | None = run.playbook
            self.coverage = Coverage.of(run)
            self.started: str | None = run.started
            self.verdict: str | None = run.verdict.value
            self.inventory: str | None = run.inventory
            self.duration_s, self.unknown_duration = _duration(run.started, run.finished)
            return
        if state_dir is None:
            raise ConfigError("not a run directory (no results.json); a run id needs --state-dir", ref)
        if not has_store(state_dir):
            raise ConfigError("no state store here (no state.db)", str(state_dir))
        with StateStore(state_dir) as st:
            stored = st.run(ref) or _by_prefix(st, ref)
            if stored is None:
                raise ConfigError("no such run in the state store (sncheck history --runs lists them)", ref)
            self.run_id = stored["run_id"]
            self.summaries = st.run_summaries(self.run_id)
            self.findings = [_stored_brief(f) for f in st.findings_of_run(self.run_id)]
            self.playbook = stored.get("playbook")
            self.coverage = Coverage.stored(self.run_id, stored.get("results_path"))
            self.started = stored.get("started")
            self.verdict = stored.get("verdict")
            self.inventory = stored.get("inventory")
            self.duration_s, self.unknown_duration = _duration(stored.get("started"), stored.get("finished"))
        if not self.summaries:
            raise ConfigError("the state store keeps no summaries of this run (recorded before "
                              "sncheck kept history); compare its run directory instead", ref)


def _duration(started: object, finished: object) -> tuple[float | None, str | None]:
    """A run's duration, and why it is unknown where a finished run's times cannot give it (a
    clock stepped back mid-run); an unfinished run's verdict (error) says that already."""
    seconds, why = run_duration(started, finished)
    return seconds, (why if finished is not None else None)


def _by_prefix(st: StateStore, ref: str) -> dict | None:
    hits = [r for r in st.runs() if r["run_id"].startswith(ref)]
    return hits[0] if len(hits) == 1 else None


# ---------------------------------------------------------------------- diff
BRIEF = ("entity", "entity_kind", "rule", "severity", "message")  # a finding as diff and the report list it


def _brief(f: Finding) -> dict[str, Any]:
    """A finding as diff and the trends compare it (the state store keeps these columns), with the
    layers that re-measure it (:func:`measured_by`)."""
    return {"entity": f.entity, "entity_kind": f.entity_kind.value, "rule": f.rule, "severity": f.severity.value,
            "message": f.message, "measured_by": measured_by(f)}


def _stored_brief(d: dict[str, Any]) -> dict[str, Any]:
    """A stored finding as :func:`_brief` gives it; one no reader decodes keeps its own layer."""
    try:
        return _brief(finding_from_json(d))
    except (KeyError, ValueError):
        return {**{k: d.get(k) for k in BRIEF}, "measured_by": [str(d.get("layer"))]}


def measured_by(f: Finding) -> list[str]:
    """The layers whose measurement would raise ``f`` again: its own. A host fact is a row of the
    connectivity layer (its findings carry that layer). A finding of the retest (layer ``confirm``)
    re-measures the symptoms it retested, each with its own layer's measurement (``evidence.related``):
    those layers; where it names none (``devices_changed``: a host's facts read again), connectivity's,
    which reads the host facts. A later run's own retest never re-measures an earlier suspect."""
    if f.layer != CONFIRM:
        return [f.layer]
    return sorted(f.layers() - {CONFIRM}) or ["connectivity"]


CONFIRM = "confirm"  # the retest's findings' layer (sncheck.run.confirm.NAME)


class Coverage:
    """What a run measured: the layers it ran to the end (a layer skipped or cut short re-measured
    nothing for sure) and its scope (``--targets``: its cards and hosts; None, the whole inventory).
    ``layers`` None: unknown (a stored run whose results.json is gone), ``why`` says so. ``unmeasured``:
    what the run's not-measured findings name (an unreachable host, a card whose test did not run):
    nothing on them was re-measured, in any layer."""

    def __init__(self, layers: set[str] | None, scope: Mapping[str, Any] | None, why: str | None = None,
                 unmeasured: Mapping[str, str] | None = None) -> None:
        self.layers, self.scope, self.why = layers, scope, why
        self.unmeasured = dict(unmeasured or {})

    @classmethod
    def of(cls, run: RunRecord) -> Coverage:
        return cls({x.name for x in run.layers if not x.skipped and not x.cut_short}, run.scope,
                   unmeasured={f.entity: f.rule for f in run.findings if f.not_measured})

    @classmethod
    def stored(cls, run_id: str, results_path: str | None) -> Coverage:
        """A stored run's, from its results.json (``runs.results_path``): unknown where that is gone,
        unreadable or now another run's (its run directory reused with --force)."""
        if not results_path:
            return cls(None, None, "the state store keeps no results.json of it")
        try:
            record = read_record(results_path)
        except (ConfigError, OSError) as e:
            return cls(None, None, f"its results.json ({results_path}) cannot be read: {e}")
        if record.run_id != run_id:
            return cls(None, None, f"its results.json ({results_path}) is now run {record.run_id}'s")
        return cls.of(record)

    def ran(self) -> str:
        return ", ".join(sorted(self.layers or ())) or "no layer"

    def scope_text(self) -> str:
        return "--targets " + " ".join(map(str, self.scope.get("targets") or ())) if self.scope else "the whole inventory"

    def missed(self, f: Mapping[str, Any]) -> str | None:
        """Why this run did not re-measure the finding ``f`` (a brief): None where it did."""
        if self.layers is None:
            return f"what it measured is unknown: {self.why}"
        wanted = list(f.get("measured_by") or ())
        if not self.layers & set(wanted):
            return f"it ran {self.ran()} (not {' or '.join(wanted)})"
        entity = str(f.get("entity"))
        if not self.holds(entity, str(f.get("entity_kind"))):
            return f"outside its scope ({self.scope_text()})"
        parts = entity.split(LINK_SEP)
        if on := next((e for e in (entity, *parts, *map(card_of, parts), *map(host_of, parts)) if e in self.unmeasured), None):
            return f"{on} was not measured ({self.unmeasured[on]})"
        return None

    def holds(self, entity: str, kind: str) -> bool:
        """Whether the run's scope holds the entity (:func:`sncheck.model.scope_holds`)."""
        return scope_holds(kind, entity, self.scope)


def split_gone(gone: list[dict[str, Any]], later: Coverage) -> tuple[list[dict], list[dict]]:
    """The earlier run's findings the later one does not repeat: resolved (the later run ran a
    layer that measures it, over a scope that holds its entity), and not re-measured, each with why."""
    resolved, apart = [], []
    for f in gone:
        why = later.missed(f)
        if why is None:
            resolved.append({k: f.get(k) for k in BRIEF})
        else:
            apart.append({**{k: f.get(k) for k in BRIEF}, "why": why})
    return resolved, apart


def _finding_key(f: Mapping[str, Any]) -> tuple[str, str]:
    return (str(f.get("entity")), str(f.get("rule")))


def diff(a: RunRef, b: RunRef, move_z: float = MOVE_Z, move_rel: float = MOVE_REL) -> dict:
    """What changed from run ``a`` to run ``b``.

    ``aggregates``: every tier and collective summary in either run, with the delta.
    ``moved``: cards, hosts and links whose change is beyond ``move_z`` x the noise of
    the two values (their standard errors) and at least ``move_rel``.
    ``findings``: new (in b only), persisting, and those of a that b does not repeat: resolved where
    b re-measured them (it ran a layer that measures the finding, over a scope that holds its entity:
    :class:`Coverage`), else ``not_remeasured``, each with its ``why``.
    """
    def row(key: Key) -> dict:
        va, sa, na = a.summaries.get(key, (None, None, 0))
        vb, sb, nb = b.summaries.get(key, (None, None, 0))
        out = {"kind": key[0], "entity": key[1], "metric": key[2], "a": va, "b": vb,
               "delta": None, "rel": None, "z": None}
        if va is not None and vb is not None:
            out["delta"] = vb - va
            out["rel"] = (vb - va) / va if va else None
            noise = math.hypot(sa or 0.0, sb or 0.0)
            out["z"] = (vb - va) / noise if noise > 0 else None
        return out

    keys = sorted(set(a.summaries) | set(b.summaries))
    aggregates = [row(k) for k in keys if k[0] in ("tier", "collective", "golden", "calibration")]
    moved = []
    for k in keys:
        if k[0] not in ("card", "host", "link") or k not in a.summaries or k not in b.summaries:
            continue
        r = row(k)
        if r["rel"] is None or abs(r["rel"]) < move_rel:
            continue
        if r["z"] is None and k[0] != "link":  # links are kept as single values: no noise estimate
            continue
        if r["z"] is not None and abs(r["z"]) < move_z:
            continue
        moved.append(r)
    moved.sort(key=lambda r: -abs(r["rel"]))
    fa = {_finding_key(f): f for f in a.findings}
    fb = {_finding_key(f): f for f in b.findings}
    brief = lambda f: {k: f.get(k) for k in BRIEF}  # noqa: E731
    resolved, apart = split_gone([fa[k] for k in fa if k not in fb], b.coverage)
    # what makes the comparison other than one cluster's two nights: said, never left to be read
    # from its numbers ('findings resolved' on another cluster are findings it does not have)
    notes = [f"RUN_A and RUN_B are one run ({a.run_id}): nothing can have changed"] if a.run_id == b.run_id else []
    if a.inventory != b.inventory:
        notes.append(f"the runs are of different inventories ({a.inventory} -> {b.inventory}): the deltas compare "
                     "two clusters, and a finding 'resolved' is one the other cluster has not")
    notes += _measure_notes(a, b)
    notes += [f"{name} {r.run_id}: duration unknown: {r.unknown_duration}"
              for name, r in (("RUN_A", a), ("RUN_B", b)) if r.unknown_duration]
    return {
        "a": {"run_id": a.run_id, "started": a.started, "verdict": a.verdict, "inventory": a.inventory,
              "duration_s": a.duration_s},
        "b": {"run_id": b.run_id, "started": b.started, "verdict": b.verdict, "inventory": b.inventory,
              "duration_s": b.duration_s},
        "notes": notes,
        "aggregates": aggregates, "moved": moved,
        "findings": {"new": [brief(fb[k]) for k in fb if k not in fa],
                     "resolved": resolved, "not_remeasured": apart,
                     "persisting": [brief(fb[k]) for k in fb if k in fa]},
        "noise": {"z": move_z, "rel": move_rel},
    }


def _measure_notes(a: RunRef, b: RunRef) -> list[str]:
    """What the two runs measured differently: playbook, layers, scope (a finding of a layer B
    did not run is not re-measured, never resolved)."""
    ca, cb = a.coverage, b.coverage
    notes = []
    if a.playbook != b.playbook:
        notes.append(f"the runs are of different playbooks ({a.playbook} -> {b.playbook})")
    if ca.layers is None or cb.layers is None:
        notes += [f"{name} {r.run_id}: what it measured is unknown: {r.coverage.why}"
                  for name, r in (("RUN_A", a), ("RUN_B", b)) if r.coverage.layers is None]
    elif ca.layers != cb.layers:
        notes.append(f"the runs ran different layers ({ca.ran()} -> {cb.ran()}): a finding of a layer RUN_B did not "
                     "run is listed as not re-measured, never resolved")
    if (ca.scope or None) != (cb.scope or None):
        notes.append(f"the runs measured different scopes ({ca.scope_text()} -> {cb.scope_text()})")
    return notes


# ---------------------------------------------------------------------- entity history
def entity_history(state_dir: str | Path, entity: str, limit: int | None = None) -> dict:
    """An entity's summaries and findings, run by run (oldest first). An entity no recorded
    run measured, found or isolated is no entity of this store: refused (a mistyped name read
    as 'nothing recorded', exit 0, looked like a clean history)."""
    if not has_store(state_dir):
        raise ConfigError("no state store here (no state.db)", str(state_dir))
    with StateStore(state_dir) as st:
        if not entity.strip():
            known_entity(st, entity, str(state_dir))
        runs = list(reversed(st.runs(limit)))
        findings = st.findings_for(entity)
        actions = st.history(entity)
        out = []
        for r in runs:
            summ = st.run_summaries(r["run_id"])
            metrics = {f"{k[0]}:{k[2]}": {"value": v, "noise": s, "n": n}
                       for k, (v, s, n) in summ.items() if k[1] == entity}
            mine = [f for f in findings if f["run_id"] == r["run_id"]]
            if not metrics and not mine:
                continue
            out.append({"run_id": r["run_id"], "started": r["started"], "verdict": r["verdict"],
                        "inventory": r["inventory"], "backend": r["backend"], "metrics": metrics,
                        "findings": [{k: f.get(k) for k in ("rule", "severity", "message")} for f in mine]})
        # the rows an entity's history reads that were left out (not decoded): a history missing
        # them is no clean one ('nothing recorded', exit 0, when its only run's summary was garbled)
        unread = [a.to_dict() for a in st.set_aside.items.values() if a.whole and a.table in HISTORY_TABLES]
        if not out and not actions and not findings and not unread:
            known_entity(st, entity, str(state_dir))
    return {"entity": entity, "runs": out, "isolation": actions, "set_aside": unread}


HISTORY_TABLES = ("summaries", "summary_keys", "findings", "isolation")  # what entity_history reads


def known_entity(st: StateStore, entity: str, where: str, asked: str = "history") -> None:
    """Refuse (ConfigError, exit 2) an empty ``entity``, or one no recorded run measured, found or
    isolated where runs measured others: a mistyped name read as a clean record, exit 0. The
    refusal says what was ``asked`` and the nearest names the newest measured run holds. A store
    whose runs measured nothing (isolate's manual runs) cannot tell a name: it passes."""
    if not entity.strip():
        raise ConfigError(f"{asked} of '' (an empty ENTITY): name a card, host, link, tier or collective", where)
    if st.history(entity) or st.findings_for(entity):
        return
    every = st.runs()
    if any(r["run_id"] == entity for r in every):
        raise ConfigError(f"{asked} {entity!r}: that is a run id, not an entity; 'history --runs' lists the runs, "
                          "'diff RUN_A RUN_B --state-dir' compares two", where)
    names: set[str] = set()  # the newest measured run's, for the hint
    for r in every:
        keys = st.run_summaries(r["run_id"])
        if any(k[1] == entity for k in keys):
            return
        names = names or {k[1] for k in keys}
    if not names:
        return
    near = difflib.get_close_matches(entity, sorted(names), n=3)
    hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
    raise ConfigError(f"{asked} {entity!r}: no such entity: no recorded run measured, found or isolated it "
                      f"(a card node001/gpu0, host node001, link, tier scale_up or collective all_reduce/domain){hint}",
                      where)


def trends(state_dir: str | Path, run: RunRecord, last: int = 10,
           current: Summaries | None = None) -> dict | None:
    """For the report: per-tier series over the last runs of this inventory and backend
    (this one included: ``current``, its summaries when it is not stored yet), and the
    findings new, persisting and gone since the previous run: a gone finding is ``resolved`` only
    where this run re-measured it (:class:`Coverage`), else ``not_remeasured`` with its ``why``
    (a nightly after a failing gate runs no connectivity layer: the gate's findings are not resolved)."""
    if not has_store(state_dir):
        return None
    with StateStore(state_dir) as st:
        runs = st.summary_runs(inventory=run.inventory, backend=run.backend)
        runs = [r for r in runs if r["run_id"] != run.run_id][-(last - 1):]
        this = next((r for r in st.summary_runs() if r["run_id"] == run.run_id), None)
        series_runs = runs + ([this] if this else [])
        if not runs:
            return None
        per_run = [st.run_summaries(r["run_id"]) for r in series_runs]
        if this is None and current is not None:
            series_runs.append({"run_id": run.run_id})
            per_run.append(current)
        previous = runs[-1]
        prev_findings = st.findings_of_run(previous["run_id"])
    tiers: dict[str, list] = {}
    for i, summ in enumerate(per_run):
        for (kind, entity, metric), (v, _s, _n) in summ.items():
            if kind == "tier":
                tiers.setdefault(f"{entity} {metric}", [None] * len(per_run))[i] = v
    now = {_finding_key(f): f for f in map(_brief, run.findings)}
    before = {_finding_key(f): f for f in map(_stored_brief, prev_findings)}
    brief = lambda f: {k: f.get(k) for k in BRIEF}  # noqa: E731
    cover = Coverage.of(run)
    resolved, apart = split_gone([before[k] for k in before if k not in now], cover)
    return {"runs": [r["run_id"] for r in series_runs], "previous": previous["run_id"],
            "previous_verdict": previous["verdict"], "series": tiers,
            "new": [brief(now[k]) for k in now if k not in before],
            "resolved": resolved, "not_remeasured": apart, "ran": sorted(cover.layers or ()),
            "scope": cover.scope_text(),
            "persisting": [brief(now[k]) for k in now if k in before]}


# ---------------------------------------------------------------------- baselines
def baseline_from_state(state_dir: str | Path, name: str, last: int | None = None,
                        passed_only: bool = False, inventory: str | None = None,
                        backend: str | None = None, before: str | None = None, pairs: bool = False) -> dict:
    """A ``sncheck.baseline/1`` from the summaries of stored runs: per tier, the median
    of the runs' tier medians; per tier and card, the median of the card's medians.

    ``before``: only runs that started before this timestamp (the run being judged).
    ``pairs``: only runs that measured pair levels (``last-pass``: a nightly's hold none, and
    the last passing nightly made a baseline of nothing for every gate after it; reviews19 #5).
    """
    if not has_store(state_dir):
        raise ConfigError("no state store here (no state.db)", str(state_dir))
    with StateStore(state_dir) as st:
        runs = st.summary_runs(inventory=inventory, backend=backend,
                               verdict="pass" if passed_only else None)
        if before is not None:
            runs = [r for r in runs if (r["started"] or "") < before]
        if pairs:
            held = (r for r in reversed(runs) if any(k == "tier" and m in PAIR_UNITS for k, _, m in st.run_summaries(r["run_id"])))
            runs = list(islice(held, last or len(runs)))[::-1]
        elif last:
            runs = runs[-last:]
        if not runs:
            which = ("passing runs" if passed_only else "runs") + (" that measured pair levels" if pairs else "")
            raise ConfigError(f"the state store has no {which} with summaries"
                              + (f" of inventory {inventory!r} on backend {backend!r}" if inventory else ""),
                              str(state_dir))
        fleets = sorted({str(r["inventory"]) for r in runs if r.get("inventory")})
        if len(fleets) > 1:  # two fleets' norms in one: name the one it is for
            raise ConfigError(f"the runs are of inventories {', '.join(map(repr, fleets))}: a baseline is made from "
                              "one inventory's runs (say which with --inventory)", str(state_dir))
        per_run = [st.run_summaries(r["run_id"]) for r in runs]
        named = [_named(st.findings_of_run(r["run_id"])) for r in runs]
    left_out: list[str] = []
    for i, found in enumerate(named):
        per_run[i], gone = _without_named(per_run[i], found)
        left_out.extend(e for e in gone if e not in left_out)
    metrics: dict[str, dict] = {}
    units = PAIR_UNITS
    collect: dict[tuple, list[float]] = {}
    calibration: dict[str, dict] = {}
    for summ in per_run:
        for (kind, entity, metric), (v, _s, _n) in summ.items():
            collect.setdefault((kind, entity, metric), []).append(v)
    for (kind, entity, metric), values in collect.items():
        med = float(pd.Series(values).median())
        if kind == "tier" and metric in units:
            m = metrics.setdefault(metric, {"tier": {}, "card": {}, "unit": units[metric]})
            m["tier"][entity] = med
        elif kind == "card" and "/" in metric and metric.split("/")[0] in units:
            base, tier = metric.split("/", 1)
            m = metrics.setdefault(base, {"tier": {}, "card": {}, "unit": units[base]})
            m["card"].setdefault(tier, {})[entity] = med
        elif kind == "calibration":
            calibration.setdefault(entity, {})[metric] = med
    out = {"schema": BASELINE_SCHEMA, "name": name,
           "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "runs": [r["run_id"] for r in runs], "source": "state", **({"inventory": fleets[0]} if fleets else {}),
           **({"backend": ",".join(sorted(kinds))} if (kinds := {str(r["backend"]) for r in runs if r.get("backend")})
              else {}),
           **({"left_out": left_out} if left_out else {}), "metrics": metrics}
    if calibration:
        out["calibration"] = calibration
    return out


def _named(found: list[dict[str, Any]]) -> tuple[Finding, ...]:
    """A stored run's findings as :func:`named_rows` reads them (the store keeps no ``about``:
    each is taken as about the hardware, so a check's host is left out too: a baseline loses
    a host's levels for a night, never takes a suspect's)."""
    out = []
    for f in found:
        try:
            out.append(finding_from_json(f))
        except (KeyError, ValueError):  # a kind or severity no reader knows: the store set it aside
            continue
    return tuple(out)


def _without_named(summ: dict, found: tuple[Finding, ...]) -> tuple[dict, list[str]]:
    """A run's summaries less the card levels of every entity it held suspect (``Finding.held_suspect``:
    an info finding from the start, an old counter burst, is none), released or not, as ``baseline make`` leaves their rows out of a run directory's baseline (review17 #5,
    the round's leftover: the state store's baseline took a released NIC's 0.4 level as its card's
    known-good). A card level stands for its card's pairs of one tier: :func:`named_rows` reads
    each as one pair of that card with itself, so a card, a NIC (its scale-out tier), a host, a
    switch or cable leave it out, and a link (one pair of many under a median) does not. A
    supernode's hosts are not in the store: a run with a supernode named gives no card level."""
    cards = [(k, e, m) for k, e, m in summ if k == "card" and "/" in m]
    found = tuple(f for f in found if f.held_suspect and not released_group_symptom(f)  # (the pairs' own: kept)
                  and not (f.entity_kind == EntityKind.LINK and not is_cable(f.entity)))  # (a card link: no card level)
    if not found or not cards:
        return summ, []
    if any(f.entity_kind == EntityKind.SUPERNODE for f in found):
        drop = np.ones(len(cards), bool)
        named = [f.entity for f in found if f.entity_kind == EntityKind.SUPERNODE]
    else:
        ends = [e for _, e, _ in cards]
        frame = pd.DataFrame({"src": ends, "dst": ends, "tier": [m.split("/", 1)[1] for _, _, m in cards]})
        drop, named = named_rows(frame, found, {})
    if not drop.any():
        return summ, []
    out = dict(summ)
    for key, d in zip(cards, drop):
        if d:
            del out[key]
    return out, named


def summaries_of(run: RunRecord, rows: pd.DataFrame) -> list[Summary]:
    return summarize(run, rows)
