"""One exit-code table and one error decorator for every command (issue 27, part D).

The table is sncheck.model.ExitCode (DESIGN.md's exit codes, 0-4); every command is wrapped
in sncheck.cli.errors.handle_errors; a closed stdout ends quietly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sncheck.errors as errors
from sncheck.cli.main import main
from sncheck.model import ExitCode, Verdict

ROOT = Path(__file__).resolve().parents[1]


def _subclasses(cls: type) -> list[type]:
    return [cls] + [s for sub in cls.__subclasses__() for s in _subclasses(sub)]


def test_the_table_is_designs() -> None:
    assert {c.value: c.name for c in ExitCode} == {0: "PASS", 1: "FAIL", 2: "BAD_INPUT", 3: "HARNESS",
                                                     4: "INCONCLUSIVE"}
    assert ExitCode.of(Verdict.PASS) == 0 and ExitCode.of(Verdict.FAIL) == 1
    assert ExitCode.of(Verdict.ERROR) == 3 and ExitCode.of(Verdict.INCONCLUSIVE) == 4
    assert ExitCode.of(Verdict.NOT_JUDGED) == 1  # anything that is not a pass fails the gate
    # errors.py sits beside model.py (it may not import it): its codes are the table's
    for cls in _subclasses(errors.SncheckError):
        assert ExitCode(cls.exit_code) in ExitCode, cls


def test_help_documents_every_code() -> None:
    text = " ".join(CliRunner().invoke(main, ["run", "--help"]).output.split())
    for code in ExitCode:
        assert re.search(rf"\b{code.value} [a-z]", text), (code, text)


def test_one_decorator_maps_errors() -> None:
    """No command module maps sncheck's errors (or Ctrl-C) to exit codes by itself. The entry
    (start.py) maps one stop: the one while the CLI, the decorator with it, is still importing (H20-04)."""
    own = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "sncheck/cli").glob("*.py")
           if p.name not in ("errors.py", "start.py")
           for n, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"except\s*\(?[^:]*\b(SncheckError|KeyboardInterrupt)\b", line)]
    assert own == []


@pytest.mark.parametrize("raised, code, words", [
    (KeyboardInterrupt(), 3, "interrupted"),  # cli/ops.py had its own mapper that missed Ctrl-C
    (OSError(28, "No space left on device", "/state/state.db"), 3, "/state/state.db: No space left on device"),
    (errors.ConfigError("not a state store", "/x"), 2, "/x: not a state store"),
])
def test_an_ops_command_maps_like_a_run(monkeypatch, tmp_path, raised, code, words) -> None:
    import sncheck.cli.ops as ops

    def boom(*_a, **_k):
        raise raised

    monkeypatch.setattr(ops, "StateStore", boom)
    (tmp_path / "state.db").touch()  # status opens only a store that exists (it creates none)
    r = CliRunner().invoke(main, ["status", "--state-dir", str(tmp_path)])
    assert r.exit_code == code, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("sncheck: error: ") and words in lines[0], lines


def test_a_closed_stdout_ends_quietly(tmp_path) -> None:
    """``sncheck inventory check FILE | head -0``: no traceback, no crash file, exit 1 (it
    was 'internal error ... BrokenPipeError' with a crash log, exit 3; ``sncheck status |
    head`` took the same path through its own mapper)."""
    crash_dir = tmp_path / "tmp"
    crash_dir.mkdir()
    read, write = os.pipe()
    os.close(read)  # the reader is gone before sncheck writes a byte
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(crash_dir)}
    p = subprocess.run([sys.executable, "-m", "sncheck", "inventory", "check",
                        str(ROOT / "fixtures/inventories/demo-2sn.yaml")],
                       stdout=write, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    os.close(write)
    assert (p.returncode, p.stderr) == (ExitCode.FAIL, "")
    assert list(crash_dir.iterdir()) == []
