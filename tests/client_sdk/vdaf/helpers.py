"""Run reports through Prio3 the way two aggregators would: every message through its byte encoding."""

from __future__ import annotations

import os
from collections.abc import Sequence

from client_sdk.vdaf import Prio3

CTX = b"ldp-telemetry tests"
VERIFY_KEY = bytes(range(32))


def shard_bytes(vdaf: Prio3, measurement: object, nonce: bytes, rand: bytes | None = None,
                encoded: list[int] | None = None) -> tuple[bytes, list[bytes]]:
    "A report as sent: encoded public share and input shares (encoded= shards a raw, unchecked encoding)"
    rand = rand if rand is not None else os.urandom(vdaf.RAND_SIZE)
    if encoded is None:
        public, shares = vdaf.shard(CTX, measurement, nonce, rand)
    else:
        public, shares = vdaf._shard_encoded(CTX, encoded, nonce, rand)
    return vdaf.encode_public_share(public), [vdaf.encode_input_share(s) for s in shares]


def verify(vdaf: Prio3, nonce: bytes, public: bytes, shares: Sequence[bytes], *,
           nonces: Sequence[bytes] | None = None, keys: Sequence[bytes] | None = None) -> list[list[int]]:
    "Out shares of every aggregator, or VerifyError/ValueError; nonces/keys override each aggregator's view"
    states, verifier_shares = [], []
    for agg_id, share in enumerate(shares):
        state, verifier_share = vdaf.verify_init(
            keys[agg_id] if keys else VERIFY_KEY, CTX, agg_id, nonces[agg_id] if nonces else nonce,
            vdaf.decode_public_share(public), vdaf.decode_input_share(agg_id, share))
        states.append(state)
        verifier_shares.append(vdaf.decode_verifier_share(vdaf.encode_verifier_share(verifier_share)))
    message = vdaf.verifier_shares_to_message(CTX, verifier_shares)
    message = vdaf.decode_verifier_message(vdaf.encode_verifier_message(message))
    return [vdaf.verify_next(CTX, state, message) for state in states]


def aggregate(vdaf: Prio3, reports: Sequence[tuple[bytes, bytes, list[bytes]]]) -> object:
    "Verify every (nonce, public, shares) report, aggregate per aggregator, unshard"
    agg_shares = [vdaf.agg_init() for _ in range(vdaf.SHARES)]
    for nonce, public, shares in reports:
        for agg_id, out_share in enumerate(verify(vdaf, nonce, public, shares)):
            agg_shares[agg_id] = vdaf.agg_update(agg_shares[agg_id], out_share)
    encoded = [vdaf.encode_agg_share(a) for a in agg_shares]
    return vdaf.unshard([vdaf.decode_agg_share(e) for e in encoded], len(reports))
