"""The heavy_hitters kind's answer to ``ldp-telemetry plan --spec FILE``: what n finds, and what a frequency needs.

For the spec's algorithm (or, with ``auto``, the one ``planning.plan`` picks at n): the detection threshold at n
(the smallest frequency found with probability >= 0.9), and for each asked frequency f the n at which strings of
frequency f are found with probability >= 0.9 (``planning.reports_needed``; with ``auto``, the smallest over the
algorithms auto chooses among, with the one that reaches it).  Registered in ``estimators.planner``.
"""

from __future__ import annotations

from collections.abc import Sequence

from client_sdk.kinds.heavy_hitters.planning import DETECTION_POWER, detection_threshold, options, plan, reports_needed
from client_sdk.spec import Spec

from ..base import KindPlan


def _label(params) -> str:
    if params.algorithm == "pem":
        return f"pem (segment {params.segment_length})"
    return f"sfp (fragment {params.fragment_length}, sketch {params.sketch_depth} x {params.sketch_width})"


def plan_heavy_hitters(spec: Spec, n: int, frequencies: Sequence[float]) -> KindPlan:
    "The detection threshold at n, and the n each frequency needs"
    params = spec.params
    auto = params.requested == "auto"
    at_n = plan(params, n) if auto else params
    threshold = detection_threshold(at_n, n)
    lines = [f"heavy_hitters campaign {spec.name}: epsilon {spec.epsilon:g}, strings of {params.max_length} "
             f"{'characters' if params.alphabet else 'bytes'}, {_label(at_n)}{' (auto at this n)' if auto else ''}",
             f"n = {n:,}: detection threshold {threshold:.4g} (the smallest frequency found with probability "
             f">= {DETECTION_POWER:g})"]
    needed = []
    for frequency in frequencies:
        if not 0 < frequency <= 1:
            raise ValueError(f"frequency {frequency:g} must be in (0, 1]")
        candidates = options(params) if auto else [params]
        best = min(((reports_needed(option, frequency), option) for option in candidates), key=lambda pair: pair[0])
        lines.append(f"frequency {frequency:g}: n = {best[0]:,} reports find it with probability >= "
                     f"{DETECTION_POWER:g} ({_label(best[1])})")
        needed.append({"frequency": frequency, "reports_needed": best[0], "algorithm": best[1].algorithm})
    return KindPlan(lines[0], ["frequency", "reports_needed", "algorithm"],
                    [[row["frequency"], row["reports_needed"], row["algorithm"]] for row in needed], lines[1:],
                    {"kind": "heavy_hitters", "n": n, "algorithm": at_n.algorithm, "detection_threshold": threshold,
                     "reports_needed": needed})
