"""Host facts of a simulated host: rendered tool output, read by the real parsers and checks.

For each host the mock backend asks, this module renders what each fact command would
print there (:mod:`sncheck.vendors.sim`, one ``sim`` module per vendor package), then
hands the output to :func:`sncheck.vendors.facts.check_host`, the code the SSH backend
runs over real output. So a mock host's facts are exactly what the parsers and checks
make of real-looking tool output, faults included:

* ``down_host``: the host is unreachable (one ``reachable`` row, as SSH gives);
* ``missing_tool`` (tool): that tool exits 127 "not found", before any renderer runs;
* every other tool and platform fault: the renderer of the tool that reports it.

A command with no renderer for the host is a harness gap, not a pass: its facts get
``error`` rows that say so.

Renderers depend on a host's state only (cards, platform, tool faults), never on its
name, so each distinct state is rendered and checked once, under a placeholder name,
and its rows are relabelled for every host in that state (a 1,000-host fleet of clean
8-card hosts costs one rendering).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache
from types import ModuleType

from ..faults import HOST_TOOL_FAULTS, PLATFORM_FAULTS, Fault
from ..rows import host_fact_row
from ..topology import Topology
from ..vendors import facts as hostfacts
from ..vendors import registry, simfacts
from ..vendors.infiniband import sim as infiniband_sim
from ..vendors.nvidia import sim as nvidia_sim
from ..vendors.sim import HostState, ToolOutput, not_found
from .base import Emit

# The vendor renderers, written out (nothing registers itself on import). Add a
# vendor's ``sim`` module here; the first one that lists a command renders it.
SIMULATORS: tuple[ModuleType, ...] = (nvidia_sim, infiniband_sim)


def renderer(command: str, simulators: Iterable[ModuleType] = SIMULATORS) -> ModuleType | None:
    """The sim module that renders fact command ``command``, if any."""
    return next((m for m in simulators if command in m.COMMANDS), None)


PLACEHOLDER = "simhost"  # stands for the host's name while a state is rendered and checked


def host_state(topo: Topology, host: str, faults: Iterable[Fault]) -> HostState:
    """What the renderers see of ``host``: its cards, platform and tool faults in effect.

    The host is named :data:`PLACEHOLDER` (faults retargeted to match), so hosts in the
    same state share one state and one rendering.
    """
    mine = tuple(sorted((replace(f, target=PLACEHOLDER + f.target[len(host):], transient=False)
                         for f in faults if f.type in HOST_TOOL_FAULTS and f.host == host),
                        key=lambda f: (f.type, f.target)))
    inv = topo.inventory
    plat = inv.platform_of(host)
    return HostState(PLACEHOLDER, inv.hosts[host].cards, plat.name if plat else None, mine,
                     domain_hosts=len(inv.supernode_of(host).hosts))


def render(command: hostfacts.FactCommand, state: HostState) -> ToolOutput:
    """What ``command`` prints on the simulated host (exit 127 where its tool is missing)."""
    if any(f.tool == command.tool for f in state.host_faults("missing_tool")):
        return not_found(command.argv[0])
    sim = renderer(command.name)
    if sim is None:
        return ToolOutput(1, "", f"{command.argv[0]}: no output for this host's platform "
                                 f"({state.platform or 'default'})")
    return sim.render(command.name, state)


class _Clock:
    """Simulated time for commands read again while "not ready yet": no real waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@lru_cache(maxsize=256)
def _checked(state: HostState, checks: tuple[tuple[str, bool], ...] = ()) -> tuple[dict, ...]:
    """The rows of a state: rendered once, parsed and checked by the SSH backend's code."""
    plat = registry.platform(state.platform) if state.platform else None
    expect = hostfacts.Expect(cards=state.cards, platform=plat, domain_hosts=state.domain_hosts)
    params = plat.params if plat else {}
    clock = _Clock()
    return tuple(hostfacts.check_host(
        PLACEHOLDER, expect, registry.vendor_of(plat).commands_for(plat), lambda cmd: render(cmd, state),
        checks=dict(checks), window_s=float(params.get("fabric_retry_s", 0.0)),
        interval_s=float(params.get("fabric_retry_every_s", 5.0)), sleep=clock.sleep, clock=clock))


def _relabel(row: dict, host: str) -> dict:
    out = dict(row, host=host)
    if isinstance(out.get("message"), str):
        out["message"] = out["message"].replace(PLACEHOLDER, host)
    return out


def host_facts(topo: Topology, faults: Iterable[Fault], hosts: Iterable[str], emit: Emit) -> None:
    """Emit the ``host_fact`` rows of ``hosts``; ``faults`` are the faults in effect now.

    Hosts on a platform whose vendor ships a platform simulator
    (:mod:`sncheck.vendors.simfacts`: NVL72 trays, MI300X, Ascend nodes) get its rows;
    every other host is rendered here through the vendor ``sim`` modules.
    """
    faults = tuple(faults)
    inv = topo.inventory
    down = {f.target for f in faults if f.type == "down_host"}
    live: list[str] = []
    gathered: dict[str, list[dict]] = {}
    for h in hosts:
        if h in down:
            emit(host_fact_row(h, "reachable", False, True, False, status="unreachable", tool="ssh",
                               message=f"{h}: unreachable: connect timed out"))
            continue
        emit(host_fact_row(h, "reachable", True, True, True, tool="ssh", message=f"{h}: connected"))
        live.append(h)
    by_platform = {h for h in live if _platform_simulated(topo, h)}
    for h in live:
        if h in by_platform:
            continue
        checks = tuple(sorted(inv.checks_of(h).items()))
        gathered[h] = [_relabel(row, h) for row in _checked(host_state(topo, h, faults), checks)]
        for row in gathered[h]:
            emit(row)
    if by_platform:
        reachable = tuple(h for h in inv.hosts if h not in down)
        for row in simfacts.platform_rows(inv, tuple(h for h in live if h in by_platform),
                                          [f for f in faults if f.type in PLATFORM_FAULTS], reachable):
            emit(row)
    # the cross-host step, as the SSH backend does it: each domain's vendor judges it whole
    for sn in inv.supernodes:
        if not sn.platform or not any(h in gathered for h in sn.hosts):
            continue
        plat = registry.platform(sn.platform)
        vendor = registry.vendor_of(plat)
        if vendor.domain_check is not None:
            rows = [r for h in sn.hosts for r in gathered.get(h, [])]
            for row in vendor.domain_check(plat, sn.name, sn.hosts, rows):
                emit(row)


def _platform_simulated(topo: Topology, host: str) -> bool:
    plat = topo.inventory.platform_of(host)
    return plat is not None and simfacts.simulator(registry.vendor_of(plat).name) is not None


def rendered_outputs(topo: Topology, faults: Iterable[Fault], host: str) -> list[tuple[hostfacts.FactCommand, ToolOutput]]:
    """What each fact command printed on ``host`` for a read with ``faults`` in effect:
    the output :func:`host_facts` judged, rendered again for the evidence bundle of a host
    with a finding (rendering is cheap for one host, and a fleet's worth is never kept).
    A down host printed nothing; a switched-off check was not run."""
    faults = tuple(faults)
    if any(f.type == "down_host" and f.target == host for f in faults):
        return []
    inv = topo.inventory
    plat = inv.platform_of(host)
    vendor = registry.vendor_of(plat)
    off = {tool for tool, on in inv.checks_of(host).items() if not on}
    cmds = [c for c in vendor.commands_for(plat) if c.tool not in off]
    if _platform_simulated(topo, host):
        sn = inv.supernode_of(host)
        platform_faults = [f for f in faults if f.type in PLATFORM_FAULTS]
        down = [sn.hosts.index(f.host) for f in platform_faults if f.type == "imex_down" and f.host in sn.hosts]
        out = simfacts.simulator(vendor.name).outputs(
            host, sn.hosts.index(host), [f for f in platform_faults if f.host == host], down)
        return [(c, ToolOutput(0, out[c.name])) for c in cmds if c.name in out]
    state = host_state(topo, host, faults)
    return [(c, _named(render(c, state), host)) for c in cmds]


def _named(out: ToolOutput, host: str) -> ToolOutput:
    """A rendering with the placeholder host name put back to the host's own."""
    return replace(out, stdout=out.stdout.replace(PLACEHOLDER, host), stderr=out.stderr.replace(PLACEHOLDER, host))
