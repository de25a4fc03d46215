"""Playbooks: which layers run, with which options, and the gate severity."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .errors import ConfigError
from .health.capacity import ParallelLayout
from .units import parse_size
from .yamlio import LineDict, Source, check_keys, load_file, load_text

LAYERS = ("connectivity", "stress", "golden")
GATES = ("critical", "warning")
LAYER_OPTIONS = {
    "connectivity": ("bw_bytes", "lat_iters", "bw_iters"),
    "stress": ("collectives", "min_bytes", "max_bytes", "step_factor", "iters", "warmup",
               "repeats", "duration"),
    "golden": ("steps", "reference"),
}
SIZE_OPTIONS = ("bw_bytes", "min_bytes", "max_bytes")


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


def parse_playbook(src: Source) -> Playbook:
    root = check_keys(src, src.data, ("name", "description", "layers", "gate", "baseline", "confirm", "layout"), "playbook",
                      required=("layers",))
    layers_node = root["layers"]
    if not isinstance(layers_node, list) or not layers_node:
        raise src.error("layers must be a non-empty list", root, "layers")
    layers = []
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
                    raise src.error(str(e), opts, k) from e
            elif k == "collectives":
                if not isinstance(v, list) or not set(v) <= {"all_reduce", "all_to_all"}:
                    raise src.error("collectives must be a list of all_reduce, all_to_all", opts, k)
            elif k in ("lat_iters", "bw_iters", "iters", "warmup", "repeats", "steps", "step_factor"):
                if isinstance(v, bool) or not isinstance(v, int) or v < (0 if k == "warmup" else 1):
                    raise src.error(f"{k} must be a positive integer, got {v!r}", opts, k)
            elif k == "duration":
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                    raise src.error(f"duration must be positive seconds, got {v!r}", opts, k)
            elif k == "reference" and not isinstance(v, str):
                raise src.error("reference must be the name or path of a golden curve", opts, k)
            clean[k] = v
        layers.append(LayerSpec(name, clean))
    gate = root.get("gate", "critical")
    if gate not in GATES:
        raise src.error(f"gate must be one of {', '.join(GATES)}, got {gate!r}", root, "gate")
    name = root.get("name") or Path(src.name).stem
    baseline = root.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise src.error("baseline must be the name or path of a baseline file", root, "baseline")
    confirm = root.get("confirm", True)
    if not isinstance(confirm, bool):
        raise src.error(f"confirm must be true or false, got {confirm!r}", root, "confirm")
    layout = root.get("layout")
    if layout is not None:
        layout = dict(check_keys(src, layout, ("tp", "ep", "pp", "dp"), "layout"))
        for k, v in layout.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise src.error(f"layout {k} must be a positive integer, got {v!r}", root["layout"], k)
        try:
            ParallelLayout(**layout)
        except ConfigError as e:
            raise src.error(e.message, root, "layout") from e
    return Playbook(str(name), tuple(layers), gate, str(root.get("description", "")), src.name, baseline,
                    confirm, layout)


def find_playbook(ref: str) -> Path | None:
    """A path, or the name of a shipped playbook (``pre-upgrade-gate``)."""
    p = Path(ref)
    if p.exists():
        return p
    name = p.name if p.suffix in (".yaml", ".yml") else f"{p.name}.yaml"
    for base in (Path("playbooks"), resources.files("sncheck.playbooks")):
        candidate = base / name
        if candidate.is_file():
            return Path(str(candidate))
    return None


def load_playbook(ref: str) -> Playbook:
    path = find_playbook(ref)
    if path is None:
        raise ConfigError("no such playbook file or shipped playbook name "
                          "(shipped: post-delivery, nightly-stress, pre-upgrade-gate)", ref)
    return parse_playbook(load_file(path))


def single_layer(name: str, options: dict | None = None, gate: str = "critical") -> Playbook:
    return Playbook(name, (LayerSpec(name, options or {}),), gate)


def load_playbook_text(text: str, name: str = "<playbook>") -> Playbook:
    return parse_playbook(load_text(text, name))
