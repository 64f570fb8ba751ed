"""The batch verifier gives, report by report, exactly the per-report verifier's accept/reject, verifier shares and
output shares, on a batch mixing honest, malicious and tampered reports."""

from __future__ import annotations

import os

import pytest

from client_sdk.vdaf import (
    Prio3,
    VerifyError,
    prio3_count,
    prio3_histogram,
    prio3_multihot_count_vec,
    prio3_sum,
    prio3_sum_vec,
)
from client_sdk.vdaf.circuits import Count
from client_sdk.vdaf.field import Field64
from client_sdk.vdaf.flp import PolyEval
from collector.vdaf_batch import BatchReport, batch_verify, batch_verify_init


class _Range3(Count):
    "x (x - 1) (x - 2) == 0 over 5 entries: a degree-3 gadget, which the batch verifier runs report by report"

    MEAS_LEN = 5
    OUTPUT_LEN = 5
    EVAL_OUTPUT_LEN = 5

    def __init__(self) -> None:
        self.field = Field64
        self.GADGETS = [PolyEval([0, 2, -3, 1], 5)]
        self.GADGET_CALLS = [5]

    def encode(self, measurement: object) -> list[int]:
        return list(measurement)  # type: ignore[call-overload]

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        return [self.GADGETS[0].eval(self.field, [x]) for x in meas]

    def decode(self, output: list[int], num_measurements: int) -> list[int]:
        return list(output)

CTX = b"batch tests"
KEY = bytes(range(32))

VARIANTS = {
    "count": (prio3_count(), [0, 1, 1], [[2], [5]]),
    "count3": (prio3_count(shares=3), [1, 0], [[2]]),
    "sum": (prio3_sum(255), [0, 17, 255], [[256, 0, 0, 0, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0, 0, 0]]),
    "sum_vec": (prio3_sum_vec(3, 7, 2), [[1, 7, 0], [0, 0, 0]], [[1, 1, 1, 8, 0, 0, 0, 0, 0]]),
    "histogram": (prio3_histogram(10, 3), [0, 9, 4], [[1, 1] + [0] * 8, [2] + [0] * 9]),
    "degree3": (Prio3(_Range3(), algorithm_id=0xFFFFFFFF), [[0, 1, 2, 2, 0], [1] * 5], [[3, 0, 0, 0, 0]]),
    "multihot": (prio3_multihot_count_vec(5, 2, 2), [[True, False, True, False, False], [False] * 5],
                 [[1, 1, 1, 0, 0, 1, 0]]),
}


def _flip(data: bytes, position: int) -> bytes:
    raw = bytearray(data)
    raw[position] ^= 1
    return bytes(raw)


def _reports(vdaf: Prio3, honest, malicious):
    "(nonce, public, input shares, nonce seen by the helper) for honest, malicious and tampered reports"
    out = []
    for m in honest:
        nonce = os.urandom(16)
        public, shares = vdaf.shard(CTX, m, nonce)
        out.append((nonce, vdaf.encode_public_share(public), [vdaf.encode_input_share(s) for s in shares], nonce))
    for encoded in malicious:
        nonce = os.urandom(16)
        public, shares = vdaf._shard_encoded(CTX, encoded, nonce, os.urandom(vdaf.RAND_SIZE))
        out.append((nonce, vdaf.encode_public_share(public), [vdaf.encode_input_share(s) for s in shares], nonce))
    nonce, public, shares, _ = out[0]
    out.append((nonce, public, [_flip(shares[0], 1)] + shares[1:], nonce))  # flipped leader byte
    out.append((nonce, public, [shares[0][:-1]] + shares[1:], nonce))  # truncated leader share
    out.append((nonce, public, shares, _flip(nonce, 0)))  # the helper saw another nonce
    return out


def _per_report(vdaf: Prio3, reports):
    results = []
    for nonce, public, shares, helper_nonce in reports:
        try:
            pairs = [vdaf.verify_init(KEY, CTX, agg_id, nonce if agg_id == 0 else helper_nonce,
                                      vdaf.decode_public_share(public), vdaf.decode_input_share(agg_id, share))
                     for agg_id, share in enumerate(shares)]
            message = vdaf.verifier_shares_to_message(CTX, [v for _, v in pairs])
            results.append([vdaf.verify_next(CTX, state, message) for state, _ in pairs])
        except VerifyError:
            results.append(None)
    return results


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_batch_equals_per_report(name):
    vdaf, honest, malicious = VARIANTS[name]
    reports = _reports(vdaf, honest, malicious)
    expected = _per_report(vdaf, reports)
    assert expected[:len(honest)] == [o for o in expected[:len(honest)] if o is not None]  # honest accepted
    assert all(o is None for o in expected[len(honest):])  # everything else rejected

    # verify_init, aggregator by aggregator: identical verifier shares and states, identical errors
    for agg_id in range(vdaf.SHARES):
        batch = batch_verify_init(vdaf, KEY, CTX, agg_id, [
            BatchReport(nonce if agg_id == 0 else helper_nonce, public, shares[agg_id])
            for nonce, public, shares, helper_nonce in reports])
        for (nonce, public, shares, helper_nonce), got in zip(reports, batch):
            try:
                share = vdaf.decode_input_share(agg_id, shares[agg_id])
                want = vdaf.verify_init(KEY, CTX, agg_id, nonce if agg_id == 0 else helper_nonce,
                                        vdaf.decode_public_share(public), share)
            except VerifyError:
                assert isinstance(got, VerifyError)
                continue
            assert not isinstance(got, VerifyError)
            assert got[0] == want[0]
            assert vdaf.encode_verifier_share(got[1]) == vdaf.encode_verifier_share(want[1])

    # the whole pipeline: same accept/reject and the same output shares
    honest_part = [r for r in reports if r[3] == r[0]]
    got = batch_verify(vdaf, KEY, CTX, [r[0] for r in honest_part], [r[1] for r in honest_part],
                       [r[2] for r in honest_part])
    assert got == _per_report(vdaf, honest_part)


def test_batch_rejects_a_wrong_verify_key_and_an_empty_batch_is_fine():
    vdaf = prio3_histogram(4, 2)
    nonce = os.urandom(16)
    public, shares = vdaf.shard(CTX, 1, nonce)
    encoded = [vdaf.encode_input_share(s) for s in shares]
    assert batch_verify(vdaf, KEY, CTX, [nonce], [vdaf.encode_public_share(public)], [encoded])[0] is not None
    leader = batch_verify_init(vdaf, KEY, CTX, 0, [BatchReport(nonce, vdaf.encode_public_share(public), encoded[0])])
    helper = batch_verify_init(vdaf, _flip(KEY, 3), CTX, 1,
                               [BatchReport(nonce, vdaf.encode_public_share(public), encoded[1])])
    with pytest.raises(VerifyError):
        vdaf.verifier_shares_to_message(CTX, [leader[0][1], helper[0][1]])  # type: ignore[index]
    assert batch_verify(vdaf, KEY, CTX, [], [], []) == []
    with pytest.raises(ValueError, match="verify key"):
        batch_verify_init(vdaf, KEY[:5], CTX, 0, [])
