"""The heavy hitters of a poplar1 walk's release, with their counts' intervals and the walk's guarantee.

A released count is the true count plus both aggregators' discrete Gaussian noise (mean 0, so the count is
unbiased as released: de-biasing subtracts the noise's mean, 0); its interval at ``confidence`` is count +- q, q
the smallest integer with P(|noise| <= q) >= confidence under the exact pmf of the sum of the two noises
(``AggregatorNoise.noise_pmf``, ``estimators.distributed.noise.noise_halfwidth``).  The guarantee is the exact
composition of the walk's levels (``accounting.walk_guarantee``), from one aggregator's noise alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client_sdk.kinds.poplar1.params import decode_prefix
from estimators.distributed.noise import noise_halfwidth

from .accounting import walk_guarantee, walk_noise


def estimate_walk(spec: Any, release: Mapping[str, Any], confidence: float = 0.95) -> dict:
    "The heavy hitters (the last level's kept prefixes), every level's noisy counts, and the guarantee"
    params = spec.params
    levels = len(params.levels)
    noise = walk_noise(spec.epsilon, float(spec.delta), levels)
    halfwidth = noise_halfwidth(*noise.noise_pmf(), confidence)
    threshold = float(release["threshold_count"])
    heavy = []
    walked = release["levels"]
    last = walked[-1] if walked else None
    if last is not None and last["level"] == params.bits - 1:
        for prefix, count in zip(last["prefixes"], last["counts"]):
            if count >= threshold:
                value = decode_prefix(int(prefix, 2), params.bits)
                heavy.append({"value": value.decode("utf-8", "replace"), "bytes": value.hex(), "count": count,
                              "ci_low": count - halfwidth, "ci_high": count + halfwidth})
    heavy.sort(key=lambda row: -row["count"])
    spent = walk_guarantee(noise.parameter, levels, float(spec.delta))
    return {"kind": "poplar1", "batch": release["batch"], "reports": release["reports"], "confidence": confidence,
            "threshold_count": threshold, "heavy_hitters": heavy, "levels": list(walked),
            "noise": {**noise.describe(), "per_level": True, "levels": levels},
            "guarantee": {"epsilon": spent.epsilon, "delta": spent.delta, "method": spent.method,
                          "levels": levels, "relation": "replace-one"}}
