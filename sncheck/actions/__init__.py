"""Isolation actions: take a card or host out of service, and put it back.

A dry run (the default) plans and runs nothing; ``apply=True`` runs the plan. Every
action, applied or not, is appended to ``audit.jsonl``. The registry is explicit:

    ACTIONS["slurm"]                # drain / resume (only nodes sncheck drained)
    ACTIONS["kubernetes"]           # taint, cordon / untaint, uncordon (only sncheck's cordon)
    ACTIONS["hostfile"]             # exclude_hosts.txt and hostfile.txt for launchers
    ACTIONS["cuda_visible_devices"] # per-host CUDA_VISIBLE_DEVICES map (JSON and env file)
"""

from __future__ import annotations

from sncheck.errors import ConfigError
from sncheck.actions.base import Action, ActionContext, ActionRequest, AuditLog, CommandRunner, Isolated, LocalRunner, Outcome, Plan, SshRunner, Step, perform, read_audit
from sncheck.actions.files import CudaVisibleDevicesAction, HostfileAction
from sncheck.actions.kubernetes import KubernetesAction
from sncheck.actions.slurm import SlurmAction

ACTIONS: dict[str, Action] = {
    "hostfile": HostfileAction(),
    "cuda_visible_devices": CudaVisibleDevicesAction(),
    "slurm": SlurmAction(),
    "kubernetes": KubernetesAction(),
}


def get_action(name: str) -> Action:
    try:
        return ACTIONS[name]
    except KeyError:
        raise ConfigError(f"unknown isolation action {name!r}; valid: {', '.join(ACTIONS)}") from None


__all__ = [
    "ACTIONS", "Action", "ActionContext", "ActionRequest", "AuditLog", "CommandRunner", "Isolated",
    "LocalRunner", "Outcome", "Plan", "SshRunner", "Step", "get_action", "perform", "read_audit",
]
