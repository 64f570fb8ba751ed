"""The two ways a distributed campaign makes its released sum differentially private, calibrated and accounted.

*Aggregator noise* (``AggregatorNoise``): each of the two aggregators adds its own exact discrete Gaussian (or
discrete Laplace) noise, calibrated to the full (epsilon, delta) for one report's sensitivity, to its aggregate share
before release.  If one aggregator colludes with the analyst, the analyst can subtract that aggregator's noise; the
other's still makes the release (epsilon, delta)-DP.  The released sum therefore carries twice the variance of one
calibrated noise: that is the price of not trusting either aggregator.

*Coin-flip noise* (``CoinNoise``, Dwork, Kenthapadi, McSherry, Mironov, Naor, "Our Data, Ourselves", 2006): each
device adds ``coins_per_report`` coin bits per output coordinate to its measurement, proven to be bits by the
validity circuit; the aggregators XOR them with bits derived from the verify key and the report's nonce
(``client_sdk.vdaf.coins``), which the device did not know when it uploaded, so every coin is fair.  After upload,
public randomness picks ``subset_size`` reports whose coins enter the release; the known mean
``subset_size * coins_per_report / 2`` is subtracted.  The privacy assumption is on the devices: at least a fraction
``honest_fraction`` of the devices in the batch do not collude with the analyst (whose coins, and the person's own,
count as known).  The subset is sized so that it holds at least ``n_min`` honest devices other than the person
protected, except with probability ``delta_select`` (Hoeffding's bound, which holds for sampling without
replacement: Hoeffding 1963, Theorem 4), and n_min * coins_per_report >= N coins, N the smallest for which
Bin(N, 1/2) is (epsilon, delta - delta_select)-DP.  The release is then (epsilon, delta)-DP, and its noise,
Bin(subset_size * coins_per_report, 1/2) - mean, depends on (epsilon, delta) and not on n.

``privacy()`` of each mode recomputes (epsilon, delta) from its parameters alone (``accounting``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from client_sdk.randomness import SECURE_RANDOM, RandomSource, discrete_gaussian, discrete_laplace

from .accounting import (
    TAIL_SIGMAS,
    binomial_delta,
    calibrate_coins,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    discrete_gaussian_delta,
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    discrete_laplace_epsilon,
    discrete_laplace_variance,
)

AGGREGATORS = 2
NOISE_MODES = ("gaussian", "laplace", "coins")
LAPLACE_TAIL = 60  # scales: the discrete Laplace beyond 60 t holds exp(-60) ~ 1e-26 of its mass


DIRECT_CONVOLUTION = 1 << 12  # shorter pmfs are convolved directly (exact sums), longer ones through the FFT


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pmf of the sum of two independent noises from theirs (on consecutive integer grids): direct for short
    ones, through numpy's real FFT for long ones (O(n log n); its rounding can leave tiny negatives, clipped to 0)"""
    if min(len(a), len(b)) <= DIRECT_CONVOLUTION:
        return np.convolve(a, b)
    size = len(a) + len(b) - 1
    padded = 1 << (size - 1).bit_length()
    product = np.fft.irfft(np.fft.rfft(a, padded) * np.fft.rfft(b, padded), padded)[:size]
    return np.clip(product, 0.0, None)


def noise_halfwidth(offsets: np.ndarray, pmf: np.ndarray, confidence: float) -> float:
    "The smallest q with P(|noise| <= q) >= confidence, for a noise pmf symmetric about 0: an exact interval"
    order = np.argsort(np.abs(offsets), kind="stable")
    mass = np.cumsum(pmf[order])
    index = int(np.searchsorted(mass, confidence * (1 - 1e-12)))
    return float(np.abs(offsets[order][min(index, len(order) - 1)]))


@dataclass(frozen=True)
class AggregatorNoise:
    "Discrete Gaussian (variance parameter ``sigma2``) or discrete Laplace (``scale``) noise from each aggregator"

    kind: str  # "gaussian" or "laplace"
    parameter: Fraction  # sigma2 of the discrete Gaussian, or the discrete Laplace scale t
    sensitivity: int
    aggregators: int = AGGREGATORS

    @property
    def mode(self) -> str:
        return self.kind

    def share_variance(self) -> float:
        "The variance of one aggregator's noise (exact, not the continuous approximation)"
        if self.kind == "gaussian":
            return discrete_gaussian_variance(float(self.parameter))
        return discrete_laplace_variance(self.parameter)

    def variance(self) -> float:
        "The variance of the released sum's noise: every aggregator's noise counts"
        return self.aggregators * self.share_variance()

    def privacy(self, epsilon: float) -> tuple[float, float]:
        "(epsilon, delta) of the release, from one aggregator's noise alone (the other may collude)"
        if self.kind == "gaussian":
            return epsilon, discrete_gaussian_delta(float(self.parameter), epsilon, self.sensitivity)
        return discrete_laplace_epsilon(self.parameter, self.sensitivity), 0.0

    def share_noise(self, length: int, rng: RandomSource = SECURE_RANDOM) -> list[int]:
        "What one aggregator adds to its aggregate share: exact draws from the CSPRNG (CKS 2020 samplers)"
        draw = discrete_gaussian if self.kind == "gaussian" else discrete_laplace
        return [draw(rng, self.parameter) for _ in range(length)]

    def release_noise(self, length: int, rng: RandomSource = SECURE_RANDOM) -> list[int]:
        "The noise in a release: the sum of every aggregator's share noise"
        shares = [self.share_noise(length, rng) for _ in range(self.aggregators)]
        return [sum(column) for column in zip(*shares)]

    def mean(self) -> float:
        return 0.0

    def noise_pmf(self) -> tuple[np.ndarray, np.ndarray]:
        "(offsets, probabilities) of the release's noise: the convolution of every aggregator's pmf"
        parameter = float(self.parameter)
        if self.kind == "gaussian":
            half = int(math.ceil(TAIL_SIGMAS * math.sqrt(parameter))) + 1
            grid = np.arange(-half, half + 1)
            pmf = discrete_gaussian_pmf(parameter, grid)
        else:
            half = int(math.ceil(LAPLACE_TAIL * parameter)) + 1
            grid = np.arange(-half, half + 1)
            a = math.exp(-1 / parameter)
            pmf = (1 - a) / (1 + a) * np.exp(-np.abs(grid) / parameter)
        total = pmf
        for _ in range(self.aggregators - 1):
            total = convolve(total, pmf)
        offsets = np.arange(len(total)) - (len(total) - 1) // 2
        return offsets, total / total.sum()

    def describe(self) -> dict:
        name = "discrete Gaussian" if self.kind == "gaussian" else "discrete Laplace"
        parameter = "sigma2" if self.kind == "gaussian" else "scale"
        return {"mode": self.kind, "noise": f"{name} from each of {self.aggregators} aggregators",
                parameter: float(self.parameter), "sensitivity": self.sensitivity,
                "variance": self.variance(), "assumption": "at least one aggregator does not collude with the analyst"}


@dataclass(frozen=True)
class CoinNoise:
    "Binomial noise from the fair (XOR-masked) coins of a public random subset of the reports"

    coins_needed: int  # N: honest coins per coordinate the (epsilon, delta - delta_select) target needs
    coins_per_report: int
    honest_fraction: float
    subset_size: int
    delta_select: float
    sensitivity: int

    @property
    def mode(self) -> str:
        return "coins"

    @property
    def n_min(self) -> int:
        "Honest devices the subset must hold besides the person protected"
        return math.ceil(self.coins_needed / self.coins_per_report)

    @property
    def total_coins(self) -> int:
        return self.subset_size * self.coins_per_report

    def mean(self) -> float:
        "The known mean of the coins' sum, subtracted from the release"
        return self.total_coins / 2

    def variance(self) -> float:
        "Bin(subset_size * coins_per_report, 1/2): every coin is fair once XOR-masked"
        return self.total_coins / 4

    def privacy(self, epsilon: float) -> tuple[float, float]:
        "(epsilon, delta): the honest coins' exact binomial delta plus the chance the subset holds too few"
        honest = self.n_min * self.coins_per_report
        return epsilon, binomial_delta(honest, epsilon, self.sensitivity) + self.delta_select

    def release_noise(self, length: int, rng: np.random.Generator) -> np.ndarray:
        "Simulated coins' sum in a release (mean not removed); the real coins come from the devices, XOR-masked"
        return rng.binomial(self.total_coins, 0.5, size=length)

    def noise_pmf(self) -> tuple[np.ndarray, np.ndarray]:
        "(offsets from the mean, probabilities) of the coins' sum"
        reach = 60 * math.isqrt(self.total_coins) + 60
        k = np.arange(max(0, self.total_coins // 2 - reach), min(self.total_coins, self.total_coins // 2 + reach) + 1)
        from scipy import stats  # here, not at import: scipy.stats costs a second of CPU (aggregator noise needs none)

        return k - self.mean(), stats.binom.pmf(k, self.total_coins, 0.5)

    def describe(self) -> dict:
        return {"mode": "coins", "noise": "Binomial: fair coins of a public random subset of reports, mean removed",
                "coins_needed": self.coins_needed, "coins_per_report": self.coins_per_report,
                "subset_size": self.subset_size, "honest_fraction": self.honest_fraction, "n_min": self.n_min,
                "delta_select": self.delta_select, "sensitivity": self.sensitivity, "variance": self.variance(),
                "assumption": (f"at least a fraction {self.honest_fraction} of the devices in the batch (so at least "
                               f"{self.n_min} in the subset, except with probability {self.delta_select:g}) do not "
                               "collude with the analyst, and no device colludes with an aggregator")}


NoiseMode = AggregatorNoise | CoinNoise


def coin_subset_size(honest_needed: int, honest_fraction: float, delta_select: float) -> int:
    """The smallest m with h m - sqrt(m ln(1/delta_select) / 2) >= honest_needed: a uniform subset of m reports
    from a batch whose fraction h is honest then holds fewer honest devices with probability <= delta_select"""
    if not 0 < honest_fraction <= 1:
        raise ValueError("honest_fraction must be in (0, 1]")
    if not 0 < delta_select < 1:
        raise ValueError("delta_select must be strictly between 0 and 1")
    log_term = math.log(1 / delta_select) / 2
    # h m - sqrt(m L) = k is a quadratic in sqrt(m); take its positive root, then step to the integer
    root = (math.sqrt(log_term) + math.sqrt(log_term + 4 * honest_fraction * honest_needed)) / (2 * honest_fraction)
    m = max(1, math.floor(root * root) - 1)
    while honest_fraction * m - math.sqrt(m * log_term) < honest_needed:
        m += 1
    return m


def calibrate(mode: str, *, epsilon: float, delta: float, sensitivity: int, coins_per_report: int = 1,
              honest_fraction: float = 0.5, select_share: float = 0.5) -> NoiseMode:
    """The noise meeting (epsilon, delta) for a query of integer ``sensitivity``.

    ``select_share`` is the part of delta spent on the coin subset holding too few honest devices."""
    if mode == "gaussian":
        return AggregatorNoise("gaussian", calibrate_discrete_gaussian(epsilon, delta, sensitivity), sensitivity)
    if mode == "laplace":
        return AggregatorNoise("laplace", calibrate_discrete_laplace(epsilon, sensitivity), sensitivity)
    if mode == "coins":
        if not (isinstance(coins_per_report, int) and coins_per_report >= 1):
            raise ValueError("coins_per_report must be an integer of at least 1")
        if not 0 < select_share < 1:
            raise ValueError("select_share must be strictly between 0 and 1")
        delta_select = delta * select_share
        needed = calibrate_coins(epsilon, delta - delta_select, sensitivity)
        n_min = math.ceil(needed / coins_per_report)
        # the person protected may be among the honest devices of the subset: their own coins count as known
        subset = coin_subset_size(n_min + 1, honest_fraction, delta_select)
        return CoinNoise(needed, coins_per_report, honest_fraction, subset, delta_select, sensitivity)
    raise ValueError(f"mode must be one of {list(NOISE_MODES)}")


def select_coin_reports(report_ids: Sequence[bytes], subset_size: int, seed: bytes) -> list[int]:
    """Indices of the reports whose coins enter the release, from public randomness drawn after upload.

    A uniform subset (without replacement) ranked by SHA-256(seed || report id); ``seed`` must be fixed only after
    the batch is closed (for example the two aggregators' committed random values, opened at collection)."""
    if subset_size > len(report_ids):
        raise ValueError(f"the batch has {len(report_ids)} reports; the coin noise needs {subset_size}")
    ranks = sorted(range(len(report_ids)), key=lambda i: hashlib.sha256(seed + report_ids[i]).digest())
    return sorted(ranks[:subset_size])
