"""One real 4-rank gloo job under torchrun (tests/watch_job.py) whose dumps the watch tests
share: a session fixture in conftest.py runs it once (CI time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("clean", "straggler", "p2p", "hung")


def torchrun(out: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
           str(ROOT / "tests" / "watch_job.py"), "--out", str(out), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def real_job(base: Path) -> dict[str, Path]:
    """The job's four phases, each its own process group and dump directory: clean
    (dumped as torch's pickles), rank 2 sleeping 40 ms before each step's collectives,
    the same with a ring of sends and recvs after them, and rank 3 stopping after 8
    steps while the others time out after 3 s (the job ends failed: that is the fault)."""
    r = torchrun(base, "--phases", ",".join(PHASES), "--pickle-phases", "clean", "--rank", "2",
                 "--hung-rank", "3", "--hang-after", "8", "--pg-timeout", "3")
    for name in PHASES:
        assert len(list((base / name).glob("fr-*-rank*"))) == 4, (name, r.stderr[-3000:])
    return {name: base / name for name in PHASES}


def watch(*args: str) -> tuple[int, dict | None, str]:
    """``sncheck watch ARGS --once --json -q``: exit code, the JSON results (None when there
    are none) and the output."""
    from click.testing import CliRunner

    from sncheck.cli.main import main

    r = CliRunner().invoke(main, ["watch", *args, "--once", "--json", "-q"])
    try:
        data = json.loads(r.stdout) if r.stdout.strip() else None
    except json.JSONDecodeError:
        data = None
    return r.exit_code, data, r.output


def gating(results: dict) -> list[dict]:
    return [f for f in results["findings"] if f["severity"] in ("warning", "critical")]
