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

The estimate's JSON (estimators/report/report.schema.json, kind ``poplar1``) has every report's common members
(``values``: the heavy hitters as fractions of the batch's reports) and the walk's own: ``heavy_hitters`` (counts
with their intervals), ``levels`` (every level's candidates, noisy counts and kept prefixes), ``noise``,
``guarantee`` and ``leader_learned``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from client_sdk.kinds.poplar1.params import decode_prefix
from estimators.distributed.noise import ASSUMPTION, noise_halfwidth

from .accounting import walk_guarantee, walk_noise
from .prune import pruning_rule

INPUT_PRIVACY = ("each aggregator sees only its IDPF key share: a device's string stays hidden unless both "
                 "aggregators collude")
LEARNED = ("the leader learns the candidate prefixes it asks about at each level (the extensions of the previous "
           "level's kept prefixes) and their noisy counts, nothing about any one report")


def simultaneous(confidence: float, threshold: float) -> float:
    "Each interval's confidence for ``confidence`` over the at most floor(1 / threshold) strings of count >= T"
    return 1 - (1 - confidence) / max(1, math.floor(1 / threshold))


def estimate_walk(spec: Any, release: Mapping[str, Any], confidence: float = 0.95,
                  rejected: Mapping[str, int] | None = None) -> dict:
    """The heavy hitters (the last level's kept prefixes), every level's noisy counts, and the guarantee.

    :param spec: the campaign's spec (its params: bits, stride, threshold)
    :param release: the walk as released (``collector.kinds.poplar1.walk.WalkRelease.to_dict``)
    :param confidence: the intervals' level
    :param rejected: the reports the sketch refused, by problem type
    """
    params = spec.params
    levels = len(params.levels)
    noise = walk_noise(spec.epsilon, float(spec.delta), levels)
    each = simultaneous(confidence, params.threshold)
    halfwidth = noise_halfwidth(*noise.noise_pmf(), each)
    std_error = math.sqrt(noise.variance())
    reports = int(release["reports"])
    rule = pruning_rule(spec.epsilon, float(spec.delta), levels, params.threshold, reports)
    threshold = rule.threshold_count
    walked = [_level(level, rule.keeps) for level in release["levels"]]
    heavy = []
    last = walked[-1] if walked else None
    if last is not None and last["level"] == params.bits - 1:
        for prefix, count in zip(last["prefixes"], last["counts"]):
            if rule.keeps(count):
                value = decode_prefix(int(prefix, 2), params.bits)
                heavy.append({"value": value.decode("utf-8", "replace"), "bytes": value.hex(), "count": count,
                              "std_error": std_error, "ci_low": count - halfwidth, "ci_high": count + halfwidth,
                              "clears_threshold": count - halfwidth >= threshold})
    heavy.sort(key=lambda row: -row["count"])
    spent = walk_guarantee(noise.parameter, levels, float(spec.delta))
    scale = max(reports, 1)
    values = [{"value": row["value"], "estimate": row["count"] / scale, "std_error": std_error / scale,
               "ci_low": row["ci_low"] / scale, "ci_high": row["ci_high"] / scale} for row in heavy]
    statements = [{"holds": f"({spent.epsilon:.4g}, {spent.delta:.3g})-DP for the released counts of the whole walk "
                            f"of {levels} levels, replace-one (the exact composition of its levels)",
                   "assuming": ASSUMPTION},
                  {"holds": INPUT_PRIVACY, "assuming": "the two aggregators do not collude"}]
    return {"trust": "distributed", "kind": "poplar1", "campaign": spec.name,
            "mechanism": "Poplar1, discrete Gaussian noise from each aggregator at every level",
            "epsilon": spec.epsilon, "delta": float(spec.delta), "n": reports, "batch": release["batch"],
            "reports": reports, "confidence": confidence, "interval_confidence": each, "threshold": params.threshold,
            "threshold_count": threshold, "pruning": rule.describe(), "bits": params.bits, "stride": params.stride,
            "rejected": dict(rejected or {}), "values": values, "heavy_hitters": heavy, "levels": walked,
            "stopped": release.get("stopped"),
            "noise": {**noise.describe(), "per_level": True, "levels": levels, "ci_halfwidth": halfwidth},
            "guarantee": {"epsilon": spent.epsilon, "delta": spent.delta, "method": spent.method,
                          "levels": levels, "relation": "replace-one", "statements": statements},
            "leader_learned": {"what": LEARNED, "levels": len(walked),
                               "prefixes_asked": sum(len(level["prefixes"]) for level in walked)}}


def _level(level: Mapping[str, Any], keeps: Callable[[int], bool]) -> dict:
    "One level as released, with the prefixes the pruning rule kept"
    kept = [prefix for prefix, count in zip(level["prefixes"], level["counts"]) if keeps(count)]
    return {**level, "kept": kept}
