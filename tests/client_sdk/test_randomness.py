import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from client_sdk.randomness import (
    DeterministicRandom,
    SecureRandom,
    bernoulli,
    bernoulli_exp,
    bernoulli_many,
    discrete_gaussian,
    discrete_laplace,
    quantize_down,
    quantize_up,
)
from tests.tolerances import k_sigma


def test_quantization_directions():
    p = 1 / math.e
    assert quantize_down(p) <= p <= quantize_up(p)
    assert quantize_up(p) - quantize_down(p) == Fraction(1, 2**32)
    assert quantize_down(0.5) == quantize_up(0.5) == Fraction(1, 2)


@pytest.mark.parametrize("probability", [Fraction(1, 3), Fraction(7, 8), quantize_down(1 / (math.e + 1))])
def test_bernoulli_frequency(probability):
    rng = DeterministicRandom(1)
    n = 40_000
    hits = sum(bernoulli(rng, probability) for _ in range(n))
    p = float(probability)
    assert abs(hits / n - p) < k_sigma(3) * math.sqrt(p * (1 - p) / n)


def test_bernoulli_many_matches_threshold():
    rng = DeterministicRandom(2)
    threshold = 1 << 30  # probability 1/4
    draws = bernoulli_many(rng, threshold, 200_000)
    assert abs(sum(draws) / len(draws) - 0.25) < k_sigma() * math.sqrt(0.25 * 0.75 / len(draws))


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp(gamma):
    rng = DeterministicRandom(3)
    n = 30_000
    p = math.exp(-float(gamma))
    hits = sum(bernoulli_exp(rng, gamma) for _ in range(n))
    assert abs(hits / n - p) < k_sigma(4) * math.sqrt(max(p * (1 - p), 1e-12) / n) + 1e-12


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3), Fraction(2 * 4096) / Fraction(1.0)])
def test_discrete_laplace_distribution(scale):
    "Chi-square of the sampler against P(y) = (1-a)/(1+a) a^|y|, a = exp(-1/scale)"
    rng = DeterministicRandom(4)
    n = 20_000
    samples = np.array([discrete_laplace(rng, scale) for _ in range(n)])
    a = math.exp(-1 / float(scale))
    # bins by |y| quantiles of the exact distribution, then compare counts
    edges = np.unique(np.round(np.quantile(np.abs(samples), np.linspace(0, 1, 12)[1:-1])).astype(int))
    bounds = [0, *[int(e) + 1 for e in edges if e >= 0], None]
    observed, expected = [], []
    for low, high in zip(bounds[:-1], bounds[1:]):
        mask = np.abs(samples) >= low if high is None else (np.abs(samples) >= low) & (np.abs(samples) < high)
        observed.append(mask.sum())
        p_low = 1.0 if low == 0 else 2 * a**low / (1 + a)  # P(|Y| >= low)
        p_high = 0.0 if high is None else 2 * a**high / (1 + a)
        expected.append(n * (p_low - p_high))
    assert abs(sum(expected) - n) < 1e-6 * n
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    variance = 2 * a / (1 - a) ** 2
    assert abs(samples.var() - variance) < k_sigma() * variance * 2.5 / math.sqrt(n)  # Laplace kurtosis 6
    assert abs(samples.mean()) < k_sigma() * math.sqrt(variance / n)


def test_secure_random_is_the_default():
    rng = SecureRandom()
    assert 0 <= rng.randbelow(10) < 10 and len(rng.token_bytes(16)) == 16 and rng.randbits(8) < 256


def test_secure_random_draws_from_secrets(monkeypatch):
    "Each method of SecureRandom is a call into ``secrets`` (the OS CSPRNG), not into ``random``"
    import secrets

    calls = []
    for name in ("randbelow", "randbits", "token_bytes"):
        original = getattr(secrets, name)
        monkeypatch.setattr(secrets, name, lambda *args, _name=name, _original=original: (calls.append(_name),
                                                                                            _original(*args))[1])
    rng = SecureRandom()
    rng.randbelow(10), rng.randbits(8), rng.token_bytes(4)
    assert calls == ["randbelow", "randbits", "token_bytes"]


def test_secure_random_ignores_the_seed_of_random():
    "Seeding Python's global ``random`` must not make the device's draws repeat"
    import random

    def draws():
        random.seed(12345)
        rng = SecureRandom()
        return [rng.randbelow(2**32) for _ in range(4)], rng.randbits(64), rng.token_bytes(16)

    first, second = draws(), draws()
    assert all(a != b for a, b in zip(first, second))  # each pair repeats with probability ~2**-64 at most


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(9167, 512), Fraction(400)])
def test_discrete_gaussian_distribution(sigma2):
    "Chi-square of the sampler against P(y) ~ exp(-y^2 / (2 sigma2)) (CKS 2020), and its exact variance"
    rng = DeterministicRandom(5)
    n = 20_000
    samples = np.array([discrete_gaussian(rng, sigma2) for _ in range(n)])
    s2 = float(sigma2)
    half = int(40 * math.sqrt(s2)) + 2
    grid = np.arange(-half, half + 1)
    pmf = np.exp(-grid.astype(float) ** 2 / (2 * s2))
    pmf /= pmf.sum()
    # bins: runs of consecutive integers holding about 1/12 of the mass each, tails merged
    cumulative = np.cumsum(pmf)
    bin_of = np.minimum((cumulative * 12).astype(int), 11)
    expected = np.bincount(bin_of, weights=pmf * n, minlength=12)
    observed = np.bincount(bin_of[np.clip(samples + half, 0, 2 * half)], minlength=12)
    keep = expected > 0
    assert stats.chisquare(observed[keep], expected[keep]).pvalue > 1e-4
    variance = float((grid.astype(float) ** 2 * pmf).sum())
    assert variance <= s2  # CKS 2020, Proposition 5
    kurtosis = float((grid.astype(float) ** 4 * pmf).sum()) / variance**2
    assert abs(samples.var() - variance) < k_sigma(3) * variance * math.sqrt((kurtosis - 1) / n)
    assert abs(samples.mean()) < k_sigma(3) * math.sqrt(variance / n)


def test_discrete_gaussian_rejects_a_non_positive_variance():
    with pytest.raises(ValueError, match="sigma2"):
        discrete_gaussian(DeterministicRandom(1), Fraction(0))
