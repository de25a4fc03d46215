"""Review of hostile round 9's isolation landings (961f32d, b3dfdf6, f583b6b): the inputs
that made an action lift what it does not own, each found by an adversarial case."""

from __future__ import annotations

from pathlib import Path

from test_actions import FakeCluster, ctx_with, fake_cluster, inventory, req  # noqa: F401 -- fixtures

from sncheck.actions.base import LocalRunner
from sncheck.actions.kubernetes import KubernetesAction
from sncheck.transport import Result


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
