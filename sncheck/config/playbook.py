"""Playbooks: which layers run, with which options, and the gate severity."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Union

from pydantic import AfterValidator, BeforeValidator, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from sncheck.errors import ConfigError
from sncheck.config.schema import MAX_STR, Choice, Flag, Int, Num, Schema, Shape, Text, by_type, told, validate
from sncheck.config.shipped import resolve
from sncheck.config.units import parse_size
from sncheck.config.yamlio import LineDict, Source, load_file, load_text

LAYERS = ("connectivity", "stress", "golden")
GATES = ("critical", "warning")
COLLECTIVES = ("all_reduce", "all_to_all")
CROSS_MODES = ("bounded", "all-pairs")  # the connectivity option cross_supernode
# The connectivity option tools (their names: sncheck.vendors.registry.scale_out_tools): the
# vendors' scale-out tests between rail-aligned host pairs of the cross-supernode rounds
# (perftest), and their copy tests inside each host (nvbandwidth, TransferBench).
# The connectivity option tools_coverage: how many distinct peers each NIC (host x rail)
# meets in perftest, sampled from the plan's rail pairs (sncheck.probeplan); "all" runs
# every rail pair.
MAX_TOOLS_COVERAGE = 64

# Bounds (README "Input bounds"). Integer options: (lowest, highest).
INT_BOUNDS = {
    "lat_iters": (1, 1_000_000), "bw_iters": (1, 100_000), "iters": (1, 100_000),
    "warmup": (0, 100_000), "repeats": (1, 10_000), "steps": (1, 1_000_000),
    "step_factor": (2, 1 << 20),  # sizes must grow: 1 would sweep forever
}
MAX_DURATION_S = 7 * 86400.0  # a stress soak (--duration too)


@dataclass(frozen=True)
class ParallelLayout:
    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "ep", "pp", "dp"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name.upper()} must be a positive integer, got {value!r}")
        if (self.tp * self.dp) % self.ep:
            raise ConfigError(f"EP={self.ep} must divide TP x DP = {self.tp * self.dp}: expert-parallel "
                              "groups are carved out of each pipeline stage's TP x DP ranks")

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def stage(self) -> int:
        """Ranks in one pipeline stage: TP x DP."""
        return self.tp * self.dp

    @property
    def edp(self) -> int:
        """Expert data parallelism: the replicas of each expert, TP x DP / EP."""
        return self.stage // self.ep

    @property
    def unit(self) -> int:
        """Cards that must share one supernode to hold whole TP and EP groups."""
        return math.lcm(self.tp, self.ep)

    def __str__(self) -> str:
        return f"TP={self.tp} EP={self.ep} PP={self.pp} DP={self.dp} (world {self.world})"


@dataclass(frozen=True)
class LayerSpec:
    name: str
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Playbook:
    name: str
    layers: tuple[LayerSpec, ...]
    gate: str = "critical"
    description: str = ""
    source: str = "<embedded>"
    baseline: str | None = None  # a baseline name or path (sncheck baseline make)
    confirm: bool = True  # retest quarantined entities before isolate/release
    layout: dict | None = None  # {tp, ep, pp, dp}: report the capacity left after isolation
    # a playbook without a connectivity layer reads the host facts (card health: ECC, row remap,
    # NVLink, IB ports) before its first layer, as node-check does; a connectivity layer reads its own
    host_facts: bool = False


def _unique(what: str) -> Callable[[Any], Any]:
    """A list naming no item twice (the item named); anything else as it is."""
    def check(items: Any) -> Any:
        if isinstance(items, list) and len(set(items)) != len(items):
            twice = next(i for n, i in enumerate(items) if i in items[:n])
            raise PydanticCustomError("sncheck", "{m}", {"m": f"lists one {what} twice ({twice!r})"})
        return items
    return check


Size = Annotated[int, BeforeValidator(parse_size)]  # bytes: 8, 64K, 1G
Tool = Annotated[str, Field(strict=True), told("scale_out_tools", lambda v, known: f"{v!r} is not one of "
                                                                              f"{', '.join(known)}")]


class ConnectivityOptions(Schema):
    what = "connectivity options"
    bw_bytes: Size | None = None
    lat_iters: Annotated[int, Int(*INT_BOUNDS["lat_iters"])] | None = None
    bw_iters: Annotated[int, Int(*INT_BOUNDS["bw_iters"])] | None = None
    cross_supernode: Annotated[str, Choice(CROSS_MODES)] | None = None
    # The vendors' scale-out and copy tests (their names: sncheck.vendors.registry.scale_out_tools).
    tools: Annotated[list[Tool], AfterValidator(_unique("tool"))] | None = None
    tools_coverage: Annotated[
        Union[Annotated[int, Int(1, MAX_TOOLS_COVERAGE), Tag("<count>")],
              Annotated[str, Choice(("all",)), Tag("<all>")]],
        Discriminator(by_type(count=int, all=str)),
        Shape(f"an integer from 1 to {MAX_TOOLS_COVERAGE} (distinct perftest peers per NIC) or 'all'", over=True)] \
        | None = None


class StressOptions(Schema):
    what = "stress options"
    collectives: Annotated[list[Annotated[str, Choice(COLLECTIVES)]], Field(min_length=1),
                           AfterValidator(_unique("collective")),
                           Shape(f"a non-empty list of {', '.join(COLLECTIVES)}")] | None = None
    min_bytes: Size | None = None
    max_bytes: Size | None = None
    step_factor: Annotated[int, Int(*INT_BOUNDS["step_factor"])] | None = None
    iters: Annotated[int, Int(*INT_BOUNDS["iters"])] | None = None
    warmup: Annotated[int, Int(*INT_BOUNDS["warmup"])] | None = None
    repeats: Annotated[int, Int(*INT_BOUNDS["repeats"])] | None = None
    duration: Annotated[float, Num(0, MAX_DURATION_S, lo_open=True, unit="seconds")] | None = None  # a soak


class GoldenOptions(Schema):
    what = "golden options"
    steps: Annotated[int, Int(*INT_BOUNDS["steps"])] | None = None
    # the name or path of a golden curve, or a list of them: one per replica size (each curve's
    # config.ranks), a replica judged by its size's (sncheck/layers/golden.py reference_set)
    reference: Annotated[
        Union[Annotated[str, Text(), Tag("<name>")],
              Annotated[list[Annotated[str, Text()]], Field(min_length=1), Tag("<list>")]],
        Discriminator(by_type(name=str, list=list)),
        Shape("a golden curve's name or path, or a non-empty list of them (one per replica size)", over=True),
        # after the Shape, which words every refusal of the union as its own: a curve named twice is said so
        AfterValidator(_unique("golden curve"))] \
        | None = None
    optional: Annotated[bool, Flag()] | None = None


_ONE_LAYER = "each layer is a name, or a mapping of one name to its options"


def _one_layer(value: Any) -> Any:
    if not isinstance(value, (str, dict)):
        raise PydanticCustomError("sncheck", _ONE_LAYER)
    return {value: None} if isinstance(value, str) else value  # ``- connectivity``: its defaults


class LayerSchema(Schema):
    """A layer: its name, or a mapping of its name to its options."""

    what = "layer"
    unknown = "unknown layer {key}"
    nullable = frozenset(LAYERS)  # ``- stress:`` with no options
    connectivity: ConnectivityOptions | None = None
    stress: StressOptions | None = None
    golden: GoldenOptions | None = None

    @model_validator(mode="after")
    def _one(self) -> LayerSchema:
        if len(self.model_fields_set) != 1:
            raise PydanticCustomError("sncheck", _ONE_LAYER)
        return self


class LayoutSchema(Schema):
    what = "layout"
    tp: Annotated[int, Int(1, 1 << 20)] | None = None
    ep: Annotated[int, Int(1, 1 << 20)] | None = None
    pp: Annotated[int, Int(1, 1 << 20)] | None = None
    dp: Annotated[int, Int(1, 1 << 20)] | None = None


class PlaybookSchema(Schema):
    what = "playbook"
    nullable = frozenset({"name", "description", "baseline", "layout"})
    name: Annotated[str, Text()] | None = None
    description: Annotated[str, Field(strict=True, max_length=MAX_STR)] | None = None
    layers: Annotated[list[Annotated[LayerSchema, BeforeValidator(_one_layer)]], Field(min_length=1),
                      Shape("a non-empty list of layers")]
    gate: Annotated[str, Choice(GATES)] = "critical"
    baseline: Annotated[str, Text()] | None = None  # the name or path of a baseline file
    confirm: Annotated[bool, Flag()] = True
    host_facts: Annotated[bool, Flag()] = False  # read the host facts before the first layer (no connectivity)
    layout: LayoutSchema | None = None  # {tp, ep, pp, dp}


def parse_playbook(src: Source, *, scale_out_tools: Collection[str]) -> Playbook:
    """The playbook of ``src``; a connectivity layer's ``tools`` must be among the
    ``scale_out_tools`` the vendor plug-ins name (a layer above config: the caller tells
    them; :mod:`sncheck.run.inputs` does)."""
    spec = validate(PlaybookSchema, src, src.data, context={"scale_out_tools": tuple(scale_out_tools)})
    root: LineDict = src.data
    layers: list[LayerSpec] = []
    for layer, item in zip(spec.layers, root["layers"]):
        (name,) = layer.model_fields_set
        if any(earlier.name == name for earlier in layers):  # results.json, the rows, JUnit and diff key a layer by name
            raise src.error(f"layers: {name} is listed twice; a layer runs once in a playbook (its rows, "
                            "findings and verdict are kept by its name): give it once, with the options meant",
                            item if isinstance(item, LineDict) else root, None if isinstance(item, LineDict) else "layers")
        options = getattr(layer, name)
        clean = options.model_dump(exclude_unset=True) if options is not None else {}
        if "tools" in clean:
            clean["tools"] = tuple(clean["tools"])
        opts = item[name] if isinstance(item, dict) and isinstance(item.get(name), LineDict) else root
        if clean.get("min_bytes", 8) > clean.get("max_bytes", 1 << 30):
            raise src.error(f"min_bytes ({clean.get('min_bytes', 8)}) is above max_bytes "
                            f"({clean.get('max_bytes', 1 << 30)}); sizes must grow", opts,
                            "min_bytes" if "min_bytes" in clean else "max_bytes")
        layers.append(LayerSpec(name, clean))
    layout = spec.layout.model_dump(exclude_unset=True) if spec.layout is not None else None
    if layout is not None:
        try:
            ParallelLayout(**layout)
        except ConfigError as e:
            raise src.error(e.message, root, "layout") from e
    return Playbook(spec.name or Path(src.name).stem, tuple(layers), spec.gate, spec.description or "", src.name,
                    spec.baseline, spec.confirm, layout, spec.host_facts)


def check_duration(value: object, where: str | None = "--duration") -> float:
    """A stress soak in seconds: finite, positive, at most MAX_DURATION_S."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= MAX_DURATION_S:
        shown = "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else repr(value)
        raise ConfigError(f"duration must be finite seconds above 0 and at most {MAX_DURATION_S:g} "
                          f"(7 days), got {shown}", where)
    return float(value)


def find_playbook(ref: str) -> Path | None:
    """A path, or the name of a shipped playbook (``pre-upgrade-gate``): see
    :func:`sncheck.config.shipped.resolve`."""
    return resolve(ref, "playbooks", None, (".yaml", ".yml"))


def load_playbook(ref: str, *, scale_out_tools: Collection[str]) -> Playbook:
    path = find_playbook(ref)
    if path is None:
        raise ConfigError("no such playbook file or shipped playbook name "
                          "(shipped: post-delivery, nightly-stress, pre-upgrade-gate)", ref)
    return parse_playbook(load_file(path), scale_out_tools=scale_out_tools)


def single_layer(name: str, options: dict | None = None, gate: str = "critical") -> Playbook:
    return Playbook(name, (LayerSpec(name, options or {}),), gate)


def load_playbook_text(text: str, name: str = "<playbook>", *, scale_out_tools: Collection[str]) -> Playbook:
    return parse_playbook(load_text(text, name), scale_out_tools=scale_out_tools)
