"""Packed bits: the bulk hex check accepts exactly what the per-payload check accepts, bit counts are exact and
their memory does not grow with the number of rows."""

import tracemalloc

import numpy as np
import pytest

from client_sdk import PayloadError
from client_sdk.wire import require_packed_bits
from estimators import aggregate, estimate
from estimators.bits import BLOCK_ROWS, LANE_ROWS, bit_counts, strict_hex_rows
from estimators.mechanisms import mechanism_for


def unpacked_counts(packed, width):
    return np.unpackbits(packed, axis=1)[:, :width].sum(axis=0)


@pytest.mark.parametrize("rows, nbytes, width", [
    (0, 128, 1024), (1, 1, 3), (LANE_ROWS, 2, 16), (LANE_ROWS + 1, 9, 70), (BLOCK_ROWS + 300, 128, 1024),
    (2 * BLOCK_ROWS, 17, 131),
])
def test_bit_counts_match_unpacking(rows, nbytes, width):
    packed = np.random.default_rng(rows + nbytes).integers(0, 256, size=(rows, nbytes), dtype=np.uint8)
    assert np.array_equal(bit_counts(packed, width), unpacked_counts(packed, width))


def test_bit_counts_of_all_ones_reach_every_lane_without_overflow():
    "255 ones in a lane is the most a lane holds before it is emptied: all-ones rows test the boundary"
    packed = np.full((3 * LANE_ROWS + 7, 16), 0xFF, dtype=np.uint8)
    assert bit_counts(packed, 128).tolist() == [3 * LANE_ROWS + 7] * 128


def test_bit_counts_memory_does_not_grow_with_rows():
    "Temporaries are per block: at 20 blocks of rows the peak is a small multiple of one block, not of n"
    nbytes = 128
    packed = np.random.default_rng(5).integers(0, 256, size=(20 * BLOCK_ROWS, nbytes), dtype=np.uint8)
    tracemalloc.start()
    try:
        bit_counts(packed, 8 * nbytes)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    block = BLOCK_ROWS * nbytes
    assert peak < 3 * block < packed.nbytes / 6


D = 20  # three bytes, four padding bits
SPEC = {"name": "u", "mechanism": "oue", "epsilon": 1.0, "domain": list(range(D))}
GOOD = "a1b2c0"
BAD = [
    "a1b2c ", " a1b2c", "a1 b2c", "a1\tb2c", "a1\nb2c",  # whitespace (bytes.fromhex would skip it)
    "a1b2c", "a1b2c00", "", "a1b2cg", "0xa1b2", "a1b2c\u0660", "a1b2\u00e9\u00e9",  # length, digits, non-ASCII
    "a1b2c1",  # a padding bit set
    b"a1b2c0", None, 7, ["a1b2c0"], ["a", "1", "b", "2", "c", "0"],  # not a string
]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_the_bulk_check_refuses_what_the_per_payload_check_refuses(bad):
    with pytest.raises(PayloadError):
        require_packed_bits(bad, "payload", D)
    server = mechanism_for(SPEC)
    assert server.bulk_columns([GOOD, bad, GOOD]) is None
    with pytest.raises(PayloadError) as error:
        aggregate(SPEC, [GOOD, GOOD, bad])
    assert error.value.field == "payloads[2]"


def test_str_subclasses_are_judged_one_by_one():
    class Text(str):
        pass

    assert aggregate(SPEC, [GOOD, Text(GOOD)]) == aggregate(SPEC, [GOOD, GOOD])


def test_strict_hex_rows_decodes_across_chunks(monkeypatch):
    import estimators.bits

    monkeypatch.setattr(estimators.bits, "HEX_CHUNK", 3)
    texts = [f"{i:04x}" for i in range(10)] + ["ABCD"]
    rows = strict_hex_rows(texts, 2)
    assert rows is not None and rows.tolist() == [list(bytes.fromhex(t)) for t in texts]
    assert strict_hex_rows(texts[:7] + ["00 0"] + texts[8:], 2) is None  # in a later chunk
    assert strict_hex_rows(["00", "0000", "00"], 1) is None  # the right total length, the wrong lengths


def test_valid_payloads_skip_the_per_payload_loop(monkeypatch):
    "Wire payloads are checked in bulk (vectorised); the per-payload check runs only to name a bad one"
    rng = np.random.default_rng(9)
    server = mechanism_for(SPEC)
    payloads = server.simulate(rng.integers(0, D, 3000), rng).to_payloads()
    calls = []
    original = server.device.check_payload
    monkeypatch.setattr(server.device, "check_payload", lambda payload: calls.append(1) or original(payload))
    bulk = estimate(SPEC, payloads)
    assert calls == []
    one_by_one = server.parse(payloads)  # the same columns as the collector's path (checked, then columns)
    assert np.array_equal(one_by_one["bits"], server.columns(payloads)["bits"])
    assert bulk.to_dict() == estimate(SPEC, server.parse(payloads, checked=True)).to_dict()
    with pytest.raises(PayloadError):
        estimate(SPEC, payloads[:10] + ["a1b2c1"])
    assert len(calls) == 11  # the fallback checked each one up to the bad one


def test_bit_counts_of_strided_and_unaligned_rows():
    rng = np.random.default_rng(6)
    wide = rng.integers(0, 256, size=(LANE_ROWS * 3, 17), dtype=np.uint8)
    strided = wide[:, 1:9]  # whole words per row, not contiguous
    raw = bytes(1) + rng.integers(0, 256, size=LANE_ROWS * 2 * 16, dtype=np.uint8).tobytes()
    unaligned = np.frombuffer(raw, dtype=np.uint8, offset=1).reshape(-1, 16)  # contiguous, not 8-byte aligned
    for packed in (strided, unaligned):
        assert np.array_equal(bit_counts(packed, 8 * packed.shape[1]), unpacked_counts(packed, 8 * packed.shape[1]))
