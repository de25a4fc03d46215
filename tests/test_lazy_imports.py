"""Start-up cost (issue 31, reads31): a run on the mock backend, its judging and its
reports never import paramiko (with invoke, cryptography and nacl: 0.13-0.2 s of every
command's start); the SSH names of ``sncheck.transport`` load when first asked for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _loaded(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    return set(out.stdout.split())


def test_a_mock_gate_imports_no_ssh_library():
    loaded = _loaded("import sncheck.cli.main, sncheck.run.runner, sncheck.backends.mock, sncheck.run.state\n"
                     "import sncheck.report.html, sncheck.report.prometheus, sncheck.report.junit\n"
                     "from sncheck.transport import Result, build_command")
    assert "sncheck.actions.base" in loaded and "sncheck.transport" in loaded
    assert not {"paramiko", "sncheck.transport.connection", "sncheck.transport.sshconfig"} & loaded


def test_the_ssh_names_load_when_asked_for():
    loaded = _loaded("from sncheck.transport import Connection, fan_out, resolve_host\n"
                     "from sncheck.transport.connection import Connection as C\n"
                     "assert Connection is C and callable(fan_out) and callable(resolve_host)\n"
                     "import sncheck.transport as t\n"
                     "try:\n    t.no_such_name\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit(1)")
    assert "paramiko" in loaded
