"""Privacy audits: output probabilities for any two inputs stay within a factor e^eps.

The exact audit (:func:`exact_violations`) forms each mechanism's worst-case ratio of output probabilities as a
rational from the quantized parameters an SDK draws with, and compares it with a rigorous rational lower bound of
e^eps (:func:`exp_bounds`, independent of the SDK's own exponential): no float anywhere.

The empirical audit (:func:`audit`) works on samples:
For inputs x, x' and an output (or an output bin) o, with sample frequencies P(o|x) and P(o|x') over n draws each,
the check is  P(o|x) - e^eps P(o|x') <= k sqrt(Var P(o|x) + e^(2 eps) Var P(o|x')),  k a Bonferroni quantile over
all comparisons (tolerances.k_sigma).  A mechanism that really leaks more than eps fails it (see the tests that
run a mechanism at 2 eps and audit it at eps).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping
from fractions import Fraction
from typing import Any

from tests.tolerances import k_sigma


def audit(samples: Mapping[Hashable, list[Hashable]], epsilon: float, alpha: float = 1e-4) -> list[str]:
    "Violations (empty when none): ``samples`` maps each input to its list of (binned) outputs"
    counters = {x: Counter(outputs) for x, outputs in samples.items()}
    sizes = {x: len(outputs) for x, outputs in samples.items()}
    outcomes = set().union(*counters.values())
    factor = math.exp(epsilon)
    pairs = [(x, y) for x in counters for y in counters if x != y]
    k = k_sigma(max(1, len(pairs) * len(outcomes)), alpha)
    violations = []
    for x, y in pairs:
        for o in outcomes:
            px, py = counters[x][o] / sizes[x], counters[y][o] / sizes[y]
            # variance of a frequency, floored at one count so empty cells are not overconfident
            vx = max(px * (1 - px), 1 / sizes[x]) / sizes[x]
            vy = max(py * (1 - py), 1 / sizes[y]) / sizes[y]
            if px - factor * py > k * math.sqrt(vx + factor**2 * vy):
                violations.append(f"P({o!r}|{x!r})={px:.4f} > e^eps * P({o!r}|{y!r})={factor * py:.4f}")
    return violations


LN_K_EPSILONS = [math.log(k) for k in range(2, 66)]  # e^eps an integer: where an exp rounded up shows
EXACT_AUDIT_DOMAINS = [2, 3, 5, 16, 100]
EXACT_AUDIT_RAPPOR = [{"k": 16, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75},
                      {"k": 8, "h": 1, "m": 2, "f": 0.25, "p": 0.25, "q": 0.75},
                      {"k": 32, "h": 4, "m": 2, "f": 0.125, "p": 0.3, "q": 0.7}]


def exact_audit_specs(epsilons: list[float]) -> list[dict[str, Any]]:
    "Every local mechanism at every epsilon (GRR over several domain sizes), and RAPPOR at its derived epsilon"
    specs: list[dict[str, Any]] = []
    for epsilon in epsilons:
        for mechanism in ("grr", "sue", "oue", "olh", "hadamard"):
            for d in EXACT_AUDIT_DOMAINS if mechanism == "grr" else EXACT_AUDIT_DOMAINS[1:2]:
                specs.append({"name": "c", "mechanism": mechanism, "epsilon": epsilon, "domain": list(range(d))})
        for mechanism in ("laplace", "duchi", "piecewise", "hybrid"):
            specs.append({"name": "n", "mechanism": mechanism, "epsilon": epsilon, "range": [0, 1]})
    return specs + [{"name": "r", "mechanism": "rappor", "rappor": params} for params in EXACT_AUDIT_RAPPOR]


_BOUND_BITS = 320  # fixed-point precision of exp_bounds


def exp_bounds(x: float) -> tuple[Fraction, Fraction]:
    """Rationals lo <= e**x <= hi: the Taylor series of x / 2**s (terms floored for lo, ceiled for hi, the tail
    bounded by twice its first term since x / 2**s < 1/2), then s squarings rounded outwards."""
    one = 1 << _BOUND_BITS
    r = Fraction(abs(x))
    s = max(0, math.ceil(math.log2(float(r) + 1e-300)) + 2)
    r /= 2**s
    lo = hi = 0
    term, i = Fraction(one), 0
    while term * 2**-20 > 1 or i < 4:  # until a term is below 2**-20 units: the tail is far below one unit
        lo += math.floor(term)
        hi += math.ceil(term)
        i += 1
        term = term * r / i
    hi += math.ceil(2 * term)
    for _ in range(s):
        lo, hi = lo * lo // one, -(-hi * hi // one)
    low, high = Fraction(lo, one), Fraction(hi, one)
    return (1 / high, 1 / low) if x < 0 else (low, high)


def _two_sided(ratio: Fraction) -> Fraction:
    "The worst case over both orders of the two inputs"
    return max(ratio, 1 / ratio)


def worst_case_ratio(mechanism: str, params: Mapping[str, Any]) -> Fraction:
    """max over outputs o and inputs x, x' of P(o|x) / P(o|x'), exactly, from the quantized parameters.

    ``params`` (Fractions, or values Fraction() takes): grr ``keep``, ``d``; olh ``keep``, ``g``; hadamard ``keep``;
    sue/oue ``true_bit_one``, ``other_bit_one``; duchi ``slope``; piecewise ``central``, ``magnitude``; hybrid all
    three (the branch is drawn independently of the value and visible, so its weight cancels); rappor ``f_half``,
    ``p``, ``q``, ``h`` (one report: the h bits of one value against the h of another).  Piecewise's ratio is that
    of its continuous densities: rounding onto cells is post-processing."""
    f = {key: Fraction(value) for key, value in params.items()}
    if mechanism in ("grr", "olh"):
        keep, others = f["keep"], (f["d"] if mechanism == "grr" else f["g"]) - 1
        return _two_sided(keep * others / (1 - keep))
    if mechanism == "hadamard":
        return _two_sided(f["keep"] / (1 - f["keep"]))
    if mechanism in ("sue", "oue"):
        p, q = f["true_bit_one"], f["other_bit_one"]
        return _two_sided(p * (1 - q) / (q * (1 - p)))
    if mechanism == "duchi":
        return _two_sided((1 + f["slope"]) / (1 - f["slope"]))
    if mechanism == "piecewise":
        central, c = f["central"], f["magnitude"]
        return _two_sided(central * (c + 1) / ((1 - central) * (c - 1)))
    if mechanism == "hybrid":
        return max(worst_case_ratio("piecewise", params), worst_case_ratio("duchi", params))
    if mechanism == "rappor":
        f_half, p, q = f["f_half"], f["p"], f["q"]
        p11, p01 = q * (1 - f_half) + p * f_half, p * (1 - f_half) + q * f_half
        return _two_sided(p11 * (1 - p01) / (p01 * (1 - p11))) ** int(f["h"])
    raise ValueError(f"no exact ratio for {mechanism}")


def exact_violations(mechanism: str, params: Mapping[str, Any], epsilon: float) -> list[str]:
    """Empty when the worst-case ratio is at most e^epsilon, proved with rationals (laplace: ``scale_steps``, the
    noise scale in grid steps; its ratio is exp(2 * 4096 / scale) exactly, so the exponent is compared)."""
    if mechanism == "laplace":
        exponent = 2 * 4096 / Fraction(params["scale_steps"])
        return [] if exponent <= Fraction(epsilon) else [f"laplace: exp({float(exponent)!r}) > e^{epsilon!r}"]
    ratio = worst_case_ratio(mechanism, params)
    low, high = exp_bounds(epsilon)
    if ratio <= low:
        return []
    verdict = "exceeds" if ratio > high else "is not proved within"
    return [f"{mechanism}: ratio {float(ratio)!r} ({float(ratio / low - 1):.3g} relative) {verdict} e^{epsilon!r}"]


def python_parameters(randomizer: Any) -> dict[str, Any]:
    "The quantized parameters of a Python SDK randomizer, as :func:`worst_case_ratio` takes them"
    name = type(randomizer).names[0]  # not spec.mechanism: Hybrid's branches share its spec
    if name == "hybrid":
        return {**python_parameters(randomizer.piecewise), **python_parameters(randomizer.duchi)}
    if name == "rappor":
        from client_sdk.rappor import quantized_probabilities

        f_half, p, q = quantized_probabilities(randomizer.spec.rappor)
        return {"f_half": f_half, "p": p, "q": q, "h": randomizer.spec.rappor.h}
    fields = {"grr": ("keep", "d"), "olh": ("keep", "g"), "hadamard": ("keep",),
              "sue": ("true_bit_one", "other_bit_one"), "oue": ("true_bit_one", "other_bit_one"),
              "duchi": ("slope",), "piecewise": ("central", "magnitude"), "laplace": ("scale_steps",)}[name]
    return {field: getattr(randomizer, field) for field in fields}
