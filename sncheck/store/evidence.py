"""Evidence bundles: for each finding, the raw material behind it, in
``<out>/evidence/<entity>/``:

* ``finding.json``: the finding as in results.json;
* ``rows.jsonl``: the probe rows that involve the entity (its pairs, its pairwise and
  host groups, its ranks, its host's facts, its retest), capped;
* ``<tool>.txt``: the raw output of each host tool the backend read on the entity's
  host (nvidia-smi, ibstat, dcgmi...): the text the parsed facts came from;
* ``kernel.log``: on SSH hosts, the kernel log lines about the accelerators
  (XID, NVRM, AER), gathered with a bounded command;
* ``README.txt``: what each file is.

Each finding's ``evidence.files`` lists its files (relative to the run directory) and
the report links them. Sizes are capped per file and per run; what a cap cut is said
in the file itself and in README.txt.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from collections.abc import Collection
from typing import Any, Callable

import numpy as np
import pandas as pd

from sncheck.fabric import Fabric
from sncheck.model import LINK_SEP, EntityKind, Finding, card_of, host_of, is_cable
from sncheck.store.files import RunFiles
from sncheck.store.frames import RowFrames
from sncheck.store.idcols import id_codes
from sncheck.store.results import finding_to_json

EVIDENCE_DIR = "evidence"
MAX_FILE_BYTES = 1 << 20          # one file
MAX_RUN_BYTES = 32 << 20          # all bundles of a run
MAX_ROWS = 2000                   # rows per bundle
MAX_KERNEL_HOSTS = 32             # hosts whose kernel log is read per run
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Windows' device names: a file named one of them, with any extension (``nul.txt``,
# ``con.nvidia-smi.txt``), is the device there, so a run directory copied to a Windows share
# or unzipped on a laptop lost that bundle (hostile round 12).
_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", *(f"{d}{i}" for d in ("COM", "LPT") for i in range(10))})


def safe_name(text: object) -> str:
    """A file name from a tool, host or rule name: only [A-Za-z0-9._-], at most 120, never
    beginning or ending with ``.`` or ``_``, nor a Windows device name before its first dot
    (that one gets a leading ``_``, which no other name is given)."""
    name = (_UNSAFE.sub("_", str(text).replace("<->", "--")).strip("._") or "entity")[:120]
    return f"_{name}"[:120] if name.split(".", 1)[0].upper() in _DEVICES else name


def entity_dir(entity: str) -> str:
    """A directory name for an entity id: a readable prefix of [A-Za-z0-9._-] and a short
    hash of the whole id, so two ids never share a directory (``n/gpu0`` and ``n_gpu0``,
    or two long ids with one prefix): ``node001/gpu0<->node001/gpu1`` ->
    ``node001_gpu0--node001_gpu1-3f2a9c1e0b``."""
    text = str(entity)
    name = safe_name(text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{name[:100]}-{digest}"


def _host_of(card: str) -> str:
    return host_of(card) if "/gpu" in card else card


def _members(entity: str, kind: str, topology: dict | None) -> tuple[set[str], set[str]]:
    """(cards, hosts) an entity covers; cards are known only by what the rows name. A cable
    or a switch covers no card of its own (its rows are the pairs that cross it:
    :func:`path_masks`); a NIC's cable, the NIC's host (its port facts)."""
    if kind == "link" and is_cable(entity):
        nic = entity.partition(LINK_SEP)[0]
        return set(), ({host_of(nic)} if "/nic" in nic else set())
    if kind == "link":
        cards = set(entity.split("<->"))
        return cards, {_host_of(c) for c in cards}
    if kind in ("card", "nic"):  # a NIC: the card of its rail, on its host
        card = card_of(entity)
        return {card}, {_host_of(card)}
    if kind == "host":
        return set(), {entity}
    if kind == "switch":
        return set(), set()
    for sn in (topology or {}).get("supernodes") or []:
        if sn.get("name") == entity:
            return set(), set(map(str, sn.get("hosts") or []))
    return set(), set()


class _Groups:
    """A frame's group ids parsed once (a run of 384 cards has 73,536 pair groups, asked
    about by every finding's bundle): per distinct id its kind and its one or two names,
    and each row's position among the distinct ids."""

    def __init__(self, codes: np.ndarray, names: np.ndarray) -> None:
        uniques = [*map(str, names.tolist()), ""]   # (a missing id: "", the last)
        self.codes = codes.astype(np.int64)
        self.codes[self.codes < 0] = len(uniques) - 1
        kind, a, b = [], [], []
        for g in map(str, uniques):
            k, _, rest = g.partition(":")
            x, _, y = rest.partition("<->") if k == "pair" else (rest, "", "")
            kind.append(k)
            a.append(x)
            b.append(y)
        self.kind, self.a, self.b = (np.array(v, dtype=object) for v in (kind, a, b))
        self.a_host = np.array([_host_of(x) for x in a], dtype=object)
        self.b_host = np.array([_host_of(y) if y else "" for y in b], dtype=object)

    def rows(self, hit: np.ndarray) -> np.ndarray:
        return hit[self.codes] if len(hit) else np.zeros(len(self.codes), dtype=bool)

    def through(self, fabric: Fabric, cable: str) -> np.ndarray:
        """Rows of the pair groups whose path crosses ``cable``."""
        a, b = (_positions(fabric, v.tolist()) for v in (self.a, self.b))
        return self.rows((self.kind == "pair") & _crossing(fabric, cable, a, b))

    def link(self, a: str, b: str) -> np.ndarray:
        """Rows of the pair group of exactly these two cards."""
        pair = self.kind == "pair"
        return self.rows(pair & (((self.a == a) & (self.b == b)) | ((self.a == b) & (self.b == a))))

    def touching(self, cards: set[str], hosts: set[str]) -> np.ndarray:
        """Rows of a pair or card group with a card among ``cards`` (or, with no cards, on
        one of ``hosts``), and of the host groups of ``hosts``."""
        member = (self.kind == "pair") | (self.kind == "card")
        if cards:
            hit = np.isin(self.a, list(cards)) | np.isin(self.b, list(cards))
        else:
            hit = np.isin(self.a_host, list(hosts)) | np.isin(self.b_host, list(hosts))
        return self.rows((member & hit) | ((self.kind == "host") & np.isin(self.a, list(hosts))))


def _positions(fabric: Fabric, names: list) -> np.ndarray:
    """Each name's card position in the fabric (-1: not one of its cards)."""
    def at(name: object) -> int:
        try:
            return fabric.card_position(name) if isinstance(name, str) and name else -1
        except KeyError:
            return -1
    return np.fromiter((at(n) for n in names), dtype=np.int64, count=len(names))


def _crossing(fabric: Fabric, cable: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair of positions (-1: no card): whether the pair's path crosses ``cable``."""
    out = np.zeros(len(a), dtype=bool)
    both = (a >= 0) & (b >= 0)
    if both.any():
        try:
            out[both] = fabric.through(cable, a[both], b[both])
        except KeyError:  # a cable of no declared fabric (another run's, a cabling finding's "found"): no pair
            pass
    return out


MASK_COLUMNS = ("src", "dst", "card", "group", "host", "entity")


class Who:
    """Who each row of one kind is about (the :data:`MASK_COLUMNS` it has), read once for
    every bundle of a run: each id column's integer codes and distinct names, the group
    ids parsed. A bundle's mask is then a look-up per distinct name and one gather over
    the codes (read and picked per bundle, 2,556 findings spent 96 s building masks)."""

    def __init__(self, frames: RowFrames, kind: str) -> None:
        have = frames.columns(kind)
        cols = [c for c in MASK_COLUMNS if c in have]
        ids = id_codes(frames, kind, cols)   # (each piece's ids as codes: no frame of the kind)
        self.n = len(ids[cols[0]][0]) if cols else len(frames.kind(kind, []))
        self.columns: dict[str, tuple[np.ndarray, np.ndarray]] = {
            c: ids[c] for c in ("src", "dst", "card", "host", "entity") if c in ids}
        self.groups = _Groups(*ids["group"]) if "group" in ids else None
        self._host_of: dict[str, np.ndarray] = {}

    def touching(self, column: str, pred: Callable[[str], bool]) -> np.ndarray:
        """Mask of the rows whose value in ``column`` satisfies ``pred`` (all False where
        the kind lacks it); ``pred`` runs once per distinct value, not once per row."""
        if column not in self.columns:
            return np.zeros(self.n, dtype=bool)
        names = self.columns[column][1]
        return self._rows(column, np.fromiter((isinstance(v, str) and pred(v) for v in names.tolist()), dtype=bool,
                                              count=len(names)))

    def among(self, column: str, names: Collection[str], *, by_host: bool = False) -> np.ndarray:
        """Mask of the rows whose value in ``column`` is one of ``names`` (``by_host``: whose
        host is): one set look-up over the column's distinct values (a fleet's 16,384 cards,
        asked by every finding's bundle), never a call per value."""
        if column not in self.columns or not names:
            return np.zeros(self.n, dtype=bool)
        values = self._hosts(column) if by_host else self.columns[column][1]
        return self._rows(column, pd.Index(values, dtype=object).isin(list(names)))

    def through(self, fabric: Fabric, cable: str) -> np.ndarray:
        """Mask of the rows of a card pair (``src``, ``dst``, or a pair group) whose path
        crosses ``cable``: a cable's bundle holds the pairs the fabric routes over it."""
        mask = np.zeros(self.n, dtype=bool)
        if "src" in self.columns and "dst" in self.columns:
            (sc, sn), (dc, dn) = self.columns["src"], self.columns["dst"]
            sp, dp = (np.append(_positions(fabric, n.tolist()), -1) for n in (sn, dn))  # code -1: missing
            mask |= _crossing(fabric, cable, sp[sc], dp[dc])
        if self.groups is not None:
            mask |= self.groups.through(fabric, cable)
        return mask

    def _hosts(self, column: str) -> np.ndarray:
        """The host of each distinct value of ``column`` (made once per column)."""
        if column not in self._host_of:
            self._host_of[column] = np.array([_host_of(v) if isinstance(v, str) else None
                                              for v in self.columns[column][1].tolist()], dtype=object)
        return self._host_of[column]

    def _rows(self, column: str, hit: np.ndarray) -> np.ndarray:
        """The rows whose code in ``column`` is a hit (``hit``: per distinct value)."""
        if not hit.any():
            return np.zeros(self.n, dtype=bool)
        return np.append(hit, False)[self.columns[column][0]]  # code -1 (missing): the appended False


def path_masks(whos: dict[str, Who], fabric: Fabric | None, element: str,
               hosts: set[str]) -> list[tuple[str, np.ndarray]]:
    """Which rows of each kind a cable's or a switch's bundle holds (kind, mask): the card
    pairs whose path the fabric routes over it, what was not run on it, and a NIC cable's
    host's facts (``hosts``). Without the fabric no pair is known to cross it."""
    out: list[tuple[str, np.ndarray]] = []
    for kind, who in whos.items():
        mask = who.through(fabric, element) if fabric is not None else np.zeros(who.n, dtype=bool)
        if kind == "host_fact":
            mask |= who.among("host", hosts)
        if kind == "not_run":
            mask |= who.among("entity", [element])
        if mask.any():
            out.append((kind, mask))
    return out


def row_masks(whos: dict[str, Who], cards: set[str], hosts: set[str],
              link: tuple[str, str] | None) -> list[tuple[str, np.ndarray]]:
    """Which rows of each kind involve an entity (kind, mask): a link's own pair rows (and
    its hosts' facts); a card's pairs, groups and ranks; every row of a host's cards.
    ``whos``: each kind's :class:`Who`, in the order of the frames' kinds."""
    by_host = not cards and bool(hosts)  # a host or supernode: its cards are what the rows name

    def card_hit(c: str) -> bool:
        return _host_of(c) in hosts if by_host else c in cards

    out: list[tuple[str, np.ndarray]] = []
    for kind, who in whos.items():
        if link is not None:
            a, b = link
            mask = np.zeros(who.n, dtype=bool)
            if "src" in who.columns and "dst" in who.columns:
                mask |= who.among("src", link) & who.among("dst", link)
            if who.groups is not None:
                mask |= who.groups.link(a, b)
            if kind == "host_fact":
                mask |= who.among("host", hosts)
        else:
            mask = np.zeros(who.n, dtype=bool)
            for col in ("src", "dst", "card"):
                mask |= who.among(col, hosts if by_host else cards, by_host=by_host)
            if who.groups is not None:
                mask |= who.groups.touching(cards, hosts)
            mask |= who.among("host", hosts)
            if kind == "not_run":
                mask |= who.touching("entity", lambda e: card_hit(e) if "/" in e else e in hosts)
        if mask.any():
            out.append((kind, mask))
    return out


def _missing(v: Any) -> bool:
    """A cell with no value (null, NaN, NaT, NA): left out of the row's record."""
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v)


def _values(col: pd.Series) -> list[Any]:
    """The column's values as Python objects; a categorical's labels through its codes
    (pandas decodes every category on each ``tolist``: a fleet has thousands)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()
        used = np.unique(codes[codes >= 0])
        labels = dict(zip(used.tolist(), col.cat.categories.take(used).tolist()))
        return [labels.get(c) for c in codes.tolist()]
    return col.tolist()


def _records(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as plain records, without their empty cells. Column by column
    (``tolist`` gives Python values, a categorical's its labels): a frame-wide ``where`` and
    ``astype`` per finding took minutes for a run with thousands of findings."""
    columns = [(str(c), _values(frame[c])) for c in frame.columns]
    return [{c: v for c, values in columns if not _missing(v := values[i])} for i in range(len(frame))]


class _Lines:
    """Each row's JSON line, made once: a run's findings share rows (a host's facts are in
    every bundle of its cards and links), and 2,556 link findings converted their rows
    over again. The rows of every bundle are picked first (:meth:`pick`), then read
    together, one read of each kind's parts (:meth:`make`; read per bundle, the 2,556
    findings re-read a part each: 104 s), then looked up per bundle (:meth:`lines`)."""

    def __init__(self, frames: RowFrames) -> None:
        self.frames = frames
        self.made: dict[str, dict[int, str]] = {}
        self.wanted: dict[str, list[np.ndarray]] = {}

    def pick(self, masks: list[tuple[str, np.ndarray]], limit: int) -> tuple[list[tuple[str, np.ndarray]], int]:
        """The positions of the first ``limit`` rows the masks pick, per kind in order (to
        be made by :meth:`make`); and how many rows they pick."""
        total = sum(int(m.sum()) for _, m in masks)
        picked: list[tuple[str, np.ndarray]] = []
        left = limit
        for kind, mask in masks:
            if left <= 0:
                break
            at = np.flatnonzero(mask)[:left]
            left -= len(at)
            picked.append((kind, at))
            self.wanted.setdefault(kind, []).append(at)
        return picked, total

    def make(self) -> None:
        """The lines of every row picked so far and not yet made: one read per kind."""
        for kind, ats in self.wanted.items():
            made = self.made.setdefault(kind, {})
            new = [i for i in np.unique(np.concatenate(ats)).tolist() if i not in made]
            if new:
                records = _records(self.frames.rows_at(kind, new))
                made.update(zip(new, (json.dumps(r, default=str) for r in records)))
        self.wanted.clear()

    def lines(self, picked: list[tuple[str, np.ndarray]]) -> list[str]:
        return [self.made[kind][i] for kind, at in picked for i in at.tolist()]


class _Budget:
    def __init__(self, total: int, files: RunFiles) -> None:
        self.left = total
        self.cut = False
        self.files = files

    def write(self, rel: str, text: str, limit: int = MAX_FILE_BYTES) -> bool:
        data = text.encode("utf-8", errors="replace")
        note = b""
        room = min(limit, self.left)
        if len(data) > room:
            note = f"\n# evidence capped: {len(data) - room} more bytes not kept\n".encode()
            data = data[:max(0, room - len(note))]
            self.cut = True
        if not data and not note:
            return False
        if not self.files.write(rel, data + note):
            return False  # the disk is full: the run's writer keeps the cause for results.json
        self.left -= len(data) + len(note)
        return True


VERSION_PATTERNS = {  # what the tools print about their versions (nvidia-smi -q, dcgmi, ibstat...)
    "driver": re.compile(r"Driver Version\s*:?\s*([0-9][0-9.]*)"),
    "cuda": re.compile(r"CUDA Version\s*:?\s*([0-9][0-9.]*)"),
    "hca firmware": re.compile(r"Firmware version:\s*([0-9][0-9.]*)"),
    "dcgm": re.compile(r"(?i)DCGM\s+version\s*:?\s*([0-9][0-9.]*)"),
}


def tool_provenance(backend: Any) -> dict:
    """The commands the backend ran on the hosts and the versions they printed.

    A backend that renders output only on demand (the mock) is asked for its
    ``provenance_hosts``, one host of each platform, so a run without findings still
    records what its tools said."""
    for h in getattr(backend, "provenance_hosts", lambda: [])():
        backend.raw_outputs(h)
    kept = getattr(backend, "_raw_outputs", None) or {}
    commands: set[str] = set()
    versions: dict[str, set[str]] = defaultdict(set)
    for outputs in kept.values():
        for o in outputs:
            commands.add(o["command"])
            for name, pattern in VERSION_PATTERNS.items():
                versions[name].update(pattern.findall(o["stdout"])[:4])
    return {"commands": sorted(commands), "versions": {k: sorted(v) for k, v in versions.items() if v}}


def collect_evidence(findings: list[Finding], topology: dict | None, rows: RowFrames, out_dir: str | Path,
                     backend: Any = None, progress: Callable[[str], None] = lambda _: None,
                     max_run_bytes: int = MAX_RUN_BYTES, files: RunFiles | None = None,
                     fabric: Fabric | None = None) -> dict | None:
    """Write every finding's bundle and list its files in its ``evidence.files``; return
    the commands run and tool versions seen (the record's ``tools``; None without a
    backend). Every file goes through ``files`` (the run store's writer: inside the run
    directory, never through a link, a full disk kept as the run's write error).
    ``topology``: the record's (a supernode finding's hosts); ``fabric``: the run's (the
    card pairs that cross a cable)."""
    _write_bundles(findings, topology, rows, files or RunFiles(out_dir), backend, progress, max_run_bytes, fabric)
    if backend is not None:  # after the bundles: the mock renders the hosts they asked about
        return tool_provenance(backend)
    return None


# The kinds in a bundle, in the order the layers make them (facts first: few rows, and what
# an operator reads first), any other kind after them by name. Not the order the store first
# wrote each kind's part: that is where a timed flush cut the rows, and with a bundle capped at
# MAX_ROWS two runs of one tree kept different rows (a down host's facts in or out, mock31).
_BUNDLE_ORDER = ("host_fact", "not_run", "p2p", "collective", "rank", "golden")


def _in_bundle_order(kind: str) -> tuple[int, str]:
    return (_BUNDLE_ORDER.index(kind) if kind in _BUNDLE_ORDER else len(_BUNDLE_ORDER), kind)


def _on_paths(f: Finding) -> bool:
    """Whether a finding's bundle holds the pairs whose path crosses its entity (a switch, a cable)."""
    return f.entity_kind == EntityKind.SWITCH or (f.entity_kind == EntityKind.LINK and is_cable(f.entity))


def _write_bundles(findings: list[Finding], topology: dict | None, rows: RowFrames, files: RunFiles, backend: Any,
                   progress: Callable[[str], None], max_run_bytes: int, fabric: Fabric | None = None) -> None:
    if not findings:
        return
    budget = _Budget(max_run_bytes, files)
    whos = {kind: Who(rows, kind) for kind in sorted(rows.kinds, key=_in_bundle_order)}  # read once
    made = _Lines(rows)
    picks = []  # each finding's members and rows, picked before any row is read
    for f in findings:
        cards, hosts = _members(f.entity, f.entity_kind.value, topology)
        if _on_paths(f):  # not two cards: the pairs that cross it
            masks = path_masks(whos, fabric, f.entity, hosts)
        else:
            ends = f.entity.partition(LINK_SEP)
            masks = row_masks(whos, cards, hosts, (ends[0], ends[2]) if f.entity_kind == EntityKind.LINK else None)
        picks.append((cards, hosts, *made.pick(masks, MAX_ROWS)))
    del whos
    made.make()  # every bundle's rows: one read of each kind's parts
    kernel_cache: dict[str, str | None] = {}
    readmes: dict[str, list[str]] = {}
    for f, (cards, hosts, picked, total) in zip(findings, picks):
        entity, kind = f.entity, f.entity_kind.value
        d = f"{EVIDENCE_DIR}/{entity_dir(entity)}"
        listed: list[str] = []
        notes: list[str] = []

        def put(name: str, text: str, what: str, limit: int = MAX_FILE_BYTES) -> None:
            rel = f"{d}/{name}"
            if budget.write(rel, text, limit):
                if rel not in listed:
                    listed.append(rel)
                notes.append(f"{name}: {what}")

        lines = made.lines(picked)
        kept = len(lines)
        if total > MAX_ROWS:
            lines.append(json.dumps({"note": f"evidence capped: {total - MAX_ROWS} more rows not kept"}))
        if lines and _on_paths(f):
            put("rows.jsonl", "\n".join(lines) + "\n", f"{kept} probe rows of the card pairs whose path crosses "
                f"{entity}" + (" and of its NIC's host's facts" if hosts else ""))
        elif lines:
            put("rows.jsonl", "\n".join(lines) + "\n",
                f"{kept} probe rows involving {entity} (pairs, groups, ranks, facts, retest)")
        elif _on_paths(f):
            notes.append(f"no rows.jsonl: no measured card pair's path crosses {entity}" if fabric is not None
                         else "no rows.jsonl: the run's fabric is not known, so no pair is known to cross it")
        for h in sorted(hosts)[:8]:
            outputs = backend.raw_outputs(h) if backend is not None and hasattr(backend, "raw_outputs") else []
            per_tool: dict[str, list[dict]] = defaultdict(list)
            for o in outputs:
                per_tool[o["tool"]].append(o)
            for tool, outs in sorted(per_tool.items()):
                name = f"{safe_name(h)}.{safe_name(tool)}.txt" if len(hosts) > 1 else f"{safe_name(tool)}.txt"
                text = "".join(
                    f"# host: {h}\n# command: {o['command']}\n# exit: {o['exit_code']}\n"
                    + o["stdout"] + ("" if o["stdout"].endswith("\n") or not o["stdout"] else "\n")
                    + (f"# stderr:\n{o['stderr']}\n" if o["stderr"] else "") for o in outs)
                put(name, text, f"raw output of {tool} on {h}, as read by the backend")
            if backend is not None and hasattr(backend, "kernel_log") and (
                    h in kernel_cache or len(kernel_cache) < MAX_KERNEL_HOSTS):
                if h not in kernel_cache:
                    try:
                        kernel_cache[h] = backend.kernel_log(h)
                    except Exception as e:  # noqa: BLE001 - best effort
                        kernel_cache[h] = f"# kernel log not read: {e}\n"
                log = kernel_cache[h]
                if log is not None:
                    name = f"{safe_name(h)}.kernel.log" if len(hosts) > 1 else "kernel.log"
                    put(name, log, f"kernel log lines on {h} about the accelerators (XID, NVRM, AER), last 200")
        put(f"finding-{safe_name(f.rule)}.json", json.dumps(finding_to_json(f), indent=2, default=str) + "\n",
            f"the finding {f.rule} as in results.json")
        readmes.setdefault(d, [f"Evidence for {kind} {entity}\n"]).append(
            f"\n{f.rule} ({f.severity.value}):\n" + "\n".join(f"  {n}" for n in notes) + "\n")
        listed.append(f"{d}/README.txt")
        f.evidence["files"] = listed
    for d, parts in readmes.items():  # small, and written even past the cap: it says what was cut
        files.write(f"{d}/README.txt", "".join(parts) + (
            "\nSome evidence was capped (per-run size limit).\n" if budget.cut else ""))
    if budget.cut:
        progress("evidence: bundles capped at the per-run size limit")
