"""Signals on a real local run (torch.distributed gloo workers on this machine).

SIGTERM in each layer stops every worker, keeps what was measured, records in
results.json which layer was cut short and why, renders the report, removes the temp
directories and exits 3. SIGKILL of sncheck mid-calibration leaves no process behind.
Processes are found by a marker in their environment (every worker inherits it), and
temp directories by a private TMPDIR, so other runs on the machine do not count.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sncheck.store.rundir import read_rows

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent

# The layer to be cut short runs long; the others are small.
LONG = {"connectivity": "{bw_bytes: 1M, lat_iters: 20000, bw_iters: 200}",
        "stress": "{min_bytes: 8, max_bytes: 64K, iters: 3, warmup: 1, duration: 600}",
        "golden": "{steps: 5000}"}
SHORT = {"connectivity": "{bw_bytes: 64K, lat_iters: 20, bw_iters: 3}",
         "stress": "{min_bytes: 8, max_bytes: 64K, iters: 3, warmup: 1}",
         "golden": "{steps: 10}"}


def playbook(long: str) -> str:
    layers = "".join(f"  - {name}: {(LONG if name == long else SHORT)[name]}\n" for name in SHORT)
    return f"name: small\ngate: critical\nlayers:\n{layers}"


def _tagged(tag: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if f"SNCHECK_TEST_TAG={tag}".encode() in env.split(b"\0"):
            out.append(int(d.name))
    return out


def _wait_gone(tag: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = _tagged(tag)
        if not left:
            return []
        time.sleep(0.2)
    return _tagged(tag)


def _start(tmp_path: Path, out: Path, tag: str, long: str = "connectivity") -> tuple[subprocess.Popen, Path]:
    (tmp_path / "pb.yaml").write_text(playbook(long))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir), "SNCHECK_TEST_TAG": tag}
    err = open(tmp_path / "stderr.txt", "w")
    proc = subprocess.Popen([sys.executable, "-m", "sncheck", "run", str(tmp_path / "pb.yaml"),
                             "--cards", "3", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tmp_path)
    return proc, tmp_path / "stderr.txt"


def _wait_for(proc: subprocess.Popen, log: Path, needle: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text():
            return
        if proc.poll() is not None:
            pytest.fail(f"run ended before {needle!r}: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"no {needle!r} within {timeout} s: {log.read_text()[-2000:]}")


@pytest.mark.parametrize("layer, needle, signame", [
    ("connectivity", "connectivity: 3 pairs", "SIGTERM"),
    ("stress", "stress: 1 groups", "SIGTERM"),
    ("golden", "golden: ", "SIGHUP"),
])
def test_signal_in_each_layer_stops_cleanly(tmp_path, layer, needle, signame):
    tag = uuid.uuid4().hex
    out = tmp_path / "run"
    proc, log = _start(tmp_path, out, tag, long=layer)
    _wait_for(proc, log, needle)
    time.sleep(1.0)  # well inside the layer
    proc.send_signal(getattr(signal, signame))
    rc = proc.wait(60)
    text = log.read_text()
    assert rc == 3, text[-2000:]
    assert "Traceback" not in text
    assert _wait_gone(tag, 5.0) == [], "sncheck processes left behind"
    assert not list((tmp_path / "tmp").glob("sncheck-local-*")), "temp directories left behind"
    results = json.loads((out / "results.json").read_text())
    assert results["verdict"] == "error"
    cut = [entry for entry in results["layers"] if "cut_short" in entry["summary"]]
    assert [entry["name"] for entry in cut] == [layer], results["layers"]
    assert signame in cut[0]["summary"]["cut_short"]
    assert f"layer {layer} cut short" in results["error"] and signame in results["error"]
    assert (out / "report.html").stat().st_size > 0
    rows = read_rows(out)
    assert rows and {r["run_id"] for r in rows} == {results["run_id"]}  # what was measured is kept


def test_sigkill_mid_calibration_leaves_no_process(tmp_path):
    tag = uuid.uuid4().hex
    proc, log = _start(tmp_path, tmp_path / "run", tag)
    _wait_for(proc, log, "calibrating")
    deadline = time.monotonic() + 120
    while len(_tagged(tag)) < 5 and time.monotonic() < deadline:  # sncheck, its server, 3 ranks
        time.sleep(0.1)
    assert len(_tagged(tag)) >= 5, "the fork server and its ranks should be running"
    time.sleep(0.5)
    proc.kill()
    proc.wait(10)
    left = _wait_gone(tag, 5.0)
    assert left == [], f"processes alive 5 s after SIGKILL: {left}"
    deadline = time.monotonic() + 2
    while list((tmp_path / "tmp").glob("sncheck-local-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list((tmp_path / "tmp").glob("sncheck-local-*")), "temp directories left behind"
