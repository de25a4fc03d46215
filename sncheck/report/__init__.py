"""Report formats: the run's record (:class:`sncheck.model.RunRecord`) plus the rows, many formats.

Each format is a module with ``write(record, rows, path, template_dirs=()) -> None``,
which writes one file (only HTML reads ``template_dirs``), reading the verdict and each
finding's flags as the record computes them, never deciding them again. A new output
format is that module and one line in ``FORMATS``; a format's module is imported when it
is used.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from sncheck.errors import ConfigError

Renderer = Callable[..., None]  # (record, rows, path, template_dirs=()) -> None

# name: (its module, the file it writes in a run directory by default)
FORMATS: dict[str, tuple[str, str]] = {
    "html": ("sncheck.report.html", "report.html"),
    "json": ("sncheck.report.json_out", "results.json"),
    "junit": ("sncheck.report.junit", "junit.xml"),
    "prometheus": ("sncheck.report.prometheus", "sncheck.prom"),
}
RENDERERS = tuple(FORMATS)


def default_filename(name: str) -> str:
    """The file a format writes in a run directory (``FORMATS``, read when asked)."""
    get_renderer(name)  # an unknown name is the one-line error
    return FORMATS[name][1]


def get_renderer(name: str) -> Renderer:
    if name not in FORMATS:
        raise ConfigError(f"unknown report format {name!r}; valid formats: {', '.join(sorted(FORMATS))}")
    return import_module(FORMATS[name][0]).write


@dataclass(frozen=True)
class Output:
    """A format a run renders at its end (:class:`sncheck.run.runner.Output`); ``reads``:
    per kind of rows, the builders it will ask the run's one pass over them for
    (:mod:`sncheck.store.passes`), which the run expects before its first reader of them."""

    name: str
    filename: str
    write: Renderer
    reads: Mapping[str, Mapping[str, Callable[[], Any]]] = field(default_factory=dict)


def outputs(names: Iterable[str]) -> tuple[Output, ...]:
    """The reports a run renders at its end, by format name (an unknown name is the
    one-line error, before anything runs)."""
    names = tuple(names)
    said: weakref.WeakSet[Any] = weakref.WeakSet()
    writers = [(name, default_filename(name), _one_of(get_renderer(name), names, said)) for name in names]
    stats = import_module("sncheck.report.p2pstats")   # (after the formats' modules: when used)
    return tuple(Output(name, file, write, stats.reads((name,))) for name, file, write in writers)


def _one_of(write: Renderer, formats: tuple[str, ...], said: "weakref.WeakSet[Any]") -> Renderer:
    """``write``, saying first, once per view of the rows (``said``: the views the reports
    ``formats`` have said it of), that those reports will read the same rows: the ones that
    read the p2p or rank rows share one pass over each kind (:mod:`sncheck.report.p2pstats`)."""

    def together(record: Any, rows: Any, path: Any, template_dirs: tuple = ()) -> None:
        try:
            first = rows not in said
            said.add(rows)
        except TypeError:   # (rows held as one frame: neither a view nor weakly referable)
            first = False
        if first:
            import_module("sncheck.report.p2pstats").expect(rows, formats)   # (as the formats' modules: when used)
        write(record, rows, path, template_dirs)

    return together
