"""The Run object (sncheck.run.runner.Run): it owns a run, returns a typed result, and is the one
place that builds a backend and its layers' contexts."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from sncheck.config.inventory import Inventory
from sncheck.run.inputs import load_inventory_text
from sncheck.config.playbook import single_layer
from sncheck.errors import ConfigError
from sncheck.model import Verdict
from sncheck.report import outputs
from sncheck.run.runner import Run, RunOptions

REPO = Path(__file__).resolve().parents[1]


def small() -> Inventory:
    """Two hosts of 4 cards in one supernode, on the mock."""
    return load_inventory_text("name: small\ndesign:\n  scale_up: {bandwidth: 450 GB/s, latency: 3 us}\n"
                               "supernodes:\n  - {name: sn0, hosts: 'h[1-2]', cards_per_host: 4}\n"
                               "backend: {type: mock}\n")


def _plan(tmp_path: Path) -> str:
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n  - {type: corrupt_card, target: h1/gpu1}\n")
    return str(path)


def test_a_run_returns_its_verdict_exit_code_findings_and_paths(tmp_path: Path) -> None:
    run = Run(single_layer("connectivity"), small(),
              RunOptions(backend="mock", faults=_plan(tmp_path), out=str(tmp_path / "run"),
                         reports=outputs(("html", "junit"))))
    result = run.execute()
    assert result.verdict is Verdict.FAIL and result.exit_code == 1
    assert "h1/gpu1" in {f.entity for f in result.findings}
    assert json.loads(result.results_path.read_text()) == json.loads(json.dumps(result.results, default=str))
    assert all(p.is_file() for p in result.report_paths(outputs(("html", "junit"))).values())
    assert result.out_dir == tmp_path / "run"


def test_a_run_with_a_state_store_records_and_isolates(tmp_path: Path) -> None:
    from sncheck.store.state import StateStore

    state = tmp_path / "state"
    run = Run.build(single_layer("connectivity"), small(), state_dir=str(state), via=("hostfile",),
                    backend="mock", faults=_plan(tmp_path), out=str(tmp_path / "run"))
    assert run.opts.backend_options["state_dir"] == str(state)
    result = run.execute()
    with StateStore(state) as st:
        assert [r["run_id"] for r in st.runs()] == [result.results["run_id"]]
        held = {r["entity"]: r["action"] for r in st.current_status()}
    assert held.get("h1/gpu1") in ("quarantine", "isolate"), held


def test_apply_without_a_state_store_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"--apply needs --state-dir \(isolation is recorded there"):
        Run.build(single_layer("connectivity"), small(), apply=True, backend="mock")


def test_measuring_only_loads_no_rules_no_reference_and_writes_no_run(tmp_path: Path, monkeypatch) -> None:
    """golden record's use: a golden reference would make the golden layer retrain replicas alone."""
    monkeypatch.chdir(tmp_path)
    rows: list[dict] = []
    with Run(single_layer("golden", {"steps": 5}), small(),
             RunOptions(backend="mock", judge=False, calibrate=False)) as run:
        layers = list(run.measure(rows.append, rows))
    assert run.rules is None and run.references == {}
    assert [(x.spec.name, x.findings, x.error) for x in layers] == [("golden", [], None)]
    assert {r["kind"] for r in rows} == {"golden"} and list(tmp_path.iterdir()) == []


def test_a_bad_input_closes_the_backend_and_opens_no_run_directory(tmp_path: Path, monkeypatch) -> None:
    from sncheck.backends.mock import MockBackend

    closed: list[bool] = []
    monkeypatch.setattr(MockBackend, "close", lambda self: closed.append(True))
    with pytest.raises(ConfigError):
        Run(single_layer("connectivity"), small(),
            RunOptions(backend="mock", rules=str(tmp_path / "no-such-rules.yaml"),
                       out=str(tmp_path / "run"))).execute()
    assert closed and not (tmp_path / "run").exists()


def test_only_the_run_builds_a_backend_or_a_layer_context() -> None:
    """The CLI, node-check, golden record, --targets and release --after-repair build a Run."""
    builders = {"get_backend", "LayerContext"}
    found = []
    for path in sorted((REPO / "sncheck").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in builders:
                    found.append(rel)
    # the run itself; a confirmation retest builds a stress plan from its run's own context
    assert sorted(set(found)) == ["sncheck/run/confirm.py", "sncheck/run/runner.py"], found


def test_a_backend_that_forgets_to_refuse_a_fault_still_refuses_it(tmp_path: Path, monkeypatch) -> None:
    """A new backend (one module and its registry line) that acts out no faults and never
    checks the plan: the run refuses the plan rather than drop its faults (exit 2)."""
    import sys
    import types

    from sncheck import backends
    from sncheck.backends.mock import MockBackend

    module = types.ModuleType("sncheck_test_forgetful")

    class Forgetful(MockBackend):
        name = "forgetful"

        def __init__(self, topo, faults=None, seed=0, progress=None, **options):  # no refusal of its own
            super().__init__(topo, None, seed, progress, **options)

    module.Forgetful = Forgetful
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(backends.BACKENDS, "forgetful", (module.__name__, "Forgetful"))
    run = Run(single_layer("connectivity"), small(),
              RunOptions(backend="forgetful", faults=_plan(tmp_path), out=str(tmp_path / "run")))
    with pytest.raises(ConfigError, match=r"the forgetful backend cannot act out fault type 'corrupt_card' "
                                          r"\(target h1/gpu1\)"):
        run.execute()
    assert not (tmp_path / "run").exists()
