"""The poplar1 kind's device side: its spec (field-named errors, JSON Schema), the string's encoding, and the
report sealed through the distributed envelope, opened by each aggregator to shares that add up to the string."""

from __future__ import annotations

import uuid

import jsonschema
import pytest

from client_sdk import distributed
from client_sdk.distributed_messages import from_b64url, parse_payload
from client_sdk.errors import SpecError
from client_sdk.kinds import POPLAR1, kind_of
from client_sdk.kinds.poplar1.params import decode_prefix, encode_value
from client_sdk.spec import Spec
from client_sdk.vdaf.hpke import HpkeKeyPair

BASE = {"name": "top", "kind": "poplar1", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6, "bits": 16,
        "threshold": 0.05, "stride": 4, "min_batch": 2}


def spec(**changes):
    return Spec.from_dict({**BASE, **changes})


@pytest.mark.parametrize(("changes", "field"), [
    ({"bits": 12}, "bits"), ({"bits": 0}, "bits"), ({"bits": 264}, "bits"), ({"bits": True}, "bits"),
    ({"threshold": 0}, "threshold"), ({"threshold": 1}, "threshold"), ({"threshold": "x"}, "threshold"),
    ({"stride": 3}, "stride"), ({"stride": 9}, "stride"), ({"min_batch": 1}, "min_batch"),
    ({"overflow": "wrap"}, "overflow"), ({"delta": None}, "delta"), ({"trust": "local"}, "trust"),
    ({"noise": "gaussian"}, "noise"),
])
def test_a_bad_parameter_is_refused_by_name(changes, field):
    source = {k: v for k, v in {**BASE, **changes}.items() if v is not None}
    with pytest.raises(SpecError) as caught:
        Spec.from_dict(source)
    assert caught.value.field == field


def test_the_spec_round_trips_and_its_schema_accepts_it():
    made = spec()
    assert kind_of(made) is POPLAR1
    again = Spec.from_dict(made.to_dict())
    assert again == made and again.fingerprint == made.fingerprint
    assert made.params.levels == (3, 7, 11, 15)
    assert made.fingerprint != spec(threshold=0.1).fingerprint != spec(stride=8).fingerprint
    schema = POPLAR1.json_schema()
    own = {key: value for key, value in made.to_dict().items() if key in schema["properties"]}
    jsonschema.validate(own, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**own, "bits": 12}, schema)


def test_strings_are_bytes_padded_and_cut_or_refused():
    params = spec().params
    assert encode_value(params, "a") == encode_value(params, b"a\0")  # padded with 0x00
    bits = encode_value(params, "ab")
    assert len(bits) == 16 and int("".join("1" if b else "0" for b in bits), 2) == int.from_bytes(b"ab", "big")
    assert encode_value(params, "abc") == bits  # truncate
    with pytest.raises(ValueError, match="overflow 'refuse'"):
        encode_value(spec(overflow="refuse").params, "abc")
    with pytest.raises(TypeError):
        encode_value(params, 3)
    assert decode_prefix(int.from_bytes(b"ab", "big"), 16) == b"ab"
    assert decode_prefix(int.from_bytes(b"a\0", "big"), 16) == b"a"


def test_the_ledger_charges_the_whole_collection_once_per_batch():
    made = spec()
    assert POPLAR1.ledger_charge(made) == (1.0, 1e-6)
    assert POPLAR1.batch_of(made, 86400 * 3 + 5) == POPLAR1.batch_of(made, 86400 * 4 - 1) == "1970-01-04"


def test_a_report_is_the_distributed_envelope_and_each_aggregator_opens_its_share():
    made = spec()
    leader, helper = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
    report_id = str(uuid.uuid4())
    payload = distributed.seal_report(made, "hi", leader.config, helper.config, report_id=report_id,
                                      batch="2026-12-02")
    parsed = parse_payload(payload)  # the one parser of the distributed envelope
    assert set(payload) == {"public_share", "leader_share", "helper_share", "batch"}
    vdaf = POPLAR1.vdaf_of(made)
    assert from_b64url(payload["public_share"], "p") == parsed.public_share
    shares = [distributed.open_input_share(made, pair, role, report_id, parsed.public_share, sealed, "2026-12-02")
              for pair, role, sealed in ((leader, "leader", parsed.leader_ciphertext),
                                         (helper, "helper", parsed.helper_ciphertext))]
    public = vdaf.decode_public_share(parsed.public_share)
    nonce, ctx = distributed.report_nonce(report_id), distributed.ctx_for(made)
    prefixes = tuple(tuple(bool(v >> (7 - i) & 1) for i in range(8)) for v in sorted({ord("h"), ord("x")}))
    values = [vdaf.idpf.eval(agg_id, public, share.idpf_key, 7, prefixes, ctx, nonce)
              for agg_id, share in enumerate(shares)]
    p = vdaf.idpf.field_inner.MODULUS
    counts = [(a[0] + b[0]) % p for a, b in zip(*values)]
    assert counts == [1, 0]  # "h" is the one prefix of "hi"
    with pytest.raises(distributed.ShareRejected) as caught:  # the helper's share under the wrong report id
        distributed.open_input_share(made, helper, "helper", str(uuid.uuid4()), parsed.public_share,
                                     parsed.helper_ciphertext, "2026-12-02")
    assert caught.value.reason == "hpke-decrypt-error"
