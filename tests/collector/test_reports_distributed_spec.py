"""Until the collector runs as a leader, its local ingest refuses reports for a distributed campaign by name
(and the estimators have no local-DP estimator for one), instead of failing on the unknown mechanism 'prio3'."""

from __future__ import annotations

import uuid

import pytest

import client_sdk
from collector.storage import open_storage
from estimators import mechanism_for

from .helpers import bearer, table_counts

DISTRIBUTED = {"name": "apps", "trust": "distributed", "prio3": "histogram", "domain": ["a", "b", "c"],
               "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian"}


def test_local_ingest_refuses_a_distributed_campaign(http, keys, db_path):
    with open_storage(db_path) as storage:
        version, _ = storage.create_campaign(DISTRIBUTED, "2026-11-30")
    report = {"report_id": str(uuid.uuid4()), "campaign": "apps", "fingerprint": version.fingerprint,
              "payload": {"public_share": "", "leader_share": {}, "helper_share": {}}}
    response = http.post("/v1/reports", json={"reports": [report, report | {"report_id": str(uuid.uuid4())}]},
                         headers=bearer(keys["ingest"]))
    assert response.status_code == 200
    assert (response.json["accepted"], response.json["rejected"]) == (0, 2)
    errors = response.json["errors"]
    assert [e["field"] for e in errors] == ["reports[0].campaign", "reports[1].campaign"]
    assert all("distributed" in e["reason"] for e in errors)
    assert table_counts(db_path)["reports"] == 0


def test_estimators_refuse_a_distributed_spec():
    with pytest.raises(ValueError, match="distributed"):
        mechanism_for(client_sdk.load_spec(DISTRIBUTED))
