"""Review of hostile round 9's isolation landings (961f32d, b3dfdf6, f583b6b): the inputs
that made an action lift what it does not own, each found by an adversarial case."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import test_actions
from test_actions import FakeCluster, ctx_with, req

from sncheck.actions.base import LocalRunner
from sncheck.actions.kubernetes import KubernetesAction
from sncheck.transport import Result

inventory, fake_cluster = test_actions.inventory, test_actions.fake_cluster  # the fake cluster's fixtures


class CordonRefused(LocalRunner):
    """The fake cluster's kubectl, with `kubectl cordon` refused (an admission webhook, RBAC)."""

    def run(self, argv: list[str]) -> Result:
        if argv[:2] == ["kubectl", "cordon"]:
            return Result(self.host, " ".join(argv), "", "Error from server (Forbidden): cordon denied", 1, 0.0)
        return super().run(argv)


def test_a_failed_cordon_leaves_no_mark_that_claims_a_later_cordon(fake_cluster: FakeCluster) -> None:
    """961f32d writes sncheck's cordon mark before the cordon. When the cordon itself failed
    (not a kill between them: a refusal), the mark stayed on a schedulable node; an admin's
    cordon of it later was then taken for sncheck's, and `release` uncordoned it."""
    k8s = KubernetesAction()
    out = k8s.apply(req("node005", "host"), ctx_with(("node005", "host")), CordonRefused())
    assert out.status == "failed", out
    node = fake_cluster.k8s("node005")
    assert not node["unschedulable"]
    assert "sncheck.io/cordoned" not in node["annotations"], node
    fake_cluster.set_k8s("node005", unschedulable=True)  # an admin's maintenance cordon
    k8s.apply(req("node005", "host", "release"), ctx_with(), LocalRunner())
    assert fake_cluster.k8s("node005")["unschedulable"], "sncheck lifted a cordon it never made"


def _refuse_resume(cluster: FakeCluster, wrap: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`scontrol update ... State=RESUME` refused (slurmctld down, a permission), the rest as before."""
    wrap.mkdir()
    (wrap / "scontrol").write_text('#!/bin/sh\ncase "$*" in *State=RESUME*) echo "slurm_update error: Access denied" >&2; '
                                   f'exit 1;; esac\nexec "{cluster.bin_dir}/scontrol" "$@"\n')
    (wrap / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrap}{os.pathsep}{os.environ['PATH']}")


def test_a_release_slurm_refused_keeps_the_host_counted_and_shown(tmp_path: Path, fake_cluster: FakeCluster,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """b3dfdf6: a step is applied where any action took effect. For a release: node005's
    resume refused, its hostfile line back: the store said released (status empty, the cap
    not counting it) while Slurm kept it drained with sncheck's reason; another host went out
    past the cap (2 of 16 hosts out at 10%)."""
    from test_hostile_r9 import _act

    state = tmp_path / "state"
    assert _act(state, "isolate", "node005", "--via", "slurm", "--via", "hostfile", "--apply").exit_code == 0
    _refuse_resume(fake_cluster, tmp_path / "wrap", monkeypatch)
    r = _act(state, "release", "node005", "--via", "slurm", "--via", "hostfile", "--apply")
    assert r.exit_code == 3, r.output
    assert fake_cluster.slurm("node005")["state"].upper().startswith("DRAIN")
    from test_hostile_r9 import _cli

    [line] = [ln for ln in _cli("status", "--state-dir", state).output.splitlines() if ln.startswith("node005")]
    assert "isolate" in line and "release failed in part (slurm)" in line, line
    r = _act(state, "isolate", "node006", "--via", "slurm", "--via", "hostfile", "--apply")
    assert r.exit_code == 1 and "2 of 16 hosts" in r.output, r.output


def test_status_says_an_isolation_applied_in_part(tmp_path: Path, fake_cluster: FakeCluster) -> None:
    """b3dfdf6 records node005 drained in Slurm but not cordoned (no such Kubernetes node) as
    applied: `status` then shows a plain 'isolate', the cordon's failure only in the audit
    (before, '(not applied)', also wrong the other way). It should say the isolation is in part."""
    from test_hostile_r9 import _act, _cli

    def _cli_status(state: Path) -> str:
        return _cli("status", "--state-dir", state).output

    st = fake_cluster.state()
    del st["k8s"]["node005"]
    fake_cluster.write_state(st)
    state = tmp_path / "state"
    r = _act(state, "isolate", "node005", "--via", "slurm", "--via", "kubernetes", "--apply")
    assert r.exit_code == 3, r.output
    [line] = [ln for ln in _cli_status(state).splitlines() if ln.startswith("node005")]
    assert "in part" in line and "not applied" not in line, line


def test_the_step_is_the_same_for_a_request_done_at_once_and_one_completed_after_an_interruption() -> None:
    """final review: reconcile (an interrupted request completed) built its step apart from
    apply_each's, so an interrupted release completed with Slurm's resume refused was
    recorded as released. Both record transaction._outcome_step: a release with a failed
    action is the entity still isolated; an isolation with one is applied in part."""
    from sncheck.actions.base import ActionRequest
    from sncheck.actions.transaction import _outcome_step

    def done(*outcomes: tuple[str, str]) -> list[dict]:
        return [{"via": via, "outcome": outcome} for via, outcome in outcomes]

    release = ActionRequest("node005", "host", "release", "operator", None, {}, None)
    step, applied = _outcome_step(release, done(("slurm", "failed"), ("hostfile", "ok")), "operator (completed)")
    assert (step.action.value, step.applied, applied) == ("isolate", True, False)
    assert step.reason == "release failed in part (slurm): still isolated: operator (completed)"
    isolate = ActionRequest("node005", "host", "isolate", "rule x", None, {}, None)
    step, applied = _outcome_step(isolate, done(("slurm", "ok"), ("kubernetes", "failed")), "rule x")
    assert (step.action.value, applied, step.reason) == ("isolate", True, "rule x (applied in part: kubernetes failed)")
    step, applied = _outcome_step(release, done(("slurm", "ok"), ("hostfile", "ok")), "operator")
    assert (step.action.value, applied, step.reason) == ("release", True, "operator")
