"""The heavy_hitters kind through the real ``client_sdk.Client``: spec round trip and fingerprint, reports queued
with the ledger charging epsilon, the report policy, and refused strings on the SDK's invalid-value path."""

import pytest

from client_sdk import InvalidValue, InvalidValueType, RecordStatus, ReportPolicy, load_spec
from client_sdk.errors import SpecError
from client_sdk.kinds import kind_of
from client_sdk.kinds.heavy_hitters import parse_payload
from client_sdk.spec import Spec
from tests.client_sdk.fakes import FakeCollector, make_client

SPEC = {"name": "new_words", "kind": "heavy_hitters", "epsilon": 3.0, "max_length": 6,
        "alphabet": "abcdefghijklmnopqrstuvwxyz.", "overflow": "refuse", "algorithm": "pem", "segment_length": 2}


def _client(tmp_path, spec, **kwargs):
    fake = FakeCollector()
    fake.extra_campaigns = [{"name": spec.name, "version": 1, "fingerprint": spec.fingerprint,
                             "spec": spec.to_dict()}]
    return fake, make_client(tmp_path, fake, campaigns=[spec.name], **kwargs)


def test_the_spec_round_trips_with_its_kind_in_the_identity():
    spec = load_spec(SPEC)
    assert kind_of(spec).name == "heavy_hitters" and spec.trust == "local"
    assert spec.identity()["kind"] == "heavy_hitters" and spec.identity()["segment_length"] == 2
    again = Spec.from_dict(spec.to_dict())
    assert again.fingerprint == spec.fingerprint and again.params == spec.params
    auto = load_spec({**{k: v for k, v in SPEC.items() if k != "segment_length"}, "algorithm": "auto",
                     "expected_reports": 100_000})
    assert auto.to_dict()["algorithm"] == "auto" and auto.to_dict()["derived"]["algorithm"] in ("pem", "sfp")


def test_a_field_of_another_kind_or_algorithm_is_named():
    with pytest.raises(SpecError) as info:
        load_spec({**SPEC, "domain": ["a", "b"]})
    assert info.value.field == "domain" and "'max_length'" in str(info.value) and "'noise'" not in str(info.value)
    with pytest.raises(SpecError) as info:
        load_spec({**SPEC, "sketch_width": 64})
    assert info.value.field == "sketch_width"
    with pytest.raises(SpecError) as info:
        load_spec({**SPEC, "trust": "distributed"})
    assert info.value.field == "trust"


def test_reports_go_through_the_client_and_the_ledger_charges_epsilon(tmp_path):
    spec = load_spec(SPEC)
    fake, client = _client(tmp_path, spec, policy=ReportPolicy.unlimited())
    try:
        for word in ("hello", "", "zebra."):
            assert client.record(spec.name, word).status is RecordStatus.QUEUED
        assert client.spent(spec.name).epsilon == pytest.approx(9.0) and client.spent(spec.name).reports == 3
        client.flush()
    finally:
        client.close(timeout=0)
    payloads = [r["payload"] for r in fake.stored.values() if r["campaign"] == spec.name]
    assert len(payloads) == 3
    for payload in payloads:
        parse_payload(spec.params, payload)  # the collector's codec takes what the device made


def test_the_report_policy_applies(tmp_path):
    spec = load_spec(SPEC)
    _, client = _client(tmp_path, spec, policy=ReportPolicy(max_reports=1))
    try:
        assert client.record(spec.name, "abc").status is RecordStatus.QUEUED
        assert client.record(spec.name, "abd").status is RecordStatus.REFUSED_BY_POLICY
        assert client.spent(spec.name).reports == 1
    finally:
        client.close(timeout=0)


@pytest.mark.parametrize(("value", "error"), [("toolongword", InvalidValue), ("ABC", InvalidValue),
                                              ("a\ud800", InvalidValue), (b"abc", InvalidValueType),
                                              (3, InvalidValueType), (float("nan"), InvalidValueType)])
def test_refused_strings_raise_the_sdks_invalid_value_errors_and_charge_nothing(tmp_path, value, error):
    spec = load_spec(SPEC)
    _, client = _client(tmp_path, spec, policy=ReportPolicy.unlimited())
    try:
        with pytest.raises(error):
            client.record(spec.name, value)
        assert client.spent(spec.name).reports == 0 and client.pending() == 0
    finally:
        client.close(timeout=0)


def test_without_an_alphabet_non_utf8_bytes_are_refused_and_long_strings_truncated(tmp_path):
    spec = load_spec({k: v for k, v in SPEC.items() if k not in ("alphabet",)} | {"overflow": "truncate",
                                                                                  "segment_length": 1})
    _, client = _client(tmp_path, spec, policy=ReportPolicy.unlimited())
    try:
        with pytest.raises(InvalidValue):
            client.record(spec.name, b"\xff\xfe")
        assert client.record(spec.name, "a much longer string than six bytes")
        assert client.record(spec.name, "h\u00e9llo w\u00f6rld".encode())
    finally:
        client.close(timeout=0)
