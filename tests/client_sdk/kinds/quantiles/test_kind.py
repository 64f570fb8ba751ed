"""The quantiles kind on the device's kinds boundary: its spec (envelope + its fields, identity, round trip), and
reports made through the real ``client_sdk.Client`` with the ledger, the policy and its own device state."""

from __future__ import annotations

import json
import sqlite3

import pytest

from client_sdk import ReportPolicy, load_spec
from client_sdk.errors import InvalidValueType, SpecError
from client_sdk.kinds import QUANTILES, kind_names, kind_of
from client_sdk.kinds.quantiles import CLAMPED, QuantilesParams, QuantilesReport
from client_sdk.runtime.state_file import STATE_FILE_NAME
from tests.client_sdk.fakes import FakeCollector, make_client

SPEC = {"name": "page_load", "kind": "quantiles", "epsilon": 1.0, "range": [1, 10000], "bucketing": "geometric",
        "growth": 1.2, "unit": "ms"}


def test_the_kind_is_registered_and_parses_its_own_fields():
    assert "quantiles" in kind_names() and kind_of(SPEC) is QUANTILES
    spec = load_spec(SPEC)
    assert isinstance(spec.params, QuantilesParams) and spec.trust == "local" and spec.unit == "ms"
    identity = spec.identity()
    assert identity["kind"] == "quantiles" and identity["trust"] == "local" and identity["epsilon"] == 1.0
    assert identity["branching"] == spec.params.branching  # resolved: the fingerprint follows the tree
    served = spec.to_dict()
    assert served["branching"] == "auto" and "buckets" not in served and served["derived"]["buckets"] == 51
    assert load_spec(served).fingerprint == spec.fingerprint == load_spec(json.loads(spec.to_json())).fingerprint
    assert load_spec({**SPEC, "oracle": "hadamard"}).fingerprint != spec.fingerprint


@pytest.mark.parametrize(("change", "field"), [
    ({"domain": ["a"]}, "domain"), ({"mechanism": "oue"}, "mechanism"), ({"trust": "shuffled"}, "trust"),
    ({"trust": "distributed"}, "noise"), ({"noise": "gaussian"}, "noise"),
    ({"epsilon": 0}, "epsilon"), ({"range": [5, 1]}, "range"), ({"unit": ""}, "unit"),
])
def test_errors_name_the_field_and_list_only_this_kinds_fields(change, field):
    with pytest.raises(SpecError) as info:
        load_spec({**SPEC, **change})
    assert info.value.field == field
    if field in ("domain", "mechanism"):
        assert "'growth'" in str(info.value) and "'max_measurement'" not in str(info.value)


def _clamps(state_dir) -> dict:
    with sqlite3.connect(state_dir / STATE_FILE_NAME) as conn:
        row = conn.execute("SELECT value FROM settings WHERE name = 'kind_state.quantiles'").fetchone()
    return json.loads(row[0]) if row else {}


def test_reports_through_the_client_are_checked_charged_and_clamps_stay_on_the_device(tmp_path):
    spec = load_spec(SPEC)
    fake = FakeCollector()
    fake.extra_campaigns = [{"name": spec.name, "version": 1, "fingerprint": spec.fingerprint,
                             "spec": spec.to_dict()}]
    client = make_client(tmp_path, fake, campaigns=[spec.name], policy=ReportPolicy.unlimited())
    values = [12.5, 250.0, 0.001, 1e9, 4000]
    assert all(client.record(spec.name, value) for value in values)
    with pytest.raises(InvalidValueType):  # not a number: refused, nothing charged
        client.record(spec.name, "slow")
    client.flush()
    spent = client.spent(spec.name)
    assert spent.reports == len(values) and spent.epsilon == pytest.approx(len(values) * spec.epsilon)
    client.close(timeout=0)
    payloads = [r["payload"] for r in fake.stored.values() if r["campaign"] == spec.name]
    assert len(payloads) == len(values)
    for payload in payloads:
        QuantilesReport.decode(spec.params, payload)  # what the collector accepts
        assert CLAMPED not in json.dumps(payload)
    assert _clamps(tmp_path / "state") == {CLAMPED: 2}


def test_the_policy_caps_quantiles_reports_as_every_campaign(tmp_path):
    spec = load_spec(SPEC)
    fake = FakeCollector()
    fake.extra_campaigns = [{"name": spec.name, "version": 1, "fingerprint": spec.fingerprint,
                             "spec": spec.to_dict()}]
    client = make_client(tmp_path, fake, campaigns=[spec.name], policy=ReportPolicy(max_reports=1))
    assert client.record(spec.name, 10.0)
    refused = client.record(spec.name, 20000.0)
    assert not refused
    client.close(timeout=0)
    assert _clamps(tmp_path / "state") == {}  # a refused report counts no clamp
