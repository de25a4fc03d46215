"""Results written before issue 17 (entity kind ``nic``, per-tier judging, the verdict
flags) still load: tests/data/run-614f5fd is a pre-upgrade gate on the mock written by
sncheck at 614f5fd (demo-2sn, fixtures/faults/demo-mixed.yaml, seed 3, ``--state-dir``):
its run directory (results.json and the row tables but the per-rank ones) and its state
store. Today's sncheck records a new run into that same store, then ``history``,
``status`` and ``diff`` read old and new together."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
OLD = ROOT / "tests/data/run-614f5fd"
OLD_RUN = "20261202T044252Z-824a"


def sncheck(*argv: str):
    r = CliRunner().invoke(main, [str(a) for a in argv])
    assert "Traceback" not in r.output, r.output
    return r


def test_an_old_state_store_and_run_directory_load_beside_a_new_run(tmp_path) -> None:
    shutil.copytree(OLD, tmp_path / "old")
    state, old_dir, new_dir = tmp_path / "old/state", tmp_path / "old/run", tmp_path / "new"
    assert json.loads((old_dir / "results.json").read_text())["run_id"] == OLD_RUN

    listed = sncheck("history", "--state-dir", state)
    assert listed.exit_code == 0 and OLD_RUN in listed.output, listed.output
    new = sncheck("run", "pre-upgrade-gate", "-i", ROOT / "fixtures/inventories/demo-2sn.yaml", "--backend", "mock",
                  "--faults", ROOT / "fixtures/faults/demo-mixed.yaml", "--seed", "3", "--state-dir", state,
                  "--out", new_dir, "-q")
    assert new.exit_code == 1, new.output  # the planted faults fail the gate, as they did then
    new_run = json.loads((new_dir / "results.json").read_text())["run_id"]

    both = sncheck("history", "--state-dir", state)
    assert both.exit_code == 0 and OLD_RUN in both.output and new_run in both.output, both.output
    card = sncheck("history", "node012/gpu3", "--state-dir", state)
    assert card.exit_code == 0 and card.output.count("p2p-data-corruption") >= 2, card.output
    status = sncheck("status", "--state-dir", state)
    assert status.exit_code in (0, 1) and "node012/gpu3" in status.output and "node007" in status.output, \
        status.output  # the old run's isolations still listed

    for a, b in ((OLD_RUN, new_run), (old_dir, new_dir)):
        diff = sncheck("diff", a, b, "--state-dir", state, "--json")
        assert diff.exit_code == 0, diff.output
        out = json.loads(diff.output)
        persisting = {(f["entity"], f["rule"]) for f in out["findings"]["persisting"]}
        assert {("node012/gpu3", "p2p-data-corruption"), ("node007", "host-unreachable")} <= persisting, out
