"""A distributed campaign's batches last its spec's ``window`` (DAP's time precision: minutes to a day), on the
leader and on the helper: the batch a report names must be one of the window, the batch of a report naming none is
the leader's batch of receipt, a batch is collected once it has ended plus the grace, and the helper hands its
aggregate share over only then, on its own clock, whatever the leader asks.

The collector's clock (``collector.auth``) is set by the test, so the batches do not depend on when it runs."""

from __future__ import annotations

import json
import time
import types
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from collector.config import DEFAULTS
from collector.distributed.helper import checksum
from collector.distributed.peer import PeerClient, PeerRefused
from collector.distributed.store import DistStore
from collector.storage import open_storage
from estimators.report import report_schema
from ldp_telemetry.cli import main

from ..helpers import on_both_backends
from .kit import PEER_TOKEN, Pair, honest_reports, past_grace, spec_json, values_for
from .test_processes import Aggregators, call, today

GRACE = DEFAULTS["COLLECT_GRACE"]


class Clock:
    "The collector's ``time`` module as collector.auth sees it: ``time()`` is ``now``"

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    "Five seconds into a minute of today (the collector's API keys and HPKE keys are today's)"
    from collector import auth

    frozen = Clock((int(time.time() + auth.CLOCK_OFFSET) // 60) * 60 + 5.0)
    monkeypatch.setattr(auth, "time", types.SimpleNamespace(time=frozen.time))
    return frozen


def helper_share(pair: Pair, spec: Any, batch: str) -> dict:
    "Ask the helper for its aggregate share of ``batch`` as a leader does, with the right count and checksum"
    with open_storage(pair.helper_db) as storage:
        store = DistStore(storage)
        key = (spec.name, spec.fingerprint, batch)
        count, _ = store.agg_share(key)
        ids = store.helper_valid_ids(key)
    body = {"campaign": spec.name, "fingerprint": spec.fingerprint, "batch": batch, "report_count": count,
            "checksum": checksum(ids)}
    return PeerClient(pair.transport, PEER_TOKEN, retries=0).aggregate_share(body)


@on_both_backends
def test_a_campaign_of_one_minute_batches_is_collected_its_grace_after_each_minute(tmp_path, clock):
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", min_batch=2, window="1m"))
    assert spec.prio3 is not None and spec.prio3.batch_seconds == 60
    batch, later = spec.prio3.batch_at(clock.now), spec.prio3.batch_at(clock.now + 60)
    assert batch.endswith("Z") and len(batch) == 17
    assert pair.upload(honest_reports(spec, block, values_for("histogram", 3), batch=batch))["accepted"] == 3
    assert pair.upload(honest_reports(spec, block, ["a"], batch=later))["accepted"] == 1  # the next minute's
    day_named = pair.upload(honest_reports(spec, block, ["a"], batch=batch[:10]))  # a day: not a 1-minute batch
    assert day_named["rejected"] == 1 and day_named["errors"][0]["field"] == "reports[0].payload.batch", day_named
    assert "not a batch of window '1m'" in day_named["errors"][0]["reason"]
    early = pair.collect(spec.name, batch)
    assert early.status_code == 409 and early.json["type"].endswith("batch-open"), early.json
    assert "1m batch" in early.json["detail"]
    clock.now = spec.prio3.batch_end(batch) + GRACE - 1  # the minute has ended, not its grace
    assert pair.collect(spec.name, batch).status_code == 409
    clock.now += 1
    released = pair.collect(spec.name, batch)
    assert released.status_code == 200 and released.json["batch"] == batch, released.json
    assert released.json["report_count"] == 3
    progress = pair.leader.get(f"/v1/campaigns/{spec.name}/progress", headers=pair.admin).json
    assert {item["batch"]: item["state"] for item in progress["batches"]} == {batch: "collected", later: "open"}
    wrong_name = pair.collect(spec.name, batch[:10])
    assert wrong_name.status_code == 400 and wrong_name.json["field"] == "batch", wrong_name.json
    estimate = pair.leader.get(f"/v1/campaigns/{spec.name}/estimate", headers=pair.admin).json
    assert estimate["batch"] == batch and estimate["batches"] == [batch] and estimate["n"] == 3
    printed = CliRunner().invoke(main, ["report", spec.name, "--db", str(pair.leader_db), "--format", "json",
                                        "--since", batch[:10], "--until", batch[:10]])
    assert printed.exit_code == 0, printed.output
    report = json.loads(printed.output)
    jsonschema.Draft202012Validator(report_schema()).validate(report)  # a minute's batch name is a batch
    assert report["batches"] == [batch] and report["n"] == 3
    text = CliRunner().invoke(main, ["report", spec.name, "--db", str(pair.leader_db)]).output
    assert f"batches: {batch}" in text


@on_both_backends
def test_the_helper_refuses_its_share_of_a_batch_still_open_on_its_own_clock(tmp_path, clock):
    """A leader (dishonest, or with its clock ahead) asks the helper directly for its share of today's open batch,
    with the right report count and checksum: 409 batch-open, and nothing is released or stored; once the batch
    has ended plus the grace on the helper's clock, the same request is answered"""
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("histogram", min_batch=2))
    assert spec.prio3 is not None and spec.prio3.window == "day"
    day = spec.prio3.batch_at(clock.now)
    assert pair.upload(honest_reports(spec, block, values_for("histogram", 4), batch=day))["accepted"] == 4
    pair.aggregate()  # the helper holds its share of the 4 reports
    with pytest.raises(PeerRefused) as refused:
        helper_share(pair, spec, day)
    assert refused.value.status == 409 and refused.value.slug == "batch-open", refused.value.detail
    assert "helper's clock" in refused.value.detail
    clock.now = spec.prio3.batch_end(day) + GRACE - 1
    with pytest.raises(PeerRefused):
        helper_share(pair, spec, day)
    assert pair.upload(honest_reports(spec, block, ["a"], batch=day))["accepted"] == 1  # it still takes reports
    clock.now += 1
    assert helper_share(pair, spec, day)["report_count"] == 4


def test_a_leader_a_day_ahead_gets_no_share_of_the_real_helpers_open_batch(tmp_path, monkeypatch):
    """Two real processes: a leader restarted with its clock past today's grace collects today's batch; the helper,
    on its own clock, refuses its share (409 batch-open) and the leader answers that, releasing nothing"""
    servers = Aggregators(tmp_path)
    with servers.helper(monkeypatch):
        with servers.leader(monkeypatch, interval=0):
            spec, block = servers.create(spec_json("histogram", min_batch=2))
            assert servers.upload(honest_reports(spec, block, values_for("histogram", 3)))["accepted"] == 3
        servers.clock_offset = past_grace(today()) - time.time()  # the leader's clock only: the helper runs on
        with servers.leader(monkeypatch, interval=0):
            status, problem = servers.collect(spec.name)
            _, releases = call("GET", f"{servers.leader_url}/v1/campaigns/{spec.name}/releases", servers.admin)
    assert status == 409 and problem["type"].endswith("batch-open"), problem
    assert "helper's clock" in problem["detail"] and releases["releases"] == []
