"""The run directory is a fortress (issue 18, class 5): nothing sncheck writes goes
through a link planted in ``--out`` or lands outside it; a full disk or a failing state
store still leaves results.json with the findings; the audit log never claims an action
the state store did not record; evidence directories never collide."""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.errors import HarnessError
from sncheck.store import files as run_files
from sncheck.model import Finding
from sncheck.store.evidence import collect_evidence
from sncheck.store.files import RunFiles
from sncheck.store.frames import RowFrames
from sncheck.store.state import StateStore

ROOT = Path(__file__).resolve().parents[1]
DEMO = str(ROOT / "fixtures" / "inventories" / "demo-2sn.yaml")


def _run(tmp_path: Path, out: Path, *extra: str, faults: str = "{type: slow_card, target: node003/gpu2, factor: 0.5}"):
    plan = tmp_path / "faults.yaml"
    plan.write_text(f"faults:\n  - {faults}\n")
    return CliRunner().invoke(main, ["connectivity", "-i", DEMO, "--backend", "mock", "--faults", str(plan),
                                     "--seed", "3", "--out", str(out), "-q", *extra])


def test_a_link_planted_at_the_reserve_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / ".sncheck.reserve").symlink_to(victim)
    r = _run(tmp_path, out)
    assert r.exit_code == 1, r.output
    assert victim.read_text() == "keep me\n"
    assert json.loads((out / "results.json").read_text())["findings"]


def test_a_link_planted_at_the_lock_creates_nothing_outside(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "created-by-sncheck"
    outside.parent.mkdir()
    out = tmp_path / "run"
    out.mkdir()
    (out / ".sncheck.lock").symlink_to(outside)
    r = _run(tmp_path, out)
    assert r.exit_code == 2, r.output
    assert "symlink" in r.output and "Traceback" not in r.output
    assert not outside.exists()


def test_evidence_is_never_written_through_a_planted_directory_link(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    out = tmp_path / "run"
    out.mkdir()
    (out / "evidence").symlink_to(target, target_is_directory=True)
    findings = [Finding("h1/gpu0", "card", "connectivity", "r", "warning", "m")]
    with pytest.raises(HarnessError, match="symlink"):
        collect_evidence(findings, None, RowFrames({}), out, files=RunFiles(out))
    assert list(target.iterdir()) == []


def test_force_over_a_planted_rows_link_removes_the_link_not_its_target(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "data").write_text("x")
    out = tmp_path / "run"
    out.mkdir()
    (out / ".sncheck.lock").write_text("")  # an earlier run's directory, its rows/ swapped for a link
    (out / "rows").symlink_to(target, target_is_directory=True)
    r = _run(tmp_path, out, "--force")
    assert r.exit_code == 1, r.output
    assert (target / "data").read_text() == "x"
    assert (out / "rows").is_dir() and not (out / "rows").is_symlink()


@pytest.mark.parametrize("force", [(), ("--force",)])
def test_a_users_folder_that_no_run_wrote_is_neither_written_nor_removed(tmp_path: Path, force) -> None:
    """review18 #4: --out at a user's folder holding evidence/ (no run of sncheck's ever there) said it
    'already holds a run' and --force removed evidence/ with the user's files under it."""
    out = tmp_path / "mine"
    (out / "evidence").mkdir(parents=True)
    (out / "evidence" / "contract.pdf").write_text("precious")
    (out / "report.html").write_text("<p>my own report</p>")
    r = _run(tmp_path, out, *force)
    assert r.exit_code == 2, r.output
    assert "holds report.html, evidence but no run of sncheck's" in r.output and "Traceback" not in r.output
    assert (out / "evidence" / "contract.pdf").read_text() == "precious"
    assert sorted(p.name for p in out.iterdir()) == ["evidence", "report.html"]  # no lock left behind either


def test_force_over_an_earlier_run_still_starts_it_empty(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(tmp_path, out).exit_code == 1
    again = _run(tmp_path, out)
    assert again.exit_code == 2 and "already holds a run" in again.output
    assert _run(tmp_path, out, "--force").exit_code == 1


def test_a_full_disk_during_evidence_spends_the_reserve_on_results(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    real = run_files.write_atomic

    def full_for_evidence(path, data, **kw):  # type: ignore[no-untyped-def]
        if "/evidence/" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, **kw)

    monkeypatch.setattr(run_files, "write_atomic", full_for_evidence)
    out = tmp_path / "run"
    r = _run(tmp_path, out)
    assert r.exit_code == 3, r.output  # the harness could not keep everything: never a pass
    results = json.loads((out / "results.json").read_text())
    assert any(f["entity"] == "node003/gpu2" for f in results["findings"])
    assert "No space left" in results["error"] and results["verdict"] == "error"


def test_a_failing_state_store_is_one_line_exit_3_and_results_keep_the_findings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(self, *a, **k):  # type: ignore[no-untyped-def]
        with self._write():
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(StateStore, "record_action", disk_full)
    out = tmp_path / "run"
    r = _run(tmp_path, out, "--state-dir", str(tmp_path / "state"))
    assert r.exit_code == 3, r.output
    assert "database or disk is full" in r.output and "Traceback" not in r.output
    results = json.loads((out / "results.json").read_text())
    assert any(f["entity"] == "node003/gpu2" for f in results["findings"])
    assert "state store" in results["error"]
    # The audit log never claims an action the state store did not record.
    for d in (out, tmp_path / "state"):
        audit = d / "audit.jsonl"
        assert not audit.exists() or audit.read_text() == ""


def test_writes_refuse_paths_outside_the_run(tmp_path: Path) -> None:
    files = RunFiles(tmp_path)
    for rel in ("../x", "/etc/x", "a/../../x"):
        with pytest.raises(HarnessError):
            files.write(rel, b"x")
    assert not (tmp_path.parent / "x").exists()


def test_each_directory_checked_once_and_a_swap_mid_run_still_refused(tmp_path: Path, monkeypatch) -> None:
    """RunFiles checks a directory's whole path once per run (a fleet run writes tens of
    thousands of evidence files), yet a directory swapped for a link after that check, at
    any depth, is refused and nothing lands outside; one removed is made again."""
    checks: list[str] = []
    real = run_files.real_dir
    monkeypatch.setattr(run_files, "real_dir", lambda root, rel="": checks.append(str(rel)) or real(root, rel))
    out, outside = tmp_path / "run", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    files = RunFiles(out)
    for i in range(5):
        for d in ("evidence/a", "evidence/b"):
            assert files.write(f"{d}/f{i}.txt", f"{i}\n")
    assert sorted(checks) == ["evidence/a", "evidence/b"]
    assert (out / "evidence/b/f4.txt").read_text() == "4\n"
    # the last directory moved out of the run and a link to it left in its place
    (out / "evidence/a").rename(outside / "a")
    (out / "evidence/a").symlink_to(outside / "a")
    with pytest.raises(HarnessError, match="symlink"):
        files.write("evidence/a/late.txt", "x")
    # a directory higher up swapped the same way: the deeper one (checked) is not trusted
    (out / "evidence").rename(outside / "evidence")
    (out / "evidence").symlink_to(outside / "evidence")
    with pytest.raises(HarnessError, match="symlink"):
        files.write("evidence/b/late.txt", "x")
    assert not list(outside.rglob("late.txt"))
    # a directory removed mid-run is made again (checked again), as a first write would
    (out / "evidence").unlink()
    assert files.write("evidence/b/again.txt", "y") and (out / "evidence/b/again.txt").read_text() == "y"
    assert checks.count("evidence/b") == 3


def test_evidence_of_entities_that_read_alike_does_not_collide(tmp_path: Path) -> None:
    ids = ["n/gpu0", "n_gpu0", "h" * 130 + "/gpu0", "h" * 130 + "/gpu1"]
    findings = [Finding(e, "card", "connectivity", "r", "warning", e) for e in ids]
    collect_evidence(findings, None, RowFrames({}), tmp_path)
    dirs = {f.evidence["files"][0].split("/")[1] for f in findings}
    assert len(dirs) == len(ids)
    for f in findings:
        finding = next(p for p in f.evidence["files"] if "/finding-" in p)
        assert json.loads((tmp_path / finding).read_text())["message"] == f.entity
