"""A dishonest helper that adds no noise, as a real ``serve --role helper`` process (its noise draw patched to
zeros before the server starts), against an honest leader process: what docs/distributed.md claims for Poplar1,
that the leader's noise alone gives every level's guarantee, measured on the release.

The leader cannot tell a noiseless share from a noisy one (each is a uniformly random field vector on its own), so
it does not try: it adds its own full, calibrated noise to every count of every level whatever the helper does.
The release's counts minus the true counts are then the leader's noise alone: mean 0 and the variance of one
aggregator's calibrated noise (not two), which is what the stated (epsilon, delta) over the walk rests on."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from pathlib import Path

import numpy as np

import client_sdk
from client_sdk.distributed import seal_report
from client_sdk.vdaf.hpke import HpkeConfig
from estimators.kinds.poplar1.accounting import walk_guarantee, walk_noise
from tests.tolerances import k_sigma, second_moment_bounds

from .test_crash import Pair

# the helper's own noise on a level's counts, replaced by zeros in the helper's process only
NOISELESS = ("from collector.kinds.poplar1.prepare import Poplar1Aggregator\n"
             "Poplar1Aggregator.share_noise = lambda self, length: [0] * length")
CAMPAIGNS = 2  # walks, each over its own campaign: 256 counts at its first level
REPORTS = 64
# a high threshold: no prefix of count 1 is kept, so each walk ends after its first level (stride 8: 256 counts)
SPEC = {"kind": "poplar1", "trust": "distributed", "epsilon": 4.0, "delta": 1e-6, "bits": 16, "stride": 8,
        "threshold": 0.5, "min_batch": 50}


def first_level_residuals(pair: Pair, name: str) -> tuple[client_sdk.Spec, list[int]]:
    "One campaign's devices (distinct first bytes), its walk; its first level's counts minus the true counts"
    created = pair.devices().call("POST", "/v1/campaigns", {**SPEC, "name": name})
    spec = client_sdk.load_spec(created["spec"])
    listed = pair.devices().call("GET", f"/v1/campaigns/{name}", key=pair.ingest)
    leader = HpkeConfig.from_dict(listed["aggregators"]["leader"]["hpke_config"])
    helper = HpkeConfig.from_dict(listed["aggregators"]["helper"]["hpke_config"])
    batch = pair.devices().day
    values = [bytes([(5 * i) % 256, i]) for i in range(REPORTS)]
    reports = []
    for value in values:
        report_id = str(uuid.uuid4())
        reports.append({"report_id": report_id, "campaign": name, "fingerprint": spec.fingerprint,
                        "payload": seal_report(spec, value, leader, helper, report_id=report_id, batch=batch)})
    assert pair.devices().call("POST", "/v1/reports", {"reports": reports}, key=pair.ingest)["accepted"] == REPORTS
    answer = pair.walk(name, batch)
    assert answer.status_code == 200, answer.text
    release = answer.json()
    first = release["walk"]["levels"][0]
    assert first["level"] == 7 and first["reports"] == REPORTS and len(first["prefixes"]) == 256
    truth = Counter(format(value[0], "08b") for value in values)
    return spec, [count - truth[prefix] for prefix, count in zip(first["prefixes"], first["counts"])]


def test_a_helper_that_adds_no_noise_leaves_the_leaders_calibrated_noise_on_every_count(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    residuals: list[int] = []
    with pair.server("helper", prelude=NOISELESS), pair.server("leader"):
        for index in range(CAMPAIGNS):
            spec, more = first_level_residuals(pair, f"noiseless{index}")
            residuals += more
    share = walk_noise(spec.epsilon, float(spec.delta or 0.0), len(spec.params.levels))
    variance = share.share_variance()
    pmf = share.share_pmf()
    offsets = np.arange(len(pmf)) - (len(pmf) - 1) // 2
    samples = np.array(residuals, dtype=float)
    k = k_sigma(2)
    # the leader's noise alone: centred, and of one aggregator's calibrated variance (a helper's noise would double
    # it; no leader noise either would leave the exact counts, variance 0)
    assert abs(samples.mean()) < k * math.sqrt(variance / samples.size), samples.mean()
    low, high = second_moment_bounds(offsets, pmf, samples.size, comparisons=2)
    assert low <= float((samples**2).mean()) <= high, (samples.var(), variance, low, high)
    # and that variance is what the walk's guarantee is computed from: one aggregator's noise over every level
    assert walk_guarantee(share.parameter, len(spec.params.levels), float(spec.delta or 0.0)).epsilon <= spec.epsilon
