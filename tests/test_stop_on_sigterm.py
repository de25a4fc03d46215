"""Stops that stop (issue 18, class 7): SIGTERM ends an SSH run within 30 s while one
host's torchrun never starts, and the stop reaches the remote job's whole process group.
Was: the main thread waited in pool.shutdown(wait=True) for up to job_timeout_s, and the
remote stop signalled one process, not its group."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # this container's init does not reap


@pytest.mark.sshd
def test_sigterm_ends_an_ssh_run_whose_torchrun_never_starts(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    from sshd_harness import install_fake_tool
    from test_ssh_backend import install_profile, sh_quote, write_inventory

    cluster = sshd_cluster(2, ["node1", "node2"])
    for host in cluster:
        install_profile(host, "a100", cards=1)
    child = tmp_path / "node2-child.pid"
    install_fake_tool(cluster["node2"], "python3", (  # the module check passes; torchrun never starts
        "#!/bin/sh\n"
        f'case "$2" in torch.distributed.run) sleep 3600 & echo "$!" > {sh_quote(child)}; wait; exit 0 ;; esac\n'
        f"export PYTHONPATH={sh_quote(REPO)}\n"
        f'exec {sh_quote(sys.executable)} "$@"\n'))
    inv = write_inventory(tmp_path / "inv.yaml", cluster)
    playbook = tmp_path / "pb.yaml"
    playbook.write_text("name: hang\nlayers:\n  - stress: {min_bytes: 4K, max_bytes: 4K, iters: 1, warmup: 1}\n"
                        "gate: warning\nconfirm: false\n")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "sncheck", "run", str(playbook), "-i", str(inv), "--backend", "ssh",
                             "--known-hosts", str(cluster.known_hosts), "--ssh-config", str(cluster.ssh_config),
                             "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 240  # the run reaches the job (slow on a busy machine)
        while not child.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert child.exists(), "node2's job never started"
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        output, _ = proc.communicate(timeout=60)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
    assert took < 30, f"SIGTERM took {took:.0f} s\n{output}"
    assert proc.returncode == 3, output
    assert "Traceback" not in output
    results = json.loads((out / "results.json").read_text())
    assert "interrupted (SIGTERM)" in json.dumps(results)
    # The remote stop reached the job's whole process group, not only its leader.
    pid = int(child.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "node2's job left its child running"
