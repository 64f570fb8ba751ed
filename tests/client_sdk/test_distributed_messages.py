"The distributed protocol's messages: one codec for the device, the leader and the helper"

from __future__ import annotations

import ast
import json
import pathlib

import pytest

from client_sdk.distributed_messages import (
    JobEntry,
    ProtocolError,
    ReportPayload,
    b64url,
    check_job_answer,
    from_b64url,
    job_answer_entry,
    job_request,
    parse_job_entry,
    parse_job_request,
    parse_payload,
)
from client_sdk.errors import ShareRejected

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_protocol_errors_are_their_wire_strings():
    "A member is equal to, hashes as, formats as and serialises as its slug (rejection counters mix both)"
    for member in ProtocolError:
        slug = member.value
        assert member == slug and hash(member) == hash(slug) and f"{member}" == slug and str(member) == slug
        assert json.dumps({member: [member]}) == json.dumps({slug: [slug]})
        assert ProtocolError(slug) is member
    assert {"report-replayed", "batch-collected", "batch-open", "invalid-message", "hpke-decrypt-error",
            "batch-in-future"} <= {m.value for m in ProtocolError}


@pytest.mark.parametrize("text", ["a=", "a", "+/8", "ab c", "é", "YR", None, 3])
def test_base64url_is_strict(text):
    with pytest.raises(ValueError, match="^field:"):
        from_b64url(text, "field")


def test_base64url_round_trips():
    for data in (b"", b"\x00", b"\xfb\xff", bytes(range(256))):
        assert from_b64url(b64url(data), "f") == data and "=" not in b64url(data)


def test_a_payload_round_trips_as_it_travels():
    payload = ReportPayload(b"public", 1, b"leader ct", 2, b"helper ct", "2026-01-02")
    assert parse_payload(json.loads(json.dumps(payload.to_dict()))) == payload
    assert payload.helper_share() == {"config_id": 2, "ciphertext": b64url(b"helper ct")}
    unbound = ReportPayload(b"p", 0, b"l", 255, b"h")
    assert "batch" not in unbound.to_dict() and parse_payload(unbound.to_dict()) == unbound


@pytest.mark.parametrize("mutate, field", [
    (lambda p: {**p, "batch": "2026-1-2"}, "payload.batch"),
    (lambda p: {**p, "public_share": "YR"}, "payload.public_share"),  # non-canonical trailing bits
    (lambda p: {**p, "helper_share": {**p["helper_share"], "config_id": 1.0}}, "payload.helper_share.config_id"),
    (lambda p: {**p, "leader_share": {**p["leader_share"], "extra": 1}}, "payload.leader_share"),
])
def test_malformed_payloads_are_invalid_messages(mutate, field):
    payload = ReportPayload(b"public", 1, b"leader ct", 2, b"helper ct", "2026-01-02").to_dict()
    with pytest.raises(ShareRejected) as info:
        parse_payload(mutate(payload))
    assert (info.value.reason, info.value.field) == (ProtocolError.INVALID_MESSAGE, field)
    assert info.value.message and str(info.value) == f"{field}: {info.value.message}"


def test_a_job_request_and_its_answer_round_trip():
    sealed = {"config_id": 2, "ciphertext": b64url(b"ct")}
    request = json.loads(json.dumps(job_request("c", "f" * 32, "2026-01-02", [JobEntry("id-1", b"ps", sealed, b"vs")])))
    (entry,) = parse_job_request(request)
    assert parse_job_entry(entry) == (b"ps", 2, b"ct", b"vs")
    answer = {"reports": [job_answer_entry("id-1", b"message")]}
    assert check_job_answer(answer, request) == [{"report_id": "id-1", "result": "continue",
                                                  "verifier_message": b64url(b"message")}]
    assert job_answer_entry("id-1", error=ProtocolError.REPORT_REPLAYED) == {
        "report_id": "id-1", "result": "reject", "error": "report-replayed"}


def test_a_helper_answer_for_other_reports_is_refused():
    "A helper (or a proxy) answering with other, fewer or reordered reports: the leader takes none of it"
    request = job_request("c", "f", "2026-01-02", [JobEntry(f"id-{i}", b"", {}, b"") for i in range(2)])
    for answer in ({"reports": [job_answer_entry("id-1", b""), job_answer_entry("id-0", b"")]},
                   {"reports": [job_answer_entry("id-0", b"")]}, {"reports": "x"}, [], None):
        with pytest.raises(ValueError):
            check_job_answer(answer, request)


@pytest.mark.parametrize("body", [None, [], {"campaign": "c"}, {"campaign": "c", "fingerprint": "f", "batch": "b",
                                                                 "reports": {}}])
def test_a_malformed_job_request_is_refused(body):
    with pytest.raises(ValueError, match="^body:"):
        parse_job_request(body)


def test_no_second_base64url_or_payload_parser():
    "The collector's distributed side and the SDK decode base64 only through distributed_messages"
    sources = [*ROOT.glob("collector/distributed/**/*.py"), *ROOT.glob("client_sdk/**/*.py")]
    importers = []
    for path in sources:
        if path.name == "distributed_messages.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] in ("base64", "binascii") for name in names):
                importers.append(str(path.relative_to(ROOT)))
    assert importers == []
