"""The estimate of a stored release: unbiased, intervals that cover, the spec's noise, and the guarantees stated."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from client_sdk.randomness import DeterministicRandom
from estimators.distributed import ASSUMPTION, ReleaseMismatch, Shift, calibrate, estimate_release, estimate_releases
from estimators.errors import NoReports
from tests.tolerances import k_sigma

EPSILON, DELTA = 1.0, 1e-6
DOMAIN = [f"b{i}" for i in range(8)]
TRUE_COUNTS = np.array([600, 500, 300, 250, 200, 100, 50, 0])
N = int(TRUE_COUNTS.sum())
HISTOGRAM = Shift(2, 1)  # replace-one: the old bucket -1, the new one +1


def histogram_spec(noise: str, **extra) -> dict:
    return {"name": "apps", "version": 1, "trust": "distributed", "prio3": "histogram", "domain": DOMAIN,
            "epsilon": EPSILON, "delta": DELTA, "noise": noise, "min_batch": 100, **extra}


def release_of(spec: dict, values, n: int, noise, **extra) -> dict:
    return {"campaign": spec["name"], "fingerprint": "f" * 32, "version": 1, "batch": "2026-11-30",
            "report_count": n, "rejected": {"invalid-measurement": 3}, "prio3": spec["prio3"],
            "release": [int(v) for v in np.atleast_1d(values)], "noise": noise.describe(),
            "coin_subset": None, **extra}


def noisy(truth: np.ndarray, noise, rng: DeterministicRandom) -> np.ndarray:
    "The release of ``truth``: both aggregators' exact samplers"
    return truth + np.array(noise.release_noise(truth.size, rng))


@pytest.mark.parametrize("mode", ["gaussian", "laplace", "coins"])
def test_histogram_releases_are_unbiased_and_their_intervals_cover(mode):
    spec = histogram_spec(mode, coins=2) if mode == "coins" else histogram_spec(mode)
    noise = calibrate(mode, epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    rng = DeterministicRandom(7)
    repetitions = 400
    truth = TRUE_COUNTS / N
    estimates, covered = [], []
    for _ in range(repetitions):
        result = estimate_release(spec, release_of(spec, noisy(TRUE_COUNTS, noise, rng), N, noise))
        rows = result["values"]
        estimates.append([row["estimate"] for row in rows])
        covered.append([row["ci_low"] <= t <= row["ci_high"] for row, t in zip(rows, truth)])
    std_error = math.sqrt(noise.variance()) / N  # the exact variance of the release's noise, on the fraction scale
    assert result["values"][0]["std_error"] == pytest.approx(std_error, rel=1e-9)
    errors = np.array(estimates) - truth
    # unbiased: every bucket's mean error within k standard errors of its mean (8 comparisons)
    assert np.all(np.abs(errors.mean(axis=0)) < k_sigma(len(DOMAIN)) * std_error / math.sqrt(repetitions))
    # the interval holds at least 95% of the exact noise distribution
    coverage, total = np.mean(covered), np.size(covered)
    assert coverage >= 0.95 - k_sigma() * math.sqrt(0.95 * 0.05 / total)


def test_a_sum_release_estimates_the_mean_of_integer_measurements():
    "Prio3 Sum measurements are integers already: the standard error is the noise's alone, no rounding term"
    spec = {"name": "latency", "trust": "distributed", "prio3": "sum", "max_measurement": 100, "epsilon": EPSILON,
            "delta": DELTA, "noise": "gaussian"}
    noise = calibrate("gaussian", epsilon=EPSILON, delta=DELTA, sensitivity=100)
    generator = np.random.default_rng(11)
    measurements = generator.integers(0, 101, size=2_000)
    true_mean, n = float(measurements.mean()), len(measurements)
    rng = DeterministicRandom(11)
    repetitions = 300
    results = [estimate_release(spec, release_of(spec, noisy(np.array([measurements.sum()]), noise, rng),
                                                 n, noise)) for _ in range(repetitions)]
    std_error = math.sqrt(noise.variance()) / n
    assert results[0]["kind"] == "mean" and results[0]["std_error"] == pytest.approx(std_error, rel=1e-9)
    assert results[0]["values"][0]["value"] == "mean" and results[0]["range"] == [0.0, 100.0]
    means = np.array([r["mean"] for r in results])
    assert abs(means.mean() - true_mean) < k_sigma(2) * std_error / math.sqrt(repetitions)
    coverage = np.mean([r["ci_low"] <= true_mean <= r["ci_high"] for r in results])
    assert coverage >= 0.95 - k_sigma(2) * math.sqrt(0.95 * 0.05 / repetitions)


def test_a_count_release_gives_the_count_and_the_proportion():
    spec = {"name": "crashed", "trust": "distributed", "prio3": "count", "epsilon": EPSILON, "noise": "laplace"}
    noise = calibrate("laplace", epsilon=EPSILON, delta=0.0, sensitivity=1)
    result = estimate_release(spec, release_of(spec, [412], 1_000, noise))
    assert result["count"] == pytest.approx(412) and result["proportion"] == pytest.approx(0.412)
    assert result["count_std_error"] == pytest.approx(math.sqrt(noise.variance()))
    assert result["values"][0]["value"] == "true"
    # pure epsilon: no delta, so central DP is the Laplace mechanism and the guarantee has delta 0
    assert result["guarantee"]["delta"] == 0 and result["trust_models"]["central"]["mechanism"] == "Laplace"


def test_the_trust_models_and_the_guarantees_are_stated():
    spec = histogram_spec("gaussian")
    noise = calibrate("gaussian", epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    result = estimate_release(spec, release_of(spec, TRUE_COUNTS, N, noise))
    models = result["trust_models"]
    local, distributed, central = (models[k]["std_error"] for k in ("local", "distributed", "central"))
    assert central < distributed < local  # the ratio to central: "honest"'s trust_models (replace-one there too)
    assert models["distributed"]["mode"] == "gaussian"
    assert {"campaign", "batch", "fingerprint", "rejected", "central_dp", "noise"} <= set(result)
    assert result["mechanism"] == "prio3" and result["prio3"] == "histogram" and result["trust"] == "distributed"
    guarantee = result["guarantee"]
    assert guarantee["epsilon"] <= EPSILON and guarantee["delta"] <= DELTA
    assumptions = " ".join(s["assuming"] for s in guarantee["statements"])
    assert "do not collude with each other" in assumptions and ASSUMPTION in assumptions
    assert guarantee["relation"] == "replace-one" and guarantee["neighbouring"] == "replace-one (n public)"
    assert f"n = {N:,}" in guarantee["statements"][1]["holds"]


@pytest.mark.parametrize("mode", ["gaussian", "laplace", "coins"])
def test_every_mode_states_the_one_aggregator_assumption_under_replace_one(mode):
    "The same words for every mode; the (epsilon, delta) is recomputed for two buckets moved, from one share alone"
    spec = histogram_spec(mode)
    noise = calibrate(mode, epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    result = estimate_release(spec, release_of(spec, TRUE_COUNTS, N, noise))
    guarantee = result["guarantee"]
    assert guarantee["assumption"] == ASSUMPTION == result["noise"]["assumption"]
    assert guarantee["statements"][1]["assuming"] == ASSUMPTION
    one_share = type(noise)(noise.kind, noise.parameter, noise.shift, aggregators=1)
    assert (guarantee["epsilon"], guarantee["delta"]) == one_share.privacy(EPSILON)
    assert guarantee["epsilon"] <= EPSILON and guarantee["delta"] <= DELTA
    assert result["noise"]["shift"] == {"relation": "replace-one", "coordinates": 2, "size": 1, "l1": 2,
                                        "l2": math.sqrt(2)}


def test_a_device_coin_release_and_an_add_remove_calibration_are_refused():
    "Releases made before this version: the device-coin subset, or noise calibrated for one bucket moved"
    spec = histogram_spec("coins", coins=2)
    noise = calibrate("coins", epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    with pytest.raises(ReleaseMismatch, match="device-coin"):
        estimate_release(spec, release_of(spec, TRUE_COUNTS, N, noise, coin_subset=262))
    stale = calibrate("gaussian", epsilon=EPSILON, delta=DELTA, sensitivity=1)
    with pytest.raises(ReleaseMismatch, match="sigma2"):
        estimate_release(histogram_spec("gaussian"), release_of(spec, TRUE_COUNTS, N, stale))


def test_laplace_central_comparison_stays_in_its_family():
    laplace_spec = histogram_spec("laplace")
    laplace = calibrate("laplace", epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    laplace_result = estimate_release(laplace_spec, release_of(laplace_spec, TRUE_COUNTS, N, laplace))
    # central DP is compared in the noise's own family: Laplace at a curator, even with a delta to spend
    central = laplace_result["trust_models"]["central"]
    assert central["mechanism"] == "Laplace" and central["gaussian_std_error"] > central["std_error"]
    # each model states its (epsilon, delta) under replace-one: the distributed release's is its own guarantee's,
    # calibrated there (each aggregator's share alone)
    distributed = laplace_result["trust_models"]["distributed"]
    guarantee = laplace_result["guarantee"]
    assert distributed["epsilon"] == guarantee["epsilon"] == pytest.approx(EPSILON) and guarantee["delta"] == 0
    assert central["epsilon"] == EPSILON and laplace_result["trust_models"]["relation"] == "replace-one"
    assert central["std_error"] < distributed["std_error"]


def test_a_spec_object_is_read_through_its_prio3_block():
    params = SimpleNamespace(type="histogram", length=None, max_measurement=None, max_weight=None, noise="gaussian",
                             coins=1, honest_fraction=0.5)
    spec = SimpleNamespace(name="apps", trust="distributed", epsilon=EPSILON, delta=DELTA, domain=tuple(DOMAIN),
                           prio3=params, fingerprint="f" * 32)
    noise = calibrate("gaussian", epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    result = estimate_release(spec, release_of(histogram_spec("gaussian"), TRUE_COUNTS, N, noise))
    assert [row["value"] for row in result["values"]] == DOMAIN
    with pytest.raises(ReleaseMismatch, match="fingerprint"):
        estimate_release(spec, release_of(histogram_spec("gaussian"), TRUE_COUNTS, N, noise, fingerprint="e" * 32))
    with pytest.raises(ValueError, match="not a distributed"):
        estimate_release(SimpleNamespace(trust="local", prio3=None), {})


def test_releases_that_are_not_the_specs_are_refused():
    spec = histogram_spec("gaussian")
    gaussian = calibrate("gaussian", epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    other = calibrate("gaussian", epsilon=0.5, delta=DELTA, sensitivity=HISTOGRAM)
    with pytest.raises(ReleaseMismatch, match="sigma2"):
        estimate_release(spec, release_of(spec, TRUE_COUNTS, N, other))
    with pytest.raises(ReleaseMismatch, match="noise mode"):
        estimate_release(spec, release_of(spec, TRUE_COUNTS, N, calibrate("laplace", epsilon=1, delta=DELTA,
                                                                          sensitivity=HISTOGRAM)))
    with pytest.raises(ReleaseMismatch, match="a 'sum'"):
        estimate_release(spec, release_of(spec, TRUE_COUNTS, N, gaussian, prio3="sum"))
    with pytest.raises(ValueError, match="8 values"):
        estimate_release(spec, release_of(spec, TRUE_COUNTS[:5], N, gaussian))
    with pytest.raises(ValueError, match="list of integers"):
        estimate_release(spec, {**release_of(spec, TRUE_COUNTS, N, gaussian), "release": [1.5] * 8})
    with pytest.raises(ValueError, match="report_count"):
        estimate_release(spec, release_of(spec, TRUE_COUNTS, -1, gaussian))
    with pytest.raises(NoReports):
        estimate_release(spec, release_of(spec, TRUE_COUNTS * 0, 0, gaussian))
    with pytest.raises(ValueError, match="sumvec"):
        estimate_release({**spec, "prio3": "sumvec", "length": 4, "max_measurement": 3}, {})


@pytest.mark.parametrize("mode", ["gaussian", "coins"])
def test_a_window_of_batches_adds_the_releases_and_their_noises(mode):
    "k batches: the counts and the noises add up, so the variance of the window's noise is k times one batch's"
    spec = histogram_spec(mode)
    noise = calibrate(mode, epsilon=EPSILON, delta=DELTA, sensitivity=HISTOGRAM)
    rng = DeterministicRandom(5)
    batches = [release_of(spec, noisy(TRUE_COUNTS, noise, rng), N, noise, batch=f"2026-11-{day}")
               for day in (28, 29, 30)]
    window = estimate_releases(spec, batches)
    assert window["n"] == 3 * N and window["batches"] == ["2026-11-28", "2026-11-29", "2026-11-30"]
    assert window["rejected"] == {"invalid-measurement": 9} and window["batch"] is None
    assert window["values"][0]["count_std_error"] == pytest.approx(math.sqrt(3 * noise.variance()), rel=1e-9)
    expected = sum(np.array(b["release"]) for b in batches) - 3 * noise.mean()
    assert [row["count"] for row in window["values"]] == pytest.approx(list(expected))
    assert window["noise"]["batches"] == 3 and "each batch's release" in window["guarantee"]["statements"][1]["holds"]
    assert estimate_releases(spec, batches[:1]) == estimate_release(spec, batches[0])
    with pytest.raises(ValueError, match="same length"):
        estimate_releases(spec, [batches[0], {**batches[1], "release": [1, 2]}])


def test_the_docs_state_the_assumption_in_the_estimates_words():
    "docs/distributed.md, the estimate's guarantee and the reports (tests/estimators/test_report_distributed.py)"
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[3] / "docs" / "distributed.md").read_text().split())
    assert ASSUMPTION in text and "replace-one (n public)" in text
