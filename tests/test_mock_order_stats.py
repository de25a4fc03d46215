"""The mock's fleet-size ping-pong summaries (sncheck/backends/mock.py): the median, p99
and max of ``lat_iters`` normal samples drawn directly as order statistics have the
distribution of those of real samples (each statistic's mean, spread and 1%/99% points
within sampling error), for the plan's 50 ping-pongs and for sizes whose p99 falls on and
between ranks; the inverse normal is exact to 1e-9."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sncheck.backends.mockorder import from_order, inverse_normal, median_p99_max, normal_order_statistics


@pytest.mark.parametrize("n", [50, 11, 101])
def test_order_statistics_have_the_samples_distribution(n):
    m = 12_000
    rng = np.random.default_rng(n)
    direct = from_order(n, normal_order_statistics(rng, m, n))
    sampled = median_p99_max(rng.standard_normal((m, n)))
    for name, d, s in zip(("median", "p99", "max"), direct, sampled):
        se = math.sqrt(np.var(s) / m + np.var(d) / m)
        assert abs(np.mean(d) - np.mean(s)) < 5 * se, (n, name)
        assert abs(np.std(d) / np.std(s) - 1) < 0.06, (n, name)
        for q in (1, 99):
            assert abs(np.percentile(d, q) - np.percentile(s, q)) < 0.1 * np.std(s) + 6 * se, (n, name, q)
    assert (direct[0] <= direct[1]).all() and (direct[1] <= direct[2]).all()   # median <= p99 <= max


def test_inverse_normal_is_exact():
    from statistics import NormalDist

    u = np.array([1e-12, 1e-6, 0.001, 0.02425, 0.1, 0.5, 0.77, 0.97575, 0.999, 1 - 1e-9])
    want = np.array([NormalDist().inv_cdf(x) for x in u])
    np.testing.assert_allclose(inverse_normal(u.copy()), want, rtol=1.2e-9 * 10, atol=1e-9)


def test_the_draws_are_the_published_formula_to_the_bit():
    """A seed's fleet rows stay the same (recorded runs, baselines): the column-wise sums
    and in-place Horner steps give exactly what np.cumsum and the nested formula give."""
    n, m = 50, 4_096
    at = normal_order_statistics(np.random.default_rng(7), m, n)
    rng = np.random.default_rng(7)
    ranks = sorted({(n - 1) // 2, n // 2, 48, 49})
    gaps = np.diff(np.concatenate([[0.0], [r + 1.0 for r in ranks], [n + 1.0]]))
    draws = np.empty((m, len(gaps)))
    draws[:, gaps == 1] = rng.standard_exponential((m, int((gaps == 1).sum())))
    draws[:, gaps != 1] = rng.standard_gamma(gaps[gaps != 1], size=(m, int((gaps != 1).sum())))
    sums = np.cumsum(draws, axis=1)
    u = sums[:, :-1] / sums[:, -1:]
    q = u - 0.5
    r = q * q
    a, b = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
            -3.066479806614716e+01, 2.506628277459239e+00), (-5.447609879822406e+01, 1.615858368580409e+02,
                                                           -1.556989798598866e+02, 6.680131188771972e+01,
                                                           -1.328068155288572e+01)
    z = ((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]
    z = z * q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    central = (u >= 0.02425) & (u <= 1 - 0.02425)
    for j, rank in enumerate(ranks):
        assert np.array_equal(at(rank)[central[:, j]], z[central[:, j], j]), rank
        assert np.array_equal(at(rank), inverse_normal(u[:, j].copy())), rank
