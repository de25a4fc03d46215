"""A write killed between its temporary file and the rename (sncheck.config.fileio.write_atomic)
left ``.hostfile.txt.XXXXXXXX.tmp`` beside the file for good. The next write of that file
removes such leftovers: only names of exactly its own pattern, regular files of this user, not
a write in progress (it holds an flock until its rename), never a link, a FIFO, a directory,
another user's file or another file's temporary."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sncheck.actions.files import HOSTFILE_NAME
from sncheck.config import fileio

ROOT = Path(__file__).resolve().parents[1]
# a writer stopped for good inside write_atomic, after its temporary file is written, before the rename
KILLED_WRITER = ("import os, sys, time\n"
                 "from sncheck.config import fileio\n"
                 "def stop(fd):\n"
                 "    print('writing', flush=True)\n"
                 "    time.sleep(60)\n"
                 "os.fsync = stop\n"
                 "fileio.write_atomic(sys.argv[1], 'node1 slots=8\\n')\n")


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def test_a_killed_writes_temporary_file_is_removed_by_the_next_write_and_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / HOSTFILE_NAME
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    [left] = [p for p in tmp_path.iterdir() if p.name.startswith(f".{HOSTFILE_NAME}.")]
    assert left.read_text() == "node1 slots=8\n" and not target.exists()

    # what is not a killed write of hostfile.txt, each kept as it was
    keep = {}
    for name in (f".{HOSTFILE_NAME}.abcdefg.tmp", f".{HOSTFILE_NAME}.ABCDEFGH.tmp", f".{HOSTFILE_NAME}.abcdefgh.tmp.1",
                 f"x.{HOSTFILE_NAME}.abcdefgh.tmp", ".exclude_hosts.txt.abcdefgh.tmp", f".{HOSTFILE_NAME}.abc-efgh.tmp"):
        keep[name] = tmp_path / name  # another pattern: another tool's, or another file's temporary
        keep[name].write_text(name)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("not ours to remove")
    link = tmp_path / f".{HOSTFILE_NAME}.linklink.tmp"
    link.symlink_to(elsewhere)
    fifo = tmp_path / f".{HOSTFILE_NAME}.fifofifo.tmp"
    os.mkfifo(fifo)
    folder = tmp_path / f".{HOSTFILE_NAME}.dirdirdi.tmp"
    folder.mkdir()
    young = tmp_path / f".{HOSTFILE_NAME}.youngone.tmp"  # a write between mkstemp and its lock
    young.write_text("young")
    busy = tmp_path / f".{HOSTFILE_NAME}.busybusy.tmp"  # a write in progress: it holds the lock
    busy.write_text("busy")
    others = tmp_path / f".{HOSTFILE_NAME}.nobodys1.tmp"
    others.write_text("another user's")
    if os.geteuid() == 0:
        os.chown(others, 65534, 65534)
    for p in [left, *keep.values(), busy, others]:
        _age(p, 3600)
    for p in (link, fifo, folder):
        _age(p, 3600)
    with open(busy, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        fileio.write_atomic(target, "node2 slots=8\n")
    assert target.read_text() == "node2 slots=8\n"
    assert not left.exists()  # the killed write's
    survivors = {p.name for p in tmp_path.iterdir()}
    expected = {*keep, "elsewhere", link.name, fifo.name, folder.name, young.name, busy.name, HOSTFILE_NAME}
    if os.geteuid() == 0:
        expected.add(others.name)  # chowned to nobody: not this user's
    assert survivors == expected, survivors ^ expected
    assert elsewhere.read_text() == "not ours to remove" and link.is_symlink()
    assert all(p.read_text() == name for name, p in keep.items())
    # the busy write ends (its lock released) and grows old: the next write takes it
    _age(busy, 3600)
    fileio.write_atomic(target, "node3 slots=8\n")
    assert not busy.exists() and young.exists()
