"""Read a directory of in-job dumps into rows.

Each file is recognised by its content, not its name:

* **Flight Recorder** (PyTorch): the JSON of ``_dump_fr_trace_json`` or the pickle of
  ``_dump_fr_trace`` / a watchdog dump (``TORCH_FR_DUMP_TEMP_FILE``): a mapping with
  ``version`` and ``entries``. It does not say whose it is: the rank comes from the file
  name (``fr-<job>-rank<R>.json`` from :mod:`sncheck.watch.torch`, or the trailing
  number torch's own dump names end in), the job from ``fr-<job>-``. Pickles are read
  with an unpickler that builds plain data only (no class, no function: a dump is never
  a way to run code).
* **NCCL RAS** status, text or JSON (:mod:`sncheck.vendors.nccl_ras`).
* **NCCL Inspector**: a stream of JSON objects with ``header`` and ``coll_perf`` (or
  ``p2p_perf``), read by :mod:`sncheck.vendors.nccl_inspector` (the ``nccl-inspector`` view's).
* **nccl-tests** ``-J`` output: an object with ``config`` and ``results``.

A file that is none of these, or is cut short, is an :class:`Unreadable` (a finding,
never silently skipped); the other files are still read. So is one past a bound of
:mod:`sncheck.watch.bounded` (too many objects or shared references, nested too deep or
containing itself, a number that is not finite or beyond 64 bits) and a Flight Recorder
entry whose time or ids are not non-negative 64-bit integers: :func:`read_dump` returns
an Unreadable for whatever a file holds, and never raises.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sncheck.vendors import nccl_inspector as inspector
from sncheck.vendors import nccl_ras as ras
from sncheck.config.fileio import read_input
from sncheck.errors import ConfigError
from sncheck.watch.bounded import INT64, DumpRefused, check_tree, json_documents, load_pickle
from sncheck.watch import frtime
from sncheck.vendors.delivery import decode
from sncheck.vendors.parsers import strip_source_header

MAX_DUMP_BYTES = 64 << 20    # a Flight Recorder of 20k entries is ~10 MB of JSON; parsed, a dump takes ~10x its size
# Inspector's JSON log grows all job long (200-500 B a collective): only its last part is
# read, so following a long job stays bounded in memory and time.
INSPECTOR_TAIL_BYTES = 16 << 20
_FR_NAME = re.compile(r"^fr-(?P<job>.+)-rank(?P<rank>\d+)\.(?:json|pkl|pickle)$")
_TRAILING_RANK = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle))?$")
RANK_MAP_NAMES = ("ranks.json",)


def shown_name(path: Path) -> str:
    """A dump's file name as a record can hold it: bytes that are not UTF-8 (a file named in a
    Latin-1 locale) as ``\\xNN``. ``Path.name`` keeps them as lone surrogates, which no JSON,
    Parquet or report can write: such a name made ``watch`` an internal error, exit 3, every
    other dump unjudged (hostile round 21, H21-09)."""
    return os.fsencode(path.name).decode("utf-8", "backslashreplace")


@dataclass
class Dump:
    path: Path
    format: str                 # flight_recorder | nccl_ras | nccl_inspector | nccl_tests
    data: object
    rank: int | None = None
    job: str | None = None
    mtime_ns: int = 0
    notes: list[str] = field(default_factory=list)   # part of it unreadable
    info: list[str] = field(default_factory=list)    # read, with something left out
    _fr: tuple | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return shown_name(self.path)

    def fr(self) -> tuple[list[dict], list[dict], list[dict]]:
        """:func:`fr_rows` of a Flight Recorder dump, computed once."""
        if self._fr is None:
            self._fr = fr_rows(self)
        return self._fr


@dataclass
class Unreadable:
    path: Path
    reason: str

    @property
    def name(self) -> str:
        return shown_name(self.path)


def dump_files(directory: Path, skip: tuple[Path, ...] = ()) -> list[Path]:
    """The candidate files of a directory: not hidden (a helper's temp files start with a
    dot), not the rank map, not a sub-directory; sorted by name. A FIFO, device, socket or
    dangling link or a symlink loop is a candidate too: :func:`read_dump` refuses it without opening it, so it
    is an unreadable dump (a finding), never a dump silently not judged."""
    skipped = {os.path.realpath(p) for p in skip}  # realpath, not resolve(): a symlink loop is a candidate, no error
    return sorted(p for p in directory.iterdir()
                  if not p.is_dir() and not p.name.startswith(".") and p.name not in RANK_MAP_NAMES
                  and os.path.realpath(p) not in skipped)


def read_dump(path: Path) -> Dump | Unreadable:
    """The dump at ``path``, or why it is unreadable: never raises, whatever the file holds."""
    try:
        return _read_dump(path)
    except DumpRefused as e:
        return Unreadable(path, str(e))
    except (RecursionError, MemoryError) as e:
        return Unreadable(path, f"too large or nested too deep to read ({type(e).__name__})")
    except Exception as e:  # noqa: BLE001 -- one file never stops the watcher: it is a finding, the rest are judged
        return Unreadable(path, f"cannot be read ({type(e).__name__}: {str(e)[:80]})")


def _read_dump(path: Path) -> Dump | Unreadable:
    try:
        st = path.stat()
        raw = _inspector_tail(path) if st.st_size > INSPECTOR_TAIL_BYTES else None
        if raw is None and st.st_size > MAX_DUMP_BYTES:
            return Unreadable(path, f"{st.st_size} bytes, more than the {MAX_DUMP_BYTES >> 20} MB a dump may be")
        if raw is None:
            raw = read_input(path, "dump", "dump", limit=MAX_DUMP_BYTES)  # regular files only, within the cap
    except OSError as e:
        return Unreadable(path, f"cannot read: {e.strerror or e}")
    except ConfigError as e:
        return Unreadable(path, e.message)
    if not raw.strip():
        return Unreadable(path, "empty file")
    rank, job = _identity(shown_name(path))
    if rank is not None and rank >= 1 << 31:
        return Unreadable(path, f"its name gives rank {str(rank)[:24]}, beyond any job's ranks")
    if raw[:1] == b"\x80":  # a pickle (protocol 2+)
        try:
            data = load_pickle(raw)
        except DumpRefused:
            raise
        except Exception as e:  # noqa: BLE001 -- any failure of a truncated or hostile pickle: not readable
            return Unreadable(path, f"not a readable pickle ({type(e).__name__}: {str(e)[:80]})")
        check_tree(data)
        return _flight_recorder(path, data, rank, job, st.st_mtime_ns)
    # as `sncheck parse` reads a file (one home: a UTF-8 BOM dropped, UTF-16 by its BOM, Windows-1252);
    # bytes that are none of them (gzip, a core file) stay binary data, never text read round them
    text = decode(raw)
    if "\ufffd" in text and "\ufffd".encode() not in raw:
        return Unreadable(path, "neither JSON, a pickle nor text (binary data)")
    text = _strip_source(text)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        objects, tail = json_documents(stripped)
        for obj in objects:
            check_tree(obj)
        if not objects:
            return Unreadable(path, f"not valid JSON ({tail.why})")
        first = objects[0]
        if inspector.is_record(first):
            dump = Dump(path, "nccl_inspector", objects, rank, job, st.st_mtime_ns)
            if tail.why:
                dump.notes.append(inspector.unread(tail, len(objects)))
            records = [r for o in objects if inspector.is_record(o) and (r := inspector.record(o)) is not None]
            if blank := inspector.no_bandwidth(records):  # judged on no value: never a pass
                dump.notes.append(blank)
            return dump
        if tail.why or len(objects) > 1:
            return Unreadable(path, f"not valid JSON ({tail.why or 'more than one document'})")
        if isinstance(first, dict) and "entries" in first and "version" in first:
            return _flight_recorder(path, first, rank, job, st.st_mtime_ns)
        if isinstance(first, dict) and "communicators" in first and "nccl_version" in first:
            try:
                return Dump(path, "nccl_ras", ras.parse_json(first), rank, job, st.st_mtime_ns)
            except ValueError as e:
                return Unreadable(path, f"NCCL RAS JSON: {e}")
        if isinstance(first, dict) and "results" in first and "config" in first:
            return Dump(path, "nccl_tests", first, rank, job, st.st_mtime_ns)
        return Unreadable(path, "JSON, but not a dump sncheck knows (Flight Recorder, NCCL RAS, Inspector, nccl-tests)")
    if ras.looks_like_text(text):
        parsed = ras.parse_text(text)
        if parsed["errors"]:
            return Unreadable(path, f"NCCL RAS text: {parsed['errors'][0]}")
        return Dump(path, "nccl_ras", parsed, rank, job, st.st_mtime_ns)
    return Unreadable(path, "not a dump sncheck knows (Flight Recorder JSON or pickle, NCCL RAS, Inspector, nccl-tests)")


def _inspector_tail(path: Path) -> bytes | None:
    """The last INSPECTOR_TAIL_BYTES of a big Inspector log, from its first whole record;
    None when the file is not an Inspector log."""
    with path.open("rb") as f:
        head = f.read(64 << 10)
        if not any(f'"{k}"'.encode() in head for k in inspector.PERF_KEYS) or b'"header"' not in head:
            return None
        f.seek(-INSPECTOR_TAIL_BYTES, 2)
        tail = f.read()
    start = tail.find(b'\n{')
    return tail[start + 1:] if start >= 0 else None


def _strip_source(text: str) -> str:
    return strip_source_header(text)  # captures in the project carry # source: lines


def rank_of_name(name: str) -> int | None:
    """The rank a dump's file name gives (None when it gives none)."""
    return _identity(name)[0]


def _identity(name: str) -> tuple[int | None, str | None]:
    if m := _FR_NAME.match(name):
        return int(m["rank"]), m["job"]
    if m := _TRAILING_RANK.search(name):
        return int(m[1]), None
    return None, None


def _flight_recorder(path: Path, data, rank, job, mtime_ns) -> Dump | Unreadable:
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list) or "version" not in data:
        return Unreadable(path, "a pickle, but not a Flight Recorder dump (no version and entries)")
    if rank is None:
        return Unreadable(path, "a Flight Recorder dump whose rank is unknown (name it fr-<job>-rank<R>.json, "
                                "or keep torch's trailing rank number)")
    for i, e in enumerate(data.get("entries") or []):
        if not isinstance(e, dict):
            continue
        for key in _FR_COUNTS:
            v = e.get(key)
            if v is not None and not _count(v):
                what = "a time in nanoseconds" if key.startswith("time_") else "a count from 0"
                return Unreadable(path, f"entry {i}: {key} is {str(v)[:24]}, not {what} (a 64-bit integer)")
    return Dump(path, "flight_recorder", data, rank, job, mtime_ns)


# Flight Recorder entry fields read as integers: torch writes int64 there; anything else
# (Infinity, NaN, 2**70, a negative time) cannot be placed on a clock or in a sequence.
_FR_COUNTS = ("time_created_ns", "collective_seq_id", "p2p_seq_id", "record_id")


def _count(v: object) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, float):
        return v.is_integer() and 0 <= v < INT64
    return isinstance(v, int) and 0 <= v < INT64


# ------------------------------------------------------------------ rows
# NCCL's point-to-point entries name their peer in the profiling name, in group ranks:
# "nccl:send 1->2" (from 1 to 2), "nccl:recv 3<-0" (3 from 0) (torch's flight_recorder
# components/types.py reads them the same way). gloo records no point-to-point entry.
_P2P_NAME = re.compile(r"^\S+:(send|recv) (\d+)(->|<-)(\d+)$")


def fr_rows(dump: Dump) -> tuple[list[dict], list[dict], list[dict]]:
    """One row per collective a rank recorded (``fr``), one per process group it is in
    (``fr_pg``: its last collective as its entries count them, the dump's time), one per
    point-to-point op (``fr_p2p``).

    The last collective is the entries' own ``collective_seq_id``, never ``pg_status``:
    gloo counts every op there (``last_enqueued_collective`` is the op id, point-to-point
    ops included) and NCCL writes the point-to-point sequence into it after a send or a
    recv, so two healthy ranks of a pipeline would differ there. A point-to-point entry
    carries the collective count it follows, not its own: it never counts as a
    collective. When a group's sequence starts again inside one dump (its ids go down: the
    group was made anew, or the process restarted into the same file), only the entries
    after the last restart are this run's."""
    data = dump.data if isinstance(dump.data, dict) else {}
    raw = [e for e in data.get("entries") or [] if isinstance(e, dict)]
    members = _pg_members(data)
    ids = [e.get("record_id") for e in raw]
    int_ids = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    # 0: the buffer still holds this rank's first record (nothing was dropped); -1: unknown
    first_record = min(int_ids) if ids and len(int_ids) == len(ids) else -1
    by_pg: dict[str, list[dict]] = {}
    p2p = []
    for e in raw:
        pg = e.get("process_group") or ("?", "?")
        name = str(pg[0]) if isinstance(pg, (list, tuple)) and pg else str(pg)
        desc = str(pg[1]) if isinstance(pg, (list, tuple)) and len(pg) > 1 else ""
        if e.get("is_p2p"):
            if row := _p2p_row(dump, e, name, desc, members.get(name)):
                p2p.append({**row, "first_record": first_record, "dump_ns": dump.mtime_ns})
            continue
        seq = e.get("collective_seq_id")
        if not isinstance(seq, int) or isinstance(seq, bool):
            continue
        sizes = json.dumps([e.get("input_sizes"), e.get("output_sizes"), e.get("input_dtypes")], separators=(",", ":"))
        by_pg.setdefault(name, []).append({
            "pg": name, "pg_desc": desc, "rank": dump.rank, "seq": seq, "op": str(e.get("profiling_name") or ""),
            "sizes": sizes, "created_ns": _int_ns(e.get("time_created_ns")), "state": str(e.get("state") or ""),
            "dump": dump.name, **frtime.entry_times(e)})
    entries, pgs = [], []
    for name, rows in by_pg.items():
        start = 0
        for i in range(1, len(rows)):
            if rows[i]["seq"] < rows[i - 1]["seq"]:
                start = i
        if start:
            dump.info.append(f"group {name}: its collective ids start again after entry {start} (a new group or "
                              f"a restarted process): the {start} entries before are left out")
        rows = rows[start:]
        entries += rows
        pgs.append({"pg": name, "rank": dump.rank, "last_seq": max(r["seq"] for r in rows),
                    "first_seq": min(r["seq"] for r in rows), "dump_ns": dump.mtime_ns, "dump": dump.name})
    return entries, pgs, p2p


def _pg_members(data: dict) -> dict[str, list[int]]:
    """Each group's global ranks, in group-rank order, from ``pg_config`` (NCCL writes
    them; gloo writes none)."""
    out = {}
    for name, cfg in (data.get("pg_config") or {}).items() if isinstance(data.get("pg_config"), dict) else ():
        ranks = cfg.get("ranks") if isinstance(cfg, dict) else None
        if isinstance(ranks, str):
            try:
                ranks = json.loads(ranks)
            except json.JSONDecodeError:
                ranks = None
        if isinstance(ranks, list) and ranks and all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
            out[str(name)] = sorted(ranks)
    return out


def _p2p_row(dump: Dump, e: dict, pg: str, desc: str, members: list[int] | None) -> dict | None:
    m = _P2P_NAME.match(str(e.get("profiling_name") or ""))
    if not m:
        return None  # a coalesced batch's own entry: its sends and recvs are entries of their own
    kind, a, b = m[1], int(m[2]), int(m[4])
    src, dst = (a, b) if kind == "send" else (b, a)
    peer_local = dst if kind == "send" else src

    def glob(local: int) -> int | None:
        if members is not None:
            return members[local] if local < len(members) else None
        return local if desc == "default_pg" or pg == "0" else None  # the default group: group rank = global rank

    return {"pg": pg, "rank": dump.rank, "op": kind, "peer": glob(peer_local), "peer_local": peer_local,
            "seq": _int_ns(e.get("p2p_seq_id")), "created_ns": _int_ns(e.get("time_created_ns")),
            "state": str(e.get("state") or ""), "sizes": json.dumps(e.get("input_sizes"), separators=(",", ":")),
            "dump": dump.name}


def _int_ns(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def inspector_rows(dump: Dump) -> list[dict]:
    return inspector.rows(dump.data if isinstance(dump.data, list) else [], dump.name)


def nccl_tests_rows(dump: Dump) -> list[dict]:
    d = dump.data if isinstance(dump.data, dict) else {}
    args = d.get("args") or []
    name = Path(str(args[0])).name.removesuffix("_perf") if args else "?"
    devices = ((d.get("config") or {}).get("devices") or []) if isinstance(d.get("config"), dict) else []
    out = []
    for r in d.get("results") or []:
        if not isinstance(r, dict):
            continue
        best = max((_num((r.get(k) or {}).get("bus_bw")) or 0.0 for k in ("out_of_place", "in_place")
                    if isinstance(r.get(k), dict)), default=None)
        out.append({"comm": f"nccl-tests:{dump.name}", "source": "nccl_tests", "collective": name,
                    "size_bytes": _num(r.get("size")), "busbw_GBps": best, "rank": None,
                    "n_ranks": len(devices) or None, "host": None, "device": None, "dump": dump.name,
                    "members": json.dumps([[x.get("hostname"), x.get("device")] for x in devices if isinstance(x, dict)])})
    return out


def _num(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
