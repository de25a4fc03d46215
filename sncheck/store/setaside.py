"""Rows of the state store that do not decode: set aside, reported once, never fatal.

A state database is shared by years of runs, other versions of sncheck and, now and then,
a hand with ``sqlite3``. One row that does not decode (evidence that is not JSON, a
timestamp that is not one, an entity kind sncheck does not know, a packed summary cut
short) must not stop every command. Each decoder here returns the row's value, or notes
the row in a :class:`SetAsideLog` and returns what the caller goes on with:

* **left out** (``whole``): the row's identity does not decode (no entity, an unknown kind
  or action): the row is read as if absent, and the latest decodable decision about the
  entity is the current one;
* **kept, value replaced**: the decision decodes but a value of it does not (its evidence,
  its timestamp): the decision still counts, so an isolated host whose evidence was
  garbled stays isolated (out of the hostfile, inside the fleet cap), with empty evidence.

The row itself is never changed or deleted (kept for whoever repairs it); each is reported
once per process as a warning naming the table and the key, and ``sncheck status --check``
lists them all.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

_REPORTED: set[tuple[str, str, str]] = set()  # (database, table, key) already warned about in this process


@dataclass(frozen=True)
class SetAside:
    table: str
    key: str          # "id 12", "run_id 2026...", "name default", "key schema_version"
    problem: str
    whole: bool       # True: the row is left out; False: a value of it is replaced

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "key": self.key, "problem": self.problem,
                "row": "left out" if self.whole else "kept, value replaced"}


class SetAsideLog:
    """The rows of one database set aside so far (by table and key)."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.items: dict[tuple[str, str], SetAside] = {}

    def note(self, table: str, key: str, problem: str, whole: bool) -> None:
        item = SetAside(table, key, problem, whole)
        self.items.setdefault((table, key), item)
        if (self.db, table, key) not in _REPORTED:
            _REPORTED.add((self.db, table, key))
            what = "left out" if whole else "kept, with the value replaced"
            # straight to stderr, like the CLI's own warnings: every command that opens the
            # store (status, run, watch, isolate) says it once, whatever its output is
            print(f"sncheck: warning: state store {self.db}: table {table}, {key}: {problem}; row {what} "
                  "(sncheck status --check lists such rows)", file=sys.stderr)


def parse_ts(text: str) -> datetime:
    """Read a timestamp written by ``format_ts`` (or any ISO 8601 with a zone)."""
    ts = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def json_object(value: Any) -> dict[str, Any] | str:
    """A JSON object's text decoded, or why it is not one."""
    if not isinstance(value, (str, bytes)):
        return f"not JSON text ({type(value).__name__})"
    try:
        data = json.loads(value)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, bad UTF-8, nested too deep
        return f"not JSON ({str(e)[:80]})"
    return data if isinstance(data, dict) else f"JSON {type(data).__name__}, not an object"


def timestamp(value: Any) -> datetime | str:
    if not isinstance(value, str):
        return f"not a timestamp ({type(value).__name__})"
    try:
        return parse_ts(value)
    except (ValueError, OverflowError) as e:
        return f"not a timestamp ({str(e)[:60]})"


def decode_row(row: Mapping[str, Any] | sqlite3.Row, table: str, kinds: tuple[str, ...], actions: tuple[str, ...] | None,
               book: SetAsideLog) -> dict[str, Any] | None:
    """An ``isolation`` or ``findings`` row as a dict, its evidence decoded and its ``ts`` a
    string; None when its identity does not decode (noted, whole)."""
    key = f"id {row['id']}"
    entity, kind = row["entity"], row["entity_kind"]
    if not isinstance(entity, str) or not entity.strip():
        book.note(table, key, f"entity {entity!r} is not a name", whole=True)
        return None
    if kind not in kinds:
        book.note(table, key, f"entity_kind {kind!r} is not one of {', '.join(kinds)}", whole=True)
        return None
    if actions is not None and (row["action"] not in actions or row["applied"] not in (0, 1)):
        book.note(table, key, f"action {row['action']!r} / applied {row['applied']!r} do not decode", whole=True)
        return None
    out = dict(row)
    evidence = json_object(row["evidence"])
    if isinstance(evidence, str):
        book.note(table, key, f"evidence is {evidence}", whole=False)
        evidence = {}
    out["evidence"] = evidence
    ts = timestamp(row["ts"])
    if isinstance(ts, str):
        book.note(table, key, f"ts {str(row['ts'])[:40]!r} is {ts}", whole=False)
        out["ts"] = str(row["ts"]) if isinstance(row["ts"], str) else ""
    return out
