"""Renderers: one findings table (the results envelope) plus the rows, many formats.

Each renderer is a function ``(results, rows, path, template_dirs=()) -> None`` that
writes one file (only the HTML renderer uses ``template_dirs``).
A new output format is a module here and one line in ``RENDERERS``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pandas as pd

from sncheck.errors import ConfigError
from sncheck.report.html import write_html
from sncheck.report.json_out import write_json
from sncheck.report.junit import write_junit
from sncheck.report.prometheus import write_prometheus

Renderer = Callable[..., None]  # (results, rows, path, template_dirs=()) -> None


def _html(results: dict, rows: pd.DataFrame | None, path: str | os.PathLike,
          template_dirs: tuple = ()) -> None:
    write_html(path, results, rows, list(template_dirs) or None)


def _json(results: dict, rows: pd.DataFrame | None, path: str | os.PathLike,
          template_dirs: tuple = ()) -> None:
    write_json(path, results)


def _junit(results: dict, rows: pd.DataFrame | None, path: str | os.PathLike,
           template_dirs: tuple = ()) -> None:
    write_junit(path, results)


def _prometheus(results: dict, rows: pd.DataFrame | None, path: str | os.PathLike,
                template_dirs: tuple = ()) -> None:
    write_prometheus(path, results, rows)


RENDERERS: dict[str, Renderer] = {
    "html": _html,
    "json": _json,
    "junit": _junit,
    "prometheus": _prometheus,
}

# Where each format goes in a run directory by default.
DEFAULT_FILENAMES = {
    "html": "report.html",
    "json": "results.json",
    "junit": "junit.xml",
    "prometheus": "sncheck.prom",
}


def get_renderer(name: str) -> Renderer:
    try:
        return RENDERERS[name]
    except KeyError as e:
        valid = ", ".join(sorted(RENDERERS))
        raise ConfigError(f"unknown report format {name!r}; valid formats: {valid}") from e
