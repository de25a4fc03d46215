"""The fault plan: faults a backend acts out for self-test (see DESIGN.md "Fault plan").

Only backends read it. Detection never sees the plan: it sees the rows the backend
measured, and a fault shows there only the way it would on real hardware.

Every fault type has one entry in :data:`FAULT_TYPES`: the kind of entity it targets,
its parameters with their defaults, and how it is acted out:

* ``probe`` faults act on a card's traffic and compute. The mock simulates them; the
  torch probe (local and SSH backends) acts them out on the rank of the target card
  (:class:`sncheck.worker.faults.FaultActor`).
* ``network`` faults break links and hosts; only the mock can act them out.
* ``tool`` faults are host-level faults that the host's own tools report (nvidia-smi,
  ibstat, dcgmi), as on real hardware. The mock renders the tool output from the real
  captures (``sncheck/vendors/*/sim.py``) and checks it with the same code as the SSH
  backend; the SSH backend hands them to the host's tools in the ``SNCHECK_FAULTS``
  environment variable, which only the test doubles read. Some also change the card's
  physics: ``nvlink_down`` (scale-up bandwidth in proportion to the links left),
  ``thermal_throttle`` (the card runs at ``factor``), ``ib_port_down`` (the rail of
  that port fails across supernodes).
* ``platform`` faults are tool faults of one platform's own tools (NVL72 fabric, AMD
  XGMI, Ascend NPU and HCCN).

:data:`ACTED_BY` says which backend acts out which types; it is the one home of that
list. Any fault may carry ``transient: true``: it ends before the confirmation retest; or
``late: true``: it begins at the confirmation retest (a fault a retest raises on its controls).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field, create_model

from sncheck.errors import ConfigError
from sncheck.config.schema import Choice, Flag, Int, Num, Schema, Shape, Text, validate
from sncheck.config.units import parse_size
from sncheck.config.yamlio import LineDict, Source, load_file, load_text
from sncheck.model import host_of, hosts_of, link_id, parse_switch, split_link

if TYPE_CHECKING:  # the cluster a plan is checked against (a layer above config: passed in)
    from sncheck.topology import Topology

MAX_FAULTS = 100_000  # faults in one plan
MAX_FACTOR = 1e6      # a factor or a count: finite, and far beyond any real slow-down
PARAMS = ("factor", "probability", "count", "links", "port", "tool", "direction", "above")
OPTIONAL = "optional"  # a parameter's default when it may be left out and has no value then
_TOOL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


@dataclass(frozen=True)
class FaultType:
    """One fault type: its target kind (card, link, host, switch, port), parameters and defaults.

    ``params`` maps each parameter to its default (``None``: required; :data:`OPTIONAL`: may
    be left out, and then has none). ``below_one``: the factor must be below 1 (a slow-down,
    not a speed-up); ``above_one``: above 1 (a latency or a spike that grows: a high_latency
    factor of 0.5 or 1e-300 made the card faster, a fault planned that no run could find;
    hostile round 22, H22-05). ``direction: a->b`` (links): only traffic from card a to card b;
    ``above: SIZE`` (bandwidth faults): only messages larger than SIZE bytes.
    """

    name: str
    target: str
    acted: str  # probe | network | tool | platform
    params: dict[str, Any] = field(default_factory=dict)
    below_one: bool = False
    doc: str = ""
    above_one: bool = False


def _t(name: str, target: str, acted: str, doc: str, below_one: bool = False, above_one: bool = False,
       **params: Any) -> FaultType:
    return FaultType(name, target, acted, params, below_one, doc, above_one)


FAULT_TYPES: dict[str, FaultType] = {t.name: t for t in (
    _t("slow_card", "card", "probe", "all its links and its compute run at factor x", True, factor=0.6),
    _t("high_latency_card", "card", "probe", "latency x factor, bandwidth normal", above_one=True, factor=3.0),
    _t("jittery_card", "card", "probe", "each message or op spikes by factor with probability",
       probability=0.2, above_one=True, factor=10.0),
    _t("corrupt_card", "card", "probe", "its p2p payloads and its collectives are wrong"),
    _t("collective_corruption", "card", "probe", "reductions through it are wrong; p2p payloads stay intact"),
    _t("diverge", "card", "probe", "golden-model loss diverges when it takes part"),
    _t("degraded_link", "link", "network", "the link runs at factor x (direction a->b: that way only; "
       "above: messages over that size only)", True, factor=0.3, direction=OPTIONAL, above=OPTIONAL),
    _t("dead_link", "link", "network", "the link carries nothing (direction a->b: that way only)",
       direction=OPTIONAL),
    _t("high_latency_link", "link", "network", "the link's latency x factor, its bandwidth normal", above_one=True, factor=3.0),
    _t("down_host", "host", "network", "unreachable"),
    _t("slow_nic", "host", "network", "the host's port-th scale-out NIC (rail port-1) runs at factor x; "
       "its port state shows nothing", True, factor=0.5, port=1, above=OPTIONAL),
    # Switch faults, acted out on every pair whose path (sncheck.fabric) crosses the switch or port.
    _t("slow_switch", "switch", "network", "every pair through the leaf or spine runs at factor x",
       True, factor=0.5, above=OPTIONAL),
    _t("dead_switch", "switch", "network", "nothing crosses the leaf or spine"),
    _t("switch_port_down", "port", "network", "the cable at the switch port carries nothing: its NIC's "
       "scale-out pairs (a host port) or the pairs over that uplink fail"),
    # Host-level faults: the host's tools report them, as on real hardware.
    _t("ecc_uncorrectable", "card", "tool", "the card report: count volatile uncorrectable ECC errors", count=1),
    _t("remap_pending", "card", "tool", "the card report: remapped rows pending"),
    _t("nvlink_down", "card", "tool", "the NVLink status: links inactive; its scale-up bandwidth "
       "drops in proportion", links=1),
    _t("ib_port_down", "host", "tool", "the NIC listing: the host's port-th port Down (rail port-1); that rail's "
       "scale-out pairs fail", port=1),
    _t("thermal_throttle", "card", "tool", "clock event reasons: HW Thermal Slowdown; the card runs at "
       "factor x", True, factor=0.8),
    _t("missing_tool", "host", "tool", "the tool is not on the host's PATH (exit 127)", tool=None),
    # Platform faults, acted out in the platform's own tool output.
    _t("fabric_incomplete", "host", "platform", "NVL72: the card report's Fabric State In Progress"),
    _t("fabric_degraded", "card", "platform", "NVL72: Fabric Health Bandwidth Limited Capacity"),
    _t("clique_split", "host", "platform", "NVL72: the tray reports another CliqueId than its rack"),
    _t("imex_down", "host", "platform", "NVL72: the IMEX node list shows the node not READY"),
    _t("xgmi_link_down", "card", "platform", "AMD: an XGMI link of the card is down"),
    _t("npu_alarm", "card", "platform", "Ascend: the NPU health shows Alarm on the device"),
    _t("hccn_link_down", "card", "platform", "Ascend: the RoCE net_health shows Socket fail / link DOWN"),
)}

PROBE_FAULTS = tuple(n for n, t in FAULT_TYPES.items() if t.acted == "probe")
NETWORK_FAULTS = tuple(n for n, t in FAULT_TYPES.items() if t.acted == "network")
TOOL_FAULTS = tuple(n for n, t in FAULT_TYPES.items() if t.acted == "tool")
PLATFORM_FAULTS = tuple(n for n, t in FAULT_TYPES.items() if t.acted == "platform")
HOST_TOOL_FAULTS = TOOL_FAULTS + PLATFORM_FAULTS  # what a host's tools report
# What the torch probe acts out on the target card's rank: the probe faults, and
# thermal_throttle's slow-down (its tool part is rendered separately). The worker keeps
# the same list (sncheck.worker.faults.ACTED_TYPES; tests/test_worker_job.py holds them equal).
TORCH_PROBE_FAULTS = PROBE_FAULTS + ("thermal_throttle",)

# The one list of which backend acts out which fault types.
ACTED_BY: dict[str, tuple[str, ...]] = {
    "mock": tuple(FAULT_TYPES),
    # One machine: no links or hosts to break, and its tools are the machine's own.
    "local": PROBE_FAULTS,
    "slurm": PROBE_FAULTS,
    # Real hosts: the probe acts card faults (and thermal_throttle's slow-down); tool
    # faults reach the tools through SNCHECK_FAULTS, which only test doubles read.
    "ssh": PROBE_FAULTS + HOST_TOOL_FAULTS,
}


def with_defaults(fault: dict[str, Any]) -> dict[str, Any]:
    """A fault as job data (``Fault.to_dict``) with every parameter its type defaults filled
    in: the worker acts on what the job says and knows no defaults of its own."""
    defaults = {k: v for k, v in FAULT_TYPES[fault["type"]].params.items() if v not in (None, OPTIONAL)}
    return {**fault, **{k: v for k, v in defaults.items() if fault.get(k) is None}}


@dataclass(frozen=True)
class Fault:
    type: str
    target: str
    factor: float | None = None
    probability: float | None = None
    transient: bool = False  # gone by the time a confirmation retest runs
    late: bool = False  # begins at the confirmation retest: the run's own measurements never see it
    count: int | None = None  # ecc_uncorrectable: volatile uncorrectable errors
    links: int | None = None  # nvlink_down: inactive links
    port: int | None = None  # ib_port_down, slow_nic: the host's port-th IB port (1-based), rail port-1
    tool: str | None = None  # missing_tool: the program not on the PATH
    direction: str | None = None  # degraded_link, dead_link: "a->b", only traffic from card a to card b
    above: int | None = None  # bandwidth faults: only messages of more bytes than this
    where: str = field(default="", compare=False)  # file:line of the fault in its plan

    @property
    def host(self) -> str:
        """The host the fault is on (the target itself for host faults; a switch or port
        fault is on no host: its target)."""
        if FAULT_TYPES[self.type].target in ("host", "switch", "port"):
            return self.target
        if FAULT_TYPES[self.type].target == "link":
            return host_of(split_link(self.target)[0])
        return host_of(self.target)

    def to_dict(self) -> dict[str, Any]:
        """The fault as plain data (None parameters left out), for job files and tools."""
        out: dict[str, Any] = {"type": self.type, "target": self.target}
        for p in PARAMS:
            v = getattr(self, p)
            if v is not None:
                out[p] = v
        if self.transient:
            out["transient"] = True
        if self.late:
            out["late"] = True
        return out


@dataclass(frozen=True)
class FaultPlan:
    faults: tuple[Fault, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.faults)

    def active(self, ended_transient: bool = False) -> tuple[Fault, ...]:
        """The faults in effect: before the confirmation retest all but the late ones; from
        it (``ended_transient``) all but the transient ones."""
        return tuple(f for f in self.faults if not (f.transient if ended_transient else f.late))

    def on_host(self, host: str, types: tuple[str, ...] | None = None,
                ended_transient: bool = False) -> tuple[Fault, ...]:
        """The faults in effect on ``host`` (optionally only the given types)."""
        return tuple(f for f in self.active(ended_transient)
                     if f.host == host and (types is None or f.type in types))

    def unsupported(self, backend: str) -> list[Fault]:
        """The faults that backend ``backend`` cannot act out."""
        acted = ACTED_BY.get(backend, ())
        return [f for f in self.faults if f.type not in acted]


# Each parameter's declared type; a type's own model (FAULT_MODELS) holds the parameters it takes.
_Positive = Annotated[int, Int(1, int(MAX_FACTOR))]
PARAM_TYPES: dict[str, Any] = {
    # finite and positive: a NaN factor would turn measurements into nulls that pass
    "factor": Annotated[float, Num(0, MAX_FACTOR, lo_open=True)],
    "probability": Annotated[float, Num(0, 1, lo_open=True)],
    "count": _Positive, "links": _Positive, "port": _Positive,
    "tool": Annotated[str, Text(_TOOL_NAME, "is not a program name (a fact command's tool)")],
    # checked against the target by _direction
    "direction": Annotated[str, Text(re.compile(r"^.*->.*$"), "must be 'a->b' with a and b the link's two cards")],
    "above": Annotated[int, BeforeValidator(parse_size)],  # bytes: 1M, 64K
}
_SLOWER = Annotated[float, Num(0, 1, lo_open=True, hi_open=True)]  # a below_one type's factor: a slow-down
_GREATER = Annotated[float, Num(1, MAX_FACTOR, lo_open=True)]       # an above_one type's: a latency that grows


class FaultSchema(Schema):
    """A fault of the plan; each type's model (FAULT_MODELS) adds the parameters it takes."""

    what = "fault"
    type: Annotated[str, Choice(FAULT_TYPES, "unknown fault type {got}; known: {choices}")]
    target: Annotated[str, Text()]
    transient: Annotated[bool, Flag()] = False
    late: Annotated[bool, Flag()] = False


def _fault_model(ftype: FaultType) -> type[FaultSchema]:
    fields: dict[str, Any] = {}
    for p, default in ftype.params.items():
        declared = (_SLOWER if ftype.below_one else _GREATER if ftype.above_one else PARAM_TYPES[p]) \
            if p == "factor" else PARAM_TYPES[p]
        fields[p] = ((declared, ...) if default is None else (declared | None, None) if default == OPTIONAL
                     else (declared, default))
    model = create_model(ftype.name, __base__=FaultSchema, **fields)
    model.what = f"a {ftype.name} fault"
    return model


FAULT_MODELS: dict[str, type[FaultSchema]] = {name: _fault_model(t) for name, t in FAULT_TYPES.items()}


class FaultPlanSchema(Schema):
    what = "fault plan"
    nullable = frozenset({"faults"})
    # Each item is checked against its type's model (parse_faults).
    faults: Annotated[list[Any], Field(max_length=MAX_FAULTS),
                      Shape(f"a list of at most {MAX_FAULTS} faults")] | None = None


def _target(src: Source, item: Any, ftype: FaultType, target: str, topo: Topology) -> str:
    if ftype.target == "link":
        if "<->" not in target:
            raise src.error(f"{ftype.name} targets a link 'a<->b', got {target!r}", item, "target")
        a, b = split_link(target)
        target = link_id(a.strip(), b.strip())
    if ftype.target in ("switch", "port"):
        return _switch_target(src, item, ftype, topo, target)
    valid = {
        "card": lambda t: t in topo.by_id,
        "host": lambda t: t in topo.inventory.hosts,
        "link": lambda t: "<->" in t and all(c in topo.by_id for c in split_link(t)) and len(set(split_link(t))) == 2,
    }[ftype.target]
    if not valid(target):
        raise src.error(f"{ftype.name} target {target!r} is not a {ftype.target} of this inventory",
                        item, "target")
    return target


def _switch_target(src: Source, item: Any, ftype: FaultType, topo: Topology, target: str) -> str:
    """A switch (``leaf:x``, ``spine:y``) or a cabled switch port (``leaf:x[5]``) of the fabric."""
    fabric = topo.fabric
    parsed = parse_switch(target)
    port = ftype.target == "port"
    if parsed is None or (parsed[2] is not None) != port or not fabric.is_element(target):
        shown = ", ".join(fabric.switches[:4]) + (", ..." if len(fabric.switches) > 4 else "")
        want = "a cabled switch port leaf:<name>[<port>]" if port else "a switch leaf:<name> or spine:<name>"
        raise src.error(f"{ftype.name} target {target!r} is not {want} of this inventory's fabric "
                        f"(its switches: {shown or 'none'}; README: the scale-out fabric)", item, "target")
    return target


def _direction(src: Source, item: Any, fault: Fault) -> Fault:
    """``direction: a->b`` names the link's two cards, in either order; kept as written."""
    if fault.direction is None:
        return fault
    a, _, b = (x.strip() for x in fault.direction.partition("->"))
    if {a, b} != set(split_link(fault.target)):
        raise src.error(f"direction {fault.direction!r} must run between the link's two cards "
                        f"({' and '.join(split_link(fault.target))})", item, "direction")
    return replace(fault, direction=f"{a}->{b}")


# Why the hosts' tools cannot show a fault (its platform renders no such output), or None:
# the vendors' simulators say (sncheck.vendors.sim.cannot_act_out, a layer above config).
Refusal = Callable[[Fault, "Topology"], "str | None"]


def parse_faults(src: Source, topo: Topology, refusal: Refusal) -> FaultPlan:
    root = src.data if src.data is not None else LineDict()  # an empty file: no faults
    plan = validate(FaultPlanSchema, src, root)
    out: list[Fault] = []
    by_key: dict[tuple, list[Fault]] = {}  # the faults of one type, target, port, tool, direction, size
    for i, item in enumerate(plan.faults or ()):
        name = item.get("type") if isinstance(item, dict) else None
        model = FAULT_MODELS.get(name) if isinstance(name, str) else None
        if model is None:  # the type decides the model: say what is wrong with it
            validate(FaultSchema, src, {"type": name} if isinstance(item, dict) and "type" in item else item,
                     at=("faults", i))
            raise AssertionError("unreachable: the type was refused")  # pragma: no cover
        spec = validate(model, src, item, at=("faults", i))
        ftype = FAULT_TYPES[spec.type]
        target = _target(src, item, ftype, spec.target, topo)
        values = {p: getattr(spec, p) for p in ftype.params}
        if values.get("factor") is not None:
            values["factor"] = float(values["factor"])
        if name in ("ib_port_down", "slow_nic"):
            cards = topo.inventory.hosts[target].cards
            if values["port"] > cards:
                raise src.error(f"{name} port {values['port']} is beyond {target}'s {cards} rails "
                                f"(one port per card, numbered from 1)", item, "port")
        if spec.transient and spec.late:
            raise src.error("a fault cannot be transient (over before the confirmation retest) and late "
                            "(beginning at it)", item, "late")
        fault = _direction(src, item, Fault(spec.type, target, transient=spec.transient, late=spec.late,
                                            where=src.where(item), **values))
        why = refusal(fault, topo)
        if why is not None:
            raise src.error(f"{why}; the simulator would drop it without a word (README: how each fault "
                            "type is acted out on each platform)", item, "type")
        same = by_key.setdefault(_key(fault), [])
        if (first := next((f for f in same if _at_once(f, fault)), None)) is not None:
            raise src.error(f"a second {fault.type} on {fault.target} (the first at {first.where}): the simulator "
                            "would compound one type's factors and keep the last of another's, so the plan would "
                            "not say what is acted out; write one fault with the value meant", item, "target")
        same.append(fault)
        out.append(fault)
    _refuse_on_down_hosts(out)
    return FaultPlan(tuple(out))


def _refuse_on_down_hosts(faults: list[Fault]) -> None:
    """A fault on a host that is down for the whole run (its card, NIC, link or the host itself)
    contradicts it: nothing is measured there, so the plan names a fault no run can show, and
    a test of it passes on the down host's finding alone (hostile round 12). A transient or
    late down host leaves the rest of the run to show it."""
    down = {f.target: f for f in faults if f.type == "down_host" and not (f.transient or f.late)}
    for f in faults:
        if f.type == "down_host" or f.target.startswith(("leaf:", "spine:")):
            continue
        hit = next((h for h in hosts_of(f.target) if h in down), None)
        if hit is not None:
            raise ConfigError(f"{f.type} on {f.target}: {hit} is down for the whole run (down_host at "
                              f"{down[hit].where}), so nothing measures it and the fault cannot show; plant it "
                              "on another host, or make the down_host transient", f.where)


def _key(f: Fault) -> tuple:
    """What makes two faults one: type and target (port, tool, direction and message sizes alike)."""
    return f.type, f.target, f.port, f.tool, f.direction, f.above


def _at_once(a: Fault, b: Fault) -> bool:
    """Two faults of one key in effect at once: a transient one (before the retest) and a late
    one (from it) never are."""
    return not ((a.transient and b.late) or (a.late and b.transient))


def load_faults(path: str | Path, topo: Topology, refusal: Refusal) -> FaultPlan:
    return parse_faults(load_file(path), topo, refusal)


def load_faults_text(text: str, topo: Topology, refusal: Refusal, name: str = "<faults>") -> FaultPlan:
    return parse_faults(load_text(text, name), topo, refusal)
