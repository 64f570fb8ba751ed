"""The device side of distributed campaigns: seal_report's payload opens at both aggregators, verifies with Prio3
and unshards to the measurements, for every Prio3 type; shares bound to other metadata or keys do not open; values
outside the spec are refused as local campaigns refuse them."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from client_sdk import ValueNotInDomain, load_spec
from client_sdk.distributed import (
    HELPER,
    LEADER,
    ShareRejected,
    ctx_for,
    encode_value,
    input_share_info,
    open_input_share,
    parse_payload,
    report_nonce,
    seal_report,
    vdaf_for,
)
from client_sdk.vdaf import VerifyError
from client_sdk.vdaf.hpke import HpkeKeyPair, b64url, seal

VERIFY_KEY = bytes(range(32))

SPECS = {
    "count": {"prio3": "count", "noise": "laplace"},
    "sum": {"prio3": "sum", "max_measurement": 100, "noise": "laplace"},
    "histogram": {"prio3": "histogram", "domain": ["a", "b", "c", "d", "e"], "noise": "gaussian"},
    "coins": {"prio3": "histogram", "domain": ["a", "b", "c"], "noise": "coins", "coins": 2},
    "sumvec": {"prio3": "sumvec", "length": 4, "max_measurement": 7, "noise": "gaussian"},
    "multihot": {"prio3": "multihot", "domain": ["a", "b", "c", "d"], "max_weight": 2, "noise": "gaussian"},
}
VALUES = {
    "count": ([True, False, True], 2),
    "sum": ([0, 100, 42], 142),
    "histogram": (["b", "e", "b"], [0, 2, 0, 0, 1]),
    "sumvec": ([[1, 2, 3, 4], [7, 0, 7, 0], [0, 0, 0, 1]], [8, 2, 10, 5]),
    "multihot": ([["a", "c"], [], {"c"}], [1, 0, 2, 0]),
}


def make_spec(kind: str, name: str = "apps"):
    return load_spec({"name": name, "trust": "distributed", "epsilon": 1.0, "delta": 1e-6, **SPECS[kind]})


@pytest.fixture(scope="module")
def keys():
    return HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)


def aggregate_payloads(spec, keys, sealed):
    "Both aggregators in-process: open, verify (exchanging verifier shares as bytes), aggregate, unshard"
    leader_keys, helper_keys = keys
    vdaf, ctx = vdaf_for(spec), ctx_for(spec)
    agg = [vdaf.agg_init(), vdaf.agg_init()]
    for report_id, payload in sealed:
        parsed = parse_payload(json.loads(json.dumps(payload)))  # as it travels
        assert (parsed.leader_config_id, parsed.helper_config_id) == (1, 2)
        shares = [open_input_share(spec, leader_keys, "leader", report_id, parsed.public_share,
                                   parsed.leader_ciphertext),
                  open_input_share(spec, helper_keys, HELPER, report_id, parsed.public_share,
                                   parsed.helper_ciphertext)]
        public = vdaf.decode_public_share(parsed.public_share)
        states, verifier_shares = [], []
        for agg_id, share in enumerate(shares):
            state, verifier_share = vdaf.verify_init(VERIFY_KEY, ctx, agg_id, uuid.UUID(report_id).bytes, public,
                                                     share)
            states.append(state)
            verifier_shares.append(vdaf.decode_verifier_share(vdaf.encode_verifier_share(verifier_share)))
        message = vdaf.verifier_shares_to_message(ctx, verifier_shares)
        for agg_id, state in enumerate(states):
            agg[agg_id] = vdaf.agg_update(agg[agg_id], vdaf.verify_next(ctx, state, message))
    return vdaf.unshard(agg, len(sealed))


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_sealed_reports_open_verify_and_unshard(kind, keys):
    spec = make_spec(kind)
    values, expected = VALUES[kind]
    sealed = []
    for value in values:
        report_id = str(uuid.uuid4())
        sealed.append((report_id, seal_report(spec, value, keys[0].config, keys[1].config, report_id=report_id)))
    assert aggregate_payloads(spec, keys, sealed) == expected


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_each_report_unshards_to_its_measurement(kind, keys):
    spec = make_spec(kind)
    for value in VALUES[kind][0]:
        report_id = str(uuid.uuid4())
        payload = seal_report(spec, value, keys[0].config, keys[1].config, report_id=report_id)
        flp = vdaf_for(spec).flp
        expected = flp.decode(flp.truncate(flp.encode(encode_value(spec, value))), 1)
        assert aggregate_payloads(spec, keys, [(report_id, payload)]) == expected


def test_coin_reports_carry_the_bucket_and_bits(keys):
    spec = make_spec("coins")
    sealed = []
    for value in ("a", "c", "c", "b"):
        report_id = str(uuid.uuid4())
        sealed.append((report_id, seal_report(spec, value, keys[0].config, keys[1].config, report_id=report_id)))
    total = aggregate_payloads(spec, keys, sealed)
    assert total[:3] == [1, 1, 2]
    assert len(total) == 3 * (1 + 2) and all(0 <= c <= 4 for c in total[3:])


def test_encode_value_for_coins_draws_fresh_bits():
    spec = make_spec("coins")
    draws = [encode_value(spec, "b") for _ in range(40)]
    assert all(index == 1 and len(bits) == 6 and set(bits) <= {0, 1} for index, bits in draws)
    assert len({tuple(bits) for _, bits in draws}) > 1  # 40 draws of 6 fair bits are not all equal


@pytest.mark.parametrize("kind, value, error", [
    ("count", 2, TypeError), ("count", "yes", TypeError), ("count", None, TypeError),
    ("sum", 101, ValueError), ("sum", -1, ValueError), ("sum", 1.5, TypeError), ("sum", True, TypeError),
    ("sum", "5", TypeError),
    ("histogram", "z", ValueNotInDomain), ("histogram", 0, ValueNotInDomain), ("coins", "z", ValueNotInDomain),
    ("sumvec", [1, 2, 3], ValueError), ("sumvec", [1, 2, 3, 8], ValueError), ("sumvec", [1, 2, 3, -1], ValueError),
    ("sumvec", "1234", TypeError), ("sumvec", [1, 2, 3, 0.5], TypeError), ("sumvec", 5, TypeError),
    ("multihot", ["a", "b", "c"], ValueError), ("multihot", ["z"], ValueNotInDomain), ("multihot", "ab", TypeError),
    ("multihot", 3, TypeError),
])
def test_values_outside_the_spec_are_refused(kind, value, error):
    with pytest.raises(error):
        encode_value(make_spec(kind), value)


def test_bound_is_named():
    with pytest.raises(ValueError, match="max_measurement = 100"):
        encode_value(make_spec("sum"), 101)
    with pytest.raises(ValueError, match="max_weight = 2"):
        encode_value(make_spec("multihot"), ["a", "b", "c"])


def test_encode_value_refuses_local_specs():
    with pytest.raises(ValueError, match="not distributed"):
        encode_value(load_spec({"name": "b", "mechanism": "oue", "epsilon": 1.0, "domain": ["a", "b"]}), "a")


def test_context_nonce_and_info_layout():
    spec = make_spec("histogram")
    assert ctx_for(spec) == b"ldp-telemetry/v1 " + spec.fingerprint.encode()
    report_id = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0ff"
    assert report_nonce(report_id) == bytes.fromhex("0f1e2d3c4b5a49788695a4b3c2d1e0ff")
    info = input_share_info(spec, report_id, "helper", b"PS")
    assert info == (b"ldp-telemetry input share" + bytes([1, 3]) + b"\x00\x00\x00\x04apps"
                    + bytes.fromhex(spec.fingerprint) + bytes.fromhex("0f1e2d3c4b5a49788695a4b3c2d1e0ff")
                    + b"\x00\x00\x00\x02PS")
    assert input_share_info(spec, report_id, LEADER, b"PS")[25:27] == bytes([1, 2])
    for bad in (report_id.upper(), "{" + report_id + "}", report_id.replace("-", ""), "x", None):
        with pytest.raises(ValueError, match="^report_id:"):
            report_nonce(bad)
    with pytest.raises(ValueError, match="^role:"):
        input_share_info(spec, report_id, 1, b"")


def sealed_report(spec, keys, value):
    report_id = str(uuid.uuid4())
    payload = seal_report(spec, value, keys[0].config, keys[1].config, report_id=report_id)
    return report_id, parse_payload(payload)


def test_shares_do_not_open_under_other_metadata_or_keys(keys):
    spec = make_spec("histogram")
    report_id, parsed = sealed_report(spec, keys, "a")
    other_public = sealed_report(spec, keys, "a")[1].public_share
    flipped = parsed.leader_ciphertext[:-1] + bytes([parsed.leader_ciphertext[-1] ^ 1])
    attempts = [
        (spec, keys[0], LEADER, str(uuid.uuid4()), parsed.public_share, parsed.leader_ciphertext),  # other report
        (spec, keys[0], LEADER, report_id, other_public, parsed.leader_ciphertext),  # other public share
        (make_spec("histogram", "apps2"), keys[0], LEADER, report_id, parsed.public_share,
         parsed.leader_ciphertext),  # other campaign
        (spec, keys[1], HELPER, report_id, parsed.public_share, parsed.leader_ciphertext),  # the other aggregator
        (spec, keys[0], HELPER, report_id, parsed.public_share, parsed.leader_ciphertext),  # other role
        (spec, HpkeKeyPair.generate(1), LEADER, report_id, parsed.public_share, parsed.leader_ciphertext),
        (spec, keys[0], LEADER, report_id, parsed.public_share, flipped),  # altered (a last byte of 0 set to 0 was not)
    ]
    assert open_input_share(*attempts[0][:3], report_id, parsed.public_share, parsed.leader_ciphertext)
    for attempt in attempts:
        with pytest.raises(ShareRejected) as info:
            open_input_share(*attempt)
        assert info.value.reason == "hpke-decrypt-error"
        assert info.value.field in ("payload.leader_share", "payload.helper_share")


def test_malformed_shares_are_invalid_messages(keys):
    spec = make_spec("histogram")
    report_id, parsed = sealed_report(spec, keys, "a")
    with pytest.raises(ShareRejected) as info:
        open_input_share(spec, keys[0], LEADER, report_id, parsed.public_share[:-1], parsed.leader_ciphertext)
    assert (info.value.reason, info.value.field) == ("invalid-message", "payload.public_share")
    bad_plaintext = seal(keys[0].config, b"\x00" * 7, input_share_info(spec, report_id, LEADER, parsed.public_share))
    with pytest.raises(ShareRejected) as info:
        open_input_share(spec, keys[0], LEADER, report_id, parsed.public_share, bad_plaintext)
    assert (info.value.reason, info.value.field) == ("invalid-message", "payload.leader_share")


def test_a_share_from_another_report_fails_verification(keys):
    "Shares opened fine but paired across reports: Prio3 verification rejects them"
    spec = make_spec("histogram")
    (rid_a, a), (rid_b, b) = sealed_report(spec, keys, "a"), sealed_report(spec, keys, "b")
    mixed = {"public_share": b64url(a.public_share),
             "leader_share": {"config_id": 1, "ciphertext": b64url(a.leader_ciphertext)},
             "helper_share": {"config_id": 2, "ciphertext": b64url(
                 seal(keys[1].config, open_helper_plaintext(spec, keys, rid_b, b),
                      input_share_info(spec, rid_a, HELPER, a.public_share)))}}
    with pytest.raises(VerifyError):
        aggregate_payloads(spec, keys, [(rid_a, mixed)])


def open_helper_plaintext(spec, keys, report_id, parsed):
    share = open_input_share(spec, keys[1], HELPER, report_id, parsed.public_share, parsed.helper_ciphertext)
    return vdaf_for(spec).encode_input_share(share)


@pytest.mark.parametrize("mutate, field", [
    (lambda p: "text", "payload"),
    (lambda p: {**p, "extra": 1}, "payload.extra"),
    (lambda p: {**p, "public_share": "a=="}, "payload.public_share"),
    (lambda p: {k: v for k, v in p.items() if k != "public_share"}, "payload.public_share"),
    (lambda p: {**p, "leader_share": []}, "payload.leader_share"),
    (lambda p: {**p, "helper_share": {"config_id": 1}}, "payload.helper_share"),
    (lambda p: {**p, "leader_share": {**p["leader_share"], "config_id": 256}}, "payload.leader_share.config_id"),
    (lambda p: {**p, "leader_share": {**p["leader_share"], "config_id": True}}, "payload.leader_share.config_id"),
    (lambda p: {**p, "helper_share": {**p["helper_share"], "ciphertext": "+/"}}, "payload.helper_share.ciphertext"),
])
def test_malformed_payloads_name_the_field(keys, mutate, field):
    spec = make_spec("count")
    payload = seal_report(spec, True, keys[0].config, keys[1].config, report_id=str(uuid.uuid4()))
    with pytest.raises(ShareRejected) as info:
        parse_payload(mutate(payload))
    assert (info.value.reason, info.value.field) == ("invalid-message", field)


def test_import_client_sdk_loads_no_crypto_library():
    code = ("import sys, client_sdk, client_sdk.distributed; "
            "assert not {'cryptography', 'Crypto', 'client_sdk.vdaf'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
