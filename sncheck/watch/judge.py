"""Judge a directory of in-job dumps: rows -> the rules of layer ``watch`` -> findings ->
results.json (the run schema), the reports, and with a state store its quarantines.

In-job evidence quarantines and never isolates by itself: each finding on a card
carries the scoped confirmation to run in the next gap between jobs
(``sncheck run <playbook> --targets <card>``); that run isolates or releases as any run.
"""

from __future__ import annotations

import os
import signal
import shlex
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any, Callable

import pandas as pd

from sncheck.config.inventory import Inventory
from sncheck.config.shipped import provenance
from sncheck.errors import ConfigError
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import RuleSet
from sncheck.model import About, Basis, EntityKind, ExitCode, Finding, RunRecord, Severity, Verdict
from sncheck.report import outputs
from sncheck.run.isolation import suspect
from sncheck.run.recorder import RunRecorder
from sncheck.run.runner import RunOptions, write_outputs
from sncheck.run.state import RunState
from sncheck.store.results import read_record, to_json
from sncheck.store.rundir import RunStore, new_run_id
from sncheck.store.state import StateStore
from sncheck.topology import Topology, natural_key
from sncheck.watch import dumps as dumpio
from sncheck.watch import frtime
from sncheck.watch.rankmap import CardNames, RankMap, from_slurm, inventory_from_map, load_rank_map, safe_host
from sncheck.watch.select import select
from sncheck.health.rules import evaluate
from sncheck.health.injob import baseline_levels
from sncheck.store.rundir import read_frames
from sncheck.config.inventory import Host, Supernode
import json

LAYER = "watch"
CONFIRM_PLAYBOOK = "nightly-stress"   # launch skew and pairwise collectives: what a straggler shows


@dataclass
class WatchOptions:
    directory: Path
    rank_map: str | None = None
    inventory: Inventory | None = None
    rules: RuleSet | None = None
    out: Path | None = None
    gate: str = "warning"
    state_dir: str | None = None
    report_formats: tuple[str, ...] = ("html",)
    confirm_playbook: str = CONFIRM_PLAYBOOK
    baseline: str | None = None         # a known-good job: its dump directory, or its watch run (results.json)
    progress: Callable[[str], None] = field(default=lambda _: None)


@dataclass
class Outcome:
    """One pass: its record and where it is written."""

    record: RunRecord
    out_dir: Path

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.of(self.record.verdict)

    @property
    def results(self) -> dict:
        """The record as results.json holds it."""
        return to_json(self.record)


def _rank_map(opts: WatchOptions) -> RankMap:
    if opts.rank_map:
        return load_rank_map(opts.rank_map)
    default = opts.directory / "ranks.json"
    if default.exists() or default.is_symlink():  # a FIFO or a dangling link there is refused, not skipped
        return load_rank_map(default)
    return from_slurm() or RankMap({}, "")


def read_directory(opts: WatchOptions) -> tuple[list[dumpio.Dump], list[dumpio.Unreadable]]:
    d = opts.directory
    if not d.is_dir():
        raise ConfigError("not a directory of dumps", str(d))
    skip = tuple(Path(p) for p in [opts.rank_map] if p)
    files = dumpio.dump_files(d, skip)
    if not files:
        raise ConfigError("no dumps in this directory (Flight Recorder, NCCL RAS, Inspector or nccl-tests files)",
                          str(d))
    good: list[dumpio.Dump] = []
    bad: list[dumpio.Unreadable] = []
    for f in files:
        r = dumpio.read_dump(f)
        if isinstance(r, dumpio.Unreadable):
            bad.append(r)
        else:
            good.append(r)
    return good, bad


def judge(opts: WatchOptions, store: RunStore | None = None, recorded: set[tuple[str, str]] | None = None) -> Outcome:
    """One pass. ``recorded``: (entity, rule) already in the state store (the follow loop):
    a pass records only when it has a finding not among them, and adds its own."""
    rank_map = _rank_map(opts)
    inventory = opts.inventory or inventory_from_map(rank_map)
    if not inventory.hosts:
        inventory = _placeholder_inventory()
    names = CardNames(inventory, rank_map)
    topo = Topology(inventory)
    good, bad = read_directory(opts)
    raw: list[Finding] = []
    site = inventory.supernodes[0].name
    kept, left_out = select(good, rank_map.jobs)
    for lo in left_out:
        raw.append(Finding(site, EntityKind.SUPERNODE, LAYER, lo.rule, Severity.INFO,
                           f"{lo.dump.name}: {lo.reason}: left out",
                           {"measured": lo.dump.job or lo.dump.name, "expected": sorted(rank_map.jobs) or None,
                            "unit": None, "dump": lo.dump.name}, about=About.CHECK))
    for d in list(kept):
        if d.format == "flight_recorder":
            try:
                d.fr()  # its rows once, and its notes
            except Exception as e:  # noqa: BLE001 -- a dump that read but cannot be turned into rows: that rank unread
                kept.remove(d)
                bad.append(dumpio.Unreadable(d.path, f"its entries cannot be read ({type(e).__name__}: {str(e)[:80]})"))
                continue
        for note in d.notes:
            raw.append(_unreadable(site, d.name, note))
        for note in d.info:
            raw.append(Finding(site, EntityKind.SUPERNODE, LAYER, "watch-dump-restarted", Severity.INFO,
                               f"{d.name}: {note}",
                               {"measured": "restarted", "expected": None, "unit": None, "dump": d.name},
                               about=About.CHECK))
    for u in bad:
        opts.progress(f"watch: {u.path.parent / u.name}: dump unreadable: {u.reason}")
        rank = dumpio.rank_of_name(u.name)
        card, mapped, _ = names.of_rank(rank) if rank is not None else ("", False, "")
        raw.append(_unreadable(card if mapped else site, u.name, u.reason, "card" if mapped else "supernode"))
    run_id = new_run_id()
    out_dir = opts.out or Path("runs") / run_id
    own = store is None
    store = store or RunStore(out_dir, run_id, force=True)
    try:
        counts = _emit(store, kept, names, topo, rank_map)
        raw += _unmapped_ranks(kept, rank_map, names)
        rules = opts.rules
        base = load_baseline(opts.baseline, inventory, names, topo) if opts.baseline else None
        ctx = DetectContext(topo, dict(inventory.design), baseline=base)

        frames = store.frames()
        raw += evaluate(rules.for_layer(LAYER), frames, ctx) if rules else []
        share = frtime.comm_share(frames.kind("fr"))  # time in collectives over the steps'
        if share is not None:
            counts["comm_share"] = share
    finally:
        if own:
            store.close()
    recorder = RunRecorder(
        run_id=run_id, playbook="watch", backend="watch", inventory=inventory.name, gate=opts.gate, seed=None,
        design={t: {"bandwidth_GBps": d.bandwidth_GBps, "latency_us": d.latency_us, "source": "inventory"}
                for t, d in inventory.design.items()},
        tools={"commands": [], "versions": _versions(kept)},  # sncheck ran nothing: it read what the job wrote
        inputs={"rules": provenance(rules.source if rules else None, rules.path if rules else None),
                "baseline": provenance(opts.baseline, _results_of(opts.baseline))},
        topology={"supernodes": [{"name": sn.name, "hosts": list(sn.hosts)} for sn in inventory.supernodes],
                  "cards": len(topo.cards)})
    recorder.layer(LAYER, {"directory": str(opts.directory), "dumps": len(kept), "unreadable": len(bad), **counts,
                           "rank_map": rank_map.source or "none"}, raw)
    recorder.merge()
    # In-job evidence quarantines (never isolates): each finding on a card says which scoped
    # run confirms it. An unmapped rank quarantines nothing.
    for f in recorder.findings:
        if suspect(f) and f.evidence.get("mapped") is not False:
            f.evidence["confirm_with"] = _confirm_command(opts.confirm_playbook, f.entity)
    steps = recorder.quarantine(note=lambda f: f"in-job evidence; confirm with '{f.evidence['confirm_with']}'",
                                eligible=lambda f: "confirm_with" in f.evidence)
    recorder.section(confirm=[{"entity": e.entity, "command": _confirm_command(opts.confirm_playbook, e.entity)}
                              for e in steps])
    record = recorder.finish()
    keys = {(f.entity, f.rule) for f in record.findings}
    state_dir = opts.state_dir if recorded is None or keys - recorded else None
    if recorded is not None:
        recorded |= keys
    if state_dir and record.isolation:
        done = RunState(state_dir, via=("hostfile",)).act(record, inventory, out_dir)
        recorder.acted(done.steps, done.blocked)
        if done.reconciled:
            recorder.section(reconciled=done.reconciled)
        record = recorder.finish()
    elif state_dir:
        with StateStore(state_dir) as st:
            st.record_run(record, out_dir / "results.json")
            st.record_findings(run_id, record.findings)
    write_outputs(record, recorder, store, RunOptions(reports=outputs(opts.report_formats)),
                  (lambda failed: RunState(state_dir).record_verdict(failed, out_dir)) if state_dir else _unrecorded)
    return Outcome(record, out_dir)


def _unrecorded(_record: RunRecord) -> None:
    """A pass the state store did not record: nothing there to mend when its outputs fail."""


def load_baseline(ref: str, inventory: Inventory, names: CardNames, topo: Topology) -> dict:
    """The bus bandwidth levels of a known-good job (``--baseline``): a directory of its
    dumps (Inspector, nccl-tests; its ``ranks.json`` if it has one), or its ``sncheck
    watch`` run (the run directory or its results.json, verdict pass)."""
    p = Path(ref)
    run_dir = p.parent if p.is_file() else p
    if p.is_file() or (p.is_dir() and os.path.lexists(p / "results.json")):  # a FIFO there: the reader names it
        verdict = read_record(run_dir).verdict  # not a link out; another schema refused
        if verdict != Verdict.PASS:
            raise ConfigError(f"its verdict is {verdict.value!r}: a baseline must be a known-good run", str(p))
        bw = read_frames(run_dir).kind("comm_bw")
    elif p.is_dir():
        own = p / "ranks.json"
        if own.exists() or own.is_symlink():
            names = CardNames(inventory, load_rank_map(own))
        rows = []
        for f in dumpio.dump_files(p):
            d = dumpio.read_dump(f)
            if isinstance(d, dumpio.Dump) and d.format in ("nccl_inspector", "nccl_tests"):
                raw = dumpio.inspector_rows(d) if d.format == "nccl_inspector" else dumpio.nccl_tests_rows(d)
                rows += [_comm_row(r, names, topo) for r in raw]
        bw = pd.DataFrame(rows)
    else:
        raise ConfigError("no such baseline: a known-good job's dump directory or its watch run", str(p))
    levels = baseline_levels(bw) if not bw.empty else {}
    if not levels:
        raise ConfigError("the baseline holds no bus bandwidth (NCCL Inspector or nccl-tests) records", str(p))
    return {"source": str(p), "metrics": {"comm_busbw": {"tier": levels}}}


def _versions(dumps: list[dumpio.Dump]) -> dict[str, str]:
    """The formats' own versions the dumps carry (Flight Recorder's ``version``)."""
    fr = sorted({str(d.data.get("version")) for d in dumps if d.format == "flight_recorder"
                 and isinstance(d.data, dict) and d.data.get("version") is not None})
    return {"flight_recorder": ", ".join(fr)} if fr else {}


def _results_of(ref: str | None) -> Path | None:
    """The file a baseline's provenance hashes: a run's results.json (a dump directory has none)."""
    if not ref:
        return None
    p = Path(ref)
    return p if p.is_file() else p / "results.json"


def _placeholder_inventory() -> Inventory:
    return Inventory(name="job", supernodes=(Supernode("job", ("unknown",)),), hosts={"unknown": Host("unknown", "job", 1)})


def _confirm_command(playbook: str, entity: str) -> str:
    """The command that confirms a finding, for a shell: a playbook path with a space stays one word."""
    return f"sncheck run {shlex.quote(playbook)} --targets {shlex.quote(entity)}"


def _unreadable(site: str, name: str, reason: str, kind: str = "supernode") -> Finding:
    return Finding(site, EntityKind(kind), LAYER, "watch-dump-unreadable", Severity.WARNING,
                   f"dump unreadable: {name}: {reason}; its ranks are not judged",
                   {"measured": "unreadable", "expected": "a dump", "unit": None, "dump": name},
                   basis=Basis.NOT_MEASURED, about=About.CHECK)


def _emit(store: RunStore, dumps: list[dumpio.Dump], names: CardNames, topo: Topology,
          rank_map: RankMap) -> dict:
    fr, pgs, p2p, ras, bw = [], [], [], [], []
    for d in dumps:
        if d.format == "flight_recorder":
            e, p, q = d.fr()
            fr += e
            pgs += p
            p2p += q
        elif d.format == "nccl_ras" and isinstance(d.data, dict):  # the RAS parsers' document
            for r in d.data["records"]:
                ras.append(_ras_row(r, names, topo, d))
        elif d.format == "nccl_inspector":
            bw += dumpio.inspector_rows(d)
        elif d.format == "nccl_tests":
            bw += dumpio.nccl_tests_rows(d)
    hosts: dict[int, str | None] = {}
    for rows in (fr, pgs, p2p):
        for r in rows:
            rank = int(r["rank"])
            r["card"], r["mapped"], _ = names.of_rank(rank)
            if rank not in hosts:
                placed = rank_map.placements.get(rank)
                hosts[rank] = (names.host(placed.host) or placed.host) if placed else None
            r["host"] = hosts[rank]  # whose clock its times are on
    _batch(store, "fr", fr)
    _batch(store, "fr_pg", pgs)
    _batch(store, "fr_p2p", p2p)
    _batch(store, "ras", ras)
    _batch(store, "comm_bw", [_comm_row(r, names, topo) for r in bw])
    return {"collectives": len(fr), "p2p_ops": len(p2p), "ras_states": len(ras), "bandwidth_records": len(bw),
            "ranks": len({r["rank"] for r in pgs})}


def _batch(store: RunStore, kind: str, rows: list[dict]) -> None:
    if rows:
        frame = pd.DataFrame(rows)
        store.emit_batch(kind, {c: frame[c].tolist() for c in frame.columns}, layer=LAYER)


def _ras_row(r, names: CardNames, topo: Topology, d: dumpio.Dump) -> dict:
    node = safe_host(r.node)
    detail = r.detail if node or not r.node else f"{r.detail} (its node's name refused: not a host name)"
    card, known = names.card(node, r.gpu)
    named = bool(card)
    if not card:
        card = topo.supernode_names[0]
    return {"state": r.state, "comm": r.comm or "", "rank": r.rank, "gpu": r.gpu, "node": node, "pid": r.pid,
            "detail": detail, "ahead": r.ahead, "entity": card, "entity_kind": "card" if named else "supernode",
            "named": named, "mapped": known, "dump": d.name}


def _comm_row(r: dict, names: CardNames, topo: Topology) -> dict:
    cards = []
    if r.get("members"):
        cards = [c for c, ok in (names.card(h, dev) for h, dev in json.loads(r["members"])) if c]
    elif r.get("rank") is not None:
        cards = [names.of_rank(int(r["rank"]))[0]]
    entity, kind, tier = _smallest(cards, topo)
    return {**{k: v for k, v in r.items() if k != "members"}, "entity": entity, "entity_kind": kind, "tier": tier}


def _smallest(cards: list[str], topo: Topology) -> tuple[str, str, str]:
    """The smallest entity holding every card of a communicator, and its tier."""
    known = [c for c in cards if c in topo.by_id]
    if not known:
        return topo.supernode_names[0], "supernode", "scale_up"
    hosts = {topo.by_id[c].host for c in known}
    sns = {topo.by_id[c].supernode for c in known}
    if len(hosts) == 1:
        return (next(iter(hosts)), "host", "intra_host")
    if len(sns) == 1:
        return next(iter(sns)), "supernode", "scale_up"
    return sorted(sns, key=natural_key)[0], "supernode", "scale_out"


def _unmapped_ranks(dumps: list[dumpio.Dump], rank_map: RankMap, names: CardNames) -> list[Finding]:
    """Ranks of the rank map with no dump at all: not judged."""
    have = {d.rank for d in dumps if d.format == "flight_recorder"}
    if not have or not rank_map.placements:
        return []
    out = []
    for rank in sorted(set(rank_map.placements) - have):
        card, _, _ = names.of_rank(rank)
        out.append(Finding(card, EntityKind.CARD, LAYER, "watch-rank-no-dump", Severity.WARNING,
                           f"rank {rank} ({card}): no Flight Recorder dump in the directory: "
                           "not judged", {"measured": "no dump", "expected": "a dump", "unit": None, "rank": rank},
                           basis=Basis.NOT_MEASURED, about=About.CHECK))
    return out


# ------------------------------------------------------------------ follow
class Stop:
    """Set by SIGTERM/SIGINT: the follow loop ends after the pass in progress."""

    def __init__(self) -> None:
        self.flag = False
        self._prev: dict[int, Callable[[int, FrameType | None], Any] | int | signal.Handlers | None] = {}

    def __enter__(self) -> "Stop":
        for s in (signal.SIGTERM, signal.SIGINT):
            self._prev[s] = signal.signal(s, self._set)
        return self

    def _set(self, _signum: int, _frame: FrameType | None) -> None:
        self.flag = True

    def __exit__(self, *exc) -> None:
        for s, h in self._prev.items():
            signal.signal(s, h)

    def wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.flag and time.monotonic() < end:
            time.sleep(min(0.2, end - time.monotonic()))


def _signature(directory: Path) -> tuple:
    """What changed in the directory: names, sizes and times of its files."""
    out = []
    for p in sorted(directory.iterdir()):
        try:
            st = p.stat()
        except OSError:
            continue
        out.append((p.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def follow(opts: WatchOptions, interval: float, on_pass: Callable[[Outcome], None],
           max_passes: int | None = None) -> Outcome | None:
    """Judge the directory again whenever a dump appears or grows, until SIGTERM. Each
    pass re-reads the dumps (a rank's dump is replaced as a whole, bounded by its
    Flight Recorder buffer) and rewrites one run directory, so memory stays bounded by
    one pass. Findings reach the state store once per card and rule."""
    seen: set[tuple[str, str]] = set()  # (entity, rule) in the state store
    last, passes, outcome = None, 0, None
    out = opts.out or Path("runs") / new_run_id()
    with Stop() as stop:
        while not stop.flag:
            sig = _signature(opts.directory)
            if sig != last and sig:
                last = sig
                try:
                    outcome = judge(replace(opts, out=out), recorded=seen)
                except ConfigError as e:
                    opts.progress(f"watch: {e}")
                except Exception as e:  # noqa: BLE001 -- following never ends on one pass: the next change is judged again
                    opts.progress(f"watch: this pass could not be judged ({type(e).__name__}: {str(e)[:120]}); "
                                  "waiting for the next change")
                else:
                    on_pass(outcome)
                passes += 1
                if max_passes is not None and passes >= max_passes:
                    break
            stop.wait(interval)
    return outcome


