"""Writing inside a run directory (or the state dir) and nowhere else.

Every file sncheck creates there goes through the one writer,
:func:`sncheck.config.fileio.write_atomic`: a fresh private name (``mkstemp``: ``O_CREAT |
O_EXCL``, which never follows a planted link) renamed over the target (a rename replaces
a link, it does not write through it; a FIFO or device there is refused). Every directory on the way
down from the root is checked not to be a symlink before anything is written in it.
A full disk is not an exception here: the writer keeps the first such error, so the
reserve can be spent on ``results.json`` with the cause.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

from sncheck.config.fileio import write_atomic
from sncheck.errors import HarnessError

__all__ = ["FULL", "RunFiles", "open_new", "real_dir", "route_log", "same_root", "write_atomic"]

FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def same_root(root: Path, identity: tuple[int, int] | None) -> None:
    """HarnessError unless ``root`` is still the directory whose (device, inode) the run
    opened: one moved away and replaced by a link (or another directory) while the run goes
    gets nothing of the run written into it (hostile round 11, H11-06). ``root`` itself may
    be a link the user named: it is followed, and must lead to the same directory."""
    if identity is None:
        return
    try:
        st = os.stat(root)
    except OSError as e:
        raise HarnessError(f"run directory: {root} is gone ({e.strerror or e}); it was moved or removed "
                           "while the run went") from e
    if (st.st_dev, st.st_ino) != identity:
        raise HarnessError(f"run directory: {root} is no longer the directory the run opened (moved, and a link "
                           "or another directory put in its place, while the run went); nothing more is written there")


def real_dir(root: Path, rel: str | os.PathLike[str] = "") -> Path:
    """``root / rel`` as a real directory: each component below ``root`` is created if
    missing and refused if it is a symlink or not a directory (HarnessError). ``root``
    itself is the caller's to check (:func:`same_root`)."""
    path = Path(root)
    for part in Path(rel).parts:
        if part in ("", ".", "..") or os.sep in part:
            raise HarnessError(f"run directory: refusing the path component {part!r} under {root}")
        path = path / part
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise HarnessError(f"run directory: {path} is {'a symlink' if stat.S_ISLNK(st.st_mode) else 'not a directory'}; "
                               "sncheck writes only inside the run directory and never through a link")
    return path


def open_new(path: Path, flags: int = os.O_WRONLY, mode: int = 0o644) -> int:
    """A new file at ``path`` (an old one, or a link planted there, is removed first, never
    followed): ``O_CREAT | O_EXCL | O_NOFOLLOW``."""
    try:
        if path.is_symlink() or path.exists():
            path.unlink()
    except IsADirectoryError:
        raise
    return os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


class RunFiles:
    """The one writer of a run directory's files (evidence, bundles): inside ``root`` only,
    never through a link; a full disk stops writing and is kept in :attr:`error`.

    Written atomically but not synced one by one: a bundle copies rows that ``rows/``
    already holds on disk and the tools' outputs, and a run with thousands of findings
    writes tens of thousands of them (2,556 findings: 22,684 ``fsync`` calls took 265 s of
    a busy machine's wall time). ``results.json``, the rows and the state store stay
    durable."""

    def __init__(self, root: str | os.PathLike[str], identity: tuple[int, int] | None = None) -> None:
        self.root = Path(root)
        self.identity = identity  # the run directory's (device, inode) when the run opened it
        self.error: str | None = None
        # per directory written in: each directory from the root down as checked (its path,
        # device and inode); a later write re-reads only these (one lstat each, nothing made)
        self._checked: dict[Path, list[tuple[str, int, int]]] = {}

    def write(self, rel: str, data: bytes | str) -> bool:
        """Write ``root/rel``; False once the disk is full (nothing more is written)."""
        if self.error is not None:
            return False
        rel_path = Path(rel)
        if rel_path.is_absolute() or ".." in rel_path.parts:
            raise HarnessError(f"run directory: refusing to write {rel!r} outside {self.root}")
        try:
            write_atomic(self._dir(rel_path.parent) / rel_path.name, data, durable=False)
        except OSError as e:
            if e.errno not in FULL:
                raise HarnessError(f"run directory: cannot write {self.root / rel}: {e.strerror or e}") from e
            self.error = f"writing {self.root / rel}: {e.strerror or e}"
            return False
        return True


    def _dir(self, rel: Path) -> Path:
        """``root / rel``, checked by :func:`real_dir` once per run (a bundle writes a dozen
        files, a fleet run tens of thousands); later writes find each directory on the way
        still the one checked (the same inode, not a link) or check it again whole, so a
        directory swapped for a link mid-run is still refused."""
        same_root(self.root, self.identity)
        chain = self._checked.get(rel)
        if chain is not None and _unchanged(chain):
            return self.root / rel
        path = real_dir(self.root, rel)
        chain = []
        for at in [self.root / Path(*rel.parts[:i + 1]) for i in range(len(rel.parts))]:
            st = os.lstat(at)
            chain.append((os.fspath(at), st.st_dev, st.st_ino))
        self._checked[rel] = chain
        return path


def _unchanged(chain: list[tuple[str, int, int]]) -> bool:
    """Whether each directory of ``chain`` is still the one recorded (lstat: never followed)."""
    for path, dev, ino in chain:
        try:
            st = os.lstat(path)
        except OSError:
            return False
        if st.st_ino != ino or st.st_dev != dev or not stat.S_ISDIR(st.st_mode):
            return False
    return True


_ROUTED = "sncheck.route_log"


def route_log(logger_name: str, path: Path | None = None) -> None:
    """A library's log records (paramiko's: a host that accepts TCP but sends no banner
    logs a traceback per attempt) go to ``path`` in the run directory, or nowhere; never
    to stderr. The file is made new, never through a link (:func:`open_new`)."""
    logger = logging.getLogger(logger_name)
    for old in [h for h in logger.handlers if h.get_name() == _ROUTED]:
        logger.removeHandler(old)
        old.close()
    handler: logging.Handler
    if path is None:
        handler = logging.NullHandler()
    else:
        stream = os.fdopen(open_new(Path(path), os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8")
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.set_name(_ROUTED)  # the handler sncheck routed, found and replaced by its name
    logger.addHandler(handler)
    logger.propagate = False
