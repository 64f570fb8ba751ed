"""A local campaign's budget: published windows are charged one report per new day in the release ledger (both
backends, its own migrations), the window past the budget is refused 409 budget-exhausted, and a device under the
SDK's default policy stops recording at the same figure (one rule, ``client_sdk.budget``)."""

from __future__ import annotations

import client_sdk
from client_sdk import RecordStatus, ReportPolicy
from collector.storage import open_storage

from ..client_sdk.fakes import FakeCollector, make_client
from .helpers import CATEGORICAL, bearer, on_both_backends

BUDGETED = {**CATEGORICAL, "name": "budgeted", "epsilon": 0.5, "budget": {"epsilon": 1.5}}  # three reports


@on_both_backends
def test_published_windows_are_charged_per_new_day_and_refused_past_the_budget(http, keys, db_path):
    admin = bearer(keys["admin"])
    assert http.post("/v1/campaigns", json=BUDGETED, headers=admin).status_code == 201

    def publish(window: str):
        return http.post("/v1/campaigns/budgeted/publish", json={"window": window}, headers=admin)

    assert publish("2024-03-01:2024-03-02").json["charges"] == 2
    assert publish("2024-03-01:2024-03-02").json["charges"] == 0  # the same window again: nothing new
    refused = publish("2024-03-02:2024-03-04")  # two new days: 0.5 * 4 > 1.5
    assert refused.status_code == 409 and refused.json["type"].endswith(":budget-exhausted"), refused.json
    assert refused.json["charge"] == {"epsilon": 1.0, "delta": 0.0}
    assert publish("2024-03-02:2024-03-03").json["charges"] == 1  # one new day fits exactly
    view = http.get("/v1/campaigns/budgeted/budget", headers=admin).json
    assert view["charges"] == 3 and view["spent"]["basic"]["epsilon"] == 1.5 and view["remaining"] == {"epsilon": 0}
    assert publish("bad").status_code == 400 and publish("bad").json["field"] == "window"
    with open_storage(db_path) as storage:  # the ledger's table came with its registered migration
        assert ("release_ledger", 1) in [tuple(r) for r in storage._all("SELECT kind, version FROM kind_migrations")]


def test_a_device_stops_at_the_figure_the_ledger_refuses_at(tmp_path):
    spec = client_sdk.load_spec(BUDGETED)
    fake = FakeCollector()
    fake.extra_campaigns = [{"name": spec.name, "version": 1, "fingerprint": spec.fingerprint,
                             "spec": spec.to_dict()}]
    now = [86_400.0 * 19_783 + 10]  # 2024-03-01
    client = make_client(tmp_path, fake, policy=ReportPolicy(), clock=lambda: now[0], campaigns=[spec.name])
    statuses = []
    for _ in range(5):
        statuses.append(client.record(spec.name, "chrome").status)
        now[0] += 86_400
    spent = client.spent(spec.name).epsilon
    client.close()
    assert statuses == [RecordStatus.QUEUED] * 3 + [RecordStatus.REFUSED_BY_POLICY] * 2
    assert spent == 1.5  # = the ledger's basic figure when it refuses the fourth day (the test above)


def test_reports_and_campaign_show_state_the_spend(http, keys, db_path):
    import json
    import subprocess

    from collector.reporting import report_data_from_db
    from estimators.report import render_html, render_json

    from .helpers import ldp_command, make_reports

    admin = bearer(keys["admin"])
    spec = client_sdk.load_spec(http.post("/v1/campaigns", json=BUDGETED, headers=admin).json["spec"])
    reports = make_reports(spec, [spec.domain[i % 4] for i in range(20)])
    assert http.post("/v1/reports", json={"reports": reports}, headers=bearer(keys["ingest"])).status_code == 200
    http.post("/v1/campaigns/budgeted/publish", json={"window": "2024-03-01"}, headers=admin)
    data = report_data_from_db(db_path, spec.name)
    report = json.loads(render_json(data))
    assert report["budget"]["spent"]["basic"]["epsilon"] == 0.5 and report["budget"]["remaining"] == {"epsilon": 1.0}
    assert "privacy spent per device over 1 release charge(s)" in render_html(data)
    shown = subprocess.run(ldp_command("campaign", "show", "budgeted", "--db", str(db_path)), capture_output=True,
                           text=True, check=True)
    assert json.loads(shown.stdout)["budget"]["remaining"] == {"epsilon": 1.0}
