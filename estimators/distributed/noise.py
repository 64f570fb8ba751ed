"""How a distributed campaign makes its released sum differentially private: each aggregator's own noise.

Each of the two aggregators adds its own noise to its aggregate share before it leaves, drawn from its own CSPRNG
with an exact sampler and calibrated so that ONE share's noise alone makes the release (epsilon, delta)-DP under
replace-one (n public) for the shift of one replaced report (``accounting.Shift``).  The modes:

* ``gaussian``: discrete Gaussian N_Z(0, sigma2) per coordinate (Canonne, Kamath, Steinke 2020 sampler);
* ``laplace``: discrete Laplace with scale t = L1 / epsilon, pure epsilon;
* ``coins``: centred Binomial, the sum of N fair bits minus N/2 (the Binomial mechanism of Dwork, Kenthapadi,
  McSherry, Mironov, Naor, "Our Data, Ourselves", EUROCRYPT 2006, run by each aggregator on its own coins).

The assumption is the same for every mode (``ASSUMPTION``): at least one of the two aggregators follows the
protocol and does not collude with the analyst.  The other may do anything: zero or choose its own noise, inject
any number of reports, know every key it holds.  Its noise is never needed, and nothing it sends reaches the
honest aggregator's noise: that is drawn, added to the honest share and stored before the share is answered, and
a retried request gets the stored share, never a fresh draw (which the analyst could average away).  The honest
aggregator never sees the other's noise, and what the other chooses after seeing the honest (noisy) share can
change the value of the release (integrity, which needs both aggregators honest) but not its privacy.  The
released sum carries the variance of both noises: the price of trusting neither aggregator.

Devices of a ``coins`` campaign still send, with their histogram, coin bits proven to be bits (the
``HistogramWithCoins`` circuit, kept so that deployed devices stay compatible).  Those coins are verified and
dropped: they could be chosen against their masks by an aggregator that injects reports, so no guarantee is
claimed from them and they do not enter the release.

``privacy()`` recomputes (epsilon, delta) from the parameters alone (``accounting``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from client_sdk.randomness import SECURE_RANDOM, RandomSource, discrete_gaussian, discrete_laplace
from client_sdk.spec_prio3 import NOISE_MODES

from .accounting import (
    DIRECT_CONVOLUTION,
    TAIL_SIGMAS,
    Shift,
    as_shift,
    binomial_delta,
    calibrate_coins,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    convolve,
    discrete_gaussian_delta,
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    discrete_laplace_epsilon,
    discrete_laplace_variance,
)

AGGREGATORS = 2
LAPLACE_TAIL = 60  # scales: the discrete Laplace beyond 60 t holds exp(-60) ~ 1e-26 of its mass
ASSUMPTION = ("at least one of the two aggregators follows the protocol and does not collude with the analyst "
              "(the other may inject reports, drop or choose its own noise: its share's noise alone is calibrated)")
RELATION = "replace-one"
NEIGHBOURING = "replace-one (n public)"
__all__ = ["AGGREGATORS", "ASSUMPTION", "DIRECT_CONVOLUTION", "NEIGHBOURING", "NOISE_MODES", "RELATION",
           "AggregatorNoise", "NoiseMode", "calibrate", "convolve", "noise_halfwidth"]


def noise_halfwidth(offsets: np.ndarray, pmf: np.ndarray, confidence: float) -> float:
    "The smallest q with P(|noise| <= q) >= confidence, for a noise pmf symmetric about 0: an exact interval"
    order = np.argsort(np.abs(offsets), kind="stable")
    mass = np.cumsum(pmf[order])
    index = int(np.searchsorted(mass, confidence * (1 - 1e-12)))
    return float(np.abs(offsets[order][min(index, len(order) - 1)]))


def centred_binomial(rng: RandomSource, coins: int) -> int:
    "The sum of ``coins`` fair bits minus coins/2 (``coins`` even): exact, from the CSPRNG's bits"
    return rng.randbits(coins).bit_count() - coins // 2 if coins else 0


@dataclass(frozen=True)
class AggregatorNoise:
    """Discrete Gaussian (variance parameter ``sigma2``), discrete Laplace (``scale``) or centred Binomial (N
    ``coins``) noise from each aggregator, calibrated to ``shift`` alone"""

    kind: str  # "gaussian", "laplace" or "coins"
    parameter: Fraction  # sigma2 of the discrete Gaussian, the discrete Laplace scale t, or the number of coins N
    shift: Shift
    aggregators: int = AGGREGATORS

    @property
    def mode(self) -> str:
        return self.kind

    @property
    def sensitivity(self) -> int:
        "The L1 norm of one replaced report's shift"
        return self.shift.l1

    @property
    def coins(self) -> int:
        return int(self.parameter) if self.kind == "coins" else 0

    def share_variance(self) -> float:
        "The variance of one aggregator's noise (exact, not the continuous approximation)"
        if self.kind == "gaussian":
            return discrete_gaussian_variance(float(self.parameter))
        if self.kind == "coins":
            return self.coins / 4
        return discrete_laplace_variance(self.parameter)

    def variance(self) -> float:
        "The variance of the released sum's noise: every aggregator's noise counts"
        return self.aggregators * self.share_variance()

    def privacy(self, epsilon: float) -> tuple[float, float]:
        "(epsilon, delta) of the release, from ONE aggregator's noise alone (the other may be dishonest)"
        if self.kind == "gaussian":
            return epsilon, discrete_gaussian_delta(float(self.parameter), epsilon, self.shift)
        if self.kind == "coins":
            return epsilon, binomial_delta(self.coins, epsilon, self.shift)
        return discrete_laplace_epsilon(self.parameter, self.shift), 0.0

    def share_noise(self, length: int, rng: RandomSource = SECURE_RANDOM) -> list[int]:
        "What one aggregator adds to its aggregate share: exact draws from the CSPRNG"
        if self.kind == "coins":
            return [centred_binomial(rng, self.coins) for _ in range(length)]
        draw = discrete_gaussian if self.kind == "gaussian" else discrete_laplace
        return [draw(rng, self.parameter) for _ in range(length)]

    def release_noise(self, length: int, rng: RandomSource = SECURE_RANDOM) -> list[int]:
        "The noise in a release: the sum of every aggregator's share noise"
        shares = [self.share_noise(length, rng) for _ in range(self.aggregators)]
        return [sum(column) for column in zip(*shares)]

    def mean(self) -> float:
        return 0.0

    def share_pmf(self) -> np.ndarray:
        "One aggregator's noise pmf on the integers -h..h"
        parameter = float(self.parameter)
        if self.kind == "gaussian":
            half = int(math.ceil(TAIL_SIGMAS * math.sqrt(parameter))) + 1
            return discrete_gaussian_pmf(parameter, np.arange(-half, half + 1))
        if self.kind == "coins":
            # imported here: scipy.stats costs 1.7 s of import (640 modules), and only the coins noise needs it
            from scipy import stats  # here, not at import: scipy.stats costs a second of CPU

            half = self.coins // 2
            reach = min(half, 30 * math.isqrt(self.coins) + 60)  # 60 sd: beyond, the pmf is below exp(-1800)
            return stats.binom.pmf(np.arange(half - reach, half + reach + 1), self.coins, 0.5)
        half = int(math.ceil(LAPLACE_TAIL * parameter)) + 1
        grid = np.arange(-half, half + 1)
        a = math.exp(-1 / parameter)
        return (1 - a) / (1 + a) * np.exp(-np.abs(grid) / parameter)

    def noise_pmf(self) -> tuple[np.ndarray, np.ndarray]:
        "(offsets, probabilities) of the release's noise: the convolution of every aggregator's pmf"
        pmf = self.share_pmf()
        total = pmf
        for _ in range(self.aggregators - 1):
            total = convolve(total, pmf)
        offsets = np.arange(len(total)) - (len(total) - 1) // 2
        return offsets, total / total.sum()

    def describe(self) -> dict:
        name = {"gaussian": "discrete Gaussian", "laplace": "discrete Laplace",
                "coins": "centred Binomial (N fair coins minus N/2)"}[self.kind]
        parameter = {"gaussian": "sigma2", "laplace": "scale", "coins": "coins"}[self.kind]
        value: float | int = self.coins if self.kind == "coins" else float(self.parameter)
        return {"mode": self.kind, "noise": f"{name} from each of {self.aggregators} aggregators", parameter: value,
                "sensitivity": self.sensitivity, "shift": self.shift.describe(), "relation": RELATION,
                "variance": self.variance(), "assumption": ASSUMPTION}


NoiseMode = AggregatorNoise


def calibrate(mode: str, *, epsilon: float, delta: float, sensitivity: int | Shift) -> NoiseMode:
    """The noise one aggregator adds so that its share alone meets (epsilon, delta) for ``sensitivity`` (a
    :class:`Shift`, or an integer: one coordinate shifted by it)"""
    shift = as_shift(sensitivity)
    if mode == "gaussian":
        return AggregatorNoise("gaussian", calibrate_discrete_gaussian(epsilon, delta, shift), shift)
    if mode == "laplace":
        return AggregatorNoise("laplace", calibrate_discrete_laplace(epsilon, shift), shift)
    if mode == "coins":
        return AggregatorNoise("coins", Fraction(calibrate_coins(epsilon, delta, shift)), shift)
    raise ValueError(f"mode must be one of {list(NOISE_MODES)}")
