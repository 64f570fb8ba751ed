"""The repeated-collection kind on the boundary, device side: its spec (identity with ``kind``, fingerprint pinned,
JSON round trip), and reports through the real ``client_sdk.Client``: one per period, the ledger charging a new
memoized answer only, the state in the kind's slot of the state file (kept across restarts, drawn on first use in a
state file from before the kind existed)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import client_sdk
from client_sdk import ReportPolicy, SpecError
from client_sdk.kinds import REPEATED, kind_of
from client_sdk.runtime.state_file import STATE_FILE_NAME
from client_sdk.runtime.status import RecordStatus

from ...fakes import FakeCollector, listing, make_client

MEAN = {"name": "usage", "kind": "repeated", "epsilon": 1.0, "mode": "mean", "range": [0, 10],
        "rounding_points": 5}
HISTOGRAM = {"name": "usage-hist", "kind": "repeated", "epsilon": 2.0, "mode": "histogram", "range": [0, 8],
             "buckets": 8, "bits": 2, "gamma": 0.1}
DAY = 86_400.0
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
OLD_FILE = Path(__file__).parents[2] / "data" / "state_before_kinds.sqlite3"


class Clock:
    def __init__(self) -> None:
        self.now = START + 3600

    def __call__(self) -> float:
        return self.now


def device(tmp_path: Path, fake: FakeCollector, clock: Clock, *specs: client_sdk.Spec, **options):
    fake.extra_campaigns = [listing(spec) for spec in specs]
    options.setdefault("policy", ReportPolicy())  # the default: one report per campaign period
    return make_client(tmp_path, fake, campaigns=[spec.name for spec in specs], clock=clock, **options)


def stored_payloads(fake: FakeCollector, campaign: str) -> list:
    "The answers the collector received, in period order (each report names its period)"
    payloads = [report["payload"] for report in fake.stored.values() if report["campaign"] == campaign]
    assert len({payload["period"] for payload in payloads}) == len(payloads)  # one per period
    return [json.dumps(payload["answer"]) for payload in sorted(payloads, key=lambda payload: payload["period"])]


def test_the_spec_names_its_kind_in_its_identity_and_round_trips():
    spec = client_sdk.load_spec(MEAN)
    assert kind_of(spec) is REPEATED and spec.trust == "local"
    identity = spec.identity()
    assert identity["kind"] == "repeated" and identity["epsilon"] == 1.0 and identity["rounding_points"] == 5
    assert spec.fingerprint == "6f10dffb70e9a476e3832a5d34884c48"  # pinned: a change here moves every device's
    again = client_sdk.load_spec(spec.to_dict())
    assert again.fingerprint == spec.fingerprint and again.params == spec.params
    assert spec.to_dict()["derived"]["lifetime_epsilon"] == 5.0
    assert client_sdk.load_spec({**MEAN, "gamma": 0.2}).fingerprint != spec.fingerprint


@pytest.mark.parametrize(("change", "field"), [({"bits": 2}, "bits"), ({"rounding_points": 1}, "rounding_points"),
                                               ({"trust": "distributed"}, "trust"), ({"domain": [1]}, "domain"),
                                               ({"period": "month"}, "period")])
def test_a_bad_spec_names_its_field(change, field):
    with pytest.raises(SpecError) as info:
        client_sdk.load_spec({**MEAN, **change})
    assert info.value.field == field


def test_an_unchanged_device_sends_one_answer_every_period_and_is_charged_once(tmp_path):
    spec, fake, clock = client_sdk.load_spec(MEAN), FakeCollector(), Clock()
    client = device(tmp_path, fake, clock, spec)
    statuses = []
    for _period in range(365):
        statuses.append(client.record(spec.name, 3.7).status)
        statuses.append(client.record(spec.name, 3.7).status)  # a second report in the period is refused
        assert client.spent(spec.name).epsilon == 1.0  # never moves after the first answer
        client.flush()  # a device uploads every day (the queue drops reports too old)
        clock.now += DAY
    client.flush()
    client.close(timeout=0)
    assert statuses == [RecordStatus.QUEUED, RecordStatus.REFUSED_BY_POLICY] * 365
    payloads = stored_payloads(fake, spec.name)
    assert len(payloads) == 365 and len(set(payloads)) == 1


def test_a_weekly_campaign_caps_reports_per_monday_week_as_its_labels_do(tmp_path):
    "The cap's weeks start on Mondays like the labels: a Sunday report does not block the Monday after"
    spec, fake, clock = client_sdk.load_spec({**MEAN, "period": "week"}), FakeCollector(), Clock()
    client = device(tmp_path, fake, clock, spec)
    statuses = []
    for day in (3, 4, 5, 11, 17):  # 2026-01-04 a Sunday, 05 Monday, 06 Tuesday, 12 Monday, 18 Sunday
        clock.now = START + day * DAY + 12 * 3600
        statuses.append(client.record(spec.name, 3.7).status)
    client.close(timeout=0)
    assert statuses == [RecordStatus.QUEUED, RecordStatus.QUEUED, RecordStatus.REFUSED_BY_POLICY,
                        RecordStatus.QUEUED, RecordStatus.REFUSED_BY_POLICY]
    assert kind_of(spec).period_origin(spec) == -3 * DAY  # 1969-12-29, a Monday


def record_daily(tmp_path, data, values, days):
    "A device recording ``values(day)`` once a day for ``days`` days, flushed each day: (spec, fake, spent)"
    spec, fake, clock = client_sdk.load_spec(data), FakeCollector(), Clock()
    client = device(tmp_path, fake, clock, spec)
    for period in range(days):
        assert client.record(spec.name, values(period))
        client.flush()
        clock.now += DAY
    spent = client.spent(spec.name).epsilon
    client.close(timeout=0)
    return spec, fake, spent


def test_a_changing_device_is_charged_per_new_answer_and_sends_no_more(tmp_path):
    spec, fake, spent = record_daily(tmp_path, HISTOGRAM, lambda period: [0.5, 6.5][(period // 7) % 2], 60)
    state = kind_slot(tmp_path)[spec.name]
    answers = len(state["answers"])
    assert 1 <= answers <= 2 and spent == pytest.approx(2.0 * answers)
    answers_sent = [json.loads(answer) for answer in stored_payloads(fake, spec.name)]
    bits = {answer["bits"] for answer in answers_sent}
    assert {tuple(answer["buckets"]) for answer in answers_sent} == {tuple(state["buckets"])}
    assert len(bits) >= 2  # gamma flips the sent bits afresh every period; the memoized answers stay two at most


@pytest.mark.parametrize("data", [MEAN, {key: value for key, value in HISTOGRAM.items() if key != "gamma"}])
def test_the_collector_sees_at_most_the_answers_the_ledger_counted(tmp_path, data):
    "Playing the collector: a device moving between two neighbourhoods for 365 days; distinct answers it received"
    spec, fake, spent = record_daily(tmp_path, data, lambda period: [1.2, 6.7][(period // 10) % 2], 365)
    received = stored_payloads(fake, spec.name)
    assert len(received) == 365 and 1 <= len(set(received)) <= round(spent / spec.epsilon) <= 2
    assert len(set(received)) == len(kind_slot(tmp_path)[spec.name]["answers"])


def test_clearing_the_app_state_redraws_it_and_costs_epsilon_again(tmp_path):
    """delete_local_data() is the way to redraw (a restart keeps the state, above): the fresh state memoizes a new
    answer, charged epsilon again, and the old ledger is gone with it (docs/privacy.md: a clear adds up to s eps)"""
    spec, fake, clock = client_sdk.load_spec(MEAN), FakeCollector(), Clock()
    first = device(tmp_path, fake, clock, spec)
    for _period in range(5):
        assert first.record(spec.name, 3.7)
        first.flush()
        clock.now += DAY
    assert first.spent(spec.name).epsilon == 1.0
    before = kind_slot(tmp_path)[spec.name]
    first.delete_local_data()
    assert not (tmp_path / "state").exists()
    second = device(tmp_path, fake, clock, spec, rng=client_sdk.DeterministicRandom(8))  # a device's CSPRNG: new
    assert second.record(spec.name, 3.7)
    second.flush()
    assert second.spent(spec.name).epsilon == 1.0  # the device forgot the first state's epsilon
    second.close(timeout=0)
    after = kind_slot(tmp_path)[spec.name]
    assert after["alpha"] != before["alpha"] and len(after["answers"]) == 1
    assert len(stored_payloads(fake, spec.name)) == 6  # 5 + 1: the collector cannot tell the two states apart


def kind_slot(tmp_path: Path, state_dir: str = "state") -> dict:
    with sqlite3.connect(tmp_path / state_dir / STATE_FILE_NAME) as conn:
        row = conn.execute("SELECT value FROM settings WHERE name = 'kind_state.repeated'").fetchone()
    conn.close()
    return json.loads(row[0]) if row else {}


def test_the_state_survives_a_restart_and_a_refused_report_memoizes_nothing(tmp_path):
    spec, fake, clock = client_sdk.load_spec(MEAN), FakeCollector(), Clock()
    first = device(tmp_path, fake, clock, spec)
    assert first.record(spec.name, 9.0)
    assert first.record(spec.name, 1.0).status is RecordStatus.REFUSED_BY_POLICY  # same period
    first.flush()
    first.close(timeout=0)
    state = kind_slot(tmp_path)[spec.name]
    assert len(state["answers"]) == 1  # the refused report's answer was not kept (it was never sent)
    clock.now += DAY
    second = device(tmp_path, fake, clock, spec)
    assert second.record(spec.name, 9.0)
    second.flush()
    assert second.spent(spec.name).epsilon == 1.0
    second.close(timeout=0)
    assert kind_slot(tmp_path)[spec.name] == state
    assert len(set(stored_payloads(fake, spec.name))) == 1


def test_a_state_file_from_before_the_kind_existed_loads_and_draws_the_state_on_first_use(tmp_path):
    (tmp_path / "state").mkdir()
    shutil.copy(OLD_FILE, tmp_path / "state" / STATE_FILE_NAME)
    spec, fake, clock = client_sdk.load_spec(MEAN), FakeCollector(), Clock()
    client = device(tmp_path, fake, clock, spec)
    assert kind_slot(tmp_path) == {}
    assert client.record(spec.name, 5.0)
    client.close(timeout=0)
    state = kind_slot(tmp_path)[spec.name]
    assert state["version"] == 1 and 0 <= state["alpha"] < 2**32 and len(state["answers"]) == 1


def test_a_damaged_state_is_a_state_error_and_charges_nothing(tmp_path):
    spec, fake, clock = client_sdk.load_spec(MEAN), FakeCollector(), Clock()
    client = device(tmp_path, fake, clock, spec)
    assert client.record(spec.name, 5.0)
    client.close(timeout=0)
    slot = kind_slot(tmp_path)
    slot[spec.name]["alpha"] = -1
    with sqlite3.connect(tmp_path / "state" / STATE_FILE_NAME) as conn:
        conn.execute("UPDATE settings SET value = ? WHERE name = 'kind_state.repeated'", (json.dumps(slot),))
    conn.close()
    clock.now += DAY
    again = device(tmp_path, fake, clock, spec)
    assert again.record(spec.name, 5.0).status is RecordStatus.STATE_ERROR
    assert again.spent(spec.name).epsilon == 1.0
    again.close(timeout=0)


def test_a_value_of_the_wrong_type_raises_before_anything_is_drawn(tmp_path):
    spec, fake, clock = client_sdk.load_spec(MEAN), FakeCollector(), Clock()
    client = device(tmp_path, fake, clock, spec)
    with pytest.raises(client_sdk.InvalidValueType):
        client.record(spec.name, "five")
    client.close(timeout=0)
    assert kind_slot(tmp_path) == {}


def test_docs_privacy_quotes_the_guarantee_as_the_module_states_it():
    import client_sdk.kinds.repeated as module

    text = module.__doc__.split("The guarantee, exactly\n----------------------\n")[1].strip()
    docs = (Path(__file__).parents[4] / "docs" / "privacy.md").read_text()
    quoted = "\n".join(line[2:] if line.startswith("> ") else line[1:] for line in docs.splitlines()
                       if line.startswith(">"))
    assert text in quoted
