"""Host facts of a simulated host: rendered tool output, read by the real parsers and checks.

For each host the mock backend asks, this module renders what each fact command would
print there (:mod:`sncheck.vendors.sim`, the ``sim`` module of the host's vendor), then
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
8-card hosts costs one rendering): the host's name, and its GPUs' UUIDs made its own
(:func:`sncheck.vendors.sim.own_ids`, as the text the host's tools would print).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache

from sncheck.config.faultplan import HOST_TOOL_FAULTS, Fault
from sncheck.topology import Topology
from sncheck.vendors import facts as hostfacts
from sncheck.vendors import hostjudge
from sncheck.vendors import registry
from sncheck.vendors.identity import own_id
from sncheck.vendors.sim import HostState, ToolOutput, not_found, own_ids, simulator
from sncheck.backends import hostreads
from sncheck.backends.base import Emit
from sncheck.vendors import kernel_log

PLACEHOLDER = "simhost"  # stands for the host's name while a state is rendered and checked


def host_state(topo: Topology, host: str, faults: Iterable[Fault]) -> HostState:
    """What the renderers see of ``host``: its cards, platform and tool faults in effect,
    and, on a platform, its place in its domain and the domain's hosts with IMEX down.

    The host is named :data:`PLACEHOLDER` (faults retargeted to match), so hosts in the
    same state share one state and one rendering.
    """
    faults = tuple(faults)
    mine = tuple(sorted((replace(f, target=PLACEHOLDER + f.target[len(host):], transient=False)
                         for f in faults if f.type in HOST_TOOL_FAULTS and f.host == host),
                        key=lambda f: (f.type, f.target)))
    inv = topo.inventory
    plat = inv.platform_of(host)
    sn = inv.supernode_of(host)
    index = 0
    down: tuple[int, ...] = ()
    addresses: tuple[str | None, ...] = ()
    if plat is not None:  # a platform's renderers may print the host's place (tray, SDID)
        index = sn.hosts.index(host)
        down = tuple(sorted(sn.hosts.index(f.host) for f in faults if f.type == "imex_down" and f.host in sn.hosts))
        addresses = tuple(inv.hosts[h].imex_address for h in sn.hosts)
        addresses = addresses if any(addresses) else ()
    return HostState(PLACEHOLDER, inv.hosts[host].cards, plat.name if plat else None, mine,
                     domain_hosts=len(sn.hosts), index=index, down_in_domain=down,
                     domain_addresses=addresses)


def render(command: hostfacts.FactCommand, state: HostState) -> ToolOutput:
    """What ``command`` prints on the simulated host (exit 127 where its tool is missing)."""
    if any(f.tool == command.tool for f in state.host_faults("missing_tool")):
        return not_found(command.argv[0])
    sim = simulator(state.platform)
    out = sim.render(command.name, state) if sim is not None else None
    if out is None:
        return ToolOutput(1, "", f"{command.argv[0]}: no output for this host's platform "
                                 f"({state.platform or 'default'})")
    return out


class _Clock:
    """Simulated time for commands read again while "not ready yet": no real waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@lru_cache(maxsize=256)
def _checked(state: HostState, checks: tuple[tuple[str, bool], ...] = ()) -> tuple[tuple[dict, frozenset[str]], ...]:
    """The rows of a state, each with the keys that hold GPU UUIDs (:func:`_uuid_keys`): rendered
    once, judged by the code every backend shares (:func:`sncheck.vendors.hostjudge.judge_host`)."""
    plat = registry.platform(state.platform) if state.platform else None
    expect = hostfacts.Expect(cards=state.cards, platform=plat, domain_hosts=state.domain_hosts)
    params = plat.params if plat else {}
    clock = _Clock()
    return tuple((row, _uuid_keys(row)) for row in hostjudge.judge_host(
        PLACEHOLDER, expect, registry.vendor_of(plat).commands_for(plat), lambda cmd: render(cmd, state),
        checks=dict(checks), window_s=float(params.get("fabric_retry_s", 0.0)),
        interval_s=float(params.get("fabric_retry_every_s", 5.0)), sleep=clock.sleep, clock=clock))


def _relabel(row: dict, host: str, uuids: frozenset[str] = frozenset(), moved: dict[str, str] | None = None) -> dict:
    """``row`` of the placeholder as ``host``'s: its name, and the GPU UUIDs in its keys ``uuids``
    (:func:`_uuid_keys`) made the host's own. ``moved``: the host's texts moved so far, shared
    by its rows (a host's card ids recur in several facts' rows: each moved once)."""
    out = dict(row, host=host)
    for key in ("message", "entity"):
        if isinstance(out.get(key), str):
            out[key] = out[key].replace(PLACEHOLDER, host)
    moved = {} if moved is None else moved
    for key in uuids:
        out[key] = _owned(out[key], host, moved)
    return out


def _uuid_keys(row: dict) -> frozenset[str]:
    """The keys of a state's row whose value holds a GPU UUID, and its ``ids`` (an AMD or
    Ascend identity is bare there; found once a state, by :func:`_checked`: a fleet of hosts in
    one state relabels only those; most rows hold none)."""
    return frozenset(k for k, v in row.items() if k != "host" and ("GPU-" in repr(v) or k == "ids"))


def _owned(value: object, host: str, moved: dict[str, str]) -> object:
    """``value`` (a row's ids or value: text, a list, a mapping of them) with the device
    identities in it made ``host``'s own (each text through ``moved``, the host's texts moved
    so far: :func:`~sncheck.vendors.identity.own_id` is a function of the text and the host)."""
    if isinstance(value, str):
        got = moved.get(value)
        if got is None:
            got = moved[value] = own_id(value, host)
        return got
    if isinstance(value, list | tuple):
        return type(value)(_owned(v, host, moved) for v in value)
    if isinstance(value, dict):
        return {k: _owned(v, host, moved) for k, v in value.items()}
    return value


def host_facts(topo: Topology, faults: Iterable[Fault], hosts: Iterable[str], emit: Emit,
               judge: hostjudge.FactJudge | None = None, kernel_read: set[str] | None = None) -> None:
    """Emit the ``host_fact`` rows of ``hosts``; ``faults`` are the faults in effect now.

    Every host is rendered through its vendor's ``sim`` module and judged by ``judge``
    (:class:`sncheck.vendors.hostjudge.FactJudge`, the judgement every backend shares:
    devices named, devices compared with the first read, each platform domain judged
    whole over every host of it read now). A host on no platform with no fault of its own
    is in the state of every such host of its card count and domain size (made once).
    ``kernel_read``: the hosts whose kernel log this run read already (updated), as an SSH host's
    facts come with its kernel log since the last read (:func:`_kernel_rows`); None: no kernel log.
    """
    faults = tuple(faults)
    inv = topo.inventory
    judge = judge or hostjudge.FactJudge(inv)
    down = {f.target for f in faults if f.type == "down_host"}
    own = {f.host for f in faults if f.type in HOST_TOOL_FAULTS}
    where = {h: sn for sn in inv.supernodes for h in sn.hosts}   # (Inventory.supernode_of scans them)
    sn_checks = {sn.name: tuple(sorted(dict(sn.checks).items())) for sn in inv.supernodes}   # (Inventory.checks_of)
    plain: dict[tuple, HostState] = {}
    made: dict[tuple, tuple[tuple[dict, frozenset[str]], ...]] = {}   # each key's rows (no hash of a state a host)

    def fan_out(todo, reached, lost) -> None:
        for h in todo:
            if h in down:
                lost(h, judge.unreachable(h, "ssh", "connect timed out"))
                continue
            sn = where[h]
            checks = sn_checks[sn.name]
            if sn.platform is None and h not in own:
                key: tuple = (inv.hosts[h].cards, len(sn.hosts), checks)
                state = plain.get(key)
                if state is None:
                    state = plain[key] = host_state(topo, h, faults)
            else:
                state = host_state(topo, h, faults)
                key = (state, checks)
            rows = made.get(key)
            if rows is None:
                rows = made[key] = _checked(state, checks)
            moved: dict[str, str] = {}   # (the host's own ids, moved once for all its rows)
            kernel = [_relabel(row, h) for row in _kernel_rows(state, h not in kernel_read)] \
                if kernel_read is not None else []
            if kernel_read is not None:
                kernel_read.add(h)
            reached(h, "ssh", "connected", rows=[*(_relabel(row, h, keys, moved) for row, keys in rows), *kernel])

    judge.read(tuple(hosts), fan_out, emit)


@lru_cache(maxsize=256)
def _kernel_rows(state: HostState, first: bool) -> tuple[dict, ...]:
    """The ``kernel_log`` rows of a state, read as an SSH host's read is (:mod:`sncheck.backends.hostreads`:
    parsed, each report named to the card whose bus id the host's ``nvidia-smi -q`` lists); ``first``: the
    run's first read of the host (a later one starts after the lines it read). () for a vendor whose
    simulator prints no kernel log."""
    render_log = getattr(simulator(state.platform), "render_kernel_log", None)
    if render_log is None:
        return ()
    plat = registry.platform(state.platform) if state.platform else None
    vendor = registry.vendor_of(plat)
    expect = hostfacts.Expect(cards=state.cards, platform=plat, domain_hosts=state.domain_hosts)

    def namer(buses: list[str], gpu_buses) -> dict[str, int]:
        if not buses or vendor.bus_listing is None:
            return {}
        shown = [c for c in vendor.commands_for(plat) if c.name in vendor.bus_listing.commands][:1]
        outs = [{"command": c.display, "stdout": render(c, state).stdout, "exit_code": 0} for c in shown]
        return hostreads.name_cards(vendor.bus_listing.buses(outs, expect), {}, state.cards, buses, gpu_buses)

    cmd = hostfacts.command("kernel_log", "kernel-log", ["sh", "-c", kernel_log.read_command()],
                            kernel_log.parse_kernel_log, hostreads.check_kernel(namer, not first, None, [], None),
                            "kernel_log")
    return tuple(hostfacts.outcome(PLACEHOLDER, cmd, expect, exit_code=0, stdout=render_log(state, first))[1])


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
    state = host_state(topo, host, faults)
    return [(c, _named(render(c, state), host)) for c in cmds]


def _named(out: ToolOutput, host: str) -> ToolOutput:
    """A rendering with the placeholder host name put back to the host's own."""
    return replace(out, stdout=own_ids(out.stdout.replace(PLACEHOLDER, host), host),
                   stderr=own_ids(out.stderr.replace(PLACEHOLDER, host), host))
