"""``ldp-telemetry plan --spec`` for a heavy_hitters campaign: the detection threshold at n and the n a frequency
needs, from the kind's registered planner; the n it answers finds that frequency (its threshold there is <= f)."""

import json

from click.testing import CliRunner

from client_sdk import load_spec
from client_sdk.kinds.heavy_hitters.planning import detection_probability, detection_threshold
from ldp_telemetry.cli import main

SPEC = {"name": "words", "kind": "heavy_hitters", "epsilon": 3, "max_length": 6,
        "alphabet": "abcdefghijklmnopqrstuvwxyz.", "algorithm": "pem", "segment_length": 2}


def run(tmp_path, spec, *extra):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return CliRunner().invoke(main, ["plan", "--spec", str(path), "--n", "1000000", *extra])


def test_plan_states_the_threshold_and_the_n_a_frequency_needs(tmp_path):
    result = run(tmp_path, SPEC, "--frequency", "0.01")
    assert result.exit_code == 0, result.output
    params = load_spec(SPEC).params
    lines = result.output.splitlines()
    assert lines[1] == (f"n = 1,000,000: detection threshold {detection_threshold(params, 1_000_000):.4g} (the "
                        "smallest frequency found with probability >= 0.9)")
    needed = int(lines[2].split("n = ")[1].split(" ")[0].replace(",", ""))
    assert lines[2] == f"frequency 0.01: n = {needed:,} reports find it with probability >= 0.9 (pem (segment 2))"
    assert detection_probability(params, needed, 0.01) >= 0.9 > detection_probability(params, needed * 98 // 100,
                                                                                       0.01)


def test_auto_answers_with_the_algorithm_that_needs_fewest_reports_as_json(tmp_path):
    spec = {key: value for key, value in SPEC.items() if key not in ("algorithm", "segment_length")}
    result = run(tmp_path, {**spec, "expected_reports": 10000}, "--frequency", "0.05", "--format", "json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["kind"] == "heavy_hitters" and answer["algorithm"] in ("pem", "sfp")
    assert answer["reports_needed"][0]["frequency"] == 0.05 and answer["reports_needed"][0]["reports_needed"] > 0


def test_a_kind_without_a_planner_and_a_bad_frequency_are_one_line_errors(tmp_path):
    local = run(tmp_path, {"name": "b", "mechanism": "oue", "epsilon": 1, "domain": ["a", "b"]})
    assert local.exit_code == 1 and "has no planner" in local.output
    bad = run(tmp_path, SPEC, "--frequency", "2")
    assert bad.exit_code == 1 and "frequency 2 must be in (0, 1]" in bad.output
    assert CliRunner().invoke(main, ["plan", "--n", "10", "--domain-size", "4"]).exit_code == 2
