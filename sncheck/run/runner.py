"""Run a playbook: inventory -> plan -> backend -> rows -> detectors -> findings -> outputs.

The CLI builds a :class:`Run` and calls it; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

from sncheck.model import About, Action, Basis, EntityKind, ExitCode, Finding, IsolationStep, RunRecord, Severity, Verdict, host_of
from sncheck.backends import get_backend
from sncheck.backends.base import Backend
from sncheck.errors import ConfigError, HarnessError
from sncheck.store.files import route_log
from sncheck.store.evidence import collect_evidence
from sncheck.config.faultplan import NETWORK_FAULTS, FaultPlan
from sncheck.health.baseline import check_inventory, load_baseline
from sncheck.health.drift import baseline_unmeasured
from sncheck.config.playbook import ParallelLayout
from sncheck.health.capacity import capacity
from sncheck.health.invariants import BASELINE_NOT_JUDGED, reference_mismatch, replica_ranks
from sncheck.health.rules import RuleSet, load_rules
from sncheck.health.within import measured_factors
from sncheck.config.inventory import Inventory
from sncheck.layers import connectivity, coverage, golden, stress
from sncheck.layers.base import LayerContext
from sncheck.config.playbook import LayerSpec, Playbook, check_duration
from sncheck.errors import interrupt_cause
from sncheck.run.safety import set_run_dir
from sncheck.config.shipped import provenance
from sncheck.store.rundir import RunStore, default_out_dir, new_run_id, trim_heap
from sncheck.probeplan import target_cards, target_fabric
from sncheck.topology import Topology, natural_key
from sncheck.run.inputs import load_faults
from sncheck.run.rejudge import Rejudge
from sncheck.run.state import RunState
from sncheck.run.recorder import RunRecorder
from sncheck.store.results import to_json
from sncheck.health.history import LAST_PASS

SCHEMA = "sncheck.run/1"
LAYER_MODULES = {"connectivity": connectivity, "stress": stress, "golden": golden}


def layout_capacity(topo: Topology, isolation: Iterable[IsolationStep], layout: dict) -> dict:
    """How the playbook's TP/EP/PP/DP layout fits once this run's isolations take effect."""
    latest = {e.entity: e.action for e in isolation}  # the last step per entity wins
    out = [entity for entity, action in latest.items() if action in (Action.ISOLATE, Action.QUARANTINE)]
    return capacity(topo, out, ParallelLayout(**layout)).to_dict()


def _never_released(_entity: str) -> datetime | None:
    return None


class Output(Protocol):
    """A report the run renders at its end: its format's name, the file it writes in the
    run directory and its renderer, ``write(results, rows, path, template_dirs)``; optionally
    ``reads`` (:func:`_reads`). The caller resolves them (:func:`sncheck.report.outputs`: the
    report formats are a layer above the run)."""

    @property
    def name(self) -> str: ...

    @property
    def filename(self) -> str: ...

    @property
    def write(self) -> Callable[..., None]: ...


def _reads(report: Output) -> Mapping[str, Mapping[str, Callable[[], Any]]]:
    """Per kind of rows, the builders a report's renderer will ask the run's one pass over
    them for (its ``reads``, :mod:`sncheck.store.passes`; a report without it reads none)."""
    return getattr(report, "reads", None) or {}


@dataclass
class RunOptions:
    backend: str | None = None
    faults: str | None = None
    seed: int = 0
    out: str | None = None
    gate: str | None = None
    backend_options: dict = field(default_factory=dict)
    reports: tuple[Output, ...] = ()  # besides results.json, which is always written
    template_dirs: tuple[str, ...] = ()
    rules: str | None = None  # a rules file or shipped name; None: the backend's default
    baseline: str | None = None
    force: bool = False  # --force: reuse a run directory that holds an earlier run, emptied
    targets: tuple[str, ...] = ()  # --targets: a scoped run (cards, hosts, hostlists)
    # False: measure only, no rules, golden reference or baseline (a golden curve being recorded)
    judge: bool = True
    # False: an inventory without design values judges only what is wrong on its own (node-check)
    calibrate: bool = True


@dataclass
class RunResult:
    """What a run returns: its record, where it is written, and its exit code."""

    record: RunRecord
    out_dir: Path

    @property
    def verdict(self) -> Verdict:
        return self.record.verdict

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.of(self.record.verdict)

    @cached_property
    def results(self) -> dict:
        """The record as results.json holds it."""
        return to_json(self.record)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.record.findings

    @property
    def results_path(self) -> Path:
        return self.out_dir / "results.json"

    def report_paths(self, reports: tuple[Output, ...]) -> dict[str, Path]:
        return {r.name: self.out_dir / r.filename for r in reports}


@dataclass
class LayerOutcome:
    """One layer measured by :meth:`Run.measure`: its summary, findings, and what cut it short."""

    spec: LayerSpec
    summary: dict
    findings: list[Finding]
    error: BaseException | None = None  # a HarnessError or KeyboardInterrupt: the layer was cut short


class Run:
    """One run: it resolves its inputs, measures the playbook's layers, retests what it
    quarantined (the confirmation) through its :class:`~sncheck.run.recorder.RunRecorder`,
    acts on the isolations through its state store (``state``, optional) and records
    results.json, the reports and the history. Nothing here prints.

    The CLI's run commands, ``--targets`` and ``release --after-repair`` call :meth:`execute`;
    ``node-check`` and ``golden record`` use the run only to measure (:meth:`measure`, inside
    ``with run:``), writing no run directory.
    """

    def __init__(self, playbook: Playbook, inventory: Inventory, options: RunOptions | None = None, *,
                 state: RunState | None = None, progress: Callable[[str], None] | None = None) -> None:
        self.playbook = playbook
        self.inventory = inventory
        self.opts = options or RunOptions()
        self.state = state
        self.progress = progress or (lambda _: None)
        self.backend_name = self.opts.backend or inventory.backend or "local"
        self.gate = self.opts.gate or playbook.gate
        self.topo = Topology(inventory)
        self.backend: Backend | None = None
        self.design = dict(inventory.design)
        self.design_source = "inventory"
        self.rules: RuleSet | None = None
        self.scoped: frozenset[str] | None = None
        self.baseline_ref = self.opts.baseline or playbook.baseline
        self.baseline: dict | None = None
        self.baseline_info: dict | None = None
        self.history: dict | None = None
        self.references: dict[str, dict | None] = {}
        # a layer's plan the faults' check built for the run's own options, for the layer to run
        # (LayerContext.plan; taken once): a fleet's connectivity plan is not built twice
        self.plans: dict[str, Any] = {}
        self.inputs: dict = {}
        self.rejudge: Rejudge | None = None  # the stress layer's, once it measured

    @classmethod
    def build(cls, playbook: Playbook, inventory: Inventory, *, duration: float | None = None,
              dist_backend: str | None = None, state_dir: str | None = None, via: tuple[str, ...] = (),
              apply: bool = False, progress: Callable[[str], None] | None = None, **options: Any) -> Run:
        """A run from the command line's inputs: a stress soak's ``duration``, the
        torch.distributed backend (``dist_backend``, else the inventory's), and the state
        store with its isolation mechanisms and ``--apply``. ``options``: :class:`RunOptions`."""
        if duration is not None:
            duration = check_duration(duration)
            playbook = replace(playbook, layers=tuple(
                replace(layer, options={**layer.options, "duration": duration}) if layer.name == "stress" else layer
                for layer in playbook.layers))
        backend_options = {}
        if dist_backend or inventory.dist_backend:
            backend_options["dist_backend"] = dist_backend or inventory.dist_backend
        backend_options.update(options.pop("backend_options", None) or {})
        if apply and not state_dir:
            raise ConfigError("--apply needs --state-dir (isolation is recorded there before it is applied)")
        if state_dir:
            backend_options["state_dir"] = state_dir  # the SSH backend keeps its kernel log cursors there
        state = RunState(str(state_dir), tuple(via), apply) if state_dir else None
        return cls(playbook, inventory, RunOptions(backend_options=backend_options, **options), state=state,
                   progress=progress)

    # ---- resolve: every input is checked before a run directory exists

    def __enter__(self) -> Run:
        self.resolve()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()

    def resolve(self) -> None:
        """The state store's part first (releases, history, a stored baseline), then the
        fault plan, backend, rules, targets, baseline and golden references."""
        if self.backend is not None:
            return
        if self.state is not None:
            self.state.open(self.inventory)
        if self.opts.judge:
            self._resolve_baseline_ref()
        faults = load_faults(self.opts.faults, self.topo) if self.opts.faults else FaultPlan()
        backend_cls = get_backend(self.backend_name)
        self.backend = backend_cls(self.topo, faults, seed=self.opts.seed, progress=self.progress,
                                   **self.opts.backend_options)
        try:
            # refused here too, by what the backend's class acts out: a backend that forgets drops none
            for f in faults.unsupported(self.backend.name):
                raise ConfigError(f"the {self.backend_name} backend cannot act out fault type {f.type!r} "
                                  f"(target {f.target}); faultplan.ACTED_BY lists what each backend acts out")
            if self.opts.judge:
                self._resolve_judging(self.backend)
            else:
                self.scoped = target_cards(self.topo, self.opts.targets) if self.opts.targets else None
            self._refuse_unmeasured(faults)
            self._refuse_late(faults)
        except BaseException:
            self.close()
            raise

    def _refuse_late(self, faults: FaultPlan) -> None:
        """A late fault begins at the confirmation retest: in a run with none (the playbook's
        ``confirm: false``, or a run that judges nothing) nothing could ever show it, and the
        run passed as if it had been tried (exit 2, its file and line)."""
        if self.opts.judge and self.playbook.confirm:
            return
        for f in faults.faults:
            if f.late:
                why = "the playbook has confirm: false" if self.opts.judge else "this run judges nothing"
                raise ConfigError(f"{f.type} {f.target} is late (it begins at the confirmation retest), but {why}: "
                                  "no measurement could show it; drop late: true, or confirm", f.where or None)

    def _refuse_unmeasured(self, faults: FaultPlan) -> None:
        """A fault that no planned measurement can show is refused (exit 2, its file and
        line): the simulator would act it out and no row would say so. Asked of every
        layer's plan for this cluster (the playbook's options for its layers, the defaults
        for the others), never of a --targets scope or a one-layer command: the fault plan
        describes the cluster, and those choose where to look."""
        if not any(f.type in NETWORK_FAULTS or f.type == "ib_port_down" for f in faults.faults):
            return
        given = {spec.name: spec.options for spec in self.playbook.layers}
        plans = []
        for name, module in LAYER_MODULES.items():
            options = {k: v for k, v in given.get(name, {}).items() if k not in ("reference", "duration")}
            plan = module.build_plan(self.context(None, options))
            plans.append(coverage.measured(self.topo, plan))
            if name == "connectivity" and self.playbook.layers[0].name == name and self.scoped is None \
                    and options == {k: v for k, v in given[name].items() if k != "reference"}:
                # the layer's own plan (measure(): unscoped, the same options), held only until
                # the first layer runs (never through another layer's judging)
                self.plans[name] = plan
            del plan
        unread = coverage.unlisted(faults.faults, self.topo)
        for f in faults.faults:
            why = coverage.unmeasured(f, self.topo, plans, unread)
            if why is not None:
                raise ConfigError(f"{f.type} {f.target}: no planned measurement can show it: {why}; widen the "
                                  f"plan to measure it, or drop the fault", f.where or None)

    def _resolve_baseline_ref(self) -> None:
        ref = self.baseline_ref
        if self.state is None:
            if ref == LAST_PASS:  # said in results.json and the report; not a reason to refuse the run
                self.baseline, self.baseline_info = {}, {
                    "ref": LAST_PASS, "runs": [], "note": "baseline last-pass needs --state-dir "
                    "(the last passing run is looked up there): nothing to compare with"}
            return
        self.history = self.state.history(self.inventory.name, self.backend_name)
        if ref and not Path(ref).is_file():
            stored = self.state.baseline(ref, self.inventory.name, self.backend_name)
            if stored is not None:
                self.baseline, self.baseline_info = stored

    def _resolve_judging(self, backend: Backend) -> None:
        self.rules = load_rules(self.opts.rules or backend.default_rules())
        self.scoped = target_cards(self.topo, self.opts.targets) if self.opts.targets else None
        if self.baseline_info is not None:
            self.baseline = self.baseline or None  # {}: named, but nothing to compare with yet
        else:
            self.baseline = load_baseline(self.baseline_ref) if self.baseline_ref else None
            if self.baseline is not None:
                check_inventory(self.baseline, self.inventory.name, self.backend_name)
        self.inputs = {"playbook": provenance(self.playbook.name, self.playbook.source),
                       "rules": provenance(self.rules.source, self.rules.path),
                       # the files the rules extend (extends:): a run is reproduced with them too
                       **{"rules_extends" + (f"_{i + 1}" if i else ""): provenance(Path(p).name, p)
                          for i, p in enumerate(self.rules.extends)},
                       "baseline": provenance(self.baseline_ref, (self.baseline or {}).get("_path"))}
        for spec in self.playbook.layers:
            if spec.name == "golden":
                ref = spec.options.get("reference") or backend.plan_defaults("golden").get("reference")
                curve: dict | None
                if isinstance(ref, list):  # one per replica size
                    refs = golden.reference_set(ref, replica_ranks(self.topo))
                    self.inputs["golden_reference"] = {**provenance(refs["name"], refs["_path"]), "by_ranks": {
                        str(r): provenance(c["name"], c["_path"]) for r, c in sorted(refs["sizes"].items())}}
                    curve = refs
                else:
                    curve = golden.load_reference(ref) if ref else None
                    self.inputs["golden_reference"] = provenance(ref, (curve or {}).get("_path"))
                mismatch = reference_mismatch(curve, self.topo) if curve else None
                if mismatch:  # a curve for another configuration cannot judge this one
                    self.inputs["golden_reference"]["ignored"] = mismatch
                    curve = None
                golden.check_steps(curve, spec.options.get("steps"))
                self.references[spec.name] = curve

    # ---- execute: measure each layer

    def context(self, emit: Any, options: dict, rows: list[dict] | None = None, *, reference: dict | None = None,
                targets: frozenset[str] | None = None, gate: str = "critical") -> LayerContext:
        assert self.backend is not None, "resolve() first"
        return LayerContext(self.topo, self.backend, emit, self.design, options, self.progress, rules=self.rules,
                            rows=rows, reference=reference, baseline=self.baseline, history=self.history,
                            targets=targets, gate=gate)

    def measure(self, emit: Any, rows: list[dict] | None = None) -> Iterator[LayerOutcome]:
        """Run the playbook's layers in order into ``emit`` (a run store, or a callable with
        ``rows`` the list it fills), yielding each layer's outcome; a layer cut short (a
        harness error, Ctrl-C) is the last, its findings those of what was measured."""
        assert self.backend is not None, "resolve() first"
        known: frozenset[tuple[str, str]] = frozenset()  # the culprits the layers so far named
        untold: frozenset[str] = frozenset()  # of them, hosts and domains not told from their cards
        factors: dict[str, float] = {}  # of them, each one's measured factor (groups.beyond_culprits)
        for spec in self.playbook.layers:
            module = LAYER_MODULES[spec.name]
            options = {k: v for k, v in spec.options.items() if k != "reference"}  # resolved above
            ctx = self.context(emit, options, rows, reference=self.references.get(spec.name),
                               targets=self.scoped, gate=self.gate)
            ctx.plan = self.plans.pop(spec.name, None)
            ctx.known, ctx.untold, ctx.factors = known, untold, dict(factors)
            summary: dict = {}
            try:
                if not self.design and self.opts.calibrate:  # part of the first layer: a hang cuts it short
                    self.progress("calibrating design values on this machine")
                    self.design.update(self.backend.calibrate(emit))
                    self.design_source = "calibrated"
                summary = module.run(ctx)
            except (HarnessError, KeyboardInterrupt) as e:
                yield LayerOutcome(spec, summary, self._detect(ctx, spec.name), e)
                return
            found = self._detect(ctx, spec.name)
            culprits = [f for f in found if f.about == About.HARDWARE and f.severity.rank >= Severity.WARNING.rank]
            if spec.name == stress.NAME:  # what it left to a culprit the retest releases is judged again (rejudge)
                self.rejudge = Rejudge(ctx, summary)
            known |= {(f.entity, f.entity_kind) for f in culprits}
            factors |= measured_factors(culprits)
            untold |= {f.entity for f in culprits
                       if f.entity_kind in ("host", "supernode") and f.evidence.get("separated") is False}
            yield LayerOutcome(spec, summary, found)

    def _detect(self, ctx: LayerContext, layer: str) -> list[Finding]:
        if not self.opts.judge:
            return []
        # the measurement's freed small blocks (its rows' writes) given back before judging's
        # arrays come on top of them (README "Fleet scale", round 16)
        trim_heap()
        return ctx.detect(layer)

    def _design_dict(self) -> dict:
        return {t: {"bandwidth_GBps": d.bandwidth_GBps, "latency_us": d.latency_us, "source": self.design_source}
                for t, d in self.design.items()}

    def _recorder(self, run_id: str) -> RunRecorder:
        """The run's record, begun: its head and the sections known before it measures."""
        sections: dict[str, Any] = {
            "design": {}, "inputs": self.inputs,
            "topology": {"supernodes": [{"name": sn.name, "hosts": list(sn.hosts)} for sn in self.inventory.supernodes],
                         "cards": len(self.topo.cards)}}
        if self.baseline_info:
            sections["baseline"] = self.baseline_info
        if self.scoped is not None:  # the run says it was scoped, and to what
            sections["scope"] = {"targets": list(self.opts.targets), "cards": sorted(self.scoped, key=natural_key),
                                 "hosts": sorted({host_of(c) for c in self.scoped}, key=natural_key),
                                 **({"fabric": on} if (on := target_fabric(self.opts.targets)) else {})}
        return RunRecorder(run_id=run_id, playbook=self.playbook.name, backend=self.backend_name,
                           inventory=self.inventory.name, gate=self.gate, seed=self.opts.seed, **sections)

    def execute(self) -> RunResult:
        """The whole run: resolve, measure (collect), retest and isolate, act, record."""
        self.resolve()
        assert self.backend is not None
        run_id = new_run_id()
        out_dir = Path(self.opts.out) if self.opts.out else default_out_dir(run_id)
        try:
            self.backend.preflight()  # what only a reach of the hosts can refuse: before a run directory exists
            store = RunStore(out_dir, run_id, force=self.opts.force)
        except BaseException:
            self.close()
            raise
        set_run_dir(store.dir)  # a crash from here on leaves its traceback in <out>/crash.log
        route_log("paramiko", store.dir / "ssh.log")  # paramiko's own records: never on stderr
        recorder = self._recorder(run_id)
        recorder.collect(baseline_not_judged(self.baseline_info, self.playbook, self.topo))
        if self.opts.judge and self.baseline is not None and self.rules is not None:  # named, found: is it read?
            recorder.collect(baseline_unmeasured(str(self.baseline_ref), self.rules.rules, self.rules.source,
                                                 self.playbook.name, [s.name for s in self.playbook.layers],
                                                 self.topo.supernode_names))
        # Layers without host facts still read what only a real host has (kernel log, fabric
        # counters) before and after them: a stress-only night is judged on those too.
        read_hosts = (tuple(sorted({host_of(c) for c in self.scoped}, key=natural_key)) if self.scoped is not None
                      else tuple(self.topo.hosts))
        host_reads = False
        phase = "while measuring or judging the layers"
        try:
            if any(s.name == "connectivity" for s in self.playbook.layers):
                pass
            elif self.playbook.host_facts:  # card health as node-check reads it: with the kernel log and counters
                self.progress(f"host facts (card health, kernel log, fabric counters) on {len(read_hosts)} hosts")
                self.backend.host_facts(read_hosts, store)
                host_reads = True
            else:
                self.progress(f"host reads (kernel log, fabric counters) on {len(read_hosts)} hosts")
                host_reads = self.backend.host_reads(read_hosts, store)
            recorder.section(design=self._design_dict())
            for layer in self.measure(store):
                recorder.section(design=self._design_dict())
                e = layer.error
                cut = None if e is None else interrupt_cause(e) if isinstance(e, KeyboardInterrupt) else str(e)
                # what was measured still counts when cut short
                recorder.layer(layer.spec.name, layer.summary, layer.findings, cut_short=cut)
                if cut is not None:
                    break
                store.write_results(recorder.snapshot())  # a partial results.json after each layer
            phase = "after the layers (fabric counters, retest, evidence)"
            if host_reads:
                self.backend.fabric_counters(read_hosts, store)  # after the layers' traffic: the counters' growth
                recorder.collect(LayerContext(self.topo, self.backend, store, self.design, {}, self.progress,
                                              rules=self.rules, gate=self.gate).detect_host_reads())
            recorder.merge(self.topo.supernode_of_host)
            phase = "while retesting (the confirmation)"
            self.retest(recorder, store)
            phase = "after the retest (evidence, history)"
            store.let_go()   # (judging's memos and heap pages: evidence's pass builds the reports' readers)
            rows = store.frames()
            for report in self.opts.reports:   # evidence's read of the rows builds what they read, too
                for kind, makes in _reads(report).items():
                    rows.expect(kind, makes)
            tools = collect_evidence(recorder.findings, recorder.sections.get("topology"), rows,
                                     store.dir, self.backend, self.progress, files=store.files,
                                     fabric=self.topo.fabric)
            del rows
            if tools is not None:
                recorder.section(tools=tools)
            if self.state is not None:
                history = self.state.annotate(recorder.snapshot(), store.frames())
                if history is not None:
                    recorder.section(history=history)
        except KeyboardInterrupt as e:  # between the layers' measurements: the record says so (a layer's own: cut_short)
            recorder.fail(_stopped(e, phase, self.playbook.layers, recorder.layers))
        finally:
            self.close()
            store.close()
        if store.write_error:  # the disk filled up: never a pass
            recorder.fail(store.write_error)
        if self.playbook.layout:
            recorder.section(capacity=layout_capacity(self.topo, recorder.steps, self.playbook.layout))
        failure = self.act(recorder, out_dir)
        record = recorder.finish()
        write_outputs(record, recorder, store, self.opts, lambda failed: self._record_failure(failed, out_dir, failure))
        store.release()
        if failure is not None:
            raise failure
        return RunResult(record, out_dir)

    def retest(self, recorder: RunRecorder, emit: Any) -> list[IsolationStep]:
        """Quarantine, then confirm by retest (isolate, release or keep quarantined): the
        isolation steps join the record; the findings keep the retest's verdicts."""
        assert self.backend is not None, "resolve() first"
        named = [f for f in recorder.findings if f.names_culprit and f.severity.rank >= Severity.WARNING.rank]
        ctx = LayerContext(self.topo, self.backend, emit, self.design, {}, self.progress, rules=self.rules,
                           reference=self.references.get("golden"), baseline=self.baseline,
                           history=self.history, known=frozenset((f.entity, f.entity_kind) for f in named),
                           factors=measured_factors(named))
        released_at = self.state.released_at if self.state is not None else _never_released
        return recorder.retest(ctx, confirm=self.playbook.confirm, released_at=released_at,
                               now=datetime.now(timezone.utc), again=self.rejudge)

    def act(self, recorder: RunRecorder, out_dir: Path) -> HarnessError | None:
        """With a state store: the isolation actions (the safety cap may block them), then the
        run's summaries kept, with the verdict as it stands after each. A state store that
        fails is the run's error (returned, raised once the outputs are written)."""
        if self.state is None:
            return None
        try:
            done = self.state.act(recorder.finish(), self.inventory, out_dir)
            recorder.acted(done.steps, done.blocked)
            if done.reconciled:
                recorder.section(reconciled=done.reconciled)
            self.state.record(recorder.finish(), out_dir)
        except HarnessError as e:  # the state store failed: results.json still gets the findings
            recorder.fail(str(e))
            return e
        return None

    def _record_failure(self, record: RunRecord, out_dir: Path, failure: HarnessError | None) -> None:
        """The state store kept the run's verdict before its outputs were written (:meth:`act`):
        when they fail, it keeps the failed verdict instead, so that ``history --runs``,
        ``baseline make --passed-only`` and ``baseline: last-pass`` never take the run for a pass.
        Nothing to mend where the store itself failed (``failure``)."""
        if self.state is not None and failure is None:
            self.state.record_verdict(record, out_dir)


def execute(playbook: Playbook, inventory: Inventory, opts: RunOptions,
            progress: Callable[[str], None] = lambda _: None) -> RunResult:
    """A run of ``playbook`` without a state store (:class:`Run`)."""
    return Run(playbook, inventory, opts, progress=progress).execute()


def baseline_not_judged(info: dict | None, playbook: Playbook, topo: Topology) -> list[Finding]:
    """A baseline the run was told to compare with and could not find (``last-pass`` with
    no passing run, or without --state-dir): the comparison was not made, so the gate fails.
    A run of a playbook without a baseline records the first passing run."""
    if not info or not info.get("note"):
        return []
    layer = playbook.layers[0].name
    return [Finding(sn, EntityKind.SUPERNODE, layer, BASELINE_NOT_JUDGED, Severity.CRITICAL,
                    f"{sn} not compared with baseline {info['ref']}: {info['note']}. Record a passing "
                    "run first (a playbook without a baseline, with --state-dir), then gate against it.",
                    {"measured": "nothing to compare with", "expected": f"baseline {info['ref']}", "unit": None},
                    basis=Basis.NOT_JUDGED, about=About.CHECK)
            for sn in topo.supernode_names]


def _stopped(e: KeyboardInterrupt, phase: str, planned: Iterable[Any], recorded: Iterable[Any]) -> str:
    """The run's error for a stop outside a layer's measurement: the signal, the phase, the
    layers whose verdict the record does not hold (hostile round 19: results.json stayed the
    last layer's snapshot, verdict error and no word of the signal, or was never written)."""
    judged = {layer.name for layer in recorded}
    left = [spec.name for spec in planned if spec.name not in judged]
    return f"{interrupt_cause(e)} {phase}" + (f"; not run or not judged: {', '.join(left)}" if left else "")


def write_outputs(record: RunRecord, recorder: RunRecorder, store: RunStore, opts: RunOptions,
                  failed: Callable[[RunRecord], None]) -> None:
    """Every output rendered once, from the final ``record``: results.json last, so a report
    the disk refuses never leaves a finished record that reads as a pass beside it. Whatever
    stops them, the record's error says so, results.json is written with it (the isolation
    kept), and ``failed`` is given that record (the state store kept the verdict before the
    outputs: it must not keep a pass), before the error is raised."""
    try:
        write_reports(record, store, opts)
    except BaseException as e:
        recorder.fail(_reports_failed(e))
        record = recorder.finish()
        try:
            store.write_results(record)
        finally:
            failed(record)
        raise
    try:
        store.write_results(record)
    except BaseException as e:  # the final results.json refused (a full disk)
        recorder.fail(str(e) or type(e).__name__)
        failed(recorder.finish())
        raise


def write_reports(record: RunRecord, store: RunStore, opts: RunOptions) -> None:
    rows = store.frames()
    for report in opts.reports:
        if report.name != "json":  # results.json is always written by the store
            store.check_dir()  # never through a link put where the run directory was
            report.write(record, rows, store.dir / report.filename, opts.template_dirs)


def _reports_failed(e: BaseException) -> str:
    """The run's error when its reports could not be written: the file and the system's words
    for a refused write; the exception's kind for anything else (a template's error, memory)."""
    if isinstance(e, OSError):
        return f"cannot write the reports{f' ({e.filename})' if e.filename else ''}: {e.strerror or e}"
    return f"cannot write the reports: {type(e).__name__}{f': {e}' if str(e) else ''}"
