"""Issue 30, item 8: a signal at every step of an action, not only between the tools it runs.

tests/adversary.py's ``signal_at`` stops ``isolate --via slurm --via hostfile --apply`` just
before its n-th step: every file it opens, writes, syncs, renames or removes, every
directory it makes, the state directory's lock, each tool it starts and each state-store
transaction (:data:`adversary.STEP_CALLS`). After SIGKILL at any step the next command
reconciles what was left and says so; after SIGTERM at any step the command itself
finishes or rolls back the host in progress. Either way the store, the audit, the launcher
files and (fake) Slurm then agree (test_cli_ops.disagreements).

The plain run stops one seeded step of each signal; every step of a two-host command is
tests/bench/bench_isolation_steps.py (``--benchmark-enable``).
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest
from adversary import start_command, steps_taken, wait_command
from test_actions import INVENTORY, FakeCluster
from test_cli_ops import HOSTS, disagreements, invoke_main

from sncheck.run.inputs import load_inventory
from sncheck.store.state import StateStore

ARGS = ["-i", str(INVENTORY), "--via", "slurm", "--via", "hostfile", "--cap", "0.5", "--apply"]


@pytest.fixture
def fake_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fc = FakeCluster.create(tmp_path / "fake", list(load_inventory(INVENTORY).hosts))
    monkeypatch.setenv("PATH", f"{fc.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return fc


def fresh(fc: FakeCluster) -> None:
    fc.write_state({"slurm": {h: {"state": "IDLE", "reason": ""} for h in HOSTS},
                    "k8s": {h: {"taints": [], "unschedulable": False, "annotations": {}} for h in HOSTS}})


def stop_at(fc: FakeCluster, root: Path, hosts: list[str], step: int, sig: int) -> tuple[int, str, list[str], Path]:
    """Run ``isolate HOSTS`` on a fresh state dir and cluster, signalled before step ``step``
    (0: never). (exit status, output, the steps taken, the state dir)."""
    fresh(fc)
    state = root / "state"
    out = root / "cmd"
    pid = start_command(["isolate", *hosts, *ARGS, "--state-dir", str(state)], out, signal_at=(step, sig))
    code, text = wait_command(pid, out)
    return code, text, steps_taken(out), state


def judge_kill(fc: FakeCluster, state: Path, step: str, text: str) -> list[str]:
    """After a SIGKILL: what is wrong once the next command has run (none: [])."""
    open_before = []
    if (state / "state.db").exists():
        with StateStore(state) as st:
            open_before = st.open_txns()
    nxt = invoke_main("isolate", "node009", *ARGS, "--state-dir", str(state))
    wrong = []
    if nxt.exit_code != 0 or "Traceback" in nxt.output:
        wrong.append(f"the next command exited {nxt.exit_code}: {nxt.output[-400:]}")
    if open_before and "reconciled:" not in nxt.output:
        wrong.append(f"{len(open_before)} transactions left open, the next command did not say it reconciled them")
    wrong += disagreements(state, fc)
    return [f"SIGKILL before {step}: {w}" for w in wrong]


def judge_term(fc: FakeCluster, state: Path, step: str, code: int, text: str, hosts: list[str]) -> list[str]:
    """After a SIGTERM: the command itself left everything agreeing (none wrong: [])."""
    wrong = []
    if "Traceback" in text:
        wrong.append(f"a traceback: {text[-400:]}")
    if code == -signal.SIGTERM:  # before sncheck holds signals: it must not have begun anything
        if (state / "state.db").exists():
            with StateStore(state) as st:
                if st.current_status() or st.open_txns():
                    wrong.append("killed by SIGTERM after it had begun")
    elif code != 3 or "interrupted (SIGTERM)" not in text and "while waiting" not in text:
        wrong.append(f"exit {code}, not 3 with 'interrupted (SIGTERM)': {text[-300:]!r}")
    if state.exists():
        wrong += disagreements(state, fc)
        if (state / "state.db").exists():
            with StateStore(state) as st:
                done = sorted(s["entity"] for s in st.current_status())
            if done != hosts[:len(done)]:
                wrong.append(f"isolated {done}: a host after the one in progress was begun")
    return [f"SIGTERM before {step}: {w}" for w in wrong]


def sweep(fc: FakeCluster, root: Path, hosts: list[str], sig: int, steps: list[int] | None) -> tuple[int, list[str]]:
    """Stop the command before each of ``steps`` (None: every step it takes); (steps, failures)."""
    if steps is None:
        code, text, taken, _ = stop_at(fc, root / "whole", hosts, 0, 0)
        assert code == 0 and len(taken) > 20, (code, text, taken)
        steps = list(range(1, len(taken) + 1))
    failures = []
    for n in steps:
        code, text, taken, state = stop_at(fc, root / f"{sig}-{n}", hosts, n, sig)
        assert len(taken) >= n, (n, taken)  # the step is logged before the signal
        label = taken[n - 1]
        if sig == signal.SIGKILL:
            if code != -signal.SIGKILL:
                failures.append(f"SIGKILL before {label}: exit {code}")
                continue
            failures += judge_kill(fc, state, label, text)
        else:
            failures += judge_term(fc, state, label, code, text, hosts)
    return len(steps), failures


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_a_signal_at_a_seeded_step_of_isolate_leaves_all_agreeing(fake_cluster: FakeCluster, tmp_path: Path,
                                                                  sig: int) -> None:
    # one step of the 34 a one-host isolate takes (bench: every step, two hosts)
    step = random.Random(30 + sig).randint(6, 30)
    _, failures = sweep(fake_cluster, tmp_path, ["node005"], sig, [step])
    assert not failures, "\n".join(failures)
