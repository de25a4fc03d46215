"""Order statistics of normal samples for the mock's ping-pong summaries (median, p99 and
max of each pair's samples): from the samples themselves (small rounds), or drawn directly
without the samples (fleet-size rounds: the same distribution, see ``normal_order_statistics``)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def median_p99_max(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: the median, the 99th percentile (linear, as ``np.percentile``) and the
    largest sample, from one sort of each row (numpy's vectorized sort of short rows is
    several times faster than partitioning them at each order statistic). ``samples``
    is sorted in place."""
    n = samples.shape[1]
    samples.sort(axis=1)
    return from_order(n, lambda r: samples[:, r])


def from_order(n: int, at) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median, p99 (numpy's linear method) and max of n samples from their order
    statistics (``at(r)``: the r-th smallest, 0-based)."""
    lo, hi, frac = p99_ranks(n)
    median = (at((n - 1) // 2) + at(n // 2)) / 2
    below, above = at(lo), at(hi)
    diff = above - below
    p99 = above - diff * (1 - frac) if frac >= 0.5 else below + diff * frac  # numpy's _lerp
    return median, p99, at(n - 1)


def p99_ranks(n: int) -> tuple[int, int, float]:
    at = (n - 1) * 0.99  # numpy's virtual index (the linear method)
    lo = int(np.floor(at))
    return lo, min(lo + 1, n - 1), at - lo


def _stretches(n: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The order statistics the summary reads (0-based ranks: the two middle ones, the two
    around the 99th percentile, the largest), the gamma shape of each stretch between them
    (the last to S_(n+1)), and which stretches are one exponential gap."""
    lo, hi, _ = p99_ranks(n)
    ranks = sorted({(n - 1) // 2, n // 2, lo, hi, n - 1})
    ks = np.array([r + 1 for r in ranks], dtype=float)            # 1-based
    gaps = np.diff(np.concatenate([[0.0], ks, [n + 1.0]]))        # gamma shapes, the last to S_(n+1)
    return ranks, gaps, gaps == 1


def _draw(rng: np.random.Generator, m: int, gaps: np.ndarray, one: np.ndarray) -> list[np.ndarray]:
    """Each stretch's m draws, in the order they are drawn (the exponential gaps at once,
    then the longer ones), as a column (a view) per stretch."""
    single = rng.standard_exponential((m, int(one.sum())))   # a gap of one: cheaper than a gamma
    longer = rng.standard_gamma(gaps[~one], size=(m, int((~one).sum())))
    singles, longers = iter(single.T), iter(longer.T)
    return [next(singles) if o else next(longers) for o in one]


def _uniforms(draws: list[np.ndarray], at: slice) -> list[np.ndarray]:
    """The order statistics of uniforms S_k / S_(n+1) of the rows ``at``: the running sums
    one column at a time, each a contiguous vector (the additions of np.cumsum along a row,
    in its order: the same values, without its strided pass), then divided in place."""
    sums = [draws[0][at].copy()]
    for d in draws[1:]:
        sums.append(sums[-1] + d[at])
    return [np.divide(s, sums[-1], out=s) for s in sums[:-1]]


def normal_order_statistics(rng: np.random.Generator, m: int, n: int):
    """For m sets of n standard normal samples, the order statistics the ping-pong summary
    reads (the two middle ones, the two around the 99th percentile, the largest), drawn
    jointly and exactly without the n samples: the k-th smallest of n uniforms is S_k /
    S_(n+1), S the running sums of n+1 exponential gaps (so each stretch between the ranks
    wanted is one gamma draw), mapped through the inverse normal distribution function.
    Returns ``at(r)``, the r-th smallest (0-based) of each set."""
    ranks, gaps, one = _stretches(n)
    u = _uniforms(_draw(rng, m, gaps, one), slice(None))
    z = {r: inverse_normal(u[j]) for j, r in enumerate(ranks)}
    return lambda r: z[r]


# Rows a block of drawn_summaries: a block's dozen temporaries stay in the processor's cache
# (a fleet's round is 65,536 pairs; over whole rounds the inverse normal ran 1.5x slower).
BLOCK = 8192


def drawn_summaries(rng: np.random.Generator, n: int, scale: np.ndarray, cv: float,
                    out: Sequence[np.ndarray]) -> None:
    """For each of ``len(scale)`` pairs, the median, p99 and max of n samples ``scale ·
    (1 + cv · N(0, 1))`` into ``out`` (three arrays of that length): the draws of
    :func:`normal_order_statistics`, and its values to the bit (each row goes through the
    same operations), computed a block of :data:`BLOCK` rows at a time."""
    ranks, gaps, one = _stretches(n)
    draws = _draw(rng, len(scale), gaps, one)
    for start in range(0, len(scale), BLOCK):
        at = slice(start, start + BLOCK)
        z = {r: inverse_normal(u) for r, u in zip(ranks, _uniforms(draws, at))}
        for stat, dest in zip(from_order(n, z.__getitem__), out):
            stat = stat * cv     # (the max is z's own array: p99 has read it already)
            stat += 1.0
            np.multiply(scale[at], stat, out=dest[at])


# Acklam's rational approximation of the inverse normal distribution function (relative
# error below 1.2e-9: far below the model's 2% noise).
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
      -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
      -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
      4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)


def inverse_normal(u: np.ndarray) -> np.ndarray:
    """The inverse normal distribution function of ``u`` (in (0, 1)): the central formula
    where it applies, the tail formula elsewhere. Each value goes through the same
    operations whichever way the values are split: mostly central values (the median's)
    get the central formula over all of them, then the few tail values replaced; mostly
    tail values (the largest of 50 samples is in the tail 7 times in 10) get each formula
    over its own values only."""
    flat = u.ravel()
    in_tail = (flat < _LOW) | (flat > 1 - _LOW)
    tail = np.flatnonzero(in_tail)
    if 2 * len(tail) <= len(flat):
        out = _central(flat)
    else:
        out = np.empty_like(flat)
        central = np.flatnonzero(~in_tail)
        out[central] = _central(flat[central])
    if len(tail):
        out[tail] = _tails(flat[tail])
    return out.reshape(u.shape)


_LOW = 0.02425   # below it (and above 1 - it), the tail formula


def _central(u: np.ndarray) -> np.ndarray:
    q = u - 0.5
    r = q * q
    # Horner's rule in place (the same operations in the same order as the nested
    # expression, without a temporary array per step): millions of values per round.
    num, den = _A[0] * r, _B[0] * r
    for a in _A[1:5]:
        num += a
        num *= r
    for b in _B[1:]:
        den += b
        den *= r
    num += _A[5]
    den += 1
    num *= q
    num /= den
    return num


def _tails(v: np.ndarray) -> np.ndarray:
    sign = np.where(v < 0.5, 1.0, -1.0)
    t = np.sqrt(-2 * np.log(np.minimum(v, 1 - v)))
    return sign * ((((((_C[0] * t + _C[1]) * t + _C[2]) * t + _C[3]) * t + _C[4]) * t + _C[5]) /
                   ((((_D[0] * t + _D[1]) * t + _D[2]) * t + _D[3]) * t + 1))
