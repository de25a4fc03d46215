"""Packages import one way (issue 27): pyproject.toml's import-linter ``layers`` contract,
run on sncheck/ and on copies of it with an import planted against the order.

grimp (import-linter's graph) reads every import statement of a module, those inside
functions too, so a deferred import does not make an upward import acceptable; only
``if TYPE_CHECKING:`` imports are left out (they never run).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is in the lint extra: pip install -e '.[lint]'")

ROOT = Path(__file__).resolve().parent.parent
LINT = ("import sys, importlinter.cli as c; "
        "sys.exit(c.lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")


def lint(tree: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the sncheck package under ``tree``, with ``tree``'s pyproject.toml."""
    return subprocess.run([sys.executable, "-c", LINT], cwd=tree, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory):
    """A fresh copy of the tree (sources and pyproject.toml) for each planted import."""
    def make(name: str) -> Path:
        tree = tmp_path_factory.mktemp(name)
        shutil.copytree(ROOT / "sncheck", tree / "sncheck", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
        return tree
    return make


def test_sncheck_keeps_its_layers() -> None:
    r = lint(ROOT)
    assert r.returncode == 0 and "1 kept, 0 broken" in r.stdout, r.stdout + r.stderr


def plant(path: Path, text: str, after: str | None = None) -> None:
    src = path.read_text()
    path.write_text(src.replace(after, after + text, 1) if after else src + text)


def test_upward_imports_break_the_contract_type_checking_ones_do_not(copy) -> None:
    tree = copy("planted")
    # inside a function: deferred, still an import against the order
    plant(tree / "sncheck/model.py", "\n\ndef _planted() -> None:\n    from sncheck.cli import main  # noqa\n")
    # the case that was there before the layers: the inventory read the backend registry
    plant(tree / "sncheck/config/inventory.py", "\n\ndef _planted():\n    import sncheck.backends\n")
    # siblings marked independent (|) stay apart
    plant(tree / "sncheck/store/files.py", "\nfrom sncheck import topology  # noqa\n")
    # never runs: not an edge
    plant(tree / "sncheck/errors.py", "\nif TYPE_CHECKING:\n    from sncheck.run import runner  # noqa\n",
          after="from __future__ import annotations\n")
    plant(tree / "sncheck/errors.py", "\nfrom typing import TYPE_CHECKING\n", after="from __future__ import annotations\n")
    r = lint(tree)
    assert r.returncode == 1 and "BROKEN" in r.stdout, r.stdout + r.stderr
    for chain in ("sncheck.model -> sncheck.cli.main", "sncheck.config.inventory -> sncheck.backends",
                  "sncheck.store.files -> sncheck.topology"):
        assert chain in r.stdout, (chain, r.stdout)
    assert "sncheck.errors ->" not in r.stdout, r.stdout


def test_a_package_without_a_layer_is_refused(copy) -> None:
    tree = copy("unplaced")
    (tree / "sncheck/fresh").mkdir()
    (tree / "sncheck/fresh/__init__.py").write_text('"""A package nobody placed."""\n')
    r = lint(tree)
    assert r.returncode != 0 and "sncheck.fresh" in r.stdout + r.stderr, r.stdout + r.stderr
