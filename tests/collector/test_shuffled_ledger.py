"""Shuffled batches at the collector (both backends): only a key of role ``shuffler`` posts them, each enters the
release ledger at its amplified guarantee, a batch past the budget is refused 409 before anything is stored (two
at once too: the check is made under the ledger's lock), and every report format shows the amplified (epsilon,
delta) per batch beside epsilon0."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import uuid

import pytest
from dp_accounting.pld import common, privacy_loss_distribution

import client_sdk
from collector.storage import open_storage
from estimators.shuffle import amplified_epsilon

from .helpers import bearer, ldp_command, make_reports, on_both_backends

EPSILON0, DELTA, SIZE = 2.0, 1e-6, 200
SHUFFLED = {"name": "browser", "mechanism": "grr", "epsilon": EPSILON0, "delta": DELTA,
            "domain": ["chrome", "firefox", "safari"], "trust": "shuffled", "shuffle_batch": SIZE}


def _shuffler_key(db_path) -> str:
    with open_storage(db_path) as storage:
        return storage.create_key("shuffler", "2024-01-01")[0]


def _batch(spec: client_sdk.Spec, seed: int, size: int = SIZE) -> dict:
    reports = make_reports(spec, [spec.domain[i % 3] for i in range(size)], seed=seed)
    return {"batch_id": str(uuid.UUID(int=seed, version=4)), "reports": reports}


def _create(http, keys, budget: dict | None = None) -> client_sdk.Spec:
    body = {**SHUFFLED, **({"budget": budget} if budget else {})}
    created = http.post("/v1/campaigns", json=body, headers=bearer(keys["admin"]))
    assert created.status_code == 201, created.json
    return client_sdk.Spec.from_dict(created.json["spec"])


@on_both_backends
def test_a_device_key_cannot_pass_reports_off_as_a_shuffled_batch(http, keys, db_path):
    "The attacker holds an ingest key (every device has one) and posts a fake 'shuffled' batch: 403, nothing stored"
    spec = _create(http, keys)
    fake = _batch(spec, 1, size=5)
    for role in ("ingest", "admin"):
        refused = http.post("/v1/shuffled-batches", json=fake, headers=bearer(keys[role]))
        assert refused.status_code == 403 and refused.content_type == "application/problem+json"
        assert refused.json["field"] == "Authorization" and "shuffler" in refused.json["detail"]
    with open_storage(db_path) as storage:
        assert storage.row_count("reports") == 0
    shuffler = bearer(_shuffler_key(db_path))
    assert http.post("/v1/reports", json={"reports": fake["reports"]}, headers=shuffler).status_code == 403
    assert http.get("/v1/campaigns/browser", headers=shuffler).status_code == 200  # it reads specs
    assert http.post("/v1/shuffled-batches", json=fake, headers=shuffler).json["accepted"] == 5


@on_both_backends
def test_each_batch_is_charged_its_amplified_guarantee_and_the_budget_refuses_the_next(http, keys, db_path):
    amplified = amplified_epsilon(EPSILON0, SIZE, DELTA)  # the independent figure: the bound itself
    assert amplified < EPSILON0
    spec = _create(http, keys, budget={"epsilon": 2.5 * amplified})  # two batches fit, a third does not
    shuffler, admin = bearer(_shuffler_key(db_path)), bearer(keys["admin"])
    first, second, third = (_batch(spec, seed) for seed in (1, 2, 3))
    for batch in (first, second, first):  # the resent first batch is recorded once and never refused
        answer = http.post("/v1/shuffled-batches", json=batch, headers=shuffler)
        assert answer.status_code == 200, answer.json
    refused = http.post("/v1/shuffled-batches", json=third, headers=shuffler)
    assert refused.status_code == 409 and refused.json["type"].endswith(":budget-exhausted"), refused.json
    assert refused.json["charge"]["epsilon"] == pytest.approx(amplified, rel=1e-12)
    with open_storage(db_path) as storage:
        assert storage.row_count("reports") == 2 * SIZE  # the refused batch stored nothing
    view = http.get("/v1/campaigns/browser/budget", headers=admin).json
    assert [row["source"] for row in view["ledger"]] == ["shuffled", "shuffled"]
    assert view["ledger"][0]["mechanism"]["shuffled"] == {"epsilon0": EPSILON0, "batch_size": SIZE}
    assert view["spent"]["basic"]["epsilon"] == pytest.approx(2 * amplified, rel=1e-12)
    assert view["spent"]["basic"]["delta"] == pytest.approx(2 * DELTA, rel=1e-12)
    # the tight figure: two (amplified, DELTA)-DP releases composed by dp-accounting, computed here on its own
    one = privacy_loss_distribution.from_privacy_parameters(common.DifferentialPrivacyParameters(amplified, DELTA),
                                                            value_discretization_interval=1e-4)
    tight = one.compose(one).get_epsilon_for_delta(view["spent"]["tight"]["delta"])
    assert view["spent"]["tight"]["epsilon"] == pytest.approx(tight, rel=1e-6)
    assert view["spent"]["tight"]["epsilon"] <= 2 * amplified + 2e-4  # at most one grid step per release above
    published = http.post("/v1/campaigns/browser/publish", json={"window": "2024-03-01"}, headers=admin)
    assert published.status_code == 409 and published.json["type"].endswith(":releases-are-batches")


def test_every_report_format_shows_the_amplified_guarantee_per_batch(http, keys, db_path):
    from collector.reporting import report_data_from_db
    from estimators.report import render_html, render_json, render_markdown, render_table

    spec = _create(http, keys)
    shuffler = bearer(_shuffler_key(db_path))
    for seed in (1, 2):
        assert http.post("/v1/shuffled-batches", json=_batch(spec, seed), headers=shuffler).status_code == 200
    assert http.post("/v1/shuffled-batches", json=_batch(spec, 3, size=50), headers=shuffler).status_code == 200
    data = report_data_from_db(db_path, spec.name)
    full, short = amplified_epsilon(EPSILON0, SIZE, DELTA), amplified_epsilon(EPSILON0, 50, DELTA)
    expected = [f"each report epsilon0 = {EPSILON0:.4g}-LDP", f"1 batch of 50: ({short:.4g}, 1e-06)-DP",
                f"2 batches of 200: ({full:.4g}, 1e-06)-DP", "Feldman, McMillan, Talwar"]
    for text in (render_table(data), render_markdown(data, image_prefix=None).text, render_html(data, plots=[])):
        for line in expected:
            assert line in text
    assert json.loads(render_json(data))["shuffle"]["batches"][0]["epsilon"] == short


def test_keys_create_makes_a_shuffler_key(tmp_path):
    database = tmp_path / "collector.db"
    made = subprocess.run(ldp_command("keys", "create", "--db", str(database), "--role", "shuffler"),
                          capture_output=True, text=True, check=True)
    assert made.stdout.startswith("ldp_") and "role shuffler" in made.stderr
    with open_storage(database) as storage:
        assert storage.find_key(made.stdout.strip()).role == "shuffler"


@on_both_backends
def test_two_concurrent_batches_past_the_budget_together_one_is_stored_the_other_refused_whole(
        http, keys, db_path, monkeypatch):
    """Two shufflers post a batch each at the same moment; the budget holds one.  Both pass the first look at the
    budget together (a barrier holds each request's first reading of the ledger until the other's has come), so
    only the check under the ledger's lock, in the reports' transaction, can refuse one: exactly one is stored,
    the other gets 409 budget-exhausted and none of its reports is stored (its shuffler discards it)"""
    from collector import release_ledger

    amplified = amplified_epsilon(EPSILON0, SIZE, DELTA)
    spec = _create(http, keys, budget={"epsilon": 1.5 * amplified})
    shufflers = [bearer(_shuffler_key(db_path)) for _ in range(2)]
    batches = [_batch(spec, seed) for seed in (11, 12)]
    barrier, first_reading = threading.Barrier(2, timeout=10), threading.local()
    real_spent = release_ledger.spent

    def spent_after_both_looked(storage, name):
        if not getattr(first_reading, "done", False):
            first_reading.done = True
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()
        return real_spent(storage, name)

    monkeypatch.setattr(release_ledger, "spent", spent_after_both_looked)
    answers: list = [None, None]

    def post(i: int) -> None:
        answers[i] = http.post("/v1/shuffled-batches", json=batches[i], headers=shufflers[i])

    threads = [threading.Thread(target=post, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not barrier.broken  # both requests did look at the budget before either recorded its batch
    assert sorted(answer.status_code for answer in answers) == [200, 409], [a.json for a in answers]
    stored, refused = (batches[i] for i in sorted(range(2), key=lambda i: answers[i].status_code))
    assert next(a for a in answers if a.status_code == 409).json["type"].endswith(":budget-exhausted")
    with open_storage(db_path) as storage:
        ids = {row["report_id"] for row in storage.iter_reports()}
        assert [row["batch_id"] for row in storage.table_rows("shuffled_batches")] == [stored["batch_id"]]
    assert ids == {r["report_id"] for r in stored["reports"]}  # the whole batch, and nothing of the refused one
    view = http.get("/v1/campaigns/browser/budget", headers=bearer(keys["admin"])).json
    assert [row["release"].rsplit(":", 1)[1] for row in view["ledger"]] == [stored["batch_id"]]
    assert view["spent"]["basic"]["epsilon"] == pytest.approx(amplified, rel=1e-12)
    monkeypatch.setattr(release_ledger, "spent", real_spent)
    assert http.post("/v1/shuffled-batches", json=refused, headers=shufflers[0]).status_code == 409  # refused again
    resent = http.post("/v1/shuffled-batches", json=stored, headers=shufflers[1])  # the stored one: never refused
    assert resent.status_code == 200 and resent.json["duplicate"] == SIZE


def test_two_batches_in_one_group_commit_the_second_is_refused_and_the_first_stored(http, keys, db_path):
    """SQLite's group commit runs the requests queued meanwhile in one transaction on the leader's connection: the
    second batch's check (on that connection) sees the first's release and refuses it; the first is stored alone"""
    from collector.storage.group_commit import _group_commit_queue

    amplified = amplified_epsilon(EPSILON0, SIZE, DELTA)
    spec = _create(http, keys, budget={"epsilon": 1.5 * amplified})
    shuffler = bearer(_shuffler_key(db_path))
    batches = [_batch(spec, seed) for seed in (21, 22)]
    answers: list = [None, None]

    def post(i: int) -> None:
        answers[i] = http.post("/v1/shuffled-batches", json=batches[i], headers=shuffler)

    queue = _group_commit_queue(db_path)
    threads = [threading.Thread(target=post, args=(i,)) for i in range(2)]
    with open_storage(db_path) as other, other.transaction():  # holds the writer lock while both requests queue
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(queue.pending) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert len(queue.pending) == 2
    for thread in threads:
        thread.join()
    assert sorted(answer.status_code for answer in answers) == [200, 409], [a.json for a in answers]
    stored = batches[[a.status_code for a in answers].index(200)]
    with open_storage(db_path) as storage:
        assert {row["report_id"] for row in storage.iter_reports()} == {r["report_id"] for r in stored["reports"]}
        assert [row["batch_id"] for row in storage.table_rows("shuffled_batches")] == [stored["batch_id"]]
