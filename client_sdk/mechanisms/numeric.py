"""Means of bounded numbers: Laplace (exact, on a grid), Duchi et al., Piecewise and Hybrid (N. Wang et al. 2019).

A value v in [low, high] is clamped to the range and mapped to t = 2 (v - low) / (high - low) - 1 in [-1, 1].
Each payload is an integer code; ``unbiased_value`` (estimators) maps it to Z with E[Z] = t.

=========  ========================================================================================
laplace    an integer y: t on the grid 2**-GRID_BITS (randomized rounding) plus two-sided geometric
           (discrete Laplace) noise of scale 2**(GRID_BITS+1)/eps grid steps, sampled exactly.  Z = y * 2**-GRID_BITS
duchi      a bit b: P(b = 1) = (1 + c t)/2 with c = (e-1)/(e+1) quantized down.  Z = (2b - 1) / c
piecewise  an integer k in [0, PM_CELLS]: the Piecewise output x in [-C, C] randomly rounded onto a grid of
           PM_CELLS cells.  Z = -C + 2 C k / PM_CELLS
hybrid     ``[0, b]`` (the Duchi branch) or ``[1, k]`` (the Piecewise branch), the branch drawn independently
           of the value
=========  ========================================================================================

Why grids: floating-point noise added to a float leaks the input through the low bits of the output (Mironov,
CCS 2012).  Laplace is therefore exact integer arithmetic end to end.  Piecewise draws its uniform on the
2**-53 grid and then randomly rounds onto 65,536 cells, so what leaves the device is a coarse integer whose
probabilities depend on float rounding only at the 2**-50 level.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

from ..errors import PayloadError
from ..randomness import RandomSource, bernoulli, discrete_laplace, exp_rounded, quantize_down, uniform_unit
from ..spec import Spec
from ..wire import is_integer, require_int, require_list
from .base import Mechanism

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

GRID_BITS = 12
GRID = 1 << GRID_BITS
PM_CELLS = 1 << 16
HYBRID_MIN_EPSILON = 0.61  # below it the Hybrid mechanism is Duchi's alone (N. Wang et al. 2019)


class NumericMechanism(Mechanism):
    "A randomizer for a number in ``spec.range``; subclasses see it as t in [-1, 1]"

    family = "numeric"

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        assert spec.range is not None
        self.low, self.high = spec.range

    def to_unit(self, value: Any) -> float:
        "Clamp to the range and map to [-1, 1]; non-numbers (bools too) and NaN raise before any draw"
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or type(value).__name__ == "bool_" \
                or math.isnan(value):
            raise TypeError(f"campaign {self.spec.name!r} takes a number")
        value = min(max(float(value), self.low), self.high)
        return min(max(2 * (value - self.low) / (self.high - self.low) - 1, -1.0), 1.0)

    def perturb(self, value: Any) -> Any:
        return self.perturb_unit(self.to_unit(value))

    def perturb_unit(self, t: float) -> Any:
        raise NotImplementedError

    def variance(self, t: float) -> float:
        "Per-report variance of the unbiased value Z on the [-1, 1] scale"
        raise NotImplementedError

    def worst_case_variance(self) -> float:
        return max(self.variance(-1.0), self.variance(0.0), self.variance(1.0))

    def derived(self) -> dict:
        return {"worst_case_variance": self.worst_case_variance()}

    def randomized_round(self, scaled: float) -> int:
        "floor(scaled) or floor(scaled) + 1 with the probabilities that make the result unbiased"
        low = math.floor(scaled)
        return low + int(bernoulli(self.rng, Fraction(scaled - low)))


class Laplace(NumericMechanism):
    "t randomly rounded to the 2**-12 grid plus exact discrete Laplace noise: eps-LDP with no float leakage"

    names = ("laplace",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        # t spans 2 * GRID grid steps, so the sensitivity is 2 * GRID steps and the scale 2 * GRID / eps.
        self.scale_steps = Fraction(2 * GRID) / Fraction(spec.epsilon)
        self.decay = exp_rounded(-1 / float(self.scale_steps))

    def perturb_unit(self, t: float) -> int:
        return self.randomized_round(t * GRID) + discrete_laplace(self.rng, self.scale_steps)

    @property
    def max_abs_code(self) -> int:
        "No honest report exceeds this: the noise passes 64 scales with probability e^-64"
        return GRID + 64 * math.ceil(self.scale_steps)

    def check_payload(self, payload: Any) -> None:
        if not is_integer(payload):
            raise PayloadError("payload", "must be an integer")
        if abs(payload) > self.max_abs_code:
            raise PayloadError("payload", f"must be in [-{self.max_abs_code}, {self.max_abs_code}]")

    def noise_variance(self) -> float:
        "Variance of the discrete Laplace noise on the [-1, 1] scale: 2a/(1-a)^2 steps^2, a = exp(-1/scale)"
        a = self.decay
        return 2 * a / (1 - a) ** 2 / GRID**2

    def variance(self, t: float) -> float:
        frac = (t * GRID) % 1
        return self.noise_variance() + frac * (1 - frac) / GRID**2

    def worst_case_variance(self) -> float:
        return self.noise_variance() + 0.25 / GRID**2


class Duchi(NumericMechanism):
    "Duchi, Jordan, Wainwright (FOCS 2013): report +-C with P(+C) = 1/2 + t (e-1)/(2(e+1))"

    names = ("duchi",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        e = Fraction(exp_rounded(spec.epsilon))
        self.slope = quantize_down((e - 1) / (e + 1))  # c; the ratio (1+c)/(1-c) stays <= e
        self.magnitude = 1 / float(self.slope)  # C

    def perturb_unit(self, t: float) -> int:
        probability = (1 + Fraction(t) * self.slope) / 2
        return int(bernoulli(self.rng, probability))

    def check_payload(self, payload: Any) -> None:
        require_int(payload, "payload", 0, 2)

    def variance(self, t: float) -> float:
        return self.magnitude**2 - t**2


def piecewise_magnitude(z: float) -> float:
    """C = (z+1)/(z-1) as a double at or above it: the density ratio (C+1)/(C-1) then stays at or below z.

    The float quotient is within two ulps of the exact one; each step up is at least an ulp (``randomness.ts``
    computes the same bits)."""
    exact = (Fraction(z) + 1) / (Fraction(z) - 1)
    magnitude = (z + 1) / (z - 1)
    while Fraction(magnitude) < exact:
        magnitude *= 1 + 2**-52
    return magnitude


class Piecewise(NumericMechanism):
    "N. Wang et al. (ICDE 2019): uniform on [l, l+C-1] w.p. z/(z+1), else uniform on the rest of [-C, C]"

    names = ("piecewise",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        z = exp_rounded(spec.epsilon / 2)
        self.z = z
        self.magnitude = piecewise_magnitude(z)  # C
        self.central = quantize_down(Fraction(z) / (Fraction(z) + 1))
        self.cell_width = 2 * self.magnitude / PM_CELLS

    def sample_continuous(self, t: float) -> float:
        c = self.magnitude
        left = (c + 1) * t / 2 - (c - 1) / 2
        right = left + c - 1
        u = uniform_unit(self.rng)
        if bernoulli(self.rng, self.central):
            return left + u * (c - 1)
        position = u * (c + 1)
        below = left + c
        return -c + position if position < below else right + (position - below)

    def perturb_unit(self, t: float) -> int:
        x = self.sample_continuous(t)
        return min(max(self.randomized_round((x + self.magnitude) / self.cell_width), 0), PM_CELLS)

    def check_payload(self, payload: Any) -> None:
        require_int(payload, "payload", 0, PM_CELLS + 1)

    def variance(self, t: float) -> float:
        z = self.z
        rounding = self.cell_width**2 / 4  # at most; negligible at 65,536 cells
        return t**2 / (z - 1) + (z + 3) / (3 * (z - 1) ** 2) + rounding


class Hybrid(NumericMechanism):
    "Piecewise w.p. alpha = 1 - e^(-eps/2) when eps > 0.61, else Duchi; both branches are unbiased"

    names = ("hybrid",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        self.piecewise = Piecewise(spec, rng=self.rng)
        self.duchi = Duchi(spec, rng=self.rng)
        alpha = 1 - exp_rounded(-spec.epsilon / 2) if spec.epsilon > HYBRID_MIN_EPSILON else 0.0
        self.alpha = quantize_down(alpha)

    def perturb_unit(self, t: float) -> list:
        if bernoulli(self.rng, self.alpha):
            return [1, self.piecewise.perturb_unit(t)]
        return [0, self.duchi.perturb_unit(t)]

    def check_payload(self, payload: Any) -> None:
        branch, code = require_list(payload, "payload", 2)
        require_int(branch, "payload[0]", 0, 2)
        if branch == 1:
            require_int(code, "payload[1]", 0, PM_CELLS + 1)
        else:
            require_int(code, "payload[1]", 0, 2)

    def variance(self, t: float) -> float:
        alpha = float(self.alpha)
        return alpha * self.piecewise.variance(t) + (1 - alpha) * self.duchi.variance(t)

    def derived(self) -> dict:
        return {**super().derived(), "alpha": float(self.alpha)}


