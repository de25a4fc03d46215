"""The fault actor: the faults of a fault plan that the torch probe acts out on one rank.

Which types it acts out is :data:`ACTED_TYPES` (the fault plan's ``TORCH_PROBE_FAULTS``); the
backends send only those, only while they are in effect (transient ones end before the
retest), and with every parameter filled in (the job carries the fault plan's defaults).
This module imports neither torch, so the golden model can use it before torch loads, nor
any control-side module.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# time.sleep overshoots by ~0.1 ms, so the last stretch of a delay spins; only a short
# one: a spinning rank holds a core, and on a host with more ranks than cores every
# woken rank would then wait a scheduler slice (~ms), which shows up as latency.
_SPIN_S = 0.0002

# The fault types this actor acts out (the probe faults, and thermal_throttle's slow-down).
ACTED_TYPES = ("slow_card", "high_latency_card", "jittery_card", "corrupt_card", "collective_corruption",
               "diverge", "thermal_throttle")


def wait_s(seconds: float) -> None:
    """Delay precisely: sleep for the bulk, spin for the last stretch."""
    if seconds <= 0:
        return
    end = time.perf_counter() + seconds
    if seconds > _SPIN_S:
        time.sleep(seconds - _SPIN_S)
    while time.perf_counter() < end:
        pass


class FaultActor:
    """The faults that target this rank's card, acted out as delays and bad data.

    * slow_card f: bulk transfers to and from it carry 1/f times the payload on the
      wire (rows report the nominal bytes; see ``wire_factor``), and it arrives
      (1/f - 1) x the clean op time late to collectives and gradient all-reduces, so
      its links and its compute run at ~f.
    * high_latency_card F: every small message it sends or receives waits
      (F - 1) x base latency (a ping-pong round trip touches it twice: RTT x F), and
      each collective waits (F - 1) x base latency per algorithm hop.
    * jittery_card p, F: with probability p a message or op takes F x as long.
    * thermal_throttle f: as slow_card f (its HW Thermal Slowdown shows in the
      host's tools, not here).
    * corrupt_card: the payloads it sends and its collective inputs are off by one.
    * collective_corruption: its collective inputs are off by one; p2p payloads are
      intact, so only a collective (or its retest) can see it.
    * diverge: large noise is added to its gradients in golden training.
    """

    def __init__(self, faults: list[dict], card: str, seed: int) -> None:
        mine = {f["type"]: f for f in faults if f.get("target") == card}
        unknown = sorted(set(mine) - set(ACTED_TYPES))
        if unknown:
            raise ValueError(f"fault type(s) {', '.join(unknown)} cannot be acted out by the torch probe")
        slow = [_param(mine[t], "factor") for t in ("slow_card", "thermal_throttle") if t in mine]
        self.slow: float | None = min(slow, default=None)
        high = mine.get("high_latency_card")
        self.high_latency = _param(high, "factor") if high else None
        jit = mine.get("jittery_card")
        self.jitter = (_param(jit, "probability"), _param(jit, "factor")) if jit else None
        self.corrupt_payload = "corrupt_card" in mine
        self.corrupt = self.corrupt_payload or "collective_corruption" in mine
        self.diverge = "diverge" in mine
        # str seeds hash deterministically (sha512), unlike hash() of a tuple
        self.rng = random.Random(f"{seed}:{card}")
        self.base_latency_s = 0.0

    def _spike(self, duration_s: float) -> float:
        if self.jitter and self.rng.random() < self.jitter[0]:
            return (self.jitter[1] - 1.0) * duration_s
        return 0.0

    def message_delay_s(self) -> float:
        """Extra time for one small message this rank sends or receives."""
        d = self._spike(self.base_latency_s)
        if self.high_latency:
            d += (self.high_latency - 1.0) * self.base_latency_s
        return d

    def op_delay_s(self, op_s: float, hops: int) -> float:
        """How late this rank arrives to a collective whose clean time is ``op_s``."""
        d = self._spike(max(op_s, self.base_latency_s))
        if self.slow:
            d += (1.0 / self.slow - 1.0) * op_s
        if self.high_latency:
            d += (self.high_latency - 1.0) * self.base_latency_s * hops
        return d

    def corrupt_(self, t: torch.Tensor) -> None:
        """Corrupt a collective's input (or gradients), as a card that reduces wrongly."""
        if self.corrupt:
            t.add_(1.0)

    def corrupt_payload_(self, t: torch.Tensor) -> None:
        """Corrupt a p2p payload this card sends."""
        if self.corrupt_payload:
            t.add_(1.0)


MAX_WIRE_FACTOR = 64.0  # memory bound: a slow_card factor below 1/64 acts as 1/64


def wire_factor(faults: list[dict], a: str, b: str) -> float:
    """How many times the nominal payload a transfer between cards a and b carries.

    Padding the payload, rather than sleeping after each send, makes the transfer
    itself take 1/f as long: a send that returns once its data is buffered would
    hide a sleep-based throttle, and a sleep does not scale with the noise of a shared
    host. Both ranks of a pair compute the same factor from the job's faults.
    """
    f = min([_param(x, "factor") for x in faults if x["type"] in ("slow_card", "thermal_throttle")
                                           and x["target"] in (a, b)],
            default=1.0)
    return min(1.0 / f, MAX_WIRE_FACTOR)


def _param(fault: dict, key: str) -> float:
    """A fault's parameter (the job carries it, the fault plan's default filled in)."""
    value = fault.get(key)
    if value is None:
        raise ValueError(f"the job's {fault['type']} fault on {fault.get('target')} has no {key}")
    return float(value)
