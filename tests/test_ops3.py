"""Operations (ops3): the state store's record of a run whose outputs fail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main
from sncheck.config.playbook import single_layer
from sncheck.errors import HarnessError
from sncheck.run.inputs import load_inventory
from sncheck.run.runner import Run
from sncheck.store import rundir

SMALL = ("name: small\ndesign:\n  scale_up: {bandwidth: '450 GB/s', latency: '3 us'}\n"
         "supernodes:\n  - {name: sn0, hosts: 'h[1-3]', cards_per_host: 2}\n")


def _cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _runs(state: Path) -> list[dict]:
    r = _cli("history", "--runs", "--state-dir", state, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text(SMALL)
    return p


def test_a_report_template_that_fails_is_not_recorded_passed_in_the_state_dir(tmp_path: Path, small: Path) -> None:
    """An operator's own report template that fails (a name it does not have): the run exits 3 and
    results.json says the error, but the state store kept `pass` (its record was written before the
    reports), so `history --runs` listed a pass and `baseline make --from-state --passed-only`, a
    `baseline: last-pass` run and the drift op took the run as known-good."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "report.html").write_text("{{ no_such_name.field }}\n")
    state = tmp_path / "state"
    r = _cli("connectivity", "-i", small, "--backend", "mock", "--seed", 1, "-q", "--out", tmp_path / "run",
             "--format", "html", "--templates", templates, "--state-dir", state)
    assert r.exit_code == 3, r.output
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["verdict"] == "error" and "cannot write the reports" in record["error"], record.get("error")
    [run] = _runs(state)
    assert (run["run_id"], run["verdict"]) == (record["run_id"], "error"), run
    made = _cli("baseline", "make", "--from-state", state, "--passed-only", "--out", tmp_path / "b.json")
    assert made.exit_code == 2 and not (tmp_path / "b.json").exists(), made.output


@dataclass(frozen=True)
class _Refused:
    """A report whose file the system refuses."""

    name: str = "junit"
    filename: str = "junit.xml"

    @property
    def write(self) -> Any:
        def refuse(_record: Any, _rows: Any, path: Path, _templates: Any) -> None:
            raise PermissionError(13, "Permission denied", str(path))
        return refuse


def _api_run(tmp_path: Path, small: Path, **options: Any) -> Run:
    return Run.build(single_layer("connectivity", {}), load_inventory(small), state_dir=str(tmp_path / "state"),
                     backend="mock", seed=1, out=str(tmp_path / "run"), **options)


def test_a_refused_report_through_the_api_leaves_the_failed_verdict_in_the_state_store(tmp_path, small):
    with pytest.raises(PermissionError):
        _api_run(tmp_path, small, reports=(_Refused(),)).execute()
    [run] = _runs(tmp_path / "state")
    assert run["verdict"] == "error", run


def test_a_final_results_json_the_disk_refuses_leaves_the_failed_verdict_in_the_state_store(tmp_path, small,
                                                                                         monkeypatch):
    """The reports written, then the final results.json refused (the disk filled up in between):
    exit 3 with the last layer's snapshot on disk, and the state store must not keep the pass."""
    write = rundir.RunStore.write_results

    def full(self: rundir.RunStore, record: Any) -> Path:
        if record.finished:
            raise HarnessError(f"run directory: cannot write {self.dir / 'results.json'}: No space left on device")
        return write(self, record)

    monkeypatch.setattr(rundir.RunStore, "write_results", full)
    with pytest.raises(HarnessError):
        _api_run(tmp_path, small).execute()
    [run] = _runs(tmp_path / "state")
    assert run["verdict"] == "error", run
