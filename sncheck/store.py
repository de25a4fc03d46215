"""The run directory: rows appended as they arrive, results written atomically."""

from __future__ import annotations

import json
import math
import secrets
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .report.json_out import write_json


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


def default_out_dir(run_id: str) -> Path:
    return Path("runs") / run_id


class RunStore:
    """``rows.jsonl`` gets every measurement as it arrives and is flushed per row, so a
    killed run keeps what it measured; ``results.json`` is replaced atomically."""

    def __init__(self, out_dir: Path) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rows_path = self.dir / "rows.jsonl"
        self._fh = open(self.rows_path, "a", encoding="utf-8")
        self.rows: list[dict] = []

    def emit(self, row: dict) -> None:
        # Rows are flat: clean only the top level (nested values are written as they are).
        flat = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
        self._fh.write(json.dumps(flat, default=str) + "\n")
        self._fh.flush()
        self.rows.append(row)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    def write_results(self, results: dict) -> Path:
        path = self.dir / "results.json"
        write_json(path, results)
        return path

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read_rows(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / "rows.jsonl"
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # the last line of a killed run may be cut
    return out
