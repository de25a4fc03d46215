"""The package's own data (rules, golden curves, playbooks, demo inventories) and where
a run's inputs came from.

A shipped *name* (``default``, ``pre-upgrade-gate``, ``mock-demo``) resolves only to the
package's files, never to a file of the same name in the working directory: a stray
``./fixtures/rules/default.yaml`` must not change detection. A file in the working
directory is used only when the command line, inventory or playbook names it by path.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

from sncheck.config.fileio import LIMITS, check_input, read_input

_HERE = Path(__file__).resolve().parents[1]  # the sncheck package (this module is in sncheck/config/)


def data_dir(package: str) -> Path:
    """The directory of a shipped data package: ``fixtures`` or ``playbooks``.

    In a source checkout (a ``pyproject.toml`` next to the package) that is the
    checkout's own folder, so a worktree runs with its own files; in an installed wheel
    it is the packaged copy.
    """
    checkout = _HERE.parent / package
    if (_HERE.parent / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    return Path(str(resources.files(f"sncheck.{package}")))


def shipped(package: str, *parts: str) -> Path | None:
    """A shipped file, or None."""
    p = data_dir(package).joinpath(*parts)
    return p if p.is_file() else None


def resolve(ref: str, package: str, folder: str | None, suffixes: tuple[str, ...]) -> Path | None:
    """The one rule for every input that may be shipped (a playbook, a rules file, a golden
    curve). A *path* (anything with a slash, a leading ``.`` or ``~``, or ending in one of
    ``suffixes``) is that file. A *name* is the shipped file of that name, never a file of
    that name in the working directory. None when there is no such file."""
    if "/" in ref or os.sep in ref or ref.startswith((".", "~")) or Path(ref).suffix in suffixes:
        p = Path(ref).expanduser()
        check_input(p)  # a FIFO or a device named as a file: refused, naming it
        # a link that leads nowhere (a loop, a dangling link) is that file: its reader says why, never 'no such name'
        return p if p.is_file() or (p.is_symlink() and not p.exists()) else None
    if not ref:
        return None
    return shipped(package, *([folder] if folder else []), ref + suffixes[0])


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(read_input(path, "json", "input", limit=max(LIMITS.values()))).hexdigest()


def provenance(name: str | None, path: str | Path | None) -> dict:
    """What results.json records about one input: its name, path and sha256."""
    out: dict = {"name": name, "path": None, "sha256": None}
    if path is not None and Path(path).is_file():
        p = Path(path).resolve()
        out.update(path=str(p), sha256=sha256_of(p), shipped=_is_shipped(p))
    return out


def _is_shipped(p: Path) -> bool:
    for package in ("fixtures", "playbooks"):
        try:
            p.relative_to(data_dir(package).resolve())
            return True
        except ValueError:
            continue
    return False
