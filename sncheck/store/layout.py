"""What makes a folder a run directory: its ``rows/`` of measurements (one home, read by the
run store, which writes it, and by results.json's readers, which refuse a record of another
run; no imports, so either may read it)."""

from __future__ import annotations

import os
from pathlib import Path

ROWS_DIR = "rows"
LOCK_NAME = ".sncheck.lock"  # a run's lock, held while it writes


def is_run_dir(path: Path) -> bool:
    return (Path(path) / ROWS_DIR).is_dir()


def run_around(path: Path) -> Path | None:
    """The run directory ``path`` would be made inside (a directory above it holding a run's rows and
    its lock), or None."""
    parent = Path(os.path.realpath(Path(path).parent))
    for above in (parent, *parent.parents):
        if (above / ROWS_DIR).is_dir() and (above / LOCK_NAME).exists():
            return above
    return None
