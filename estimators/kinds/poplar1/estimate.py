"""The heavy hitters of a poplar1 walk's release, with their counts' intervals and the walk's guarantee.

The heavy hitters are the last level's candidates the pruning rule keeps (``prune``: count >= T - margin, T =
threshold x reports), so a string of true count >= T is among them with probability >= 1 - beta; each says
whether its interval clears T (``clears_threshold``), the rest are the rule's possible false discoveries.

A released count is the true count plus both aggregators' discrete Gaussian noise (mean 0, so the count is
unbiased as released: de-biasing subtracts the noise's mean, 0).  The intervals hold together: at most K =
floor(1 / threshold) strings can have a true count >= T, so each interval is count +- q, q the smallest integer
with P(|noise| <= q) >= 1 - (1 - confidence) / K under the exact pmf of the sum of the two noises
(``AggregatorNoise.noise_pmf``, ``estimators.distributed.noise.noise_halfwidth``), and every string of count >= T
has its interval cover its count with probability >= ``confidence`` (Bonferroni over the K).  The guarantee is
the exact composition of the walk's levels (``accounting.walk_guarantee``), from one aggregator's noise alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from client_sdk.kinds.poplar1.params import decode_prefix
from estimators.distributed.noise import noise_halfwidth

from .accounting import walk_guarantee, walk_noise
from .prune import pruning_rule


def simultaneous(confidence: float, threshold: float) -> float:
    "Each interval's confidence for ``confidence`` over the at most floor(1 / threshold) strings of count >= T"
    return 1 - (1 - confidence) / max(1, math.floor(1 / threshold))


def estimate_walk(spec: Any, release: Mapping[str, Any], confidence: float = 0.95) -> dict:
    "The heavy hitters (the last level's kept prefixes), every level's noisy counts, and the guarantee"
    params = spec.params
    levels = len(params.levels)
    noise = walk_noise(spec.epsilon, float(spec.delta), levels)
    each = simultaneous(confidence, params.threshold)
    halfwidth = noise_halfwidth(*noise.noise_pmf(), each)
    rule = pruning_rule(spec.epsilon, float(spec.delta), levels, params.threshold, int(release["reports"]))
    threshold = rule.threshold_count
    heavy = []
    walked = release["levels"]
    last = walked[-1] if walked else None
    if last is not None and last["level"] == params.bits - 1:
        for prefix, count in zip(last["prefixes"], last["counts"]):
            if rule.keeps(count):
                value = decode_prefix(int(prefix, 2), params.bits)
                heavy.append({"value": value.decode("utf-8", "replace"), "bytes": value.hex(), "count": count,
                              "ci_low": count - halfwidth, "ci_high": count + halfwidth,
                              "clears_threshold": count - halfwidth >= threshold})
    heavy.sort(key=lambda row: -row["count"])
    spent = walk_guarantee(noise.parameter, levels, float(spec.delta))
    return {"kind": "poplar1", "batch": release["batch"], "reports": release["reports"], "confidence": confidence,
            "interval_confidence": each, "threshold_count": threshold, "pruning": rule.describe(),
            "heavy_hitters": heavy, "levels": list(walked),
            "noise": {**noise.describe(), "per_level": True, "levels": levels},
            "guarantee": {"epsilon": spent.epsilon, "delta": spent.delta, "method": spent.method,
                          "levels": levels, "relation": "replace-one"}}
