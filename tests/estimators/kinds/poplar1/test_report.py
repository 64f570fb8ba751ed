"""A poplar1 campaign's report from a real walk (devices' sealed reports, a leader and a helper in one process):
every format states the heavy hitters with their counts and intervals, the threshold, every level, the noise, the
composed guarantee and what the leader learned; the JSON report matches report.schema.json, which refuses it with
one of the kind's members missing; the dashboard's panel says what the table says."""

from __future__ import annotations

import copy
import json
from collections import Counter

import jsonschema
import pytest

from collector.kinds.poplar1.walk import walk
from estimators.kinds.poplar1 import POPLAR1_ESTIMATES, Poplar1Walk
from estimators.report import ReportData, render_html, render_json, render_markdown, render_table, report_schema
from estimators.report.kinds import report_kind
from estimators.report.kinds.poplar1 import SHOWN_PREFIXES
from tests.collector.kinds.poplar1.walkkit import BATCH, Deployment, make_spec, population

PLANTED = {"ab": 90, "cd": 60}


@pytest.fixture(scope="module")
def data() -> ReportData:
    deployment = Deployment(make_spec(), seed=11)
    reports = [deployment.report(v if v in PLANTED else bytes.fromhex(v)) for v in population(PLANTED, 150)]
    release = walk(deployment.leader, deployment.helper, BATCH, reports)
    stored = {"walk": release.to_dict(), "rejections": dict(Counter(deployment.leader.rejections))}
    return ReportData(POPLAR1_ESTIMATES.estimate_json(deployment.spec, stored), deployment.spec.to_dict())


def test_the_estimate_is_read_as_the_kinds_type_and_laid_out_by_its_report_side(data: ReportData) -> None:
    assert isinstance(data.estimate, Poplar1Walk)
    assert report_kind(data.estimate).name == "poplar1"
    found = {row["value"]: row for row in data.estimate.heavy_hitters}
    assert set(PLANTED) <= set(found)  # the pruning rule's keep count lets near-threshold strings through too
    for value, count in PLANTED.items():
        assert found[value]["ci_low"] <= count <= found[value]["ci_high"]


def test_the_table_states_the_hitters_threshold_levels_noise_guarantee_and_what_the_leader_learned(
        data: ReportData) -> None:
    text = render_table(data)
    estimate = data.estimate
    for row in estimate.heavy_hitters:
        assert f"{row['count']:,}" in text and f"{row['ci_low']:,.0f}" in text and row["bytes"] in text
    assert f"a prefix is kept when its count reaches {estimate.pruning['keep_count']:.2f}" in text
    clear = sum(1 for row in estimate.heavy_hitters if row["clears_threshold"])
    assert f"{clear} of the {len(estimate.heavy_hitters)} released strings clear the threshold count" in text
    for level in estimate.levels:
        assert f"level {level['level']} ({level['level'] + 1}-bit prefixes" in text
        counts = dict(zip(level["prefixes"], level["counts"]))
        for prefix in sorted(level["kept"], key=lambda prefix: -counts[prefix])[:SHOWN_PREFIXES]:
            assert prefix in text
    assert f"sigma2 {estimate.noise['sigma2']:.4g}" in text
    assert "the exact composition of the 4 levels" in text and "delta 1e-06" in text
    asked = sum(len(level["prefixes"]) for level in estimate.levels)
    assert f"the leader learned: {asked:,} candidate prefixes over 4 levels" in text
    assert "guarantee: (2, 1e-06)-DP for the released counts of the whole walk" in text


def test_markdown_and_html_draw_the_hitters_and_every_level(data: ReportData) -> None:
    markdown = render_markdown(data, image_prefix="top")
    assert sorted(markdown.images) == ["top-poplar1_heavy_hitters.png", "top-poplar1_levels.png"]
    html = render_html(data)
    assert html.count("<img") == 2 and "threshold count" in html
    assert data.estimate.heavy_hitters[0]["bytes"] in markdown.text


def test_the_panel_says_what_the_table_says(data: ReportData) -> None:
    panel = report_kind(data.estimate).panel(data)
    text = render_table(data)
    assert panel["header"] and all(line in text for line in panel["header"])
    assert panel["tables"][0]["rows"] and all(" ".join(cell for cell in row if cell) in " ".join(text.split())
                                              for row in panel["tables"][0]["rows"])
    assert all(note in text for note in panel["tables"][0]["notes"])
    assert [point["label"] for point in panel["intervals"]["points"]] == [
        r["value"].rstrip("\x00").encode("unicode_escape").decode("ascii") for r in data.estimate.heavy_hitters]


@pytest.fixture(scope="module")
def report(data: ReportData) -> dict:
    return json.loads(render_json(data))


def _validator() -> jsonschema.Draft202012Validator:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_json_report_matches_the_schema(report: dict) -> None:
    assert report["kind"] == "poplar1" and report["trust"] == "distributed"
    _validator().validate(report)


MISSING = [("heavy_hitters",), ("heavy_hitters", 0, "ci_low"), ("levels",), ("levels", 1, "counts"),
           ("levels", 0, "kept"), ("threshold_count",), ("noise",), ("noise", "sigma2"), ("guarantee",),
           ("guarantee", "levels"), ("guarantee", "statements"), ("leader_learned",), ("batch",), ("values",),
           ("rejected",)]


@pytest.mark.parametrize("path", MISSING, ids=lambda path: ".".join(map(str, path)))
def test_the_schema_refuses_a_report_missing_a_member(report: dict, path: tuple) -> None:
    broken = copy.deepcopy(report)
    parent = broken
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    assert not _validator().is_valid(broken)


def test_the_schema_refuses_a_level_whose_prefix_is_not_bits(report: dict) -> None:
    broken = copy.deepcopy(report)
    broken["levels"][0]["prefixes"][0] = "01x"
    assert not _validator().is_valid(broken)
