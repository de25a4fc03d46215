"""Files for launchers: which hosts to leave out, which cards each host may use.

Both actions rewrite their files from the whole set of isolated entities (not one
request), so a release simply puts the entity back. They write into each output
directory of the context (the state directory, and the run directory when there is
one), atomically, on this machine: a launcher reads them from there.

``hostfile`` writes
  ``exclude_hosts.txt``  hosts out of service whole, one per line (``srun --exclude=./exclude_hosts.txt``,
                         or any exclude list);
  ``hostfile.txt``       the hosts still in service with ``slots=<usable cards>`` (``mpirun --hostfile``,
                         nccl-tests under mpirun).
``cuda_visible_devices`` writes
  ``cuda_visible_devices.json``  host -> visible-devices value for every host ("" for none);
  ``cuda_visible_devices.env``   a POSIX sh file to source on each host: it sets the host's vendor's
                                 variable (``CUDA_VISIBLE_DEVICES``, ``HIP_VISIBLE_DEVICES`` on AMD,
                                 ``ASCEND_RT_VISIBLE_DEVICES`` on Ascend) for the hosts with isolated
                                 cards and leaves the others alone.

A host is out of service whole when it is isolated, when its supernode is, or when
every one of its cards is. An isolated NIC masks the card of its rail (never its host).
NVIDIA card indices are nvidia-smi's (PCI bus order), so the env file also sets
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` there. Links take nothing out of service.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sncheck.model import card_of, host_of
from sncheck.config.inventory import Inventory
from sncheck.config.fileio import read_input, write_atomic
from sncheck.errors import ConfigError
from sncheck.topology import natural_key
from sncheck.vendors import registry
from sncheck.actions.base import ActionContext, ActionRequest, CommandRunner, Isolated, Outcome, Plan, Step, switch_plan

EXCLUDE_NAME = "exclude_hosts.txt"
HOSTFILE_NAME = "hostfile.txt"
CVD_JSON_NAME = "cuda_visible_devices.json"
CVD_ENV_NAME = "cuda_visible_devices.env"


@dataclass(frozen=True)
class ServiceView:
    """The cluster as launchers should see it: excluded hosts, usable card indices per host."""

    excluded_hosts: tuple[str, ...]
    visible: dict[str, tuple[int, ...]]  # every inventory host -> usable card indices
    hidden_cards: tuple[str, ...]  # isolated cards on hosts still in service
    # host -> the variable that masks its cards (its vendor's: CUDA_, HIP_, ASCEND_RT_VISIBLE_DEVICES)
    env: Mapping[str, str] = field(default_factory=dict)

    def variable(self, host: str) -> str:
        return self.env.get(host, "CUDA_VISIBLE_DEVICES")

    def summary(self) -> str:
        hosts = ", ".join(self.excluded_hosts) or "none"
        cards = ", ".join(self.hidden_cards) or "none"
        return f"hosts excluded: {hosts}; cards hidden: {cards}"


def service_view(inventory: Inventory, isolated: Mapping[str, Isolated]) -> ServiceView:
    """Apply the isolated entities to the inventory's hosts and cards (unknown ones are ignored)."""
    out_hosts: set[str] = set()
    out_cards: set[str] = set()
    sn_hosts = {sn.name: sn.hosts for sn in inventory.supernodes}
    for entity, info in isolated.items():
        if info.kind == "host" and entity in inventory.hosts:
            out_hosts.add(entity)
        elif info.kind == "supernode":
            out_hosts.update(sn_hosts.get(entity, ()))
        elif info.kind in ("card", "nic"):  # a NIC is isolated by masking the card of its rail
            out_cards.add(card_of(entity))
    visible: dict[str, tuple[int, ...]] = {}
    for name in sorted(inventory.hosts, key=natural_key):
        usable = () if name in out_hosts else tuple(
            i for i in range(inventory.hosts[name].cards) if f"{name}/gpu{i}" not in out_cards)
        if not usable:
            out_hosts.add(name)
        visible[name] = usable
    hidden = [c for c in out_cards if host_of(c) in inventory.hosts
              and host_of(c) not in out_hosts]
    env = {name: registry.vendor_of(inventory.platform_of(name)).visible_devices_env for name in visible}
    return ServiceView(tuple(sorted(out_hosts, key=natural_key)), visible,
                       tuple(sorted(hidden, key=natural_key)), env)


def render_exclude(view: ServiceView) -> str:
    return "".join(f"{h}\n" for h in view.excluded_hosts)


def render_hostfile(view: ServiceView) -> str:
    lines = ["# sncheck: hosts in service, slots = usable cards (isolated ones left out)"]
    lines += [f"{h} slots={len(cards)}" for h, cards in view.visible.items() if cards]
    return "\n".join(lines) + "\n"


def render_cvd_json(view: ServiceView) -> str:
    data = {h: ",".join(str(i) for i in cards) for h, cards in view.visible.items()}
    return json.dumps(data, indent=2) + "\n"


def render_cvd_env(view: ServiceView) -> str:
    lines = [
        "# sncheck: the visible-devices variable of each host's vendor (CUDA_VISIBLE_DEVICES,",
        "# HIP_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES) with the isolated cards left out.",
        "# Source it on each host:   . ./cuda_visible_devices.env",
        "# NVIDIA indices are the driver's (PCI bus order), hence CUDA_DEVICE_ORDER=PCI_BUS_ID.",
        "# Hosts not listed have no isolated card and are left as they are. Set SNCHECK_HOST",
        "# where the short host name is not the inventory name.",
        'case "${SNCHECK_HOST:-$(hostname -s)}" in',
    ]
    for host, cards in view.visible.items():
        var = view.variable(host)
        order = "CUDA_DEVICE_ORDER=PCI_BUS_ID " if var == "CUDA_VISIBLE_DEVICES" else ""
        if host in view.excluded_hosts:
            lines.append(f"  {shlex.quote(host)}) export {order}{var}= ;;  # out of service whole")
        elif any(host_of(c) == host for c in view.hidden_cards):
            value = ",".join(str(i) for i in cards)
            lines.append(f"  {shlex.quote(host)}) export {order}{var}={value} ;;")
    lines.append("esac")
    return "\n".join(lines) + "\n"


class _FilesAction:
    """Rewrite some files from the isolated set; runs nothing, so ignores the runner."""

    name: str
    renders: ClassVar[dict[str, Callable[[ServiceView], str]]]
    external = False  # derived from the state store: rewritten from it whenever they disagree

    def observe(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> bool | None:  # noqa: ARG002 -- the Action interface: a file needs no runner
        """Whether the first output directory's files show ``req`` done (None: they cannot say)."""
        if not ctx.out_dirs or ctx.inventory is None:
            return None
        shown = self.shown_out(Path(ctx.out_dirs[0]), ctx.inventory)
        if shown is None or (req.kind in ("card", "nic") and not self.shows_cards):
            return None
        entity = card_of(req.entity) if req.kind == "nic" else req.entity
        out = entity in shown or (req.kind in ("card", "nic") and host_of(entity) in shown)
        return out if req.action == "isolate" else not out

    shows_cards: ClassVar[bool] = False

    def shown_out(self, directory: Path, inventory: Inventory) -> set[str] | None:
        """Hosts (and cards, where the files tell them) the files in ``directory`` leave out."""
        raise NotImplementedError

    def render_all(self, inventory: Inventory, isolated: Mapping[str, Isolated]) -> dict[str, str]:
        """File name -> its text for this isolated set."""
        view = service_view(inventory, isolated)
        return {name: render(view) for name, render in self.renders.items()}

    def plan(self, req: ActionRequest, ctx: ActionContext) -> Plan:
        if (switch := switch_plan(req, ctx)) is not None:
            return switch
        if req.kind == "link":
            return Plan(skip="a link cannot be left out of a hostfile or device list; isolate a card")
        if ctx.inventory is None:
            return Plan(skip=f"{self.name} needs the inventory's hosts and cards (-i INVENTORY)")
        if not ctx.out_dirs:
            return Plan(skip=f"{self.name} has no directory to write to")
        view = service_view(ctx.inventory, ctx.isolated)
        steps = tuple(Step("write", path=str(Path(d) / name)) for d in ctx.out_dirs for name in self.renders)
        return Plan(steps, summary=view.summary())

    def apply(self, req: ActionRequest, ctx: ActionContext, runner: CommandRunner) -> Outcome:  # noqa: ARG002 -- the Action interface: a file needs no runner
        plan = self.plan(req, ctx)
        if plan.skip is not None or ctx.inventory is None:
            return Outcome("skipped", plan.skip or "")
        view = service_view(ctx.inventory, ctx.isolated)
        written: list[str] = []
        for d in ctx.out_dirs:
            for name, render in self.renders.items():
                path = Path(d) / name
                try:
                    write_atomic(path, render(view))
                except OSError as e:
                    return Outcome("failed", f"cannot write {path}: {e.strerror}", written=written)
                written.append(str(path))
        return Outcome("ok", f"wrote {', '.join(written)} ({view.summary()})", written=written)


class HostfileAction(_FilesAction):
    name = "hostfile"
    renders: ClassVar[dict[str, Callable[[ServiceView], str]]] = {
        EXCLUDE_NAME: render_exclude, HOSTFILE_NAME: render_hostfile}

    def shown_out(self, directory: Path, inventory: Inventory) -> set[str] | None:  # noqa: ARG002 -- the file actions' interface: this file's lines are entity names as they are
        text = _read(directory / EXCLUDE_NAME)
        return None if text is None else {ln.strip() for ln in text.splitlines() if ln.strip()}


class CudaVisibleDevicesAction(_FilesAction):
    name = "cuda_visible_devices"
    renders: ClassVar[dict[str, Callable[[ServiceView], str]]] = {
        CVD_JSON_NAME: render_cvd_json, CVD_ENV_NAME: render_cvd_env}
    shows_cards = True

    def shown_out(self, directory: Path, inventory: Inventory) -> set[str] | None:
        text = _read(directory / CVD_JSON_NAME)
        try:
            visible = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            return None
        if not isinstance(visible, dict):
            return None
        out: set[str] = set()
        for host, spec in inventory.hosts.items():
            value = visible.get(host)
            if not isinstance(value, str):
                continue
            shown = {int(x) for x in value.split(",") if x.strip().isdecimal()}
            hidden = [f"{host}/gpu{i}" for i in range(spec.cards) if i not in shown]
            out.update(hidden)
            if len(hidden) == spec.cards:
                out.add(host)
        return out


def _read(path: Path) -> str | None:
    """A file this action wrote, or None when it is not there or cannot be read as one."""
    try:
        return read_input(path, "yaml", "isolation file").decode("utf-8", "replace")
    except ConfigError:
        return None
