"""The templates, playbooks, rules and golden curves work from an installed wheel, not only
from this checkout: build the wheel, install it into a fresh venv, run from elsewhere."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def sh(*argv, cwd=None):
    # Without PYTHONPATH: a checkout on it (a worktree's test run) would shadow the wheel.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, check=False, env=env)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def test_installed_wheel_runs_a_playbook_by_name(tmp_path):
    pytest.importorskip("venv")
    sh(sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path / "dist")
    wheel = next((tmp_path / "dist").glob("sncheck-*.whl"))
    # --system-site-packages: the dependencies are already here; the wheel brings sncheck itself.
    sh(sys.executable, "-m", "venv", "--system-site-packages", tmp_path / "venv")
    python = tmp_path / "venv/bin/python"
    sh(python, "-m", "pip", "install", "--no-deps", "-q", wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = sh(python, "-c", "import sncheck; print(sncheck.__file__)", cwd=elsewhere).stdout
    assert str(tmp_path / "venv") in where  # the wheel, not the checkout
    inventory = ROOT / "fixtures/inventories/demo-2sn.yaml"
    proc = sh(tmp_path / "venv/bin/sncheck", "run", "post-delivery", "-i", inventory, "--backend", "mock",
              "--out", elsewhere / "run", "-q", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert "<svg" in (elsewhere / "run/report.html").read_text()
    assert json.loads((elsewhere / "run/results.json").read_text())["playbook"] == "post-delivery"
    rules = sh(tmp_path / "venv/bin/sncheck", "rules", "check", "local-cpu", cwd=elsewhere)
    shipped = len(yaml.safe_load((ROOT / "fixtures/rules/local-cpu.yaml").read_text())["rules"])
    assert rules.returncode == 0 and f"ok: {shipped} rules" in rules.stdout
    # the real captures ship too: the mock's platform simulators read them from the wheel
    captures = sh(python, "-c", "from sncheck.vendors.captures import capture; "
                  "print(len(capture('nvl72/01_imex_ctl_N_18node_p6e_gb200.txt')))", cwd=elsewhere)
    assert captures.returncode == 0 and int(captures.stdout) > 1000, captures.stderr
    # and so does the conformance corpus, with its hand-read expectations
    corpus = sh(python, "-c", "import sncheck.fixtures, pathlib, yaml; r = pathlib.Path(sncheck.fixtures.__file__).parent "
                "/ 'real/r3'; e = yaml.safe_load((r / 'expect.yaml').read_text()); "
                "print(sum((r / x['file']).is_file() for x in e), len(e))", cwd=elsewhere)
    found, named = corpus.stdout.split()
    assert corpus.returncode == 0 and found == named and int(named) >= 37, corpus.stdout + corpus.stderr
    # every package of the checkout is in the wheel (sncheck.watch was not: `sncheck watch` failed)
    packages = sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "sncheck").rglob("__init__.py"))
    imported = sh(python, "-c", "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]; "
                  "print('ok')", *packages, cwd=elsewhere)
    assert imported.returncode == 0 and imported.stdout.strip() == "ok", imported.stderr[-2000:]
    assert sh(tmp_path / "venv/bin/sncheck", "watch", "--help", cwd=elsewhere).returncode == 0

