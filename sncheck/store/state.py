"""The state store: what sncheck has found and isolated, across runs, in SQLite.

One database per state directory (``--state-dir``, default
``$XDG_STATE_HOME/sncheck`` or ``~/.local/state/sncheck``). Several runs may share
it at once (a nightly stress run and an operator's ``sncheck isolate``), so:

- the journal is WAL (readers never block the one writer);
- ``busy_timeout`` makes a writer wait for the lock instead of failing;
- every write is one ``BEGIN IMMEDIATE`` transaction, taken before any read that
  the write depends on, so two writers never interleave.

The schema carries a version in the ``meta`` table; :data:`MIGRATIONS` lists the
statements that bring a database from one version to the next.

    with StateStore(default_state_dir()) as store:
        store.record_run(results)
        for row in store.current_status():
            print(row["entity"], row["action"], row["since"])
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from sncheck.errors import ConfigError, HarnessError
from sncheck.model import EntityKind, Finding, IsolationStep, RunRecord
from sncheck.store.statedir import DB_NAME, check_files, refuse_foreign_dir
from sncheck.store.setaside import SetAside, SetAsideLog, decode_row, json_object, parse_ts, timestamp

SCHEMA_VERSION = 3
BUSY_TIMEOUT_MS = 30_000
ISOLATION_ACTIONS = ("quarantine", "isolate", "release")
KINDS = tuple(EntityKind)
__all__ = ["DB_NAME", "SCHEMA_VERSION", "SetAside", "StateStore", "default_state_dir", "format_ts", "parse_ts", "utc_now"]

# version -> statements that bring version-1 to it. Append; never edit a shipped entry.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, playbook TEXT, backend TEXT, inventory TEXT,
            started TEXT, finished TEXT, verdict TEXT, results_path TEXT)""",
        """CREATE TABLE findings (
            id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, entity TEXT NOT NULL,
            entity_kind TEXT NOT NULL, layer TEXT, rule TEXT, severity TEXT, message TEXT,
            evidence TEXT NOT NULL DEFAULT '{}', ts TEXT NOT NULL)""",
        """CREATE TABLE isolation (
            id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, entity TEXT NOT NULL,
            entity_kind TEXT NOT NULL,
            action TEXT NOT NULL CHECK (action IN ('quarantine', 'isolate', 'release')),
            reason TEXT, rule TEXT, evidence TEXT NOT NULL DEFAULT '{}',
            applied INTEGER NOT NULL DEFAULT 0, ts TEXT NOT NULL)""",
        """CREATE TABLE baselines (name TEXT PRIMARY KEY, created TEXT NOT NULL, data TEXT NOT NULL)""",
        "CREATE INDEX findings_entity ON findings (entity)",
        "CREATE INDEX findings_run ON findings (run_id)",
        "CREATE INDEX isolation_entity ON isolation (entity, id)",
    ),
    # Version 2: per-run summaries (history, diff, drift, baselines from history). The
    # key list (kind, entity, metric) of a cluster is the same night after night, so it
    # is stored once (summary_keys) and each run keeps only packed float32/int32 columns.
    2: (
        """CREATE TABLE summary_keys (id INTEGER PRIMARY KEY, digest TEXT UNIQUE NOT NULL, keys BLOB NOT NULL)""",
        """CREATE TABLE summaries (run_id TEXT PRIMARY KEY, keys_id INTEGER NOT NULL,
            value BLOB NOT NULL, spread BLOB NOT NULL, n BLOB NOT NULL)""",
    ),
    # Version 3: isolation actions as transactions (sncheck.actions.transaction). A row is
    # written before an action acts ('begun'), marked 'recorded' in the transaction that
    # records the decision, and deleted once the audit has its outcome: a row left behind
    # is a half-done action the next command reconciles.
    3: (
        """CREATE TABLE journal (txn TEXT PRIMARY KEY, state TEXT NOT NULL CHECK (state IN ('begun', 'recorded')),
            request TEXT NOT NULL, ts TEXT NOT NULL)""",
    ),
}


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/sncheck``, else ``~/.local/state/sncheck``."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    # The XDG spec says a relative value is invalid and must be ignored.
    if os.path.isabs(base):
        return Path(base) / "sncheck"
    # $HOME empty or relative (`Environment=HOME=`, `HOME=.`): ~ was '/.local/state' or a folder of the
    # current directory, each with its own isolation record and cap (hostile round 23, H23-02).
    # Unset, ~ is the account's home from the password database.
    home = os.environ.get("HOME")
    if home is not None and not os.path.isabs(home):
        raise ConfigError(f"no state directory: $HOME is {home!r}, not an absolute path, and $XDG_STATE_HOME "
                          "is not set to one; give --state-dir, or set either to an absolute path")
    return Path("~/.local/state").expanduser() / "sncheck"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def format_ts(ts: datetime) -> str:
    """UTC, ISO 8601 with a ``Z``, to the microsecond (sorts as text)."""
    if ts.tzinfo is None:
        raise ValueError(f"timestamp {ts!r} has no time zone")
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class StateStore:
    """The SQLite state of one state directory. Use as a context manager.

    ``path`` is the state directory (created if missing); the database is
    ``<path>/state.db``. One store may be shared by threads (calls are serialised);
    other processes open their own.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.dir = Path(path).expanduser()
        refuse_foreign_dir(self.dir)  # another program's directory: before anything is written
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot create the state directory: {e.strerror}", str(self.dir)) from e
        self.db_path = self.dir / DB_NAME
        self._lock = threading.RLock()
        self.set_aside = SetAsideLog(str(self.db_path))  # rows that did not decode (sncheck status --check)
        check_files(self.db_path)
        try:
            # isolation_level=None: no implicit transactions; _write() opens each one.
            self._db = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_MS / 1000,
                                       isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise ConfigError(f"cannot open the state database: {e}", str(self.db_path)) from e
        try:
            self._db.row_factory = sqlite3.Row
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._refuse_foreign()  # before WAL: switching the journal mode rewrites the file's header
            self._enable_wal()
            self._db.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at checkpoints, never corrupt
            self._migrate()
        except sqlite3.Error as e:
            self._db.close()
            raise ConfigError(f"cannot open the state database: {e}", str(self.db_path)) from e
        except ConfigError:
            self._db.close()
            raise

    def _refuse_foreign(self) -> None:
        """Refuse (ConfigError naming the file) a state.db that is another program's SQLite
        database: a table none of sncheck's versions made, in a file that no newer sncheck
        marked as its own. sncheck would have added its tables and a WAL journal to it."""
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        ours_meta = "meta" in tables and {r[1] for r in self._db.execute("PRAGMA table_info(meta)")} == {"key", "value"}
        foreign = sorted(t for t in tables - OWN_TABLES if not t.startswith("sqlite_")) \
            + (["meta"] if "meta" in tables and not ours_meta else [])
        if not foreign:
            return
        if ours_meta:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and str(row[0]).isdecimal() and int(row[0]) > SCHEMA_VERSION:
                return  # a newer sncheck's tables: _migrate says so
        raise ConfigError(f"is not sncheck's state database (it holds table {foreign[0]!r}"
                          f"{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}): sncheck writes "
                          "nothing into another program's SQLite file; use another --state-dir", str(self.db_path))

    def _enable_wal(self) -> None:
        """Switch to WAL (it persists in the file), retrying while another process holds a lock.

        Changing the journal mode can fail with "database is locked" at once, without
        waiting in the busy handler (e.g. while another process creates the database),
        so it gets its own retry loop within the busy timeout.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        delay = 0.005
        while True:
            try:
                mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as e:
                if not _is_busy(e) or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
        if str(mode).lower() != "wal":
            raise ConfigError(f"the state database cannot use a WAL journal (got {mode!r}); "
                              "put --state-dir on a local filesystem", str(self.db_path))

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; the lock is taken first, so no read in it goes stale."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise HarnessError(f"state store {self.db_path}: {e}") from e
            try:
                yield self._db
            except BaseException as e:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                if isinstance(e, sqlite3.Error):  # a full disk, a locked or corrupt database
                    raise HarnessError(f"state store {self.db_path}: {e}") from e
                raise
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as e:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise HarnessError(f"state store {self.db_path}: the write did not commit: {e}") from e

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as e:
                raise HarnessError(f"state store {self.db_path}: {e}") from e

    def _migrate(self) -> None:
        with self._write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            version = self._version(db)
            if version > SCHEMA_VERSION:
                raise ConfigError(
                    f"the state database has schema version {version}, newer than this sncheck "
                    f"understands ({SCHEMA_VERSION}); upgrade sncheck or use another --state-dir",
                    str(self.db_path))
            for v in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[v]:
                    db.execute(statement)
            if version != SCHEMA_VERSION:
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                           (str(SCHEMA_VERSION),))

    def _version(self, db: sqlite3.Connection) -> int:
        """The schema version in ``meta``; when that row does not decode, the version whose
        tables are all there (the row is set aside, not rewritten)."""
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            return 0
        try:
            return int(row["value"])
        except (TypeError, ValueError):
            have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = 0
            for v in sorted(MIGRATIONS):
                if not TABLES_MADE[v] <= have:
                    break
                version = v
            self.set_aside.note("meta", "key schema_version", f"value {str(row['value'])[:40]!r} is not a "
                                f"version number; read as {version}, the version whose tables are there", whole=False)
            return version

    @property
    def schema_version(self) -> int:
        with self._lock:
            return self._version(self._db)

    # -- writing -----------------------------------------------------------
    def record_run(self, run: RunRecord | Mapping[str, Any], results_path: str | os.PathLike[str] | None = None) -> None:
        """Insert or update a run (keyed by ``run_id``): its record, or the same columns by
        name (``sncheck isolate``'s manual run)."""
        values: tuple[Any, ...]
        if isinstance(run, RunRecord):
            values = (run.run_id, run.playbook, run.backend, run.inventory, run.started, run.finished,
                      run.verdict.value)
        else:
            values = tuple(run.get(k) for k in ("run_id", "playbook", "backend", "inventory", "started",
                                                "finished", "verdict"))
        if not values[0]:
            raise ValueError("results has no run_id")
        with self._write() as db:
            db.execute(
                """INSERT INTO runs (run_id, playbook, backend, inventory, started, finished, verdict, results_path)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (run_id) DO UPDATE SET playbook = excluded.playbook,
                     backend = excluded.backend, inventory = excluded.inventory,
                     started = excluded.started, finished = excluded.finished,
                     verdict = excluded.verdict,
                     results_path = COALESCE(excluded.results_path, runs.results_path)""",
                (*values, os.fspath(results_path) if results_path is not None else None))

    def record_findings(self, run_id: str, findings: Iterable[Finding], ts: datetime | None = None) -> int:
        """Append a run's findings; returns how many."""
        stamp = format_ts(ts or utc_now())
        rows = [(run_id, f.entity, f.entity_kind.value, f.layer, f.rule, f.severity.value, f.message,
                 _json(f.evidence), stamp) for f in findings]
        with self._write() as db:
            db.executemany(
                """INSERT INTO findings (run_id, entity, entity_kind, layer, rule, severity, message, evidence, ts)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows)
        return len(rows)

    def record_action(self, run_id: str, entry: IsolationStep | Mapping[str, Any],
                      evidence: Mapping[str, Any] | None = None, ts: datetime | None = None) -> int:
        """Append one isolation decision (quarantine, isolate or release); returns its row id."""
        d = _step(entry)
        with self._write() as db:
            return _insert_action(db, run_id, d, evidence, ts)

    # -- the journal of isolation transactions (sncheck.actions.transaction) -----
    def begin_txn(self, txn: str, request: Mapping[str, Any]) -> None:
        """Note a transaction before it acts (committed before the caller's first command)."""
        with self._write() as db:
            db.execute("INSERT INTO journal (txn, state, request, ts) VALUES (?, 'begun', ?, ?)",
                       (txn, _json(request), format_ts(utc_now())))

    def commit_txn(self, txn: str, run_id: str, entry: IsolationStep | Mapping[str, Any],
                   evidence: Mapping[str, Any] | None = None, ts: datetime | None = None) -> int:
        """Record a transaction's decision and mark it recorded, in one write: both or neither."""
        d = _step(entry)
        with self._write() as db:
            row = _insert_action(db, run_id, d, evidence, ts)
            db.execute("UPDATE journal SET state = 'recorded' WHERE txn = ?", (txn,))
            return row

    def end_txn(self, txn: str) -> None:
        """The transaction is whole (its outcome is in the audit), or was rolled back."""
        with self._write() as db:
            db.execute("DELETE FROM journal WHERE txn = ?", (txn,))

    def open_txns(self) -> list[dict[str, Any]]:
        """Transactions begun and not ended, oldest first: {txn, state, request, ts}."""
        out = []
        for r in self._read("SELECT * FROM journal ORDER BY ts, txn"):
            request = json_object(r["request"])
            if isinstance(request, str):
                self.set_aside.note("journal", f"txn {r['txn']}", f"request is {request}", whole=True)
                continue
            out.append({"txn": r["txn"], "state": r["state"], "request": request, "ts": r["ts"]})
        return out

    def record_summaries(self, run_id: str, summaries: Iterable[Any]) -> int:
        """Keep a run's summaries (objects with kind, entity, metric, value, spread, n:
        :class:`sncheck.health.summaries.Summary`), replacing any kept before."""
        items = sorted(summaries, key=lambda s: (s.kind, s.entity, s.metric))
        self.record_summary_columns(run_id, [(s.kind, s.entity, s.metric) for s in items],
                                    [s.value for s in items], [s.spread for s in items], [s.n for s in items])
        return len(items)

    def record_summary_columns(self, run_id: str, keys: list[tuple[str, str, str]], values: Iterable[float],
                               spreads: Iterable[float], ns: Iterable[int]) -> None:
        """The same as columns: ``keys`` (kind, entity, metric) and one value, spread and
        count per key. The key list is stored once per distinct list; each run keeps
        three packed columns (float32, float32, int32), compressed."""
        text = "\n".join(f"{k}\t{e}\t{m}" for k, e, m in keys).encode()
        digest = hashlib.sha256(text).hexdigest()
        value = zlib.compress(array("f", values).tobytes(), 6)
        spread = zlib.compress(array("f", spreads).tobytes(), 6)
        n = zlib.compress(array("i", [min(int(x), 2**31 - 1) for x in ns]).tobytes(), 6)
        with self._write() as db:
            row = db.execute("SELECT id FROM summary_keys WHERE digest = ?", (digest,)).fetchone()
            if row:
                keys_id = int(row["id"])
            else:
                keys_id = int(db.execute("INSERT INTO summary_keys (digest, keys) VALUES (?, ?)",
                                         (digest, zlib.compress(text, 9))).lastrowid or 0)
            db.execute("INSERT OR REPLACE INTO summaries (run_id, keys_id, value, spread, n) VALUES (?, ?, ?, ?, ?)",
                       (run_id, keys_id, value, spread, n))

    def _summary_keys(self, keys_id: int) -> list[tuple[str, str, str]] | None:
        """The key list ``keys_id``; None when it is missing or does not decode (noted)."""
        cache = self.__dict__.setdefault("_keys_cache", {})
        if keys_id not in cache:
            rows = self._read("SELECT keys FROM summary_keys WHERE id = ?", (keys_id,))
            try:
                text = zlib.decompress(rows[0]["keys"]).decode()
                keys = [tuple(line.split("\t", 2)) for line in text.split("\n")] if text else []
                if any(len(k) != 3 for k in keys):
                    raise ValueError("a key is not kind, entity and metric")
            except (IndexError, TypeError, ValueError, zlib.error) as e:
                self.set_aside.note("summary_keys", f"id {keys_id}", f"does not decode ({str(e)[:60] or 'missing'})",
                                    whole=True)
                keys = None
            cache[keys_id] = keys
        return cache[keys_id]

    def run_summaries(self, run_id: str) -> dict[tuple[str, str, str], tuple[float, float, int]]:
        """(kind, entity, metric) -> (value, spread, n) of one run; empty if none kept."""
        rows = self._read("SELECT * FROM summaries WHERE run_id = ?", (run_id,))
        if not rows:
            return {}
        r = rows[0]
        keys = self._summary_keys(r["keys_id"]) if isinstance(r["keys_id"], int) else None
        if keys is None:  # its key list is set aside (noted there)
            return {}
        try:
            values, spreads, ns = (array(t, zlib.decompress(r[c])) for t, c in
                                   (("f", "value"), ("f", "spread"), ("i", "n")))
            if not len(values) == len(spreads) == len(ns) == len(keys):
                raise ValueError(f"{len(values)} values for {len(keys)} keys")
        except (TypeError, ValueError, zlib.error) as e:
            self.set_aside.note("summaries", f"run_id {run_id}", f"packed columns do not decode ({str(e)[:60]})",
                                whole=True)
            return {}
        return {k: (float(v), float(s), int(n)) for k, v, s, n in zip(keys, values, spreads, ns)}

    def summary_runs(self, inventory: str | None = None, backend: str | None = None,
                     verdict: str | None = None) -> list[dict[str, Any]]:
        """Runs that have summaries, oldest first (optionally of one inventory/backend/verdict). Oldest as
        recorded, never by the time a run claims: a host whose clock ran years ahead made its run the
        newest for good (``baseline make --last 1`` took it; hostile round 14)."""
        sql = "SELECT r.* FROM runs r JOIN summaries s ON s.run_id = r.run_id WHERE 1 = 1"
        params: list[Any] = []
        for col, val in (("inventory", inventory), ("backend", backend), ("verdict", verdict)):
            if val is not None:
                sql += f" AND r.{col} = ?"
                params.append(val)
        return [dict(r) for r in self._read(sql + " ORDER BY r.rowid", params)]

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return dict(rows[0]) if rows else None

    def findings_of_run(self, run_id: str) -> list[dict[str, Any]]:
        return self._findings(self._read("SELECT * FROM findings WHERE run_id = ? ORDER BY id", (run_id,)))

    def _findings(self, rows: Iterable[sqlite3.Row]) -> list[dict[str, Any]]:
        return [d for r in rows if (d := decode_row(r, "findings", KINDS, None, self.set_aside)) is not None]

    def save_baseline(self, name: str, data: Any) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO baselines (name, created, data) VALUES (?, ?, ?)",
                       (name, format_ts(utc_now()), json.dumps(data, sort_keys=True)))

    # -- reading -----------------------------------------------------------
    def load_baseline(self, name: str) -> Any | None:
        """The baseline kept as ``name``; None when there is none or it does not decode (noted)."""
        rows = self._read("SELECT data FROM baselines WHERE name = ?", (name,))
        if not rows:
            return None
        data = json_object(rows[0]["data"])
        if isinstance(data, str):
            self.set_aside.note("baselines", f"name {name}", f"data is {data}", whole=True)
            return None
        return data

    def current_status(self) -> list[dict[str, Any]]:
        """Entities whose latest decision is quarantine or isolate (not released).

        Each: entity, entity_kind, action, since (ts of that decision), run_id, rule,
        reason, applied, evidence. Ordered by entity kind, then entity.
        """
        rows = self._read(
            """SELECT i.* FROM isolation i
               JOIN (SELECT entity, MAX(id) AS id FROM isolation GROUP BY entity) latest ON latest.id = i.id
               ORDER BY i.entity_kind, i.entity""")
        out = []
        for r in rows:
            d = self._action(r)
            if d is None:  # the latest row does not decode: the latest one that does is current
                older = self._read("SELECT * FROM isolation WHERE entity = ? AND id < ? ORDER BY id DESC",
                                   (r["entity"], r["id"]))
                d = next((x for x in map(self._action, older) if x is not None), None)
            if d is not None and d["action"] != "release":
                out.append({**d, "since": self._since(r["entity"], d)})
        return sorted(out, key=lambda d: (d["entity_kind"], d["entity"]))

    def _since(self, entity: str, latest: dict[str, Any]) -> str:
        """When ``entity`` entered its current state: the first of the unbroken decisions with
        the latest one's action, so isolating an isolated host again keeps its first time."""
        rows = self._read(
            """SELECT * FROM isolation WHERE entity = ? AND id > COALESCE(
                 (SELECT MAX(id) FROM isolation WHERE entity = ? AND action != ?), 0) ORDER BY id""",
            (entity, entity, latest["action"]))
        first = next((x for x in map(self._action, rows) if x is not None), latest)
        return str(first["ts"])

    def history(self, entity: str | None = None) -> list[dict[str, Any]]:
        """Every isolation decision about ``entity`` (all entities if None), oldest first."""
        if entity is None:
            rows = self._read("SELECT * FROM isolation ORDER BY id")
        else:
            rows = self._read("SELECT * FROM isolation WHERE entity = ? ORDER BY id", (entity,))
        return [d for d in map(self._action, rows) if d is not None]

    def _action(self, r: sqlite3.Row) -> dict[str, Any] | None:
        d = decode_row(r, "isolation", KINDS, ISOLATION_ACTIONS, self.set_aside)
        if d is None:
            return None
        return {"entity": d["entity"], "entity_kind": d["entity_kind"], "action": d["action"], "ts": d["ts"],
                "run_id": d["run_id"], "rule": d["rule"], "reason": d["reason"], "applied": bool(d["applied"]),
                "evidence": d["evidence"]}

    def findings_for(self, entity: str) -> list[dict[str, Any]]:
        """Every finding recorded about ``entity``, oldest first."""
        return self._findings(self._read("SELECT * FROM findings WHERE entity = ? ORDER BY id", (entity,)))

    def last_release(self, entity: str) -> datetime | None:
        """When ``entity`` was last put back: a release that ended a quarantine or an isolation.
        A release of what was never taken out is on record but puts nothing back (an operator's
        such release made the next first offence a 'repeat offender': hostile round 9)."""
        rows = self._read(
            """SELECT i.id, i.ts FROM isolation i WHERE i.entity = ? AND i.action = 'release'
                 AND (SELECT p.action FROM isolation p WHERE p.entity = i.entity AND p.id < i.id
                      ORDER BY p.id DESC LIMIT 1) IN ('quarantine', 'isolate')
               ORDER BY i.id DESC""", (entity,))
        for r in rows:  # newest first; a release whose time does not decode is passed over (noted)
            ts = timestamp(r["ts"])
            if not isinstance(ts, str):
                return ts
            self.set_aside.note("isolation", f"id {r['id']}", f"ts {str(r['ts'])[:40]!r} is {ts}", whole=False)
        return None

    def runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Recorded runs, newest (the last recorded) first: see :meth:`summary_runs`."""
        sql = "SELECT * FROM runs ORDER BY rowid DESC"
        rows = self._read(sql + " LIMIT ?", (limit,)) if limit is not None else self._read(sql)
        return [dict(r) for r in rows]

    def check(self) -> list[SetAside]:
        """Decode every row of every table; the rows that do not decode (set aside)."""
        self.schema_version
        self.history()
        self._findings(self._read("SELECT * FROM findings ORDER BY id"))
        for r in self._read("SELECT name FROM baselines ORDER BY name"):
            self.load_baseline(r["name"])
        for r in self._read("SELECT run_id FROM summaries ORDER BY run_id"):
            self.run_summaries(r["run_id"])
        for r in self._read("SELECT id FROM summary_keys ORDER BY id"):
            self._summary_keys(r["id"])
        for r in self._read("SELECT rowid, run_id FROM runs ORDER BY rowid"):
            if not isinstance(r["run_id"], str) or not r["run_id"]:
                self.set_aside.note("runs", f"rowid {r['rowid']}", f"run_id {r['run_id']!r} is not a run id", whole=True)
        return list(self.set_aside.items.values())

    def count(self, table: str) -> int:
        if table not in ("runs", "findings", "isolation", "baselines", "summaries", "summary_keys"):
            raise ValueError(f"unknown table {table!r}")
        return int(self._read(f"SELECT COUNT(*) AS n FROM {table}")[0]["n"])


# The database and the files SQLite keeps beside it. SQLite removes and recreates the -wal
# and -shm itself: a FIFO planted as state.db-wal was replaced by `sncheck status`, and made
# `isolate --apply` exit 3 ("disk I/O error") after the lock was taken.


def tables_made(migrations: Mapping[int, Sequence[str]]) -> dict[int, frozenset[str]]:
    """Version -> the tables its statements make, as SQLite reads them (run in a database in
    memory), never words picked out of SQL text ('CREATE TABLE IF NOT EXISTS t', "t", main.t)."""
    out: dict[int, frozenset[str]] = {}
    with closing(sqlite3.connect(":memory:")) as db:
        for v in sorted(migrations):
            for statement in migrations[v]:
                db.execute(statement)
            now = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            out[v] = frozenset(t for t in now if not t.startswith("sqlite_")).difference(*out.values())
    return out


TABLES_MADE = tables_made(MIGRATIONS)  # every table a version makes: any other is another program's
OWN_TABLES = frozenset({"meta"}.union(*TABLES_MADE.values()))


def _is_busy(e: sqlite3.OperationalError) -> bool:
    text = str(e).lower()
    return "locked" in text or "busy" in text


def _insert_action(db: sqlite3.Connection, run_id: str, d: Mapping[str, Any], evidence: Mapping[str, Any] | None,
                   ts: datetime | None) -> int:
    if d.get("action") not in ISOLATION_ACTIONS:
        raise ValueError(f"isolation action must be one of {', '.join(ISOLATION_ACTIONS)}, got {d.get('action')!r}")
    cur = db.execute(
        """INSERT INTO isolation (run_id, entity, entity_kind, action, reason, rule, evidence, applied, ts)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (run_id, d["entity"], d["entity_kind"], d["action"], d.get("reason"), d.get("rule"),
         _json(evidence), int(bool(d.get("applied"))), format_ts(ts or utc_now())))
    return int(cur.lastrowid or 0)


def _json(value: Mapping[str, Any] | None) -> str:
    return json.dumps(dict(value or {}), sort_keys=True, default=str)


def _step(entry: IsolationStep | Mapping[str, Any]) -> dict[str, Any]:
    """An isolation step as the store's columns (a step, or the same keys by name)."""
    if isinstance(entry, IsolationStep):
        return {"entity": entry.entity, "entity_kind": entry.entity_kind.value, "action": entry.action.value,
                "reason": entry.reason, "rule": entry.rule, "applied": entry.applied}
    return dict(entry)
