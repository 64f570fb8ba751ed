"""The dashboard's routes in the app: the page and its assets under a strict policy, the switch that turns it off,
the admin scope and rate limits of its data routes, the listing from the stored sums, and the panel made by the
kind's report side (the same text ``ldp-telemetry report`` prints)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

import client_sdk
from collector import create_app
from collector.dashboard.pages import ASSETS, asset_bytes
from collector.reporting import report_data_from_db
from collector.storage import open_storage
from estimators.report.table import render_table

from .helpers import CATEGORICAL, NUMERIC, bearer, make_reports

ROUTES = ("/v1/dashboard/campaigns", "/v1/campaigns/browser/panel")
PAGE_WEIGHT_BUDGET = 300 * 1024  # the goal: every asset, gzipped


def test_the_page_and_its_assets_carry_a_strict_policy_and_no_inline_code(http) -> None:
    for path in ("/dashboard/", "/dashboard/dashboard.js", "/dashboard/dashboard.css"):
        response = http.get(path)
        assert response.status_code == 200, path
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy and "frame-ancestors 'none'" in policy
        assert response.headers["X-Frame-Options"] == "DENY"
    page = asset_bytes("index.html").decode()
    assert re.findall(r"<script(?![^>]*\bsrc=)", page) == [] and "<style" not in page and " style=" not in page
    assert not re.search(r"\bon[a-z]+=", page)  # no inline event handlers
    script = asset_bytes("dashboard.js").decode()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink
    assert "http://" not in page + script.replace("http://www.w3.org/2000/svg", "")  # no CDN, no other origin
    assert http.get("/dashboard/other.js").status_code == 404


def test_the_page_weight_is_within_its_budget() -> None:
    assert sum(len(gzip.compress(asset_bytes(name))) for name in ASSETS) < PAGE_WEIGHT_BUDGET


def test_the_switch_turns_the_dashboard_off(db_path) -> None:
    off = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "DASHBOARD": 0}).test_client()
    for path in ("/dashboard/", "/dashboard/dashboard.js", *ROUTES):
        assert off.get(path).status_code == 404, path
    assert not [path for path in off.get("/openapi.json").json["paths"] if "dashboard" in path or "panel" in path]


def test_the_data_routes_are_admin_only(http, keys, campaign) -> None:
    for path in ROUTES:
        assert http.get(path).status_code == 401
        refused = http.get(path, headers=bearer(keys["ingest"]))
        assert refused.status_code == 403 and refused.json["field"] == "Authorization"


def test_the_data_routes_are_rate_limited(db_path, keys) -> None:
    limited = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0.001, "RATE_BURST": 2}).test_client()
    answers = [limited.get(ROUTES[0], headers=bearer(keys["admin"])).status_code for _ in range(3)]
    assert answers == [200, 200, 429]


def test_the_listing_counts_the_stored_reports(http, keys, campaign, db_path) -> None:
    admin = bearer(keys["admin"])
    http.post("/v1/reports", json={"reports": make_reports(campaign, ["chrome"] * 40)}, headers=bearer(keys["ingest"]))
    http.post("/v1/campaigns", json=NUMERIC, headers=admin)
    http.post("/v1/campaigns", json={**CATEGORICAL, "name": "gone"}, headers=admin)
    http.post("/v1/campaigns/gone/close", headers=admin)
    rows = {row["name"]: row for row in http.get(ROUTES[0], headers=admin).json["campaigns"]}
    with open_storage(db_path) as storage:
        for name, row in rows.items():
            assert row["reports"] == storage.count_reports(name)
    assert rows["browser"]["reports"] == 40 and rows["browser"]["last_day"] is not None
    assert rows["load_ms"]["reports"] == 0 and rows["load_ms"]["last_day"] is None
    assert (rows["browser"]["state"], rows["gone"]["state"]) == ("open", "closed")
    assert rows["browser"]["kind"] == "local" and rows["browser"]["trust"] == "local"
    assert rows["browser"]["epsilon"] == campaign.epsilon


@pytest.mark.parametrize("spec", [CATEGORICAL, NUMERIC], ids=["frequencies", "mean"])
def test_the_panel_is_the_static_reports_own_text(http, keys, db_path, spec) -> None:
    admin = bearer(keys["admin"])
    assert http.get(f"/v1/campaigns/{spec['name']}/panel", headers=admin).status_code == 404  # no campaign
    created = client_sdk.load_spec(http.post("/v1/campaigns", json=spec, headers=admin).json["spec"])
    empty = http.get(f"/v1/campaigns/{spec['name']}/panel", headers=admin)
    assert empty.status_code == 404 and empty.json["type"].endswith(":no-estimate")
    values = (CATEGORICAL["domain"] * 100) if spec is CATEGORICAL else [float(v % 1000) for v in range(500)]
    http.post("/v1/reports", json={"reports": make_reports(created, values)}, headers=bearer(keys["ingest"]))
    panel = http.get(f"/v1/campaigns/{spec['name']}/panel", headers=admin).json
    report = render_table(report_data_from_db(Path(db_path), spec["name"]))
    assert panel["n"] == len(values)
    for line in panel["header"]:
        assert line in report
    for row in panel["tables"][0]["rows"]:
        assert all(cell in report for cell in row), row
    estimate = http.get(f"/v1/campaigns/{spec['name']}/estimate", headers=admin).json
    assert panel["central"]["ratio"] == pytest.approx(estimate["central_dp"]["ldp_to_central_ratio"])
    widths = [bound for p in panel["intervals"]["points"] for bound in (p["low"], p["high"])]
    shown = [b for r in sorted(estimate["values"], key=lambda r: -r["estimate"]) for b in (r["ci_low"], r["ci_high"])] \
        if estimate.get("values") else [[estimate["ci_low"], estimate["ci_high"]]]
    assert widths == pytest.approx(shown)
    assert [int(row[1].replace(",", "")) for row in panel["planner"]["rows"]] == sorted(
        int(row[1].replace(",", "")) for row in panel["planner"]["rows"])


def test_a_new_kinds_panel_is_its_static_reports_own_text(http, keys, db_path) -> None:
    "The quantiles kind (its own table, notes and figures): the panel's header and rows are the report's text"
    import numpy as np

    from .test_quantiles_kind import SPEC, _reports

    admin = bearer(keys["admin"])
    spec = http.post("/v1/campaigns", json=SPEC, headers=admin).json["spec"]
    values = np.random.default_rng(5).lognormal(4, 1, 800).clip(0, 999).tolist()
    answer = http.post("/v1/reports", json={"reports": _reports(spec, values, seed=6)}, headers=bearer(keys["ingest"]))
    assert answer.json["accepted"] == len(values)
    panel = http.get(f"/v1/campaigns/{SPEC['name']}/panel", headers=admin)
    assert panel.status_code == 200, panel.json
    report = render_table(report_data_from_db(Path(db_path), SPEC["name"]))
    assert panel.json["n"] == len(values) and panel.json["header"]
    for line in panel.json["header"]:
        assert line in report
    rows = [row for table in panel.json["tables"] for row in table["rows"]]
    assert rows
    for row in rows:
        assert all(str(cell) in report for cell in row), row
