"""The report format ``json``: results.json (:mod:`sncheck.store.results` writes it)."""

from __future__ import annotations

import os
from typing import Any

from sncheck.model import RunRecord
from sncheck.store.results import write_record


def write(record: RunRecord, rows: Any, path: str | os.PathLike, template_dirs: tuple = ()) -> None:  # noqa: ARG001 -- the report format hook (sncheck.report): the rows stay aside
    """The report formats' hook (sncheck.report.FORMATS): results.json, the rows aside."""
    write_record(path, record)
