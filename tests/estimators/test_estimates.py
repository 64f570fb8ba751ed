"""The typed estimate (estimators.estimates): one JSON form, read once, what the reports read instead of dicts."""

import ast
import json
import math
import pathlib

from estimators.estimates import Estimate, EstimatedMean
from estimators.kinds.distributed import Prio3MeanRelease, Prio3Release
from estimators.kinds.local import LocalFrequencies, LocalMean, RapporFrequencies
from estimators.report import ReportData, render_json

from .report_fixtures import browser_result, distributed_result, distributed_sum_result, load_time_result, rappor_result

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_json_form_round_trips_and_the_report_keeps_its_bytes():
    for result in (browser_result(), load_time_result(unit="ms"), rappor_result(), distributed_result()):
        estimate = Estimate.from_json(result)
        assert estimate.to_json() == result and Estimate.from_json(estimate.to_json()) == estimate
        report = json.loads(render_json(ReportData(result)))
        assert all(report[key] == json.loads(json.dumps(value)) for key, value in result.items() if key != "values")


def test_members_are_typed_and_a_non_number_is_none():
    frequency = Estimate.from_json(browser_result())
    assert frequency.kind == "frequency" and frequency.trust == "local" and isinstance(frequency.n, int)
    assert [row.value for row in frequency.values][:2] == ["chrome", "safari"]
    assert frequency.central is not None and frequency.central.ci_halfwidth is not None
    mean = Estimate.from_json(load_time_result(unit="ms"))
    assert isinstance(mean, LocalMean) and mean.unit == "ms" and mean.values == ()
    assert mean.mean == mean.json["values"][0]["estimate"]
    released = Estimate.from_json(distributed_result())
    assert isinstance(released, Prio3Release) and released.trust_models is not None and released.noise_mode
    assert released.trust == "distributed"
    assert set(released.trust_models) == {"local", "shuffled", "distributed", "central"} and released.guarantee
    odd = Estimate.from_json({"kind": "frequency", "n": True, "confidence": "high", "epsilon": None,
                              "values": [{"value": "a", "estimate": "x"}, {"string": "b", "proportion": 0.5}]})
    assert (odd.n, odd.confidence, odd.epsilon) == (None, None, None)
    assert [(row.value, row.estimate) for row in odd.values] == [("b", 0.5)]  # reference decoder columns read too
    assert math.isclose(odd.z_confidence, 0.95)


def test_each_kind_reads_its_own_typed_estimate():
    "Estimate (the public name) is the base every kind's estimate extends; from_json reads the JSON's own kind's"
    for result, typed in ((browser_result(), LocalFrequencies), (load_time_result(), LocalMean),
                          (rappor_result(), RapporFrequencies), (distributed_result(), Prio3Release),
                          (distributed_sum_result(), Prio3MeanRelease)):
        estimate = Estimate.from_json(result)
        assert type(estimate) is typed and isinstance(estimate, Estimate), typed
        assert typed.from_json(result) == estimate and estimate.to_json() == result
    assert isinstance(Estimate.from_json(distributed_sum_result()), EstimatedMean)
    assert type(Estimate.read({"trust": "local", "values": []})) is Estimate  # the shared members only


def test_the_renderers_read_the_typed_estimate_not_the_json():
    "Outside json_report (which writes the JSON form), no report module reads an estimate's JSON members"
    for path in sorted((ROOT / "estimators" / "report").rglob("*.py")):
        if path.name == "json_report.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            reads = isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get")
            target = node.value if isinstance(node, ast.Subscript) else getattr(node, "func", None)
            owner = target.value if isinstance(target, ast.Attribute) else target
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            assert not (reads and name in {"result", "data"}), f"{path.name}:{node.lineno}: {ast.unparse(node)}"
