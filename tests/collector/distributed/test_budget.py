"""A distributed campaign's budget on the leader (both backends): each collected batch is recorded in the release
ledger with its calibrated noise, the one past the budget is refused 409 budget-exhausted before anything is drawn,
and GET /v1/campaigns/NAME/budget shows the spend (basic and tight) and what remains."""

from __future__ import annotations

import pytest

from ..helpers import on_both_backends
from .kit import Pair, end_day, honest_reports, query, spec_json, values_for

pytestmark = on_both_backends


def test_the_collection_past_the_budget_is_refused_by_name(tmp_path):
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", budget={"epsilon": 2.0, "delta": 1e-5}))
    for _ in range(2):
        pair.upload(honest_reports(spec, block, values_for("histogram", 10)))
        pair.aggregate()
        assert pair.collect(spec.name, end_day()).status_code == 200
    pair.upload(honest_reports(spec, block, values_for("histogram", 10)))
    pair.aggregate()
    day = end_day()
    refused = pair.collect(spec.name, day)
    assert refused.status_code == 409, refused.json
    assert refused.json["type"].endswith(":budget-exhausted") and refused.json["field"] == "budget"
    assert refused.json["spent"] == {"epsilon": 2.0, "delta": pytest.approx(2e-6)}
    assert query(pair.leader_db, "SELECT state FROM dist_batches WHERE batch = ?", (day,)) == [("open",)]
    assert query(pair.leader_db, "SELECT count(*) FROM dist_releases") == [(2,)]

    answer = pair.leader.get(f"/v1/campaigns/{spec.name}/budget", headers=pair.admin)
    assert answer.status_code == 200
    view = answer.json
    assert [row["source"] for row in view["ledger"]] == ["batch", "batch"]
    assert view["ledger"][0]["mechanism"]["type"] == "discrete_gaussian"
    assert view["spent"]["basic"]["epsilon"] == 2.0 and view["remaining"] == {"epsilon": 0.0,
                                                                             "delta": pytest.approx(8e-6)}
    assert view["spent"]["tight"]["bound"] == "exact" and view["spent"]["tight"]["epsilon"] < 2.0
    assert pair.leader.get(f"/v1/campaigns/{spec.name}/budget", headers=pair.ingest).status_code == 403


def test_two_concurrent_collections_cannot_both_pass_the_budget(tmp_path, monkeypatch):
    """Two batches collected at the same moment, each checked (early) before either is recorded: the ledger's lock
    and its second check let one through; the other is refused 409 and its batch stays open"""
    import threading

    from collector.distributed.peer import PeerClient

    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", budget={"epsilon": 1.0, "delta": 1e-5}))  # one release
    days = []
    for _ in range(2):
        pair.upload(honest_reports(spec, block, values_for("histogram", 10)))
        pair.aggregate()
        days.append(end_day())
    both_checked = threading.Barrier(2, timeout=30)
    share = PeerClient.aggregate_share

    def after_the_early_check(self, body):  # both collections have passed release_ledger.check by now
        both_checked.wait()
        return share(self, body)

    monkeypatch.setattr(PeerClient, "aggregate_share", after_the_early_check)
    answers: dict[str, int] = {}

    def collect(day: str) -> None:
        answers[day] = pair.collect(spec.name, day).status_code

    threads = [threading.Thread(target=collect, args=(day,)) for day in days]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(answers.values()) == [200, 409], answers
    refused = next(day for day, status in answers.items() if status == 409)
    assert query(pair.leader_db, "SELECT state FROM dist_batches WHERE batch = ?", (refused,)) == [("open",)]
    assert query(pair.leader_db, "SELECT count(*) FROM dist_releases") == [(1,)]
    view = pair.leader.get(f"/v1/campaigns/{spec.name}/budget", headers=pair.admin).json
    assert view["charges"] == 1 and view["spent"]["basic"]["epsilon"] == 1.0
