"""The state directory's files before SQLite opens any of them: what is sncheck's, and what is not.

A state directory is sncheck's when it is new or empty, or holds one of :data:`MARKS`: the
database, or the isolation lock (a side file of the database alone is none). Every other name sncheck writes there (the
audit log, the file actions' ``hostfile.txt`` and the like) is written under that lock, which is
never removed, so these mark every directory sncheck has used; generic names such as
``hostfile.txt`` would take an MPI user's job directory for sncheck's. A directory that holds anything else and none of them is another
program's (``--state-dir /var/lib/slurm``, ``~``, a run directory): sncheck
refuses it before it writes anything, naming it, rather than leave its database among another
program's files.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from sncheck.config.fileio import kind_of
from sncheck.errors import ConfigError

DB_NAME = "state.db"
SQLITE_FILES = ("", "-wal", "-shm", "-journal")
# sncheck.actions.transaction.LOCK_NAME (test_hostile_r6 checks it against that home). The
# database's side files are no mark alone: SQLite never leaves one without the database, so a
# stray ``state.db-wal`` is another program's (copied, or its own ``state.db``'s) and would be
# replayed into the database sncheck makes beside it (hostile round 8).
def has_store(state_dir: str | os.PathLike[str]) -> bool:
    """Whether the state directory holds a state.db of any kind: one that is no regular file (a
    FIFO, a link) is the store's to refuse, naming what it is (``StateStore``); it was said to be
    no state.db at all (hostile round 22, H22-09)."""
    return os.path.lexists(Path(state_dir, DB_NAME))


MARKS = (DB_NAME, ".sncheck-isolation.lock")
_SHOWN = 3  # entries a refusal names


def refuse_foreign_dir(path: Path) -> None:
    """Refuse (ConfigError naming it, exit 2) a state directory that holds entries and none of
    sncheck's marks; a missing, empty or sncheck's directory passes. Nothing is written. A state
    directory that is a symlink is refused too (as ``--out LINK`` is): the store and its lock were
    written through it, then the file actions refused the link, half done (hostile round 19)."""
    if path.is_symlink():
        raise ConfigError("is a symlink; sncheck never writes through a link (give the state directory itself)",
                          str(path))
    try:
        with os.scandir(path) as it:
            names = sorted(e.name for e in it)
    except FileNotFoundError:
        return  # new: sncheck makes it
    except NotADirectoryError as e:
        raise ConfigError("is not a directory: the state directory must be one (use another --state-dir)",
                          str(path)) from e
    except OSError as e:
        raise ConfigError(f"the state directory cannot be read ({e.strerror or e})", str(path)) from e
    if not names or any(m in names for m in MARKS):
        return
    shown = ", ".join(repr(n) for n in names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN
                                                           else "")
    raise ConfigError(f"holds {shown} and no sncheck state ({DB_NAME}): another program's directory; sncheck "
                      "writes its state only into a new or empty directory or one it made (use another --state-dir)",
                      str(path))


def check_files(db_path: Path) -> None:
    """Refuse (ConfigError, exit 2, naming it) a store whose database or SQLite side file
    exists and is not a regular file, links followed: a FIFO, a device, a socket, a
    directory, a dangling link; or is a link to a regular file (SQLite writes through it:
    hostile round 9). Before SQLite opens (or replaces) any of them."""
    for suffix in SQLITE_FILES:
        name = f"{db_path}{suffix}"
        if not os.path.lexists(name):
            continue
        try:
            mode = os.stat(name).st_mode
        except FileNotFoundError as e:
            if not os.path.lexists(name):  # gone between the two looks: another sncheck closing the store
                continue                   # (SQLite drops its -shm and -wal side files then)
            raise ConfigError(f"the state store's file cannot be used ({e.strerror}): a dangling link?", name) from e
        except OSError as e:
            raise ConfigError(f"the state store's file cannot be used ({e.strerror}): a dangling link?", name) from e
        if not stat.S_ISREG(mode):
            raise ConfigError(f"is {kind_of(mode)}, not a regular file: the state store keeps only regular "
                              "files here (remove it)", name)
        if os.path.islink(name):  # SQLite writes through a link: another file would become sncheck's database
            raise ConfigError(f"is a symbolic link (to {os.path.realpath(name)}): the state store writes through "
                              "no link (put the state directory itself there, or remove the link)", name)


def _is_store(d: Path) -> bool:
    """Whether ``d`` is sncheck's state directory: its isolation lock, or a state.db holding
    sncheck's schema (another program's ``state.db`` above a run is no store)."""
    if os.path.lexists(d / MARKS[1]):
        return True
    db = d / DB_NAME
    try:
        if not db.is_file():
            return False
        with open(db, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                return False
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return con.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
        finally:
            con.close()
    except (OSError, sqlite3.Error):  # an unreadable file is no store
        return False


def state_around(path: Path) -> Path | None:
    """The state directory ``path`` (a run directory) would be made inside, or None: a run's
    results.json, rows and reports among the fleet's isolation store (hostile round 26, H26-04;
    H23-12 refused the state directory itself, not one under it)."""
    parent = Path(os.path.realpath(Path(path).parent))
    for above in (parent, *parent.parents):
        if _is_store(above):
            return above
    return None
