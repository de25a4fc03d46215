"""What makes a folder a run directory: its ``rows/`` of measurements (one home, read by the
run store, which writes it, and by results.json's readers, which refuse a record of another
run; no imports, so either may read it)."""

from __future__ import annotations

from pathlib import Path

ROWS_DIR = "rows"


def is_run_dir(path: Path) -> bool:
    return (Path(path) / ROWS_DIR).is_dir()
