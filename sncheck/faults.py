"""The fault plan: faults a backend acts out for self-test (see DESIGN.md).

Only backends read it. Detection never sees the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .topology import Topology, link_id, split_link
from .yamlio import Source, check_keys, load_file, load_text

# type -> (target kind, allowed parameters with defaults)
FAULT_TYPES: dict[str, tuple[str, dict[str, float]]] = {
    "slow_card": ("card", {"factor": 0.6}),
    "degraded_link": ("link", {"factor": 0.3}),
    "dead_link": ("link", {}),
    "down_host": ("host", {}),
    "corrupt_card": ("card", {}),
    "jittery_card": ("card", {"probability": 0.2, "factor": 10.0}),
    "high_latency_card": ("card", {"factor": 3.0}),
    "diverge": ("card", {}),
}


@dataclass(frozen=True)
class Fault:
    type: str
    target: str
    factor: float | None = None
    probability: float | None = None
    transient: bool = False  # gone by the time a confirmation retest runs


@dataclass(frozen=True)
class FaultPlan:
    faults: tuple[Fault, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.faults)


def parse_faults(src: Source, topo: Topology) -> FaultPlan:
    root = check_keys(src, src.data if src.data is not None else {}, ("faults",), "fault plan")
    items = root.get("faults") or []
    if not isinstance(items, list):
        raise src.error("faults must be a list", root, "faults")
    out = []
    for item in items:
        item = check_keys(src, item, ("type", "target", "factor", "probability", "transient"), "fault",
                          required=("type", "target"))
        ftype = item["type"]
        if ftype not in FAULT_TYPES:
            raise src.error(f"unknown fault type {ftype!r}; known: {', '.join(FAULT_TYPES)}", item, "type")
        kind, params = FAULT_TYPES[ftype]
        target = str(item["target"])
        if kind == "link":
            if "<->" not in target:
                raise src.error(f"{ftype} targets a link 'a<->b', got {target!r}", item, "target")
            a, b = split_link(target)
            target = link_id(a.strip(), b.strip())
        valid = {
            "card": lambda t: t in topo.by_id,
            "host": lambda t: t in topo.inventory.hosts,
            "link": lambda t: "<->" in t and topo.is_entity(t),
        }[kind]
        if not valid(target):
            raise src.error(f"{ftype} target {target!r} is not a {kind} of this inventory", item, "target")
        values = {}
        for p in ("factor", "probability"):
            if p in item:
                if p not in params:
                    raise src.error(f"{ftype} takes no {p!r}", item, p)
                v = item[p]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                    raise src.error(f"{p} must be a positive number, got {v!r}", item, p)
                if p == "probability" and v > 1:
                    raise src.error(f"probability must be at most 1, got {v!r}", item, p)
                if ftype in ("slow_card", "degraded_link") and p == "factor" and v >= 1:
                    raise src.error(f"{ftype} factor must be below 1, got {v!r}", item, p)
                values[p] = float(v)
            elif p in params:
                values[p] = params[p]
        transient = item.get("transient", False)
        if not isinstance(transient, bool):
            raise src.error(f"transient must be true or false, got {transient!r}", item, "transient")
        out.append(Fault(ftype, target, values.get("factor"), values.get("probability"), transient))
    return FaultPlan(tuple(out))


def load_faults(path: str | Path, topo: Topology) -> FaultPlan:
    return parse_faults(load_file(path), topo)


def load_faults_text(text: str, topo: Topology, name: str = "<faults>") -> FaultPlan:
    return parse_faults(load_text(text, name), topo)
