import io
import json
import math

import numpy as np
import pytest
from scipy.stats import chi2_contingency, norm

from client_sdk import DeterministicRandom, load_spec
from client_sdk.mechanisms.rappor import RapporMechanism
from client_sdk.rappor import RapporParams, bloom_bit_positions
from estimators.aggregation import Aggregate, aggregate
from estimators.batch import parse_payloads
from estimators.rappor import (
    CandidateMap,
    RapporFileError,
    check_counts,
    decode_aggregate,
    decode_rappor,
    estimate_bloom_bits,
    position_table,
    rappor_counts,
    read_candidates,
    read_counts_csv,
    read_map_csv,
    read_params_csv,
    simulate_rappor,
    simulate_rappor_counts,
    simulate_rappor_indices,
    write_counts_csv,
    write_map_csv,
    write_params_csv,
)

REGRESSION = {"k": 8, "h": 2, "m": 128, "p": 0.39, "q": 0.61, "f": 0.45}  # the reference's "typical" test


def spec_for(name="sim", candidates=None, **params):
    raw = {"name": name, "mechanism": "rappor", "rappor": params}
    if candidates is not None:
        raw["candidates"] = candidates
    return load_spec(raw)


def distribution(name, count):
    "The reference simulations' value distributions over v1..v<count> (tests/gen_sim_input.py, regtest_spec.py)"
    x = np.arange(1, count + 1)
    if name == "exp":  # truncated exponential with rate count/5 on [0, 1], scaled to the values
        edges = 1 - np.exp(-(count / 5) * np.arange(count + 1) / count)
        weights = np.diff(edges)
    elif name == "gauss":  # round(Normal((count+1)/2, count/6)) kept in [1, count]
        weights = norm.cdf(x + 0.5, (count + 1) / 2, count / 6) - norm.cdf(
            x - 0.5, (count + 1) / 2, count / 6
        )
    elif name == "unif":
        weights = np.ones(count)
    else:  # "zipf1", "zipf1.5"
        weights = x ** -float(name[4:])
    return weights / weights.sum()


def judge(result, values, truth, decoys):
    "False positives, values above twice the detection frequency that were missed, total variation distance"
    detected = result.proportions()
    false_positives = [s for s in detected if s in decoys]
    missed = [v for v, p in zip(values, truth) if p > 2 * result.detection_frequency and v not in detected]
    truth_by_value = dict(zip(values, truth))
    total_variation = 0.5 * sum(
        abs(detected.get(s, 0.0) - truth_by_value.get(s, 0.0)) for s in set(detected) | set(values)
    )
    return false_positives, missed, total_variation


# -- aggregation -------------------------------------------------------------------------------------------------
def naive_counts(params, cohorts, packed):
    bits = np.unpackbits(packed, axis=1)[:, : params.k]
    counts = np.zeros((params.m, params.k + 1), dtype=np.int64)
    for cohort, row in zip(cohorts, bits):
        counts[cohort, 0] += 1
        counts[cohort, 1:] += row
    return counts


@pytest.mark.parametrize("k, m", [(8, 4), (13, 16), (1024, 1024)])  # the last one counts cohort by cohort
def test_rappor_counts_match_a_naive_count(k, m):
    spec = spec_for(k=k, h=2, m=m)
    rng = np.random.default_rng(k)
    n = 3000
    cohorts = rng.integers(0, m // 2 + 1, n)  # some cohorts stay empty
    packed = np.packbits(rng.random((n, k)) < 0.3, axis=1)
    batch = parse_payloads(
        spec, [{"cohort": int(c), "bits": row.tobytes().hex()} for c, row in zip(cohorts, packed)]
    )
    assert np.array_equal(rappor_counts(spec, batch), naive_counts(spec.rappor, cohorts, packed))


def test_aggregate_of_sdk_payloads_is_mergeable():
    spec = spec_for(k=16, h=2, m=4)
    rng = DeterministicRandom(4)
    payloads = [RapporMechanism(spec, rng=rng).perturb(f"v{i % 5}") for i in range(400)]
    whole = aggregate(spec, payloads)
    merged = aggregate(spec, payloads[:150]).merge(aggregate(spec, payloads[150:]))
    assert whole == merged and whole.counts.shape == (4, 17) and whole.counts[:, 0].sum() == 400
    assert Aggregate.empty(spec).merge(whole) == whole
    assert np.all(whole.counts[:, 1:] <= whole.counts[:, :1])


def test_rappor_counts_rejects_bad_cohorts():
    spec = spec_for(k=8, h=2, m=4)
    from estimators.batch import ReportBatch

    batch = ReportBatch("rappor", 1, {"cohort": np.array([4]), "bits": np.zeros((1, 1), dtype=np.uint8)})
    with pytest.raises(ValueError, match="cohort"):
        rappor_counts(spec, batch)


@pytest.mark.parametrize(
    "counts, message",
    [
        (np.zeros((2, 9)), "shape"),
        (np.array([[5] + [1] * 8] * 3 + [[-1] + [0] * 8]), "non-negative"),
        (np.array([[1] + [2] * 8] * 4), "exceeds"),
        (np.full((4, 9), 0.5), "whole"),
    ],
)
def test_check_counts_explains_bad_input(counts, message):
    with pytest.raises(ValueError, match=message):
        check_counts(RapporParams(k=8, h=2, m=4), counts)


# -- de-biasing --------------------------------------------------------------------------------------------------
def test_bit_estimates_are_unbiased_with_the_stated_standard_error():
    params = RapporParams(k=8, h=2, m=4, p=0.25, q=0.75, f=0.5)
    rng = np.random.default_rng(8)
    true_share = np.linspace(0.05, 0.9, 8)
    reports = np.array([20000, 5000, 0, 80000])
    trials = []
    for _ in range(200):
        ones = rng.binomial(reports[:, None], true_share * params.p11 + (1 - true_share) * params.p01)
        trials.append(estimate_bloom_bits(params, np.column_stack([reports, ones])))
    nonempty = reports > 0
    estimates = np.array([t.proportions[nonempty] for t in trials])
    errors = np.array([t.std_errors[nonempty] for t in trials])
    z = (estimates.mean(axis=0) - true_share) / (errors.mean(axis=0) / math.sqrt(len(trials)))
    assert np.all(np.abs(z) < 4.5)
    assert np.allclose(estimates.std(axis=0), errors.mean(axis=0), rtol=0.2)
    assert np.all(np.isinf(trials[0].std_errors[2])) and np.all(trials[0].proportions[2] == 0)


# -- simulator ---------------------------------------------------------------------------------------------------
def test_simulator_matches_the_sdk_distribution():
    "Chi-square on the joint report patterns (cohort, 4 bits) from the SDK and from numpy"
    spec = spec_for(k=4, h=2, m=2, p=0.3, q=0.8, f=0.4)
    values = ["alpha", "beta", "gamma"]
    n = 6000
    rng = DeterministicRandom(21)
    sdk_patterns = []
    for i in range(n):
        device = RapporMechanism(spec, rng=rng, cohort=i % 2)
        payload = device.perturb(values[i % 3])
        sdk_patterns.append(payload["cohort"] * 16 + (int(payload["bits"], 16) >> 4))
    batch = simulate_rappor(spec, [values[i % 3] for i in range(n)], np.random.default_rng(5))
    sim_patterns = batch["cohort"] * 16 + (batch["bits"][:, 0] >> 4)
    table = np.array([np.bincount(sdk_patterns, minlength=32), np.bincount(sim_patterns, minlength=32)])
    table = table[:, table.sum(axis=0) > 0]
    assert chi2_contingency(table).pvalue > 1e-3


def test_simulated_counts_agree_with_simulated_reports():
    spec = spec_for(k=16, h=2, m=8, p=0.25, q=0.75, f=0.5)
    values = ["a", "b", "c", "d"]
    probabilities = np.array([0.4, 0.3, 0.2, 0.1])
    n, trials = 40000, 30
    rng = np.random.default_rng(9)
    direct = np.mean(
        [simulate_rappor_counts(spec.rappor, values, probabilities, n, rng) for _ in range(trials)], axis=0
    )
    index = rng.choice(4, size=(trials, n), p=probabilities)
    via_reports = np.mean(
        [aggregate(spec, simulate_rappor_indices(spec, values, row, rng)).counts for row in index], axis=0
    )
    # each bit count has standard deviation at most sqrt(n/m / 4) per trial (binomial + multinomial), averaged
    tolerance = 5 * math.sqrt(2 * (n / 8) / trials)
    assert np.all(np.abs(direct - via_reports) < tolerance)


def test_position_table_matches_the_client():
    params = RapporParams(k=16, h=2, m=4)
    table = position_table(params, ["v1", "x"])
    assert (
        sorted(table[0, 0][table[0, 0] >= 0]) == sorted(set(bloom_bit_positions("v1", 0, 16, 2))) == [8, 10]
    )


# -- decoding: the reference's simulation tests -----------------------------------------------------------------
def test_exponential_distribution_one_million_clients():
    "k 8, h 2, m 128, p .39, q .61, f .45; 100 values; 20 decoys; one report per client; cohort = client mod m"
    spec = spec_for(**REGRESSION)
    values = [f"v{i}" for i in range(1, 101)]
    decoys = [f"decoy{i}" for i in range(20)]
    truth = distribution("exp", 100)
    rng = np.random.default_rng(2014)
    index = rng.choice(100, size=1_000_000, p=truth)
    counts = aggregate(spec, simulate_rappor_indices(spec, values, index, rng)).counts
    result = decode_rappor(spec.rappor, counts, values + decoys)
    sample_truth = np.bincount(index, minlength=100) / len(index)
    false_positives, missed, total_variation = judge(result, values, sample_truth, set(decoys))
    assert result.status == "ok" and result.reports == 1_000_000
    assert len(false_positives) <= 1
    assert missed == []
    assert total_variation <= 0.15
    assert 0.5 < result.allocated_mass <= 1.0
    by_value = dict(zip(values, sample_truth))
    for estimate in result.detected:  # each estimate within a Bonferroni-corrected band of its truth
        if estimate.string in by_value:
            assert (
                abs(estimate.proportion - by_value[estimate.string])
                < result.detection_z * estimate.proportion_std_error
            )
            assert estimate.ci_low <= estimate.proportion <= estimate.ci_high
    assert math.isclose(result.epsilon_one, spec.rappor.epsilon_one)


@pytest.mark.parametrize("name", ["gauss", "unif", "zipf1", "zipf1.5"])
def test_other_distributions_at_a_smaller_n(name):
    "The reference demo settings (k 16, h 2, m 32, p .1, q .9, f .2), 10^5 clients, 50 values, 10 decoys"
    params = RapporParams(k=16, h=2, m=32, p=0.1, q=0.9, f=0.2)
    values = [f"v{i}" for i in range(1, 51)]
    decoys = [f"decoy{i}" for i in range(10)]
    truth = distribution(name, 50)
    counts = simulate_rappor_counts(params, values, truth, 100_000, np.random.default_rng(len(name)))
    result = decode_rappor(params, counts, values + decoys)
    false_positives, missed, total_variation = judge(result, values, truth, set(decoys))
    assert len(false_positives) <= 1 and missed == [] and total_variation <= 0.15


def test_too_little_data_reports_nothing():
    params = RapporParams(**REGRESSION)
    values = [f"v{i}" for i in range(1, 101)]
    counts = simulate_rappor_counts(params, values, distribution("exp", 100), 1000, np.random.default_rng(1))
    result = decode_rappor(params, counts, values)
    assert result.status == "insufficient_data" and "too little data" in result.message
    assert result.detected == () and result.to_dict()["estimates"] == []
    empty = decode_rappor(params, np.zeros((128, 9), dtype=np.int64), values)
    assert empty.status == "insufficient_data" and empty.message == "no reports"


def test_decoding_handles_empty_cohorts():
    params = RapporParams(k=16, h=2, m=16, p=0.25, q=0.75, f=0.5)
    values = ["a", "b", "c"]
    counts = simulate_rappor_counts(params, values, [0.6, 0.3, 0.1], 200_000, np.random.default_rng(3))
    counts[::2] = 0  # half the cohorts never reported
    result = decode_rappor(params, counts, values + ["x", "y"])
    assert result.status == "ok" and set(result.proportions()) == {"a", "b", "c"}
    assert abs(result.proportions()["a"] - 0.6) < 5 * result.detected[0].proportion_std_error


def test_many_candidates_use_the_lasso_and_find_the_true_values():
    params = RapporParams(k=16, h=2, m=8, p=0.25, q=0.75, f=0.5)
    values = [f"v{i}" for i in range(1, 6)]
    candidates = values + [f"decoy{i}" for i in range(200)]  # more candidates than 0.8 * m * k = 102 rows
    counts = simulate_rappor_counts(
        params, values, [0.4, 0.25, 0.15, 0.12, 0.08], 500_000, np.random.default_rng(6)
    )
    result = decode_rappor(params, counts, candidates)
    assert result.lasso_used
    assert set(result.proportions()) == set(values)


def test_map_and_candidates_give_the_same_result(tmp_path):
    params = RapporParams(k=16, h=2, m=8)
    candidates = [f"s{i}" for i in range(30)]
    counts = simulate_rappor_counts(
        params, candidates[:4], [0.5, 0.3, 0.1, 0.1], 100_000, np.random.default_rng(0)
    )
    write_map_csv(CandidateMap.from_candidates(params, candidates), tmp_path / "map.csv")
    from_map = decode_rappor(params, counts, read_map_csv(tmp_path / "map.csv", params))
    from_strings = decode_rappor(params, counts, candidates)
    assert from_map.to_dict() == from_strings.to_dict()


def test_result_is_plain_json_and_reproducible():
    spec = spec_for(candidates=["a", "b", "c"], k=16, h=2, m=8, f=0.0, p=0.25, q=0.75)
    counts = simulate_rappor_counts(spec.rappor, ["a", "b"], [0.7, 0.3], 50_000, np.random.default_rng(1))
    first = decode_rappor(spec, counts)
    data = first.to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["epsilon_inf"] is None and data["params"]["encoding"] == "bloom"
    assert set(data["estimates"][0]) >= {
        "string",
        "estimate",
        "std_error",
        "proportion",
        "prop_low_95",
        "prop_high_95",
    }
    assert decode_rappor(spec, counts).to_dict() == data
    assert [row["string"] for row in first.rows()] == ["a", "b"]


def test_decode_aggregate_uses_the_spec_candidates():
    spec = spec_for(candidates=["a", "b"], k=16, h=2, m=4, p=0.25, q=0.75, f=0.5)
    batch = simulate_rappor(spec, ["a"] * 30000 + ["b"] * 10000, np.random.default_rng(2))
    result = decode_aggregate(spec, aggregate(spec, batch))
    assert set(result.proportions()) == {"a", "b"}
    with pytest.raises(ValueError, match="another spec"):
        decode_aggregate(spec, Aggregate.empty(spec_for(name="other", k=16, h=2, m=4)))


@pytest.mark.parametrize("kwargs", [{"alpha": 0}, {"alpha": 1.5}, {"resamples": -1}])
def test_decode_options_are_validated(kwargs):
    params = RapporParams(k=16, h=2, m=4)
    with pytest.raises(ValueError):
        decode_rappor(params, np.zeros((4, 17), dtype=np.int64), ["a"], **kwargs)


def test_bloom_decoding_needs_candidates():
    with pytest.raises(ValueError, match="candidates"):
        decode_rappor(RapporParams(k=16, h=2, m=4), np.zeros((4, 17), dtype=np.int64))


# -- boolean and basic -------------------------------------------------------------------------------------------
def test_boolean_rappor():
    spec = spec_for(k=1, m=4, p=0.25, q=0.75, f=0.5)
    truth = 0.3
    n = 200_000
    values = np.random.default_rng(4).random(n) < truth
    result = decode_rappor(
        spec, aggregate(spec, simulate_rappor(spec, values, np.random.default_rng(5))).counts
    )
    rows = {e.string: e for e in result.estimates}
    assert set(rows) == {"TRUE", "FALSE"}
    assert abs(rows["TRUE"].proportion - values.mean()) < 4 * rows["TRUE"].proportion_std_error
    assert math.isclose(rows["TRUE"].proportion + rows["FALSE"].proportion, 1.0)


def test_basic_rappor():
    candidates = ["red", "green", "blue", "black"]
    spec = spec_for(candidates=candidates, k=4, h=1, m=2, encoding="basic", p=0.25, q=0.75, f=0.5)
    truth = [0.5, 0.35, 0.15, 0.0]
    rng = np.random.default_rng(7)
    values = rng.choice(candidates, size=100_000, p=truth)
    result = decode_rappor(spec, aggregate(spec, simulate_rappor(spec, values, rng)).counts)
    estimates = {e.string: e for e in result.estimates}
    for name in candidates:
        observed = float(np.mean(values == name))
        assert abs(estimates[name].proportion - observed) < 4.5 * estimates[name].proportion_std_error
    assert {"red", "green", "blue"} <= set(result.proportions())
    with pytest.raises(ValueError, match="exactly k"):
        decode_rappor(spec.rappor, np.zeros((2, 5), dtype=np.int64), candidates[:3])


# -- reference CSV files ------------------------------------------------------------------------------------------
def test_params_csv_round_trip_and_reference_spellings(tmp_path):
    params = RapporParams(k=128, h=2, m=8, p=0.5, q=0.75, f=0.0)
    write_params_csv(params, tmp_path / "params.csv")
    assert (tmp_path / "params.csv").read_text() == "k,h,m,p,q,f\n128,2,8,0.5,0.75,0.0\n"
    assert read_params_csv(tmp_path / "params.csv") == params
    quoted = io.StringIO('"k","h","m","p","q","f"\n128,2,8,0.5,0.75,0\n')  # apps/rappor-analysis/params.csv
    assert read_params_csv(quoted) == params
    spaced = io.StringIO("k, h, m, p, q, f\n16, 2, 64, 0.1, 0.9, 0.2\n")  # tests/params.csv
    assert read_params_csv(spaced) == RapporParams(k=16, h=2, m=64, p=0.1, q=0.9, f=0.2)
    assert read_params_csv(io.StringIO("k,h,m,p,q,f\n1,1,1,0.5,0.75,0.5\n")).encoding == "boolean"


@pytest.mark.parametrize(
    "text, message",
    [
        ("k,h,m,p,q\n32,2,64,0.5,0.75\n", "header"),
        ("k,h,m,p,q,f\n", "exactly one row"),
        ("k,h,m,p,q,f\n32,2,64,0.5,0.75,0.6\nextra\n", "exactly one row"),
        ("k,h,m,p,q,f\n32,2,64,0.5,0.75\n", "6 fields"),
        ("k,h,m,p,q,f\n32,two,64,0.5,0.75,0.6\n", "h = 'two'"),
        ("k,h,m,p,q,f\n32,2,60,0.5,0.75,0.6\n", "rappor.m"),
    ],
)
def test_bad_params_files_are_explained(text, message):
    with pytest.raises(RapporFileError, match=message):
        read_params_csv(io.StringIO(text))


def test_counts_csv_round_trip(tmp_path):
    params = RapporParams(k=8, h=2, m=4)
    counts = simulate_rappor_counts(params, ["a"], [1.0], 1000, np.random.default_rng(0))
    write_counts_csv(counts, tmp_path / "counts.csv")
    first_line = (tmp_path / "counts.csv").read_text().splitlines()[0]
    assert first_line == ",".join(str(c) for c in counts[0])
    assert np.array_equal(read_counts_csv(tmp_path / "counts.csv", params), counts)
    assert np.array_equal(
        read_counts_csv(
            io.StringIO("2.5e2," + ",".join(["1"] * 8) + "\n" + "0,0,0,0,0,0,0,0,0\n" * 3), params
        )[0, :2],
        [250, 1],
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("1,0\n", "expected m = 4 rows"),
        ("x" + ",0" * 8 + "\n" + ("0" + ",0" * 8 + "\n") * 3, "whole number"),
        ("1" + ",2" * 8 + "\n" + ("0" + ",0" * 8 + "\n") * 3, "exceeds"),
    ],
)
def test_bad_counts_files_are_explained(text, message):
    with pytest.raises(RapporFileError, match=message):
        read_counts_csv(io.StringIO(text), RapporParams(k=8, h=2, m=4))


def test_map_csv_matches_the_reference_layout(tmp_path):
    params = RapporParams(k=16, h=2, m=2)
    write_map_csv(CandidateMap.from_candidates(params, ["v1", "a,b"]), tmp_path / "map.csv")
    lines = (tmp_path / "map.csv").read_text().splitlines()
    cohort1 = bloom_bit_positions("v1", 1, 16, 2)
    assert lines[0] == "v1,9,11," + ",".join(str(16 + b + 1) for b in cohort1)  # 1-based, cohort*k + bit + 1
    assert lines[1].startswith('"a,b",')
    loaded = read_map_csv(tmp_path / "map.csv", params)
    assert loaded.candidates == ("v1", "a,b")
    # The reference leaves a field empty when both hashes hit one bit; duplicates keep their first row.
    loaded = read_map_csv(io.StringIO('"V_8",7,12,14,\n"V_8",1,2,3,4\n'), RapporParams(k=8, h=2, m=2))
    assert loaded.candidates == ("V_8",) and loaded.positions.tolist() == [[6, 11, 13, -1]]
    assert loaded.matrix().sum() == 3


@pytest.mark.parametrize(
    "text, message", [("a,1,2,3\n", "fields"), ("a,1,2,3,33\n", r"\[1, m\*k"), ("a,1,2,x,4\n", "integers")]
)
def test_bad_map_files_are_explained(text, message):
    with pytest.raises(RapporFileError, match=message):
        read_map_csv(io.StringIO(text), RapporParams(k=16, h=2, m=2))


def test_candidates_file(tmp_path):
    path = tmp_path / "candidates.txt"
    path.write_text("a\n\n b \na\nc\n")
    assert read_candidates(path) == ["a", "b", "c"]


def test_estimators_entry_points_reach_the_decoder():
    from estimators import estimate
    from estimators.simulate import simulate

    spec = spec_for(candidates=["a", "b", "c"], k=16, h=2, m=4, p=0.25, q=0.75, f=0.5)
    batch = simulate(spec, ["a"] * 30000 + ["b"] * 20000, np.random.default_rng(0))
    result = estimate(spec, batch, confidence=0.9)
    assert math.isclose(result.confidence, 0.9) and set(result.proportions()) == {"a", "b"}
    top, wider = result.detected[0], estimate(spec, batch).detected[0]
    assert math.isclose((top.ci_high - top.ci_low) / (wider.ci_high - wider.ci_low), norm.ppf(0.95) / norm.ppf(0.975))
