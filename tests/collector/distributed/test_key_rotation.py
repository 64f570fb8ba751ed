"""HPKE key rotation with overlap (``collector.distributed.hpke_keys``), both aggregators in one process.

The newest key is published first and named in the campaign listing; a report sealed to an older key opens for
``HPKE_OVERLAP_DAYS`` after its successor was made and is counted; after that it is refused by name,
``outdated-config``, by the leader at upload (its own key, or the helper's once it has read the helper's configs)
and by the helper in a job (a leader that has not read them)."""

from __future__ import annotations

import pytest

from collector import auth
from collector.config import DEFAULTS
from collector.distributed import hpke_keys
from collector.distributed.leader import refresh_helper_configs
from collector.distributed.peer import PeerClient

from ..helpers import on_both_backends
from .kit import PEER_TOKEN, Pair, end_day, exact_sum, honest_reports, opened, spec_json, truth, values_for

pytestmark = on_both_backends  # each test on SQLite files and on PostgreSQL databases
DAY = 86_400
OVERLAP = int(DEFAULTS["HPKE_OVERLAP_DAYS"])


@pytest.fixture
def pair(tmp_path):
    return Pair(tmp_path)


def rotate(path) -> int:
    with opened(path) as store:
        return hpke_keys.rotate(store, auth.utc_today())


def refresh(pair: Pair) -> int:
    with opened(pair.leader_db) as store:
        return refresh_helper_configs(store, PeerClient(pair.transport, PEER_TOKEN, retries=0))


def listed_block(pair: Pair, name: str) -> dict:
    return pair.leader.get(f"/v1/campaigns/{name}", headers=pair.ingest).json["aggregators"]


def rejected_reasons(answer: dict) -> list[str]:
    return [r["reason"] for r in answer.get("errors", [])]


def test_the_newest_key_is_published_first_and_named_in_the_listing(pair):
    spec, block = pair.create(spec_json("histogram"))
    old_leader, old_helper = block["leader"]["hpke_config"]["id"], block["helper"]["hpke_config"]["id"]
    new_leader, new_helper = rotate(pair.leader_db), rotate(pair.helper_db)
    assert new_leader != old_leader and new_helper != old_helper
    published = pair.leader.get("/v1/hpke_config").json["configs"]
    assert [c["id"] for c in published] == [new_leader, old_leader]
    assert refresh(pair) == 1 and refresh(pair) == 0  # the second read changes nothing
    listed = listed_block(pair, spec.name)
    assert (listed["leader"]["hpke_config"]["id"], listed["helper"]["hpke_config"]["id"]) == (new_leader, new_helper)


def test_reports_sealed_to_the_old_keys_open_in_the_overlap_and_every_report_is_counted(pair):
    spec, old_block = pair.create(spec_json("histogram", min_batch=5))
    before = values_for("histogram", 12)
    sealed_before = honest_reports(spec, old_block, before)  # sealed and queued on devices before the rotation
    rotate(pair.leader_db), rotate(pair.helper_db)
    refresh(pair)
    new_block = listed_block(pair, spec.name)
    after = values_for("histogram", 9)
    answer = pair.upload(sealed_before[:6] + honest_reports(spec, new_block, after) + sealed_before[6:])
    assert answer["accepted"] == 21 and not answer["rejected"], answer
    assert pair.aggregate().aggregated == 21
    batch = end_day()
    response = pair.collect(spec.name, batch)
    assert response.status_code == 200, response.json
    assert response.json["report_count"] == 21 and not response.json["rejected"]
    assert exact_sum(pair.leader_db, pair.helper_db, spec, batch) == (21, 21, truth("histogram", before + after))


def test_a_report_sealed_to_a_retired_key_is_refused_by_name(pair):
    spec, old_block = pair.create(spec_json("histogram", min_batch=2))
    rotate(pair.leader_db)
    auth.CLOCK_OFFSET += OVERLAP * DAY  # the overlap has passed: the old leader key is retired
    answer = pair.upload(honest_reports(spec, old_block, ["a"]))
    assert answer["accepted"] == 0 and "outdated-config" in rejected_reasons(answer)[0], answer
    assert [c["id"] for c in pair.leader.get("/v1/hpke_config").json["configs"]] == [
        listed_block(pair, spec.name)["leader"]["hpke_config"]["id"]]  # a retired key is no longer published
    with opened(pair.leader_db) as store:
        assert store.rejections((spec.name, spec.fingerprint, auth.utc_today())) == {"outdated-config": 1}


def test_a_share_sealed_to_the_helpers_retired_key_is_refused_by_the_leader_and_by_the_helper(pair):
    spec, old_block = pair.create(spec_json("histogram", min_batch=2))
    rotate(pair.helper_db)
    auth.CLOCK_OFFSET += (OVERLAP + 1) * DAY  # retired for batches after the retirement day too
    stale = honest_reports(spec, old_block, ["a", "b"])
    # a leader that has not read the helper's configs since accepts the shares; the helper refuses them in the job
    assert pair.upload(stale[:1])["accepted"] == 1
    assert pair.aggregate().rejected == 1
    key = (spec.name, spec.fingerprint, auth.utc_today())
    with opened(pair.leader_db) as store:
        assert store.rejections(key) == {"outdated-config": 1}
    # once it has read them, the leader refuses such a share at upload, by the same name
    refresh(pair)
    answer = pair.upload(stale[1:])
    assert answer["accepted"] == 0 and "outdated-config" in rejected_reasons(answer)[0], answer
    with opened(pair.leader_db) as store:
        assert store.rejections(key) == {"outdated-config": 2}


def test_a_report_of_an_earlier_batch_accepted_before_the_retirement_is_not_lost_in_a_late_job(pair):
    "An acknowledged report stays counted when its job runs after the helper key it was sealed to retired"
    spec, old_block = pair.create(spec_json("histogram", min_batch=2))
    rotate(pair.helper_db)
    auth.CLOCK_OFFSET += (OVERLAP - 1) * DAY  # the last day of the overlap
    assert pair.upload(honest_reports(spec, old_block, ["a", "b"]))["accepted"] == 2
    auth.CLOCK_OFFSET += 3 * DAY  # the helper was down: the job runs days later
    assert pair.aggregate().aggregated == 2
