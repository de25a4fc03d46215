"""Hostile inputs, round 23: kinds a held-out set holds and rounds 3-22 did not try -- YAML's own
features (numbers longer than Python reads, keys that are no text, merge keys), the environment a
command runs in ($HOME empty or relative), and further instances the round's brief names. Each test
names its case id; the README's round 23 table lists them. New instances only: no case of an
earlier round is tested again."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from test_hardening import one_line_error
from test_hostile_r13 import SMALL, _cli

from sncheck.store.state import default_state_dir


def _file(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    (p := tmp_path / name).write_text(text)
    return p


# -- YAML's own features -----------------------------------------------------------------------------

@pytest.mark.parametrize("role, text, line", [
    ("inventory", SMALL.replace("cards_per_host: 2", "cards_per_host: " + "9" * 5000), 5),
    ("inventory", SMALL.replace("cards_per_host: 2", "cards_per_host: -" + "1_0" * 3000), 5),
    ("rules", "extends: default\nkernel:\n  ? " + "7" * 5000 + "\n  : {severity: critical}\n", 3),
    ("fault plan", "faults:\n  - {type: ecc_uncorrectable, target: h1/gpu0, count: " + "9" * 4301 + "}\n", 2),
], ids=["cards", "underscored-negative", "kernel-key", "fault-count"])
def test_h23_01_a_number_longer_than_python_reads(tmp_path: Path, role: str, text: str, line: int) -> None:
    """H23-01: a whole number of more than 4300 digits in any YAML input (a count, a kernel table's
    key): PyYAML's int() raised ValueError ('Exceeds the limit (4300 digits) for integer string
    conversion'), which no YAML error handler caught: 'internal error', exit 3, a crash log.
    Refused at its line as the number it is, exit 2."""
    bad = _file(tmp_path, text, "bad.yaml")
    inv = _file(tmp_path, SMALL)
    args = {"inventory": ("inventory", "check", bad), "rules": ("rules", "check", bad),
            "fault plan": ("run", "post-delivery", "-i", inv, "--backend", "mock", "--faults", bad,
                           "--out", tmp_path / "o")}[role]
    got = one_line_error(_cli(*args))
    assert got.startswith(f"sncheck: error: {bad}:{line}: a number of ") and "more than 4300" in got, got
    assert not (tmp_path / "o").exists()


# -- the environment a command runs in ---------------------------------------------------------------

@pytest.mark.parametrize("home", ["", "relhome", "~"])
@pytest.mark.parametrize("command", ["status", "isolate"])
def test_h23_02_home_that_is_no_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              home: str, command: str) -> None:
    """H23-02: $HOME empty (a unit's `Environment=HOME=`) or relative (`HOME=relhome`), no
    $XDG_STATE_HOME: the default state directory was '/.local/state/sncheck' or a folder of the
    directory the command ran in. `isolate --apply` wrote its record, audit and fleet cap there: from
    another directory `status` saw nothing isolated and the cap counted none. Refused, exit 2, naming
    $HOME, nothing written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    inv = _file(tmp_path, SMALL)
    args = ["status"] if command == "status" else \
        ["isolate", "h1/gpu0", "-i", inv, "--via", "cuda_visible_devices", "--apply"]
    got = one_line_error(_cli(*args))
    assert f"$HOME is {home!r}, not an absolute path" in got and "--state-dir" in got, got
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inv.yaml"]


def test_h23_02_home_unset_is_the_accounts(monkeypatch: pytest.MonkeyPatch) -> None:
    """H23-02's other side: $HOME unset is the account's home (the password database), as before."""
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert default_state_dir() == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local/state/sncheck"


# -- files written among a run's or the store's own ----------------------------------------------------

@pytest.fixture(scope="module")
def run_and_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """One mock run and one state store with a card isolated in it: the records a file output must
    never land among."""
    root = tmp_path_factory.mktemp("records")
    inv = _file(root, SMALL)
    assert _cli("connectivity", "-i", inv, "--backend", "mock", "--out", root / "run", "-q").exit_code == 0
    assert _cli("isolate", "h1/gpu0", "-i", inv, "--via", "cuda_visible_devices", "--apply",
                "--state-dir", root / "state").exit_code == 0
    return root, root / "run", root / "state"


@pytest.mark.parametrize("target", ["run/results.json", "run/report.html", "run/rows/b.json",
                                    "state/state.db", "state/audit.jsonl"])
def test_h23_03_a_file_output_among_a_records_files(run_and_store: tuple[Path, Path, Path], target: str) -> None:
    """H23-03: `baseline make RUN --out RUN/results.json` replaced the run's own record with the baseline,
    exit 0 (its report, a new file in its rows/, likewise), and `--out STATE/state.db` (`audit.jsonl`)
    the fleet's isolation store. A file output (baseline make --out, golden record --out, fabric check
    --save, inventory from-slurm --out) inside a run directory or in a state directory is refused,
    exit 2, both records unchanged."""
    root, run, state = run_and_store
    before = {p: p.read_bytes() for p in (run / "results.json", state / "state.db", state / "audit.jsonl")}
    out = root / target
    result = _cli("baseline", "make", run, "--out", out)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    where = "inside the run directory" if target.startswith("run/") else "in the state directory"
    assert f"{out}: is {where}" in result.output, result.output
    assert {p: p.read_bytes() for p in before} == before
    assert not (run / "rows" / "b.json").exists()


def test_h23_03_beside_the_run_is_written(run_and_store: tuple[Path, Path, Path]) -> None:
    """H23-03's other side: the baseline beside the run is written."""
    root, run, _ = run_and_store
    result = _cli("baseline", "make", run, "--out", root / "baseline.json")
    assert result.exit_code == 0 and (root / "baseline.json").is_file(), result.output
