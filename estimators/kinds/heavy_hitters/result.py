"""What a heavy_hitters estimate says: the discovered strings with their frequencies, and what the run could find.

Every frequency, standard error and interval comes from the **estimation group** alone: reports of the whole
string that no discovery step read.  The list of strings is fixed by the discovery groups first, so each string's
estimate is unbiased and its interval has its nominal coverage despite the selection (the ranking only orders
strings already chosen).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

from client_sdk.kinds.heavy_hitters import HeavyHittersParams, symbols_to_bytes, symbols_to_text
from client_sdk.kinds.heavy_hitters.oracles import OlhConstants, SketchConstants

INTERVAL_SOURCE = "estimation group: reports of the whole string not used to discover it"


@dataclass(frozen=True)
class HeavyHitter:
    "One discovered string: its de-biased frequency, standard error and interval, and its discovery score"

    symbols: tuple[int, ...]
    value: str  # invalid UTF-8 (a spurious discovery) shown with U+FFFD; ``raw`` holds the bytes
    raw: bytes
    frequency: float
    standard_error: float
    ci_low: float
    ci_high: float
    discovery_estimate: float  # the last discovery level's estimate (pem) or the smallest fragment's (sfp)

    def to_json(self) -> dict:
        return {"value": self.value, "utf8_hex": self.raw.hex(), "frequency": self.frequency,
                "standard_error": self.standard_error, "ci": [self.ci_low, self.ci_high],
                "discovery_estimate": self.discovery_estimate}


@dataclass(frozen=True)
class LevelSummary:
    "One discovery group: its reports, the candidates it tested, the threshold and the candidates it kept"

    reports: int
    candidates: int
    threshold: float
    kept: int


@dataclass(frozen=True)
class HeavyHittersEstimate:
    "The ranked discovered strings (most frequent first), the detection threshold and the expected false discoveries"

    algorithm: str
    reports: int
    hitters: tuple[HeavyHitter, ...]
    detection_threshold: float  # the smallest frequency found w.p. >= 0.9 at this n and epsilon (planning)
    expected_false_discoveries: float
    levels: tuple[LevelSummary, ...]
    confidence: float
    interval_source: str = INTERVAL_SOURCE
    tested: tuple[tuple[int, ...], ...] = field(default=(), repr=False)  # the last discovery level's candidates

    def to_json(self) -> dict:
        return {"kind": "heavy_hitters", "algorithm": self.algorithm, "reports": self.reports,
                "confidence": self.confidence, "interval_source": self.interval_source,
                "detection_threshold": self.detection_threshold,
                "expected_false_discoveries": self.expected_false_discoveries,
                "hitters": [hitter.to_json() for hitter in self.hitters],
                "levels": [vars(level) for level in self.levels]}


def hitter(params: HeavyHittersParams, constants: OlhConstants | SketchConstants, symbols: tuple[int, ...],
           frequency: float, reports: int, devices: int, discovery: float, confidence: float) -> HeavyHitter:
    """A string's entry: SE from the oracle's variance at the estimate clipped to [0, 1] (with the group's sampling
    term: the target is the frequency among all ``devices``), a normal interval at ``confidence``"""
    clipped = min(1.0, max(0.0, frequency))
    error = math.sqrt(constants.variance(clipped, reports, devices))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return HeavyHitter(symbols, symbols_to_text(params, symbols), symbols_to_bytes(params, symbols), frequency,
                       error, frequency - z * error, frequency + z * error, discovery)
