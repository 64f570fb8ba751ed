"""A compact filter over the report ids of a closed day: which ids are certainly not stored on it.

The duplicate check of an insert looks each report id up in the DEDUP_DAYS days before (``collector.storage.sqlite``).
In a day of millions of reports that is one B-tree seek per id, each into a page not touched before, and it grows
with the day.  Once a day takes no more reports, a Bloom filter over its ids (built once, stored in the database)
answers "absent" for nearly every fresh id with a few array reads; only the ids it calls "maybe" are looked up
exactly.  A Bloom filter has no false negatives, so it never hides a stored id, and it never declares a
duplicate by itself: duplicates are still decided by the exact lookup alone.

The filter bits come from the 16 id bytes (random for a UUIDv4), mixed by two multiplicative hashes, and probe
``PROBES`` positions by double hashing (Kirsch and Mitzenmacher, "Less hashing, same performance: building a
better Bloom filter", ESA 2006).  Ids chosen by a client to collide only cost exact lookups.  With at least
``BITS_PER_ID`` bits per id (rounded up to a power of two: 12 to 24; 2^16 bits at least) and 8 probes, the
false positive rate is about (1 - e^(-8/b))^8: 0.3 % at b = 12, 0.01 % at b = 24.
"""

from __future__ import annotations

import numpy as np

PROBES = 8
BITS_PER_ID = 12
MIN_LOG2_BITS = 16  # 8 KiB at least: a day of few reports gets next to no false positives for a trifle
_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xC2B2AE3D27D4EB4F)
_WINDOW_BITS = 1 << 27  # bits set at a time while building: bounds the temporary array (128 MiB of bool)
_HASH_CHUNK = 1 << 19  # ids hashed at a time while building (8 MiB per hash array)


class DayFilter:
    "A Bloom filter over a set of 16-byte ids; ``maybe_present`` never answers False for an id it was built from"

    def __init__(self, bits: bytes) -> None:
        if len(bits) & (len(bits) - 1):
            raise ValueError("a day filter is a power-of-two number of bytes (or empty)")
        self.bits = np.frombuffer(bits, dtype=np.uint8)
        self.log2_bits = int(len(bits) * 8).bit_length() - 1 if bits else 0

    @classmethod
    def build(cls, ids: bytes | bytearray) -> DayFilter:
        "The filter of the ids concatenated in ``ids`` (16 bytes each); empty for no ids"
        count = len(ids) // 16
        if count == 0:
            return cls(b"")
        log2_bits = max(MIN_LOG2_BITS, (BITS_PER_ID * count - 1).bit_length())
        shift = np.uint64(64 - log2_bits)
        packed = []
        for start in range(0, 1 << log2_bits, _WINDOW_BITS):
            size = min(_WINDOW_BITS, 1 << log2_bits)
            window = np.zeros(size, dtype=np.bool_)
            for chunk in range(0, count, _HASH_CHUNK):  # hashes of a chunk of ids at a time: bounded memory
                first, step = _hashes(memoryview(ids)[16 * chunk:16 * (chunk + _HASH_CHUNK)])
                for probe in range(PROBES):
                    positions = (first + np.uint64(probe) * step) >> shift
                    if size < 1 << log2_bits:
                        positions = positions[(positions >= start) & (positions < start + size)] - np.uint64(start)
                    window[positions] = True
            packed.append(np.packbits(window, bitorder="little"))
        return cls(np.concatenate(packed).tobytes())

    def maybe_present(self, ids: bytes) -> np.ndarray:
        "For each 16-byte id in ``ids``: False if it is certainly not in the set, True if it may be"
        count = len(ids) // 16
        if not len(self.bits):
            return np.zeros(count, dtype=np.bool_)
        first, step = _hashes(ids)
        positions = (first[:, None] + np.arange(PROBES, dtype=np.uint64)[None, :] * step[:, None]) \
            >> np.uint64(64 - self.log2_bits)
        probed = self.bits[positions >> np.uint64(3)] >> (positions & np.uint64(7)).astype(np.uint8)
        return (probed & 1).astype(np.bool_).all(axis=1)

    def to_bytes(self) -> bytes:
        return self.bits.tobytes()


def _hashes(ids: bytes | bytearray | memoryview) -> tuple[np.ndarray, np.ndarray]:
    "Two 64-bit hashes per id (the second odd), mixing both halves (a UUIDv4 has fixed version and variant bits)"
    halves = np.frombuffer(ids, dtype="<u8").reshape(-1, 2)
    low, high = halves[:, 0], halves[:, 1]
    first = (low ^ (high >> np.uint64(29))) * _MIX1
    step = ((high ^ (low >> np.uint64(31))) * _MIX2) | np.uint64(1)
    return first, step
