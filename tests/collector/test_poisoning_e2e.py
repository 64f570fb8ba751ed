"""End to end: fake all-ones reports through a public key on a real ``serve`` (loopback, a SQLite file).

Without the ones test the estimate, its JSON report and its HTML page say the frequencies are impossible; with
``max_ones`` the fake reports are refused by name and the estimate is back near the truth, with no flag."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import numpy as np
import pytest

import client_sdk
from collector.storage import Storage
from estimators.mechanisms import mechanism_for
from estimators.ones_test import max_ones_for

from ..tolerances import k_sigma
from .helpers import ldp_command, make_reports, running_server

BROWSERS = ["chrome", "firefox", "safari"]
APPS = [f"app{i}" for i in range(16)]
PUBLIC_BATCH = 100  # PUBLIC_MAX_BATCH_REPORTS


def call(url: str, key: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def post_reports(url: str, key: str, reports: list[dict]) -> list[dict]:
    answers = []
    for start in range(0, len(reports), PUBLIC_BATCH):
        answers.append(call(url + "/v1/reports", key, "POST", {"reports": reports[start:start + PUBLIC_BATCH]}))
    return answers


def fakes(spec: client_sdk.Spec, payload: str, count: int) -> list[dict]:
    template = make_reports(spec, [spec.domain[0]] * count)  # fresh report ids
    return [{**report, "payload": payload} for report in template]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("poisoning")
    db_path = directory / "collector.db"
    with Storage(db_path) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
        ingest, _ = storage.create_key("ingest", "2024-01-01")
        public, _ = storage.create_key("ingest", "2024-01-01", public=True, campaigns=["browser", "apps"])
    plain = client_sdk.load_spec({"name": "apps", "mechanism": "oue", "epsilon": 1.0, "domain": APPS})
    device = mechanism_for(plain).device
    max_ones = max_ones_for(len(APPS), device.p_star, device.q_star, 1e-3)
    specs = [{"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": BROWSERS},
             {**plain.to_dict(derived=False), "max_ones": max_ones}]
    with running_server(db_path, directory / "server.log", workers=1) as (url, _):
        stored = {spec["name"]: client_sdk.load_spec(call(url + "/v1/campaigns", admin, "POST", spec)["spec"])
                  for spec in specs}
        yield {"url": url, "admin": admin, "ingest": ingest, "public": public, "dir": directory, "specs": stored,
               "max_ones": max_ones}


def test_fake_all_ones_reports_are_flagged_in_the_estimate_json_report_and_html(server):
    url, spec = server["url"], server["specs"]["browser"]
    honest = make_reports(spec, ["chrome"] * 200 + ["firefox"] * 100, seed=3)
    assert call(url + "/v1/reports", server["ingest"], "POST", {"reports": honest})["accepted"] == 300
    answers = post_reports(url, server["public"], fakes(spec, "e0", 400))  # every bit of three values set
    assert sum(answer["accepted"] for answer in answers) == 400
    estimate = call(url + "/v1/campaigns/browser/estimate", server["admin"])
    assert [flag["code"] for flag in estimate["flags"]] == ["impossible-frequencies"]
    assert sum(row["estimate"] for row in estimate["values"]) > 3
    pages = {}
    for form in ("json", "html"):
        out = server["dir"] / f"browser.{form}"
        subprocess.run(ldp_command("report", "browser", "--url", url, "--token", server["admin"], "--format", form,
                                   "--out", str(out)), check=True, capture_output=True, timeout=120)
        pages[form] = out.read_text(encoding="utf-8")
    assert json.loads(pages["json"])["flags"][0]["code"] == "impossible-frequencies"
    assert '<p class="warning" role="alert">WARNING: impossible frequencies' in pages["html"]


def test_the_ones_test_refuses_the_fake_reports_and_the_estimate_returns_near_the_truth(server):
    url, spec = server["url"], server["specs"]["apps"]
    assert spec.max_ones == server["max_ones"]
    rng = np.random.default_rng(31)
    share = np.array([0.4, 0.2, 0.1] + [0.3 / 13] * 13)
    values = [APPS[i] for i in rng.choice(len(APPS), size=3000, p=share)]
    honest = make_reports(spec, values, seed=4)
    answer = call(url + "/v1/reports", server["ingest"], "POST", {"reports": honest})
    assert answer["accepted"] + answer["rejected"] == len(honest)
    answers = post_reports(url, server["public"], fakes(spec, "ffff", 300))  # all 16 bits set
    assert sum(a["accepted"] for a in answers) == 0 and sum(a["rejected"] for a in answers) == 300
    assert all(f"takes at most {server['max_ones']}" in error["reason"] for a in answers for error in a["errors"])
    estimate = call(url + "/v1/campaigns/apps/estimate", server["admin"])
    assert estimate["flags"] == [] and estimate["defence"]["max_ones"] == server["max_ones"]
    assert estimate["n"] == answer["accepted"]
    k = k_sigma(len(APPS))
    for row in estimate["values"]:
        truth = values.count(row["value"]) / len(values)
        assert abs(row["estimate"] - truth) <= k * row["std_error"], row
