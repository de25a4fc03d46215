"""The torch probe's job (``schema: sncheck.job/1``): what the launcher tells each rank.

The launcher (:func:`sncheck.launch.job.build_job`, for the local, SSH and Slurm
backends) builds a :class:`Job` and writes it as JSON; the worker reads it back with
:meth:`Job.load`. Both import this class, so the fields and their defaults are stated
here once. Standard library only: the worker runs on the hosts and imports no
control-side module.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JOB_SCHEMA = "sncheck.job/1"
LAYERS = ("calibrate", "p2p", "collectives", "golden")


@dataclass(frozen=True)
class Job:
    """One job; rank i is ``cards[i]``.

    * ``plan``: the layer's plan as data (a connectivity plan's rounds as lists).
    * ``faults``: the faults in effect that the probe acts out, each ``{"type", "target"}``
      plus every parameter of its type (the launcher fills in the fault plan's defaults).
    * ``op_timeout_s``: torch.distributed's timeout is twice this (a backstop; the local
      backend's watchdog fires at once this).
    * ``dist_backend`` (gloo, nccl, hccl) and ``torch_device`` (cuda, npu): the vendor's,
      or None for the worker's choice (:mod:`sncheck.worker.device`);
      ``vendor_dist_backend`` (nccl, hccl): the vendor plug-in's backend on its device, which
      that choice takes when no ``dist_backend`` is named.
    * ``supernode_of_host``: for the tier of the p2p rows.
    * ``heartbeat_dir``: each rank touches ``<dir>/rank<N>``, for the launcher's watchdog.
    * ``golden_config``: overrides of :class:`sncheck.worker.golden_model.GoldenConfig`.
    * ``serialize_pairs``: p2p runs one pair of a round at a time (CPU ranks sharing cores).
    """

    layer: str
    cards: tuple[str, ...]
    plan: dict[str, Any] = field(default_factory=dict)
    faults: tuple[dict[str, Any], ...] = ()
    seed: int = 0
    op_timeout_s: float = 60.0
    dist_backend: str | None = None
    torch_device: str | None = None
    vendor_dist_backend: str | None = None
    supernode_of_host: dict[str, str] = field(default_factory=dict)
    heartbeat_dir: str | None = None
    golden_config: dict[str, Any] = field(default_factory=dict)
    serialize_pairs: bool = False

    def __post_init__(self) -> None:
        if self.layer not in LAYERS:
            raise ValueError(f"unknown layer {self.layer!r}; known: {', '.join(LAYERS)}")
        for name, kind, word in (("cards", (list, tuple), "list"), ("faults", (list, tuple), "list"),
                                 ("plan", dict, "mapping"), ("supernode_of_host", dict, "mapping"),
                                 ("golden_config", dict, "mapping")):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"job {name} must be a {word}, got {type(getattr(self, name)).__name__}")
        object.__setattr__(self, "cards", tuple(self.cards))
        object.__setattr__(self, "faults", tuple(self.faults))
        object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "op_timeout_s", float(self.op_timeout_s))
        object.__setattr__(self, "serialize_pairs", bool(self.serialize_pairs))

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON data, ``schema`` first."""
        out: dict[str, Any] = {"schema": JOB_SCHEMA}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> Job:
        """A job from JSON data (ValueError, naming the field, on anything else).

        A missing ``schema`` is this one; a missing field takes its default; a field this
        worker does not know is refused, so a misspelt key never drops what it carried."""
        if not isinstance(data, dict):
            raise ValueError(f"a job is a JSON object, got {type(data).__name__}")
        data = dict(data)
        schema = data.pop("schema", JOB_SCHEMA)
        if schema != JOB_SCHEMA:
            raise ValueError(f"job schema {schema!r}, expected {JOB_SCHEMA}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"job field(s) {', '.join(map(repr, unknown))} unknown; known: {', '.join(sorted(known))}")
        for required in ("layer", "cards"):
            if required not in data:
                raise ValueError(f"the job has no {required!r}")
        # JSON null means the default, as a missing key does (an older launcher wrote nulls)
        for f in dataclasses.fields(cls):
            if f.name in data and data[f.name] is None and f.default is not None:
                del data[f.name]
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path) -> Job:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
