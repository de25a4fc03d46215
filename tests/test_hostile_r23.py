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
