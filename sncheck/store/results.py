"""results.json: the one reader and writer of the run record (DESIGN.md, version 1).

:func:`to_json` writes a :class:`~sncheck.model.RunRecord` as the v1 envelope: the
contract keys, each finding with its flags (``gates``, ``not_measured``, ``not_judged``)
and ``about: check`` on a finding about a check, each layer with its verdict, the run's
verdict, and the extension sections. :func:`from_json` reads back every layout sncheck
has written: today's, and the ones before the flags existed (issue 17,
``tests/data/run-614f5fd``), whose findings say what they rest on only by their rule's
name (:func:`_legacy_basis`).

A reader (a dashboard, the next playbook step) never sees a half-written file: the
text goes to a temporary file in the same directory, which then replaces the target
(:func:`sncheck.config.fileio.write_atomic`). The run directory writes it here; the
report format ``json`` (:mod:`sncheck.report.json_out`) is this same writer.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from sncheck.config.jsonio import read_json
from sncheck.config.fileio import write_atomic
from sncheck.errors import ConfigError
from sncheck.store.layout import is_run_dir
from sncheck.model import (RUN_SCHEMA, About, Basis, EntityKind, Finding, IsolationStep, LayerRecord, RunRecord, Severity,
                           Verdict, entity_kind, hosts_of)

# Contract keys first, in DESIGN.md order; any extension keys follow, sorted.
TOP_LEVEL_ORDER = ("schema", "run_id", "playbook", "backend", "inventory", "started",
                   "finished", "verdict", "gate", "seed", "layers", "findings", "isolation")


def dumps_results(results: dict) -> str:
    """The envelope as stable JSON text (same input, same bytes)."""
    ordered = {k: results[k] for k in TOP_LEVEL_ORDER if k in results}
    ordered.update({k: results[k] for k in sorted(results) if k not in ordered})
    return json.dumps(_plain(ordered), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike, results: dict) -> None:
    """Any JSON document (a golden curve, a baseline) as stable text, atomically."""
    write_atomic(path, dumps_results(results))


def write_record(path: str | os.PathLike, record: RunRecord) -> None:
    write_json(path, to_json(record))


# ------------------------------------------------------------------ the record as v1
# The extension sections, written when the record has them (``seed`` always: null in watch).
SECTIONS = ("design", "inputs", "tools", "topology", "scope", "baseline", "capacity", "history", "confirm",
            "reconciled")


def finding_to_json(f: Finding, gate: Severity | str | None = None) -> dict[str, Any]:
    """A finding as results.json holds it; with ``gate``, its flags too."""
    d: dict[str, Any] = {"entity": f.entity, "entity_kind": f.entity_kind.value, "layer": f.layer, "rule": f.rule,
                         "severity": f.severity.value, "message": f.message, "evidence": f.evidence}
    if f.about == About.CHECK:
        d["about"] = f.about.value  # the key appears only on findings about a check
    if gate is not None:
        d.update(gates=f.gates(gate), not_measured=f.not_measured, not_judged=f.not_judged)
    return d


def step_to_json(e: IsolationStep) -> dict[str, Any]:
    d: dict[str, Any] = {"entity": e.entity, "entity_kind": e.entity_kind.value, "action": e.action.value,
                         "reason": e.reason, "applied": e.applied}
    if e.rule is not None:
        d["rule"] = e.rule
    return d


def to_json(record: RunRecord) -> dict[str, Any]:
    """The record as the v1 envelope (:func:`dumps_results` orders the keys)."""
    out: dict[str, Any] = {
        "schema": record.schema, "run_id": record.run_id, "playbook": record.playbook, "backend": record.backend,
        "inventory": record.inventory, "started": record.started, "finished": record.finished,
        "verdict": record.verdict.value, "gate": record.gate.value, "seed": record.seed,
        "layers": [{"name": layer.name, "verdict": record.layer_verdict(layer).value, "summary": layer.summary}
                   for layer in record.layers],
        "findings": [finding_to_json(f, record.gate) for f in record.findings],
        "isolation": [step_to_json(e) for e in record.isolation],
    }
    for key in SECTIONS:
        value = getattr(record, key)
        if value is not None:
            out[key] = value
    if record.error is not None:
        out["error"] = record.error
    if record.isolation_blocked is not None:
        out["isolation_blocked"] = record.isolation_blocked
    return {**record.extra, **out}


_KNOWN = set(TOP_LEVEL_ORDER) | set(SECTIONS) | {"error", "isolation_blocked"}
# Before the flags (issue 17), what a finding rests on was said by its rule's name alone.
_LEGACY_NOT_MEASURED = ("host-unreachable", "not-measured")
_LEGACY_NOT_MEASURED_PREFIX = "not-run-"
_LEGACY_NOT_JUDGED = ("golden-not-judged", "baseline-not-judged", "layer-not-judged")


def _legacy_basis(rule: str) -> Basis:
    if rule in _LEGACY_NOT_MEASURED or rule.startswith(_LEGACY_NOT_MEASURED_PREFIX):
        return Basis.NOT_MEASURED
    return Basis.NOT_JUDGED if rule in _LEGACY_NOT_JUDGED else Basis.MEASURED


def finding_from_json(d: Any) -> Finding:
    """A finding of any results.json layout (``ValueError`` on one that is not)."""
    if not isinstance(d, dict):
        raise ValueError(f"a finding is an object, got {type(d).__name__}")
    rule = str(d.get("rule", ""))
    if isinstance(d.get("not_measured"), bool) and isinstance(d.get("not_judged"), bool):
        basis = Basis.NOT_MEASURED if d["not_measured"] else Basis.NOT_JUDGED if d["not_judged"] else Basis.MEASURED
    else:
        basis = _legacy_basis(rule)
    evidence = d.get("evidence")
    return Finding(str(d["entity"]), d["entity_kind"], str(d.get("layer", "")), rule, d["severity"],
                   str(d.get("message", "")), dict(evidence) if isinstance(evidence, dict) else {},
                   basis=basis, about=d.get("about") or About.HARDWARE)


def step_from_json(d: Any) -> IsolationStep:
    if not isinstance(d, dict):
        raise ValueError(f"an isolation step is an object, got {type(d).__name__}")
    return IsolationStep(str(d["entity"]), d["entity_kind"], d["action"], str(d.get("reason", "")),
                         bool(d.get("applied", False)), d.get("rule"))


def from_json(data: Any, where: str = "results.json") -> RunRecord:
    """The record of a results.json document, of any layout sncheck has written (a bad one:
    ``ConfigError`` naming ``where`` and what is wrong)."""
    if not isinstance(data, dict):
        raise ConfigError("not a run's results.json (not a JSON object)", where)
    # A layout named by a schema this reader does not know (a newer writer's, another tool's)
    # is refused, never read as today's: its verdict and flags may mean something else. Only
    # the first layouts (before the key, tests/data/run-614f5fd) have none.
    schema = data.get("schema", RUN_SCHEMA)
    if schema != RUN_SCHEMA:
        raise ConfigError(f"results.json of schema {schema!r}: this sncheck reads {RUN_SCHEMA} "
                          "(a newer sncheck's, or another tool's)", where)
    gate = data.get("gate")
    if gate is not None and gate not in tuple(Severity):
        # read as critical, silently: a record whose gate was edited or another tool's (hostile round 18, H18-13)
        raise ConfigError(f"gate {str(gate)[:40]!r} is no severity ({', '.join(Severity)}): not a run's results.json",
                          where)
    topo = data.get("topology")
    sns = topo.get("supernodes") if isinstance(topo, dict) else None
    if topo is not None and not (isinstance(topo, dict) and (sns is None or (
            isinstance(sns, list) and all(isinstance(sn, dict) for sn in sns)))):
        # read unchecked by baseline make's and the summaries' readers: an internal error (review18 #3)
        raise ConfigError("topology is not a mapping whose supernodes are mappings: not a run's results.json", where)
    try:
        layers = []
        for layer in data.get("layers") or []:
            verdict = layer.get("verdict")
            layers.append(LayerRecord(str(layer["name"]), dict(layer.get("summary") or {}),
                                      cut_short=verdict == "error", skipped=verdict == "skipped"))
        record = RunRecord(
            run_id=str(data.get("run_id", "")), playbook=str(data.get("playbook", "")),
            backend=str(data.get("backend", "")), inventory=str(data.get("inventory", "")),
            started=str(data.get("started", "")),
            finished=data.get("finished", ""),  # null: a partial record (the run did not finish)
            gate=Severity(gate) if gate in tuple(Severity) else Severity.CRITICAL, seed=data.get("seed"),
            layers=tuple(layers), findings=tuple(finding_from_json(f) for f in data.get("findings") or []),
            isolation=tuple(step_from_json(e) for e in data.get("isolation") or []),
            error=data.get("error"), isolation_blocked=data.get("isolation_blocked"), schema=RUN_SCHEMA,
            **{key: data.get(key) for key in SECTIONS},
            extra={k: v for k, v in data.items() if k not in _KNOWN})
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(f"not a run's results.json: {type(e).__name__}: {e}", where) from e
    if (stranger := _outside_topology(data)) is not None:
        raise ConfigError(stranger, where)
    return record


_HELD = (EntityKind.CARD, EntityKind.NIC, EntityKind.HOST, EntityKind.LINK)  # named by their hosts (a switch's
# end of a link, 'leaf:NAME', is no host: a host name holds no ':')


def _outside_topology(data: dict[str, Any]) -> str | None:
    """A finding naming a host or supernode the run's own ``topology`` lacks: no run writes one (it
    measures and judges only its inventory), so the record was edited or spliced from another run's.
    (Isolation steps may name what the state store holds and the inventory dropped: hostile round 9.
    ``watch``'s findings on a rank no map covers, or on a dump's node outside the inventory, name
    it as the dumps do, marked ``evidence.mapped: false``: its own, not an edit.)"""
    topo = data.get("topology")
    sns = topo.get("supernodes") if isinstance(topo, dict) else None
    if not isinstance(sns, list) or not all(isinstance(sn, dict) and isinstance(sn.get("hosts"), list) for sn in sns):
        return None  # a record without its topology (watch's, the first layouts): nothing to hold it to
    hosts = {str(h) for sn in sns for h in sn["hosts"]}
    names = {str(sn.get("name")) for sn in sns}
    watched = data.get("playbook") == "watch"
    for i, f in enumerate(data.get("findings") or []):
        kind, entity = f.get("entity_kind"), str(f.get("entity"))
        if watched and isinstance(f.get("evidence"), dict) and f["evidence"].get("mapped") is False:
            continue  # watch names what the job's dumps name and no map covers (rank7, a RAS node), and says so
        if kind in _HELD and (shape := entity_kind(entity)) != kind:
            # 'h1/gpu0' as a host: diff listed 'host h1/gpu0', a host no inventory has (hostile round 24, H24-08)
            return (f"findings[{i}] names {entity[:80]!r} a {kind}, where its name is a {shape}'s (DESIGN.md "
                    "identifiers): the record was edited")
        outside = (entity not in names if kind == EntityKind.SUPERNODE else
                   [h for h in hosts_of(entity) if h not in hosts and ":" not in h] if kind in _HELD else [])
        if outside:
            return (f"findings[{i}] names the {kind} {entity[:80]!r}, not of the run's own topology (its "
                    "supernodes and hosts): the record was edited or is another run's")
    return None


def read_record(path: str | os.PathLike) -> RunRecord:
    """A run directory's results.json (or the file itself), as its record."""
    p = Path(path)
    if p.is_dir() and p.name != "results.json":  # a results.json that is a directory is refused as one, by its
        p = p / "results.json"                   # own name (it was 'RUN/results.json/results.json: not found')
    return record_of(read_json(own_record(p), "results.json", kind="results"), str(p))


def record_of(data: Any, where: str) -> RunRecord:
    """The record of a results.json read from a file (:func:`from_json`), held to what sncheck
    writes there and a record built in memory need not carry: ``started`` and ``finished`` are
    times with their zone (sncheck writes UTC, ``2026-11-29T10:30:00Z``; 'yesterday' or a 13th
    month was read as a run by diff and baseline make: hostile round 20, H20-03). A ``finished``
    before ``started`` is read: wall clocks step back (NTP, a VM resumed), and the run's record
    is no less its own; its duration is unknown (:attr:`RunRecord.duration` says why), and the
    readers say so (round 15 review: such a record was refused)."""
    if isinstance(data, dict):
        for key in ("started", "finished"):
            if data.get(key) is not None:
                _time(data[key], key, where)
    record = from_json(data, where)
    _verdicts_hold(data, record, where)
    return record


def _verdicts_hold(data: dict[str, Any], record: RunRecord, where: str) -> None:
    """A results.json's written verdicts against what its record makes of itself (sncheck writes
    ``record.verdict`` and each layer's). A word no sncheck writes ('maybe', 'PASS') is refused, and
    so is a record that says it did not pass while its findings make it a pass: a failing run's
    file with its findings cut out and its verdict left 'fail' was read as a pass by diff and made a
    baseline (hostile round 22, H22-08). One that says pass while its findings say otherwise is read
    by its findings, as before (hostile round 10, H10-21): either way never a pass it was not."""
    words = tuple(Verdict)

    def check(said: Any, made: Verdict, what: str) -> None:
        if said is None or said == made.value:
            return
        if said not in words or (said != Verdict.PASS.value and made == Verdict.PASS):
            raise ConfigError(f"says {what} {str(said)[:20]!r}, but its findings make it {made.value!r}: an edited "
                              "or spliced record, not a run's results.json", where)

    check(data.get("verdict"), record.verdict, "verdict")
    for layer, raw in zip(record.layers, data.get("layers") or [], strict=False):
        check(raw.get("verdict") if isinstance(raw, dict) else None, record.layer_verdict(layer), f"layer {layer.name}")

def _time(value: Any, key: str, where: str) -> dt.datetime:
    t = None
    if isinstance(value, str) and len(value) <= 40 and value.isascii():
        try:
            t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            t = None
    if t is None or t.tzinfo is None:
        raise ConfigError(f"{key} {str(value)[:40]!r} is no time with its zone (sncheck writes UTC, e.g. "
                          "2026-11-29T10:30:00Z): not a run's results.json", where)
    return t


def own_record(path: Path) -> Path:
    """``path`` (a run directory's results.json), refused when it is a link out of its run
    directory: another run's record read beside this directory's rows made one run of two
    (``diff`` said "one run" of runs whose tiers differed; hostile round 12). sncheck
    writes results.json as a file; a link to a file inside the directory, in a subfolder of it
    too, is still its own (a copy of the directory whole keeps it), unless a folder on the way
    holds rows of its own (``rows/``): another run's directory nested in this one. A link to a
    special file is the reader's to refuse (naming what it is)."""
    if path.is_symlink() and path.is_file():
        target = Path(os.path.realpath(path))
        run = Path(os.path.realpath(path.parent))
        if not target.is_relative_to(run):
            raise ConfigError(f"results.json is a link to {target}, outside its run directory: another run's "
                              "record beside this directory's rows; copy the run directory whole instead",
                              str(path))
        nested = next((d for d in target.relative_to(run).parents if d != Path(".") and is_run_dir(run / d)), None)
        if nested is not None:
            raise ConfigError(f"results.json is a link to {target}, in another run's directory ({run / nested}) "
                              "inside this one: that run's record beside this directory's rows", str(path))
    return path


def _plain(v: Any) -> Any:
    """JSON-able copy: numpy scalars to Python, NaN/inf to null, paths and times to text."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if hasattr(v, "item") and callable(v.item):      # numpy / pandas scalar
        v = v.item()
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, int):
        return v
    if isinstance(v, (set, frozenset)):
        return sorted(_plain(x) for x in v)
    return str(v)
