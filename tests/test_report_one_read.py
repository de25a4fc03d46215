"""report.html's connectivity view and sncheck.prom's card series read a run's p2p parts
in one pass between them (issue 31: one read of 50.2 M rows is 20-25 s CPU at 131,072
cards, and each report read them itself): the formats a run renders say which will ask
(:func:`sncheck.report.outputs`), the first builds both, the second takes its own. The
files are those each report writes alone; a report not expected, or asked again, reads
for itself; html alone builds nothing for Prometheus."""

from __future__ import annotations

import pytest

import sncheck.report.p2pstats as p2pstats
from sncheck.report import get_renderer, outputs
from sncheck.store.parts import Part
from test_report_pieces import _record, _rows, _store


def _p2p_reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = Part.read
    monkeypatch.setattr(Part, "read", lambda self, columns: (reads.append(str(self.path)) if "p2p" in str(self.path)
                                                             else None) or real(self, columns))
    return reads


def _alone(tmp_path, record, rows) -> dict[str, bytes]:
    """Each report written by its own renderer (no other expected: a pass each)."""
    out = {}
    for name, file in (("html", "report.html"), ("prometheus", "sncheck.prom")):
        get_renderer(name)(record, rows, tmp_path / f"alone-{file}")
        out[name] = (tmp_path / f"alone-{file}").read_bytes()
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_html_and_prometheus_read_the_pairs_once(tmp_path, monkeypatch, seed) -> None:
    record = _record()
    store = _store(tmp_path, _rows(seed), 7, seed)
    alone = _alone(tmp_path, record, store.frames())
    reads = _p2p_reads(monkeypatch)
    rows = store.frames()
    for out in outputs(["html", "junit", "prometheus"]):
        out.write(record, rows, tmp_path / out.filename)
    parts = len(set(reads))
    assert parts > 3 and len(reads) == parts   # every p2p part read once, for both reports
    assert (tmp_path / "report.html").read_bytes() == alone["html"]
    assert (tmp_path / "sncheck.prom").read_bytes() == alone["prometheus"]


def test_a_report_asked_again_or_alone_reads_for_itself(tmp_path, monkeypatch) -> None:
    record = _record()
    store = _store(tmp_path, _rows(3), 7, 3)
    alone = _alone(tmp_path, record, store.frames())
    reads = _p2p_reads(monkeypatch)
    rows = store.frames()
    prom, html = outputs(["prometheus", "html"])
    prom.write(record, rows, tmp_path / "a.prom")   # (prometheus first: html's rows wait for it)
    once = len(reads)
    html.write(record, rows, tmp_path / "a.html")
    assert len(reads) == once
    prom.write(record, rows, tmp_path / "b.prom")   # asked again: its own pass
    assert len(reads) == 2 * once
    assert (tmp_path / "a.prom").read_bytes() == (tmp_path / "b.prom").read_bytes() == alone["prometheus"]
    assert (tmp_path / "a.html").read_bytes() == alone["html"]


def test_html_alone_builds_nothing_for_prometheus(tmp_path, monkeypatch) -> None:
    store = _store(tmp_path, _rows(1), 7, 1)
    built: list[str] = []
    for name, cls in p2pstats.BUILDERS.items():
        monkeypatch.setattr(cls, "finish", lambda self, real=cls.finish, name=name: built.append(name) or real(self))
    (out,) = outputs(["html"])
    out.write(_record(), store.frames(), tmp_path / out.filename)
    assert built == ["drawn"]
