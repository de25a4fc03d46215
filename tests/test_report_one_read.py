"""report.html's connectivity view and sncheck.prom's card series read a run's p2p parts
in one pass between them, and with evidence's read of the pairs and ranks in a run (round 15) (issue 31: one read of 50.2 M rows is 20-25 s CPU at 131,072
cards, and each report read them itself): the formats a run renders say which will ask
(:func:`sncheck.report.outputs`), the first builds both, the second takes its own. The
files are those each report writes alone; a report not expected, or asked again, reads
for itself; html alone builds nothing for Prometheus."""

from __future__ import annotations

import pytest

import sncheck.report.p2pstats as p2pstats
from sncheck.model import Finding
from sncheck.report import get_renderer, outputs
from sncheck.store.evidence import collect_evidence
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
    for name, cls in [(n, c) for makes in p2pstats.BUILDERS.values() for n, c in makes.items()]:
        monkeypatch.setattr(cls, "finish", lambda self, real=cls.finish, name=name: built.append(name) or real(self))
    (out,) = outputs(["html"])
    out.write(_record(), store.frames(), tmp_path / out.filename)
    assert built == ["drawn"]


def _findings() -> list[Finding]:
    return [Finding("h1/gpu0", "card", "connectivity", "r", "warning", "m"),
            Finding("h1/gpu0<->h4/gpu9", "link", "connectivity", "r", "warning", "m"),
            Finding("h2", "host", "connectivity", "r", "warning", "m")]


def _evidence(findings, rows, out) -> None:
    out.mkdir()
    collect_evidence(findings, None, rows, out)


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _reads_of(monkeypatch, kinds: tuple[str, ...]) -> list[str]:
    reads: list[str] = []
    real = Part.read
    monkeypatch.setattr(Part, "read", lambda self, columns: (reads.append(str(self.path)) if any(
        f"/{k}/" in str(self.path) for k in kinds) else None) or real(self, columns))
    return reads


def test_evidence_and_the_reports_read_the_pairs_and_ranks_once(tmp_path, monkeypatch) -> None:
    """As a run renders them: the formats' builders expected before evidence, whose pass over
    the p2p and rank rows (its Who) builds them too; the reports take theirs and read no part
    (before: they read every p2p and rank part again), evidence reads what it reads alone, and
    every file is what each writer gives alone."""
    record = _record()
    store = _store(tmp_path, _rows(4), 7, 4)
    alone = _alone(tmp_path, record, store.frames())
    reads = _reads_of(monkeypatch, ("p2p", "rank"))
    _evidence(_findings(), store.frames(), tmp_path / "alone")
    by_evidence = len(reads)
    rows = store.frames()
    reports = outputs(["html", "junit", "prometheus"])
    for out in reports:
        for kind, makes in out.reads.items():
            rows.expect(kind, makes)
    _evidence(_findings(), rows, tmp_path / "together")
    assert len(reads) == 2 * by_evidence
    rows = store.frames()   # (the run's reports: a view of their own, of the same parts)
    for out in reports:
        out.write(record, rows, tmp_path / out.filename)
    assert len(reads) == 2 * by_evidence and {"p2p", "rank"} == {r.split("/")[-2] for r in reads}
    for out in reports:   # (a later view: the reports' own pass, every part read again)
        out.write(record, store.frames(), tmp_path / f"again-{out.filename}")
    assert len(reads) > 2 * by_evidence
    assert (tmp_path / "report.html").read_bytes() == alone["html"]
    assert (tmp_path / "sncheck.prom").read_bytes() == alone["prometheus"]
    assert _files(tmp_path / "together") == _files(tmp_path / "alone") != {}


def test_what_waits_is_for_the_rows_it_was_built_of(tmp_path) -> None:
    """A view of other rows (a part written after evidence's pass) builds its own: the reports
    are those of the rows they are given, never what a pass built of fewer."""
    record = _record()
    rows = _rows(5)
    store = _store(tmp_path, rows.iloc[:60], 7, 5)
    early = store.frames()
    reports = outputs(["html", "prometheus"])
    for out in reports:
        for kind, makes in out.reads.items():
            early.expect(kind, makes)
    _evidence(_findings(), early, tmp_path / "ev")
    store.emit_rows(rows.iloc[60:].astype(object).where(rows.iloc[60:].notna(), None).to_dict("records"))
    late = store.frames()
    for out in reports:
        out.write(record, late, tmp_path / out.filename)
    alone = _alone(tmp_path, record, store.frames())
    assert (tmp_path / "report.html").read_bytes() == alone["html"]
    assert (tmp_path / "sncheck.prom").read_bytes() == alone["prometheus"]
