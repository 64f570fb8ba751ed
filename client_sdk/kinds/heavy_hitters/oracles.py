"""The two frequency oracles heavy_hitters reports through, with their quantized constants and variances.

- **OLH** (PEM's levels; Wang, Blocki, Li, Jha, USENIX Security 2017): the ``olh`` mechanism's randomizer
  (``client_sdk.mechanisms.categorical.OLH``): g = round(e^eps + 1) (at most ``PEM_MAX_RANGE``), keep = e/(e+g-1)
  quantized down, over the 32-bit key of the prefix (``encoding.prefix_key``) instead of a domain index, with the
  hash drawn uniformly from a *public* family of ``hash_count`` functions (``encoding.olh_seed``) instead of a fresh
  seed, so the collector bins reports into a hash_count x g count table.  The report is eps-LDP for any g and any
  hash: y = h(x) w.p. keep, each other value w.p. (1 - keep)/(g - 1) = keep/e (down-quantized keep: at most).  A
  report supports a value w.p. p* = keep if it is the truth, and on average over the family q* = 1/g otherwise
  (a given pair collides in a fraction 1/g +- sqrt(1/(g hash_count)) of the family: the decoder corrects the
  strings it found for that, ``estimators.kinds.heavy_hitters.pem``).
- **Hadamard Count Mean Sketch** (SFP; Apple's Differential Privacy Team, "Learning with Privacy at Scale", 2017):
  row j uniform in [depth], column l uniform in [width], the sign H[h_j(x), l] of the Sylvester Hadamard matrix
  kept w.p. keep = e/(e+1) quantized down (the ``hadamard`` mechanism's constant), h_j the public
  multiply-add-shift hash of row j (``encoding.sketch_seeds``, ``hashing.olh_hash``).  The report is eps-LDP
  whatever the hash: only the sign depends on the value, and keep/(1-keep) <= e^eps.

Both estimators are unbiased for the frequency among the reports of a group; the variances below add the
sampling term of the group (a uniformly drawn subset of N of the n devices, without replacement) when the target is
the frequency among all n devices.
"""

from __future__ import annotations

from fractions import Fraction

from ...mechanisms.hashing import olh_range
from ...randomness import exp_rounded, quantize_down
from .limits import PEM_MAX_RANGE


class OlhConstants:
    "g, the quantized keep probability, p* and q* of OLH at ``epsilon``"

    __slots__ = ("g", "keep", "p_star", "q_star")

    def __init__(self, epsilon: float) -> None:
        e = exp_rounded(epsilon)
        self.g = min(olh_range(e), PEM_MAX_RANGE)
        self.keep: Fraction = quantize_down(Fraction(e) / (Fraction(e) + self.g - 1))
        self.p_star = float(self.keep)
        self.q_star = 1 / self.g

    def variance(self, frequency: float, reports: int, devices: int | None = None) -> float:
        """Var of the de-biased frequency (S/N - q*)/(p* - q*) from N = ``reports`` reports of a fixed population
        (Wang et al. 2017, eq. (2) with the true value's term): [f p*(1-p*) + (1-f) q*(1-q*)] / (N (p*-q*)^2),
        plus the hypergeometric f(1-f)(n-N)/((n-1)N) of the group's devices when ``devices`` = n is given"""
        p, q, f = self.p_star, self.q_star, frequency
        per_report = f * p * (1 - p) + (1 - f) * q * (1 - q)
        return per_report / (reports * (p - q) ** 2) + _sampling(f, reports, devices)


class SketchConstants:
    "The Hadamard Count Mean Sketch's quantized keep probability at ``epsilon``, and its estimator's variance"

    __slots__ = ("keep", "p_star", "width", "depth")

    def __init__(self, epsilon: float, width: int, depth: int) -> None:
        e = Fraction(exp_rounded(epsilon))
        self.keep: Fraction = quantize_down(e / (e + 1))
        self.p_star = float(self.keep)
        self.width, self.depth = width, depth

    @property
    def signal(self) -> float:
        "E[sign agreement] of a report with its own value's column: 2 keep - 1"
        return 2 * self.p_star - 1

    def variance(self, frequency: float, reports: int, devices: int | None = None) -> float:
        """Var of f^ = (m/(m-1)) (Z/(N (2p-1)) - 1/m), Z the sum of the N reports' sign agreements z in {-1, 1}
        with the candidate's column: E z = 2p-1 for a report of the candidate, (2p-1) c for another value that
        collides with it in a fraction c of the rows (c ~ 1/m), so over a fixed population
        Var f^ = (m/(m-1))^2 (1 - f (2p-1)^2) / (N (2p-1)^2) (dropping the O(1/m^2) collision terms), plus the
        sampling term; the hash family is fixed, so a candidate's estimate is unbiased over the family only (its
        bias given the hashes is the colliding frequency, of order sqrt(sum f_d^2 / (m depth)))"""
        m, f = self.width, frequency
        scale = m / (m - 1)
        return scale**2 * (1 - f * self.signal**2) / (reports * self.signal**2) + _sampling(f, reports, devices)


def _sampling(frequency: float, reports: int, devices: int | None) -> float:
    if devices is None or devices <= reports:
        return 0.0
    return frequency * (1 - frequency) * (devices - reports) / ((devices - 1) * reports)
