"""Playbooks: which layers run, with which options, and the gate severity."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sncheck.errors import ConfigError
from sncheck.config.shipped import resolve
from sncheck.config.units import parse_size
from sncheck.config.yamlio import LineDict, Source, check_keys, field_bool, field_int, field_str, load_file, load_text

LAYERS = ("connectivity", "stress", "golden")
GATES = ("critical", "warning")
LAYER_OPTIONS = {
    "connectivity": ("bw_bytes", "lat_iters", "bw_iters", "cross_supernode", "tools",
                     "tools_coverage"),
    "stress": ("collectives", "min_bytes", "max_bytes", "step_factor", "iters", "warmup",
               "repeats", "duration"),
    "golden": ("steps", "reference", "optional"),
}
SIZE_OPTIONS = ("bw_bytes", "min_bytes", "max_bytes")
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


def parse_playbook(src: Source, *, scale_out_tools: Collection[str]) -> Playbook:
    """The playbook of ``src``; a connectivity layer's ``tools`` must be among the
    ``scale_out_tools`` the vendor plug-ins name (a layer above config: the caller tells
    them; :mod:`sncheck.run.inputs` does)."""
    root = check_keys(src, src.data, ("name", "description", "layers", "gate", "baseline", "confirm", "layout"), "playbook",
                      required=("layers",))
    layers_node = root["layers"]
    if not isinstance(layers_node, list) or not layers_node:
        raise src.error("layers must be a non-empty list", root, "layers")
    layers = []
    where: dict[str, Any]  # the node an error about this layer points at
    for item in layers_node:
        if isinstance(item, str):
            name, opts, where = item, LineDict(), root
            opts.line, opts.key_lines = root.line_of("layers"), {}
        elif isinstance(item, dict) and len(item) == 1:
            name, opts = next(iter(item.items()))
            where, opts = item, opts if opts is not None else LineDict()
        else:
            raise src.error("each layer is a name, or a mapping of one name to its options",
                            root, "layers")
        if name not in LAYERS:
            import difflib

            hint = difflib.get_close_matches(str(name), LAYERS, n=1)
            tip = f"; did you mean {hint[0]!r}?" if hint else f"; known layers: {', '.join(LAYERS)}"
            raise src.error(f"unknown layer {name!r}{tip}", where, "layers" if where is root else str(name))
        opts = check_keys(src, opts, LAYER_OPTIONS[name], f"{name} options")
        clean = {}
        for k, v in opts.items():
            if k in SIZE_OPTIONS:
                try:
                    v = parse_size(v)
                except ValueError as e:
                    raise src.error(f"{k}: {e}", opts, k) from e
            elif k == "collectives":
                v = _collectives(src, opts, k)
            elif k == "tools":
                v = _tools(src, opts, k, tuple(scale_out_tools))
            elif k == "tools_coverage":
                v = _tools_coverage(src, opts, k)
            elif k in INT_BOUNDS:
                v = field_int(src, opts, k, *INT_BOUNDS[k])
            elif k == "duration":
                v = check_duration(v, src.where(opts, k))
            elif k == "optional":
                v = field_bool(src, opts, k)
            elif k == "cross_supernode":
                v = field_str(src, opts, k, choices=CROSS_MODES)
            elif k == "reference":
                v = field_str(src, opts, k, what="reference (the name or path of a golden curve)")
            clean[k] = v
        if clean.get("min_bytes", 8) > clean.get("max_bytes", 1 << 30):
            raise src.error(f"min_bytes ({clean.get('min_bytes', 8)}) is above max_bytes "
                            f"({clean.get('max_bytes', 1 << 30)}); sizes must grow", opts,
                            "min_bytes" if "min_bytes" in clean else "max_bytes")
        layers.append(LayerSpec(name, clean))
    gate = field_str(src, root, "gate", choices=GATES) if "gate" in root else "critical"
    name = field_str(src, root, "name") if root.get("name") is not None else Path(src.name).stem
    description = field_str(src, root, "description") if root.get("description") else ""
    baseline = None
    if root.get("baseline") is not None:
        baseline = field_str(src, root, "baseline", what="baseline (the name or path of a baseline file)")
    confirm = field_bool(src, root, "confirm") if "confirm" in root else True
    layout = root.get("layout")
    if layout is not None:
        layout = dict(check_keys(src, layout, ("tp", "ep", "pp", "dp"), "layout"))
        for k in layout:
            field_int(src, root["layout"], k, 1, 1 << 20, what=f"layout {k}")
        try:
            ParallelLayout(**layout)
        except ConfigError as e:
            raise src.error(e.message, root, "layout") from e
    return Playbook(str(name), tuple(layers), gate, description, src.name, baseline, confirm, layout)


def _tools(src: Source, opts: LineDict, key: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """connectivity ``tools``: the scale-out and copy-engine tests to run as well (SSH backend)."""
    v = opts[key]
    if not isinstance(v, list) or not all(isinstance(t, str) and t in known for t in v):
        raise src.error(f"tools must be a list of {', '.join(known)}", opts, key)
    if len(set(v)) != len(v):
        raise src.error("tools lists one tool twice", opts, key)
    return tuple(v)


def _tools_coverage(src: Source, opts: LineDict, key: str) -> int | str:
    """connectivity ``tools_coverage``: distinct perftest peers per NIC (1 to
    MAX_TOOLS_COVERAGE), or ``all`` for every rail pair of the plan."""
    if opts[key] == "all":
        return "all"
    return field_int(src, opts, key, 1, MAX_TOOLS_COVERAGE,
                     what="tools_coverage (distinct perftest peers per NIC, or 'all')")


def _collectives(src: Source, opts: LineDict, key: str) -> list[str]:
    v = opts[key]
    if not isinstance(v, list) or not v or not all(isinstance(c, str) and c in COLLECTIVES for c in v):
        raise src.error(f"collectives must be a non-empty list of {', '.join(COLLECTIVES)}", opts, key)
    if len(set(v)) != len(v):
        raise src.error("collectives lists one collective twice", opts, key)
    return list(v)


def check_duration(value: object, where: str | None = "--duration") -> float:
    """A stress soak in seconds: finite, positive, at most MAX_DURATION_S."""
    import math

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
