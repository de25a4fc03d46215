"""Run a playbook: inventory -> plan -> backend -> rows -> detectors -> findings -> outputs.

The CLI builds the inputs and calls :func:`execute`; nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from sncheck.model import host_of
from sncheck.backends import get_backend
from sncheck.store.frames import RowFrames
from sncheck.errors import HarnessError
from sncheck.store.files import route_log
from sncheck.store.evidence import collect_evidence
from sncheck.config.faultplan import FaultPlan, load_faults
from sncheck.health.baseline import load_baseline
from sncheck.health.findings import Finding, merge_findings
from sncheck.health.capacity import ParallelLayout, capacity
from sncheck.health.invariants import BASELINE_NOT_JUDGED, reference_mismatch
from sncheck.health.rules import load_rules
from sncheck.config.inventory import Inventory
from sncheck.layers import connectivity, golden, stress
from sncheck.layers.base import LayerContext
from sncheck.config.playbook import Playbook
from sncheck.report import DEFAULT_FILENAMES, get_renderer
from sncheck.cli.safety import interrupt_cause, set_run_dir
from sncheck.config.shipped import provenance
from sncheck.store.rundir import RunStore, default_out_dir, new_run_id
from sncheck.probeplan import target_cards
from sncheck.topology import Topology, natural_key
from sncheck.run.isolation import isolation_steps
from sncheck.run.verdict import EXIT_CODES, decide, provisional_layer_verdict

SCHEMA = "sncheck.run/1"
LAYER_MODULES = {"connectivity": connectivity, "stress": stress, "golden": golden}


def layout_capacity(topo: Topology, isolation: list[dict], layout: dict) -> dict:
    """How the playbook's TP/EP/PP/DP layout fits once this run's isolations take effect."""
    latest = {e["entity"]: e["action"] for e in isolation}  # the last step per entity wins
    out = [entity for entity, action in latest.items() if action in ("isolate", "quarantine")]
    return capacity(topo, out, ParallelLayout(**layout)).to_dict()


def _never_released(entity: str) -> datetime | None:
    return None


@dataclass
class RunOptions:
    backend: str | None = None
    faults: str | None = None
    seed: int = 0
    out: str | None = None
    gate: str | None = None
    backend_options: dict = field(default_factory=dict)
    report_formats: tuple[str, ...] = ("html",)
    template_dirs: tuple[str, ...] = ()
    rules: str | None = None  # a rules file or shipped name; None: the backend's default
    baseline: str | None = None
    force: bool = False  # --force: reuse a run directory that holds an earlier run, emptied
    released_at: Callable[[str], datetime | None] = _never_released  # from the state store
    history: dict | None = None  # earlier runs' summaries from the state store (sncheck.store.history)
    baseline_data: dict | None = None  # a baseline resolved from the state store (e.g. last-pass)
    baseline_info: dict | None = None  # where it came from, for results.json and the report
    annotate: Callable[[dict, RowFrames], None] | None = None  # adds e.g. results["history"]
    targets: tuple[str, ...] = ()  # --targets: a scoped run (cards, hosts, hostlists)
    # Called with results.json (verdict decided) before any output is rendered: the
    # --state-dir isolation actions, which may set ``applied`` and ``isolation_blocked``.
    after_verdict: Callable[[dict, Path], None] | None = None
    # Called with the final results.json (decided again after ``after_verdict``), before
    # any output is rendered: e.g. keeping the run's summaries in the state store.
    after_decided: Callable[[dict, Path], None] | None = None


@dataclass
class RunOutcome:
    results: dict
    out_dir: Path
    exit_code: int


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def execute(playbook: Playbook, inventory: Inventory, opts: RunOptions,
            progress: Callable[[str], None] = lambda m: None) -> RunOutcome:
    for fmt in opts.report_formats:
        get_renderer(fmt)  # an unknown format is a usage error before anything runs
    topo = Topology(inventory)
    faults = load_faults(opts.faults, topo) if opts.faults else FaultPlan()
    backend_name = opts.backend or inventory.backend or "local"
    backend_cls = get_backend(backend_name)
    gate = opts.gate or playbook.gate
    backend = backend_cls(topo, faults, seed=opts.seed, progress=progress, **opts.backend_options)
    try:  # every input is checked before a run directory exists
        rules = load_rules(opts.rules or backend.default_rules())
        scoped = target_cards(topo, opts.targets) if opts.targets else None
        baseline_ref = opts.baseline or playbook.baseline
        if opts.baseline_data is not None:
            baseline = opts.baseline_data or None  # {}: named, but nothing to compare with yet
        else:
            baseline = load_baseline(baseline_ref) if baseline_ref else None
        references = {}
        inputs = {"playbook": provenance(playbook.name, playbook.source),
                  "rules": provenance(rules.source, rules.path),
                  "baseline": provenance(baseline_ref, (baseline or {}).get("_path"))}
        for spec in playbook.layers:
            if spec.name == "golden":
                ref = spec.options.get("reference") or backend.plan_defaults("golden").get("reference")
                curve = golden.load_reference(ref) if ref else None
                inputs["golden_reference"] = provenance(ref, (curve or {}).get("_path"))
                mismatch = reference_mismatch(curve, topo) if curve else None
                if mismatch:  # a curve for another configuration cannot judge this one
                    inputs["golden_reference"]["ignored"] = mismatch
                    curve = None
                references[spec.name] = curve
    except BaseException:
        backend.close()
        raise
    run_id = new_run_id()
    out_dir = Path(opts.out) if opts.out else default_out_dir(run_id)
    store = RunStore(out_dir, run_id, force=opts.force)
    set_run_dir(store.dir)  # a crash from here on leaves its traceback in <out>/crash.log
    route_log("paramiko", store.dir / "ssh.log")  # paramiko's own records: never on stderr

    results = {
        "schema": SCHEMA, "run_id": run_id, "playbook": playbook.name, "backend": backend_name,
        "inventory": inventory.name, "started": _now(), "finished": None, "verdict": "error",
        "layers": [], "findings": [], "isolation": [],
        # Extensions of the contract (readers must ignore keys they do not know):
        "seed": opts.seed, "gate": gate, "design": {}, "inputs": inputs,
        **({"baseline": opts.baseline_info} if opts.baseline_info else {}),
        "topology": {"supernodes": [{"name": sn.name, "hosts": list(sn.hosts)} for sn in inventory.supernodes],
                     "cards": len(topo.cards)},
    }
    if scoped is not None:  # the run says it was scoped, and to what
        results["scope"] = {"targets": list(opts.targets), "cards": sorted(scoped, key=natural_key),
                            "hosts": sorted({host_of(c) for c in scoped}, key=natural_key)}
    raw: list[Finding] = baseline_not_judged(opts.baseline_info, playbook, topo)
    # Layers without host facts still read what only a real host has (kernel log, fabric
    # counters) before and after them: a stress-only night is judged on those too.
    read_hosts = (tuple(sorted({host_of(c) for c in scoped}, key=natural_key)) if scoped is not None
                  else tuple(topo.hosts))
    host_reads = False
    try:
        if not any(s.name == "connectivity" for s in playbook.layers):
            progress(f"host reads (kernel log, fabric counters) on {len(read_hosts)} hosts")
            host_reads = backend.host_reads(read_hosts, store)
        design = dict(inventory.design)
        results["design"] = {t: {"bandwidth_GBps": d.bandwidth_GBps, "latency_us": d.latency_us,
                                 "source": "inventory"} for t, d in design.items()}
        for spec in playbook.layers:
            module = LAYER_MODULES[spec.name]
            options = {k: v for k, v in spec.options.items() if k != "reference"}  # resolved above
            entry = {"name": spec.name, "verdict": "error", "summary": {}}
            results["layers"].append(entry)
            ctx = LayerContext(topo, backend, store, design, options, progress, rules=rules,
                               reference=references.get(spec.name), baseline=baseline,
                               history=opts.history, targets=scoped, gate=gate)
            try:
                if not design:  # part of the first layer, so a hang here cuts that layer short
                    progress("calibrating design values on this machine")
                    design.update(backend.calibrate(store))
                    results["design"] = {t: {"bandwidth_GBps": d.bandwidth_GBps, "latency_us": d.latency_us,
                                             "source": "calibrated"} for t, d in design.items()}
                entry["summary"] = module.run(ctx)
            except (HarnessError, KeyboardInterrupt) as e:
                cause = interrupt_cause(e) if isinstance(e, KeyboardInterrupt) else str(e)
                entry["summary"]["cut_short"] = cause
                results["error"] = f"layer {spec.name} cut short: {cause}"
                raw.extend(ctx.detect(spec.name))  # what was measured still counts
                break
            found = ctx.detect(spec.name)
            raw.extend(found)
            # Provisional (partial results.json); decided again after the retest, below.
            entry["verdict"] = provisional_layer_verdict(spec.name, found, gate)
            store.write_results(results)  # a partial results.json after each layer
        if host_reads:
            backend.fabric_counters(read_hosts, store)  # after the layers' traffic: the counters' growth
            raw.extend(LayerContext(topo, backend, store, design, {}, progress, rules=rules).detect_host_reads())
        findings = merge_findings(raw, topo.cards_of_host)
        ctx = LayerContext(topo, backend, store, design, {}, progress, rules=rules,
                           reference=references.get("golden"), baseline=baseline,
                           history=opts.history)
        results["isolation"] = [e.to_dict() for e in isolation_steps(
            findings, ctx, confirm_enabled=playbook.confirm and "error" not in results,
            released_at=opts.released_at, now=datetime.now(timezone.utc))]
        results["findings"] = [f.to_dict() for f in findings]  # with the retest's verdicts
        collect_evidence(results, store.frames(), store.dir, backend, progress, files=store.files)
        if opts.annotate:
            opts.annotate(results, store.frames())
    finally:
        backend.close()
        store.close()

    if store.write_error and "error" not in results:  # the disk filled up: never a pass
        results["error"] = store.write_error
    decide(results, gate)
    if playbook.layout:
        results["capacity"] = layout_capacity(topo, results["isolation"], playbook.layout)
    results["finished"] = _now()
    failure: HarnessError | None = None
    if opts.after_verdict is not None:
        try:
            opts.after_verdict(results, out_dir)  # the isolation actions; may block on the safety cap
        except HarnessError as e:  # the state store failed: results.json still gets the findings
            failure = e
            results["error"] = str(e)
        decide(results, gate)
    if opts.after_decided is not None and failure is None:
        try:
            opts.after_decided(results, out_dir)  # e.g. the run's summaries into the state store
        except HarnessError as e:
            failure = e
            results["error"] = str(e)
            decide(results, gate)
    # Every output is rendered once, from the final results.
    store.write_results(results)
    write_reports(results, store, opts)
    store.release()
    if failure is not None:
        raise failure
    code = EXIT_CODES[results["verdict"]]
    return RunOutcome(results, out_dir, code)


def baseline_not_judged(info: dict | None, playbook: Playbook, topo: Topology) -> list[Finding]:
    """A baseline the run was told to compare with and could not find (``last-pass`` with
    no passing run, or without --state-dir): the comparison was not made, so the gate fails.
    A run of a playbook without a baseline records the first passing run."""
    if not info or not info.get("note"):
        return []
    layer = playbook.layers[0].name
    return [Finding(sn, "supernode", layer, BASELINE_NOT_JUDGED, "critical",
                    f"{sn} not compared with baseline {info['ref']}: {info['note']}. Record a passing "
                    "run first (a playbook without a baseline, with --state-dir), then gate against it.",
                    {"measured": "nothing to compare with", "expected": f"baseline {info['ref']}",
                     "unit": None, "not_run": True}, about="check")
            for sn in topo.supernode_names]


def write_reports(results: dict, store: RunStore, opts: RunOptions) -> None:
    rows = store.frames()
    for fmt in opts.report_formats:
        if fmt != "json":  # results.json is always written by the store
            get_renderer(fmt)(results, rows, store.dir / DEFAULT_FILENAMES[fmt], opts.template_dirs)
