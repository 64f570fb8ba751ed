"""simulate_aggregate (numpy, tests and benchmarks only) draws PEM's reports with the device's distribution: the
count table of 6000 ``make_report`` payloads and of 6000 simulated reports agree by a chi-square test, for every
(group, hash, y) outcome; the same test tells a simulation at another epsilon apart."""

import numpy as np
import pytest
from scipy import stats

from client_sdk.kinds.heavy_hitters import encode_value, make_report, params_from_dict
from client_sdk.randomness import DeterministicRandom
from estimators.kinds.heavy_hitters import empty_aggregate, simulate_aggregate

SPEC = {"max_length": 2, "alphabet": "ab", "algorithm": "pem", "segment_length": 1, "hash_count": 3}
DRAWS = 6000


def p_value(device_epsilon, simulated_epsilon, value):
    device = params_from_dict(SPEC, device_epsilon)
    rng = DeterministicRandom(31)
    from_device = empty_aggregate(device).add([make_report(rng, device, value) for _ in range(DRAWS)])
    simulated = params_from_dict(SPEC, simulated_epsilon)
    from_numpy = simulate_aggregate(simulated, [encode_value(simulated, value)], np.array([DRAWS]),
                                    np.random.default_rng(32))
    assert from_device.cells.shape == from_numpy.cells.shape  # the same outcome space: g = 4 at both epsilons
    table = np.array([from_device.cells.ravel(), from_numpy.cells.ravel()])
    return stats.chi2_contingency(table[:, table.sum(axis=0) > 0]).pvalue


@pytest.mark.parametrize("value", ["", "ab", "b"])
def test_simulated_pem_reports_have_the_device_distribution(value):
    assert p_value(1.0, 1.0, value) > 1e-4


def test_the_comparison_detects_a_simulation_at_another_epsilon():
    assert p_value(1.0, 1.24, "ab") < 1e-4
