"""A distributed quantiles campaign: its spec (a Prio3 histogram of the buckets in the identity), the measurement
the prio3 machinery asks the kind for, and the estimate from noisy bucket counts (coverage of the quantile
intervals and of the simultaneous band over simulated releases with the aggregators' own noise), with the report's
trust-model table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from client_sdk.distributed import encode_value, vdaf_for
from client_sdk.errors import SpecError
from client_sdk.spec import load_spec
from estimators.distributed.release import DistributedQuestion
from estimators.kinds.quantiles.distributed import estimate_releases
from estimators.kinds.quantiles.kind import QuantilesDistribution
from estimators.window import ReportData
from tests.tolerances import k_sigma

SPEC = {"name": "lat", "kind": "quantiles", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
        "range": [0, 1000], "buckets": 40, "noise": "gaussian", "min_batch": 10, "unit": "ms"}


def test_the_spec_carries_a_prio3_histogram_of_the_buckets_in_its_identity():
    spec = load_spec(SPEC)
    assert spec.kind == "quantiles" and spec.trust == "distributed"
    assert spec.prio3.type == "histogram" and spec.prio3.length == 40 and spec.prio3.sensitivity == 2
    identity = spec.identity()
    assert identity["prio3"] == "histogram" and identity["noise"] == "gaussian" and identity["min_batch"] == 10
    assert "branching" not in identity and "oracle" not in identity  # no tree: the aggregators count every bucket
    assert load_spec(spec.to_dict()).fingerprint == spec.fingerprint
    fingerprints = {spec.fingerprint, load_spec({**SPEC, "noise": "laplace"}).fingerprint,
                    load_spec({**SPEC, "min_batch": 11}).fingerprint, load_spec({**SPEC, "window": "1h"}).fingerprint,
                    load_spec({key: value for key, value in SPEC.items()
                               if key not in ("trust", "noise", "min_batch", "delta")}).fingerprint}
    assert len(fingerprints) == 5
    assert vdaf_for(spec).flp.OUTPUT_LEN == 40


@pytest.mark.parametrize(("change", "field"), [
    ({"branching": 4}, "branching"), ({"oracle": "olh"}, "oracle"), ({"noise": "coins"}, "noise"),
    ({"prio3": "sum"}, "prio3"), ({"noise": None}, "noise"), ({"delta": None}, "delta"),
    ({"max_measurement": 3}, "max_measurement"), ({"trust": "local"}, "min_batch"),  # the first Prio3 field, sorted
])
def test_bad_distributed_fields_name_the_field(change, field):
    data = {key: value for key, value in {**SPEC, **change}.items() if value is not None}
    with pytest.raises(SpecError) as info:
        load_spec(data)
    assert info.value.field == field


def test_the_measurement_is_the_kinds_clamped_bucket():
    spec = load_spec(SPEC)
    assert [encode_value(spec, v) for v in (0, 24.9, 25.0, 999.9, 1000, -5, 1e9)] == [0, 0, 1, 39, 39, 0, 39]
    with pytest.raises(TypeError):
        encode_value(spec, "12")
    with pytest.raises(ValueError):
        encode_value(load_spec({key: value for key, value in SPEC.items()
                                if key not in ("trust", "noise", "min_batch", "delta")}), 3.0)


def _release(spec, counts, noise, rng):
    "A release as the leader stores it: the counts plus both aggregators' exact noise (from ``rng``)"
    offsets, pmf = noise.noise_pmf()
    noisy = np.asarray(counts) + rng.choice(offsets, size=len(counts), p=pmf)
    return {"release": [int(v) for v in noisy], "report_count": int(sum(counts)), "fingerprint": spec.fingerprint,
            "batch": "2026-12-02", "noise": noise.describe(), "prio3": "histogram"}


def test_intervals_and_the_band_cover_at_their_confidence_over_simulated_releases():
    "Coverage of p50/p95/p99 and of the simultaneous band: at least nominal, up to k binomial standard errors"
    spec = load_spec(SPEC)
    noise = DistributedQuestion.of(spec).calibrated_noise()
    rng = np.random.default_rng(341)
    values = np.minimum(rng.lognormal(5.0, 0.7, size=800), 1000.0)
    counts = np.bincount([encode_value(spec, float(v)) for v in values], minlength=40)
    true_cdf = np.concatenate([[0.0], np.cumsum(counts)]) / counts.sum()
    ordered = np.sort(values)
    truth = {p: ordered[math.ceil(p * len(values)) - 1] for p in (0.5, 0.95, 0.99)}
    runs, confidence = 150, 0.9
    covered = {p: 0 for p in truth}
    band = 0
    for _ in range(runs):
        estimate = estimate_releases(spec, [_release(spec, counts, noise, rng)], confidence)
        rows = {row["p"]: row for row in estimate["quantiles"]}
        for p, value in truth.items():
            covered[p] += rows[p]["ci_low"] <= value <= rows[p]["ci_high"]
        band += all(point["band_low"] <= f <= point["band_high"] for point, f in zip(estimate["cdf"], true_cdf))
    slack = k_sigma(4) * math.sqrt(confidence * (1 - confidence) / runs)
    for p in truth:
        assert covered[p] / runs >= confidence - slack, (p, covered[p])
    assert abs(band / runs - confidence) <= slack, band  # simulated from the exact noise: nominal, not above


def test_the_estimate_states_its_noise_and_the_three_trust_models():
    spec = load_spec(SPEC)
    noise = DistributedQuestion.of(spec).calibrated_noise()
    counts = [25] * 40
    estimate = estimate_releases(spec, [_release(spec, counts, noise, np.random.default_rng(1))])
    assert estimate["noise"]["variance"] == pytest.approx(noise.variance())
    assert estimate["cdf"][10]["std_error"] == pytest.approx(math.sqrt(10 * noise.variance()) / 1000)
    assert estimate["histogram"][0]["std_error"] == pytest.approx(math.sqrt(noise.variance()) / 1000)
    assert estimate["guarantee"]["epsilon"] == pytest.approx(1.0) and estimate["guarantee"]["delta"] <= 1e-6
    for row in estimate["trust_models"]["quantiles"]:
        assert row["central"]["rank_halfwidth"] < row["distributed"]["rank_halfwidth"] < \
            row["local"]["rank_halfwidth"]
    with pytest.raises(ValueError):  # another fingerprint's release
        estimate_releases(spec, [{**_release(spec, counts, noise, np.random.default_rng(2)), "fingerprint": "0" * 32}])
    with pytest.raises(ValueError):  # a release whose noise is not the spec's calibration
        bad = _release(spec, counts, noise, np.random.default_rng(3))
        estimate_releases(spec, [{**bad, "noise": {**bad["noise"], "sigma2": 1.0}}])


def test_the_report_shows_local_distributed_and_central_side_by_side():
    from estimators.report.kinds.quantiles import QuantilesReport

    spec = load_spec(SPEC)
    noise = DistributedQuestion.of(spec).calibrated_noise()
    estimate = estimate_releases(spec, [_release(spec, [25] * 40, noise, np.random.default_rng(4))])
    data = ReportData(estimate, spec.to_dict(), None, None)
    report = QuantilesReport()
    assert "distributed DP" in report.header_lines(data)[0]
    columns, cells = report.value_table(data)
    assert columns[-3:] == ["local DP CI", "distributed DP CI", "central DP CI"]
    assert [row[0] for row in cells] == ["p50", "p90", "p95", "p99", "mean"]
    assert all(" - " in cell for row in cells[:4] for cell in row[-3:])
    assert QuantilesDistribution.read(estimate).model_intervals[0][0] == 0.5


def test_a_quantile_in_the_last_bucket_compares_the_trust_models_below_the_top_boundary():
    "At the top boundary the local CDF is 1 by construction (half-width 0): the models compare at the one below"
    spec = load_spec(SPEC)
    noise = DistributedQuestion.of(spec).calibrated_noise()
    counts = [4_900] * 39 + [8_900]  # F at the last inner boundary 0.956: p99 lies in the last bucket
    estimate = estimate_releases(spec, [_release(spec, counts, noise, np.random.default_rng(5))])
    p99 = estimate["trust_models"]["quantiles"][-1]
    assert p99["p"] == 0.99 and p99["boundary"] == spec.params.boundaries[-2]
    assert 0 < p99["central"]["rank_halfwidth"] < p99["distributed"]["rank_halfwidth"] < \
        p99["local"]["rank_halfwidth"], p99
