"""Through real servers (a leader and a helper on loopback, SQLite files): the collection past a campaign's budget
is refused 409 budget-exhausted (the budget is checked before the batch's size: the second batch is empty), and the
budget route shows what the first release spent."""

from __future__ import annotations

import time

import requests

from client_sdk.clock import day_start, utc_day

from .kit import past_grace
from .test_e2e_devices import aggregators, histogram_spec


def test_a_real_leader_refuses_the_collection_past_the_budget(tmp_path):
    with aggregators(tmp_path) as servers:
        spec, block = servers.create(histogram_spec("capped", ["a", "b"], min_batch=10,
                                                    budget={"epsilon": 1.0}))
        assert servers.upload(spec, block, ["a", "b"] * 5) == 10
        first = servers.day
        second = utc_day(day_start(first) + 86_400)
        servers.offset = past_grace(second) - time.time()  # one restart: both batches have ended
        servers.restart_leader(servers.offset)
        assert servers.call("POST", "/v1/campaigns/capped/collect", {"batch": first})["report_count"] == 10
        refused = requests.post(servers.leader_url + "/v1/campaigns/capped/collect", json={"batch": second},
                                headers={"Authorization": f"Bearer {servers.admin}"}, timeout=60)
        assert refused.status_code == 409 and refused.headers["Content-Type"] == "application/problem+json"
        assert refused.json()["type"] == "urn:ldp-telemetry:problem:budget-exhausted"
        view = servers.call("GET", "/v1/campaigns/capped/budget")
        assert view["charges"] == 1 and view["spent"]["basic"]["epsilon"] == 1.0
        assert view["remaining"] == {"epsilon": 0.0} and view["ledger"][0]["release"].endswith(first)
