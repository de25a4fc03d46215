"""The ledger's forecast for the golden model's own layout, against what the golden layer measured.

The golden model trains data-parallel only (one replica per host, :mod:`sncheck.layers.golden`):
its communication account is the gradient all-reduce of each DDP bucket once a step over
the replica's n members, on the tier they share, timed by :mod:`sncheck.ledger.tiers` on
the same run's measured figures. PyTorch DDP fills buckets in reverse parameter order up to
``bucket_cap_mb`` (25 MiB), the first up to 1 MiB (``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES``);
buckets are counted here over the gradient bytes as if parameters split anywhere, which
for the golden model (474 KB of fp32 gradients) is its one bucket.

What is compared: the golden layer times each member's all-reduce from launch to
completion, so a member that arrives first also waits for the others' backward pass. The
member that arrives last waits for nobody: its time (``comm_min_s``) is the transfer, what
the network account forecasts. The forecast share is the forecast time over the measured
compute (step time less the members' mean all-reduce time) plus the forecast time; the
measured share is the last member's time over the same compute plus that time. When the
typical replica's (the median ratio's) communication time is off by more than
:data:`MARGIN` either way, the golden layer makes it a finding about the ledger. The mean member's share (the layer's ``comm_share``) is reported beside it: the
gap between the two is members waiting for the slowest one (load imbalance), which no
network account forecasts and the golden step-time rule judges.

Compute is measured, not forecast from FLOPs: the golden model is too small for a
meaningful MFU, and a CPU has no published peak.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import pandas as pd

from sncheck.ledger.tiers import Figures

MARGIN = 3.0                       # forecast and measured communication time agree within this factor
FIRST_BUCKET_BYTES = 1 << 20       # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
BUCKET_CAP_BYTES = 25 << 20        # DDP's bucket_cap_mb default


def ddp_buckets(grad_bytes: float) -> tuple[float, ...]:
    """Bytes of each gradient bucket DDP all-reduces a step (first bucket 1 MiB, then 25 MiB)."""
    if grad_bytes <= 0:
        return ()
    out = [min(grad_bytes, FIRST_BUCKET_BYTES)]
    rest = grad_bytes - out[0]
    while rest > 0:
        out.append(min(rest, BUCKET_CAP_BYTES))
        rest -= out[-1]
    return tuple(out)


@dataclass(frozen=True)
class GoldenForecast:
    group: str
    ranks: int
    tier: str
    buckets: int
    forecast_comm_s: float          # a step's all-reduces, forecast on the run's figures
    measured_comm_s: float          # the last-arriving member's (the transfer)
    mean_comm_s: float              # the members' mean (with waiting)
    compute_s: float                # measured: step less the mean member's all-reduce
    source: str                     # where the tier's figures came from

    @property
    def forecast_share(self) -> float:
        return _share(self.forecast_comm_s, self.compute_s)

    @property
    def measured_share(self) -> float:
        return _share(self.measured_comm_s, self.compute_s)

    @property
    def share_with_wait(self) -> float:
        return _share(self.mean_comm_s, self.compute_s)

    @property
    def ratio(self) -> float:
        """Measured over forecast communication time."""
        return self.measured_comm_s / self.forecast_comm_s if self.forecast_comm_s > 0 else float("inf")

    @property
    def within(self) -> bool:
        return 1 / MARGIN <= self.ratio <= MARGIN

    def to_dict(self) -> dict:
        return {**asdict(self), "forecast_share": self.forecast_share, "measured_share": self.measured_share,
                "share_with_wait": self.share_with_wait, "ratio": self.ratio, "margin": MARGIN,
                "within": self.within}


def _share(comm: float, compute: float) -> float:
    return comm / (comm + compute) if comm + compute > 0 else 0.0


def forecast(golden: pd.DataFrame, figures: Figures, buckets: Iterable[float],
             groups: dict[str, tuple[int, str]]) -> list[GoldenForecast]:
    """Per golden replica (``groups``: group id -> (ranks, tier)), the forecast against its
    steps' medians. Replicas of one rank, or without usable steps, have no forecast."""
    buckets = tuple(buckets)
    out: list[GoldenForecast] = []
    if golden.empty or not buckets:
        return out
    # One pass over every replica's steps (a fleet has thousands of replicas: a pandas
    # group loop took minutes at 16,384 cards); the medians are those of each replica's
    # usable steps, as before.
    step = pd.to_numeric(golden["step_time_s"], errors="coerce")
    mean = pd.to_numeric(golden["comm_s"], errors="coerce")
    least = pd.to_numeric(golden["comm_min_s"], errors="coerce") if "comm_min_s" in golden else mean * float("nan")
    least = least.fillna(mean)  # a backend that times the collective alike for every member
    ok = step.notna() & mean.notna() & (step > 0)
    steps = pd.DataFrame({"group": golden["group"], "least": least.where(ok), "mean": mean.where(ok),
                          "compute": (step - mean).where(ok), "ok": ok})
    per = steps.groupby("group", observed=True).agg(least=("least", "median"), mean=("mean", "median"),
                                                    compute=("compute", "median"), ok=("ok", "any"))
    comm: dict[tuple[str, int], tuple[float, str]] = {}  # (tier, ranks) -> forecast time, figures' source
    for gid, least_s, mean_s, compute_s, any_ok in per.itertuples(name=None):
        ranks, tier = groups.get(str(gid), (0, ""))
        if ranks < 2 or not any_ok:
            continue
        if (tier, ranks) not in comm:
            fig = figures.get(tier)
            comm[tier, ranks] = (sum(fig.time("all_reduce", ranks, b)[0] for b in buckets), fig.source)
        t, source = comm[tier, ranks]
        out.append(GoldenForecast(str(gid), ranks, tier, len(buckets), t, float(least_s), float(mean_s),
                                  float(compute_s), source))
    return out
