"""Baselines from known-good runs: per tier, and per card (a card against its own history).

Outliers are dropped iteratively (robust z beyond 3.5, repeated until none is left) so
one bad night does not become the norm.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timezone
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from sncheck.errors import ConfigError
from sncheck.config.jsonio import Baseline, read_json, validate
from sncheck.store.frames import RowFrames
from sncheck.store.results import own_record, record_of
from sncheck.store.layout import ROWS_DIR, is_run_dir
from sncheck.store.rundir import read_frames, refuse_impossible, refuse_running
from sncheck.health.metrics import METRICS, PAIRS, rows_context
from sncheck.health.ops import robust_z
from sncheck.model import EntityKind, Finding, Severity, card_of, host_of, is_cable, is_uplink, split_link

SCHEMA = "sncheck.baseline/1"
BASELINE_METRICS = ("p2p_bandwidth", "p2p_latency")
PAIR_LAYERS = frozenset({"connectivity"})  # the layer whose pair rows a baseline holds (its retests' with them)
OUTLIER_Z = 3.5
_GROUPS = (EntityKind.HOST, EntityKind.SUPERNODE, EntityKind.SWITCH)


def released_group_symptom(f: Finding) -> bool:
    """A group's symptom (a host, supernode or switch no culprit was found in) that a layer
    measuring no pair rows raised (the stress layer's collective groups, the golden model) and
    its retest released: it says nothing of the pairs connectivity measured and judged clean, so
    it leaves none of them out of a baseline (reviews20 #7: a released collective-group-slow on
    rail:sn0:gpu2 took sn0's every pair, and with it demo-2sn's whole scale-out tier, out of a
    passing run's baseline; every later gate against it failed 'baseline-not-judged')."""
    released = f.severity == Severity.INFO and "severity_before_retest" in f.evidence \
        and f.evidence.get("confirmed") is not True
    return f.entity_kind in _GROUPS and released and not (f.layers() & PAIR_LAYERS)


def trimmed_median(values: pd.Series, z: float = OUTLIER_Z, max_rounds: int = 10) -> float:
    v = values.dropna().astype(float)
    for _ in range(max_rounds):
        if len(v) < 3:
            break
        keep = robust_z(v).abs() <= z
        if keep.all():
            break
        v = v[keep]
    return float(v.median()) if len(v) else float("nan")


def _record(path: Path, note: Callable[[str], None]) -> tuple[str | None, str | None, str | None, tuple, dict,
                                                              str | None]:
    """A run's verdict, inventory, run id, findings, topology and backend from its results.json (None,
    None, None, (), {}, None: a run killed before it wrote one). Only a missing file is "not written": a FIFO, a device or a link put there
    is refused by the reader (it was taken for a killed run, so a failed run's rows entered the
    baseline). A finished run whose duration its times cannot give (a clock stepped back) is
    ``note``d: its rows are as good as any."""
    if not os.path.lexists(path):
        return None, None, None, (), {}, None
    data = read_json(own_record(path), "results.json")  # a file that is not JSON: its error names it
    if not isinstance(data, dict):
        return "unreadable", None, None, (), {}, None
    inventory, run_id, backend = data.get("inventory"), data.get("run_id"), data.get("backend")
    record = record_of(data, str(path))
    seconds, why = record.duration
    if seconds is None and record.finished is not None:
        note(f"{path}: duration unknown: {why}")
    return (record.verdict.value, inventory if isinstance(inventory, str) and inventory else None,
            run_id if isinstance(run_id, str) and run_id else None, record.findings, record.topology or {},
            backend if isinstance(backend, str) and backend else None)


def named_rows(frame: pd.DataFrame, findings: tuple[Finding, ...], topology: dict) -> tuple[np.ndarray, list[str]]:
    """The pair rows of every entity the run held suspect (``Finding.held_suspect``: raised at
    warning or worse), whatever became of it (released by its retest or not): a suspect's values
    are no known-good level (review17 #5: a transient NIC's 0.4 pairs, released, became its card's
    baseline, and a later night at 0.8 of design read above 0.9 of it). A finding at info from the
    start says nothing of the values measured (fabric-errors-before-run: a counter above zero
    before the run): its entity keeps its level (reviews18 #2: such a card lost every level, and
    was judged against its tier's night after night), nor a released group symptom of the
    collectives (:func:`released_group_symptom`). A card, a NIC's card (its scale-out pairs), a link's
    pair, a host's or a supernode's cards; a switch or a leaf-to-spine cable: the scale-out
    pairs of the NICs it serves (``evidence.nics``), every scale-out pair where it does not say
    them; a NIC's cable to its leaf, as its NIC. The mask, and the entities named."""
    out = np.zeros(len(frame), bool)
    if frame.empty or not {"src", "dst"} <= set(frame.columns):
        return out, []
    src, dst = frame["src"].astype(str).to_numpy(), frame["dst"].astype(str).to_numpy()
    hosts = (np.array([host_of(c) for c in src], object), np.array([host_of(c) for c in dst], object))
    out_tier = (frame["tier"].astype(str) == "scale_out").to_numpy() if "tier" in frame.columns else np.ones(len(frame), bool)
    sn_hosts = {s.get("name"): set(s.get("hosts") or ()) for s in topology.get("supernodes") or () if isinstance(s, dict)}
    named: list[str] = []
    for f in findings:
        if not f.held_suspect or released_group_symptom(f):
            continue
        kind, e = f.entity_kind, f.entity
        nic_cable = kind == EntityKind.LINK and is_cable(e) and not is_uplink(e)  # a NIC's to its leaf: the NIC's
        if kind in (EntityKind.CARD, EntityKind.NIC) or nic_cable:
            card = card_of(split_link(e)[0] if nic_cable else e)
            hit = (src == card) | (dst == card)
            hit &= out_tier if kind != EntityKind.CARD else True
        elif kind == EntityKind.LINK and not is_uplink(e):
            a, b = split_link(e)
            hit = ((src == a) & (dst == b)) | ((src == b) & (dst == a))
        elif kind in (EntityKind.HOST, EntityKind.SUPERNODE):
            members = list(sn_hosts.get(e, ())) if kind == EntityKind.SUPERNODE else [e]
            hit = np.isin(hosts[0], members) | np.isin(hosts[1], members)
        else:  # a switch or a leaf-to-spine cable
            nics = f.evidence.get("nics")
            cards = [card_of(n) for n in nics if isinstance(n, str)] if isinstance(nics, list) and nics else None
            hit = out_tier & ((np.isin(src, cards) | np.isin(dst, cards)) if cards is not None else True)
        out |= hit
        named.append(e)
    return out, list(dict.fromkeys(named))


def _run_ids(frame: pd.DataFrame, path: Path) -> list[str]:
    """The run ids a run directory's p2p rows carry (its own directory when they carry none)."""
    ids = sorted(map(str, frame["run_id"].dropna().unique())) if "run_id" in frame.columns else []
    return ids or [str(path.resolve())]


def refuse_other_record(record_id: str | None, frame: pd.DataFrame, path: Path) -> None:
    """A run directory whose results.json is another run's than its rows (``frame``, its p2p rows):
    the verdict and findings read would be another run's beside these measurements (a results.json
    copied over or edited: hostile round 18, H18-14, for baseline make; round 22, H22-12, for diff)."""
    ids = _run_ids(frame, path)
    if record_id and "run_id" in frame.columns and not frame.empty and record_id not in ids:
        raise ConfigError(f"results.json is run {record_id}, its rows are run {', '.join(ids)}: another run's "
                          "record beside these rows; copy a run directory whole", str(path))


def make_baseline(run_dirs: list[str | Path], name: str, note: Callable[[str], None] = lambda _: None) -> dict:
    """A ``sncheck.baseline/1`` from known-good run directories; ``note`` takes a line about a
    run that is read with something said (its duration unknown)."""
    frames = []
    left_out: list[str] = []  # the entities a run's findings named: none of their rows is in it
    seen: dict[str, Path] = {}
    fleets: dict[str, Path] = {}  # inventory -> the first run of it
    backends: dict[str, Path] = {}  # backend -> the first run on it
    measured: set[str] = set()  # the tiers the runs' pair rows measured
    for d in run_dirs:
        path = Path(d)
        if not is_run_dir(path):
            raise ConfigError(f"not a run directory (no {ROWS_DIR}/ of measurements)", str(path))
        refuse_running(path)
        verdict, inventory, record_id, findings, topology, backend = _record(path / "results.json", note)
        if verdict not in (None, "pass"):
            raise ConfigError(f"run verdict is {verdict!r}; a baseline needs known-good runs", str(path))
        if inventory is not None:  # runs of two inventories: two fleets' norms in one (hostile round 17)
            if other := next(((n, p) for n, p in fleets.items() if n != inventory), None):
                raise ConfigError(f"measured inventory {inventory!r}, {other[1]} measured {other[0]!r}: a baseline "
                                  "is made from one inventory's runs", str(path))
            fleets.setdefault(inventory, path)
        if backend is not None:  # the simulator's runs and the hosts' in one median (hostile round 26, H26-19)
            if other := next(((b, p) for b, p in backends.items() if simulated(b) != simulated(backend)), None):
                raise ConfigError(f"ran on backend {backend!r}, {other[1]} on {other[0]!r}: a baseline is made from "
                                  "runs of the hosts or of the simulator, never both", str(path))
            backends.setdefault(backend, path)
        frame = read_frames(path).kind("p2p")  # a part that cannot be read: ConfigError
        refuse_impossible(frame, path, "made into a baseline")
        # one run given twice (its directory with a slash, through a link, a copy) would count twice
        # in every median and be said 'from 2 runs': the run is named by its rows' run ids
        ids = _run_ids(frame, path)
        refuse_other_record(record_id, frame, path)
        for rid in ids:
            if rid in seen:
                raise ConfigError(f"is run {rid} again (given as {seen[rid]}): a baseline counts each run once",
                                  str(path))
        seen.update(dict.fromkeys(ids, path))
        drop, named = named_rows(frame, findings, topology)
        if named:
            note(f"{path}: left out {int(drop.sum())} measurement rows of what its findings named "
                 f"({', '.join(named[:6])}{', ...' if len(named) > 6 else ''}): a suspect's values, released or "
                 "not, are no known-good level")
            left_out.extend(n for n in named if n not in left_out)
        frames.append(frame[~drop])
        measured.update(_tiers(frame))
    p2p = pd.concat(frames, ignore_index=True)
    if p2p.empty and left_out:  # (rows there were: every one of them a suspect's)
        raise ConfigError(f"every measurement row was left out: the runs' findings held suspect "
                          f"{', '.join(left_out[:6])}{', ...' if len(left_out) > 6 else ''} (released or not), whose "
                          "values are no known-good level; make the baseline from other passing runs",
                          ", ".join(map(str, run_dirs)))
    if p2p.empty:
        raise ConfigError("the runs hold no measurement rows to make a baseline from", ", ".join(map(str, run_dirs)))
    if lost := sorted(measured - _tiers(p2p)):  # a tier the runs measured, none of it known-good
        raise ConfigError(f"every {' and '.join(lost)} pair was left out: the runs' findings held suspect "
                          f"{', '.join(left_out[:6])}{', ...' if len(left_out) > 6 else ''} (released or not), and "
                          f"a baseline without the {' and '.join(lost)} tier fails every later run that measures "
                          "it ('baseline-not-judged'); make the baseline from other passing runs",
                          ", ".join(map(str, run_dirs)))
    rows = RowFrames({"p2p": p2p})
    ctx = rows_context()
    metrics = {}
    for m in BASELINE_METRICS:
        if METRICS[m].shape != PAIRS:
            continue
        cells = METRICS[m].fn(rows, ctx)
        cells = cells[~cells["failed"]] if not cells.empty else cells
        if cells.empty:
            continue
        # only finite, positive values make a norm (a NaN or 0 would break every later ratio)
        cells = cells[pd.to_numeric(cells["value"], errors="coerce").map(_usable)]
        if cells.empty:
            continue
        both = pd.concat([cells[["src", "tier", "value"]].rename(columns={"src": "card"}),
                          cells[["dst", "tier", "value"]].rename(columns={"dst": "card"})])
        tiers = {str(t): trimmed_median(g["value"]) for t, g in cells.groupby("tier", observed=True)}
        cards = {str(t): {str(c): trimmed_median(gc["value"]) for c, gc in g.groupby("card", observed=True)}
                 for t, g in both.groupby("tier", observed=True)}
        metrics[m] = {
            "tier": {t: v for t, v in tiers.items() if _usable(v)},
            # per tier, per card: a card's own history on each kind of link
            "card": {t: {c: v for c, v in cs.items() if _usable(v)} for t, cs in cards.items()},
            "unit": METRICS[m].unit,
        }
    return {"schema": SCHEMA, "name": name, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "runs": [str(d) for d in run_dirs], **({"inventory": next(iter(fleets))} if fleets else {}),
            **({"backend": ",".join(sorted(backends))} if backends else {}),
            **({"left_out": left_out} if left_out else {}), "metrics": metrics}


def simulated(backend: str) -> bool:
    """Whether a backend's numbers are the simulator's (a record's ``backend``; a baseline's, joined)."""
    return "mock" in backend.split(",")


def _tiers(frame: pd.DataFrame) -> set[str]:
    return set(frame["tier"].dropna().astype(str)) if "tier" in frame.columns else set()


def check_inventory(baseline: dict, inventory: str, backend: str | None = None) -> None:
    """A baseline made from another inventory's runs (its ``inventory``) cannot judge this one:
    refused, naming both (a baseline written before it said its inventory is taken as before).
    Nor can the simulator's numbers judge the hosts, or the hosts' the simulator (its ``backend``;
    hostile round 26, H26-06)."""
    made_on = baseline.get("backend")
    if backend is not None and isinstance(made_on, str) and simulated(made_on) != simulated(backend):
        raise ConfigError(f"was made from runs on backend {made_on!r}; this run's backend is {backend!r}: a baseline "
                          "of the simulator's numbers is no measurement of the hosts, nor theirs of it (make one "
                          "from this backend's runs with 'sncheck baseline make')", baseline.get("_path"))
    made = baseline.get("inventory")
    if isinstance(made, str) and made != inventory:
        raise ConfigError(f"was made from runs of inventory {made!r}; this run's inventory is {inventory!r}: "
                          "a baseline judges the fleet it was made on (make one from this inventory's runs "
                          "with 'sncheck baseline make')", baseline.get("_path"))


def _usable(v: object) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def load_baseline(ref: str) -> dict:
    path = Path(ref)  # a path only: nothing is looked up in the working directory
    if not path.exists() and not path.is_symlink():  # a loop or a dangling link: read_json says which
        raise ConfigError("no such baseline file; make one with 'sncheck baseline make RUN_DIR... --out FILE'", ref)
    data = read_json(path, "baseline")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConfigError(f"not a baseline (expected a JSON object with schema {SCHEMA!r})", str(path))
    validate(Baseline, data, path, "baseline")  # every value finite and positive
    data["_path"] = str(path)
    return data
