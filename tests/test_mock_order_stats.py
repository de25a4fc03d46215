"""The mock's fleet-size ping-pong summaries (sncheck/backends/mock.py): the median, p99
and max of ``lat_iters`` normal samples drawn directly as order statistics have the
distribution of those of real samples (each statistic's mean, spread and 1%/99% points
within sampling error), for the plan's 50 ping-pongs and for sizes whose p99 falls on and
between ranks; the inverse normal is exact to 1e-9."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sncheck.backends.mock import _from_order, _inverse_normal, _median_p99_max, _normal_order_statistics


@pytest.mark.parametrize("n", [50, 11, 101])
def test_order_statistics_have_the_samples_distribution(n):
    m = 12_000
    rng = np.random.default_rng(n)
    direct = _from_order(n, _normal_order_statistics(rng, m, n))
    sampled = _median_p99_max(rng.standard_normal((m, n)))
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
    np.testing.assert_allclose(_inverse_normal(u.copy()), want, rtol=1.2e-9 * 10, atol=1e-9)
