"""The time account: compute, each collective's time on its tier, the step, the share.

* **Compute** (Kaplan et al., 2020, "Scaling Laws for Neural Language Models": 6 N FLOPs
  per token for the forward and backward pass; for a MoE, N the active parameters: the
  dense ones and top-k / experts of the expert ones): 6 N x tokens a step, spread over
  the world's ranks, at ``--mfu`` of the card's peak. MFU counts model FLOPs only (Chowdhery
  et al., 2022, PaLM, appendix B), so a recomputation pass is inside the MFU given, not
  added: Megatron-LM's 140 teraFLOP/s per A100 for GPT-3 with full recomputation (8 N
  FLOPs a token counted) is an MFU of 140 x 6/8 / 312.
* **The pipeline** (Narayanan et al., 2021, section 2.2, non-interleaved 1F1B): a step is
  m + p - 1 micro-batch slots on every stage; the p - 1 beyond m are the bubble. A slot is
  one micro-batch's compute, its TP and EP collectives (on the critical path: they sit
  between the layers' matrix multiplications) and its PP send/recv (hidden behind the
  slot's compute with ``--overlap``, as Megatron-LM's ``--overlap-p2p-comm``).
* **Data parallelism** after the pipeline flush: exposed whole, or with ``--overlap``
  (Megatron-LM's ``--overlap-grad-reduce`` and ``--overlap-param-gather``) the gradient
  reduction hides behind the last micro-batch's backward pass (2/3 of a slot's compute)
  and the parameter all-gather behind the next step's first forward pass (1/3); ZeRO 3's
  gathers before every micro-batch hide behind the step's compute.
* **The share**: exposed communication over the step time. Total communication (hidden
  or not) is reported beside it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sncheck.errors import ConfigError
from sncheck.config.playbook import ParallelLayout
from sncheck.ledger.comm import DP, EDP, EP, PP, TP, Collective
from sncheck.ledger.memory import Model
from sncheck.ledger.tiers import Figures

FLOPS_PER_TOKEN_PER_PARAM = 6
DEFAULT_MFU = 0.4


@dataclass(frozen=True)
class Line:
    """One collective's time in the step."""

    collective: Collective
    tier: str                      # the tier it runs at (the slowest it crosses; "mixed" for an all-to-all)
    each_s: float
    algo: str

    @property
    def total_s(self) -> float:
        return self.each_s * self.collective.count

    def to_dict(self) -> dict:
        return {**self.collective.to_dict(), "tier": self.tier, "algorithm": self.algo,
                "seconds_each": self.each_s, "seconds": self.total_s}


@dataclass
class TimeAccount:
    compute_s: float               # a rank's compute in the step
    flops: float                   # the step's model FLOPs, all ranks
    peak_flops: float              # per card
    mfu: float
    m: int
    pp: int
    lines: list[Line]
    exposed: dict[str, float]      # parallelism -> its exposed seconds in the step (bubble aside)
    bubble_s: float
    step_s: float
    overlap: bool
    notes: list[str] = field(default_factory=list)

    @property
    def comm_s(self) -> float:
        return sum(line.total_s for line in self.lines)

    @property
    def exposed_s(self) -> float:
        return sum(self.exposed.values())

    @property
    def share(self) -> float:
        return self.exposed_s / self.step_s if self.step_s > 0 else 0.0

    def by_parallelism(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for line in self.lines:
            out[line.collective.parallelism] += line.total_s
        return dict(out)

    def by_tier(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for line in self.lines:
            out[line.tier] += line.total_s
        return dict(out)

    def to_dict(self) -> dict:
        return {"compute_s": self.compute_s, "flops_per_step": self.flops, "peak_tflops": self.peak_flops / 1e12,
                "mfu": self.mfu, "micro_batches": self.m, "bubble_s": self.bubble_s, "comm_s": self.comm_s,
                "exposed_comm_s": self.exposed_s, "step_s": self.step_s, "share": self.share,
                "overlap": self.overlap, "comm_by_parallelism_s": self.by_parallelism(),
                "exposed_by_parallelism_s": dict(self.exposed), "comm_by_tier_s": self.by_tier(),
                "collectives": [line.to_dict() for line in self.lines], "notes": list(self.notes)}


def collective_time(c: Collective, figures: Figures) -> tuple[float, str, str]:
    """Seconds one run of ``c`` takes, the tier it runs at and the algorithm."""
    n = c.ranks
    if c.op == "all_to_all":  # pairwise: each exchange at the tier between the two
        used = {t: p for t, p in c.span.peers.items() if p}
        total = sum(p / (n - 1) * figures.get(t).time(c.op, n, c.size_bytes)[0] for t, p in used.items())
        tier = next(iter(used)) if len(used) == 1 else "mixed: " + ", ".join(f"{p} {t}" for t, p in used.items())
        return total, tier, "pairwise"
    seconds, algo = figures.get(c.span.tier).time(c.op, n, c.size_bytes)
    return seconds, c.span.tier, algo


def time_account(model: Model, lay: ParallelLayout, seq: int, global_batch: int, m: int,
                 collectives: list[Collective], figures: Figures, peak_flops: float, mfu: float = DEFAULT_MFU,
                 overlap: bool = False, zero: int = 0) -> TimeAccount:
    if not 0 < mfu <= 1:
        raise ConfigError(f"--mfu must be above 0 and at most 1, got {mfu}")
    if peak_flops <= 0:
        raise ConfigError("the card's peak must be positive (--peak-tflops)")
    flops = FLOPS_PER_TOKEN_PER_PARAM * model.active_params(lay.ep) * global_batch * seq
    compute = flops / lay.world / (mfu * peak_flops)
    lines = []
    for c in collectives:
        each, tier, algo = collective_time(c, figures)
        lines.append(Line(c, tier, each, algo))
    total: dict[str, float] = defaultdict(float)
    for line in lines:
        total[line.collective.parallelism] += line.total_s
    c_mb = compute / m
    per_mb = {k: total.get(k, 0.0) / m for k in (TP, EP, PP)}
    pp_exposed = max(0.0, per_mb[PP] - c_mb) if overlap else per_mb[PP]
    slot = c_mb + per_mb[TP] + per_mb[EP] + pp_exposed
    bubble = (lay.pp - 1) * slot
    dp_exposed = {k: _dp_exposed([ln for ln in lines if ln.collective.parallelism == k], c_mb, compute, overlap, zero)
                  for k in (DP, EDP) if total.get(k)}
    exposed = {TP: total.get(TP, 0.0), EP: total.get(EP, 0.0), PP: pp_exposed * m, **dp_exposed}
    exposed = {k: v for k, v in exposed.items() if k in total}
    step = (m + lay.pp - 1) * slot + sum(dp_exposed.values())
    notes = []
    if model.expert_params and model.experts is None:
        notes.append(f"active parameters count one expert per EP rank ({lay.ep} experts): give --experts")
    return TimeAccount(compute, flops, peak_flops, mfu, m, lay.pp, lines, exposed, bubble, step, overlap, notes)


def _dp_exposed(lines: list[Line], c_mb: float, compute: float, overlap: bool, zero: int) -> float:
    t = sum(line.total_s for line in lines)
    if not overlap:
        return t
    if zero == 3:
        return max(0.0, t - compute)
    hidden = 0.0
    for line in lines:
        window = c_mb / 3 if line.collective.op == "all_gather" else 2 * c_mb / 3
        hidden += min(line.total_s, window)
    return t - hidden
