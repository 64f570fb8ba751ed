"""What a heavy_hitters estimate says: the discovered strings with their frequencies, and what the run could find.

Every frequency, standard error and interval comes from the **estimation group** alone: reports of the whole
string that no discovery step read.  The list of strings is fixed by the discovery groups first, so the selection
does not bias a string's estimate (the ranking only orders strings already chosen).

The hashes are a fixed public family, so a string's estimate also carries the collisions of the strings the decoder
did not correct for: a fixed error given the family, of mean zero and variance
sum_v Var(c_xv) A^2 f_v^2 over the random choice of family (of the order of the oracle's own variance when much
of the mass is in strings that were not found).  The decoder measures it on **null keys**, ``NULL_KEYS`` public
keys no device reports, estimated from the same table with the same correction: their mean square is the oracle's
variance at frequency 0 plus that collision variance (``collision_variance``), which every found string's
variance then includes.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams, symbols_to_bytes, symbols_to_text
from client_sdk.kinds.heavy_hitters.oracles import OlhConstants, SketchConstants

INTERVAL_SOURCE = ("estimation group: reports of the whole string not used to discover it; the variance adds the "
                   "hash collisions measured on null keys")
NULL_KEYS = 4096  # the mean square of 4096 null estimates: within 2.2% (one SE) of the variance at frequency 0
_NULL_LABEL = b"ldp-telemetry heavy_hitters null key"


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


@lru_cache(maxsize=1)
def null_keys() -> np.ndarray:
    """``NULL_KEYS`` public 32-bit keys (SHA-256 of a label no key of a string uses): like a string's key to every
    hash of the family, and reported by no device (one coincides with one of S strings' keys w.p. S 2**-32 each)"""
    digests = b"".join(hashlib.sha256(_NULL_LABEL + index.to_bytes(4, "big")).digest()[:4]
                       for index in range(NULL_KEYS))
    return np.frombuffer(digests, dtype=">u4").astype(np.uint64)


def collision_variance(null_estimates: np.ndarray, constants: OlhConstants | SketchConstants, reports: int) -> float:
    """The variance of a key's estimate beyond the oracle's: the null keys' mean square estimate (their truth is
    0) minus the oracle's variance at frequency 0 from the group's ``reports`` (at least 0)"""
    if not len(null_estimates) or reports <= 0:
        return 0.0
    return max(0.0, float(np.mean(np.square(null_estimates))) - constants.variance(0.0, reports))


def sketch_corrected(estimates: np.ndarray, columns: np.ndarray, found: int, width: int) -> np.ndarray:
    """SFP's estimates of the ``found`` strings (the first keys) and of the null keys after them, corrected for the
    found strings' collisions with each other in the fixed sketch family (``columns[j, c]``: key c's column in row
    j).  A report of v supports x in the rows where they collide, so given the family E f^_x = f_x +
    sum_{v != x} A_xv f_v, A_xv = (m/(m-1)) (c_xv - 1/m), c_xv the fraction of rows where x and v collide: the
    found strings' f solve (I + A) f = f^, and every key loses sum_v A_xv f_v over the found v != x.  What is left
    (strings not found) is alike for found and null keys: ``collision_variance`` measures it"""
    if found < 2:
        return estimates
    collide = (columns[:, :, None] == columns[:, None, :found]).mean(axis=0)  # c[key, found string]
    mix = (collide - 1 / width) * width / (width - 1)
    mix[np.arange(found), np.arange(found)] = 0.0  # a string's own reports are its frequency, not a collision
    frequencies = np.linalg.solve(np.eye(found) + mix[:found], estimates[:found])
    return estimates - mix @ frequencies


def hitter(params: HeavyHittersParams, constants: OlhConstants | SketchConstants, symbols: tuple[int, ...],
           frequency: float, reports: int, devices: int, discovery: float, confidence: float,
           collisions: float = 0.0) -> HeavyHitter:
    """A string's entry: SE from the oracle's variance at the estimate clipped to [0, 1] (with the group's sampling
    term: the target is the frequency among all ``devices``) plus ``collisions`` (``collision_variance``), a
    normal interval at ``confidence``"""
    clipped = min(1.0, max(0.0, frequency))
    error = math.sqrt(constants.variance(clipped, reports, devices) + collisions)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return HeavyHitter(symbols, symbols_to_text(params, symbols), symbols_to_bytes(params, symbols), frequency,
                       error, frequency - z * error, frequency + z * error, discovery)
