"""Packed bit rows: decoding them from hex in bulk, and counting ones per bit position (the unary encodings' and
RAPPOR's sufficient statistic)."""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from typing import Any

import numpy as np

_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)  # (256, 8)
HISTOGRAM_ELEMENTS = 1 << 20  # (row, byte) keys built per numpy step
LANE_ROWS = 255  # rows summed in 8-bit lanes before a lane could overflow
BLOCK_ROWS = LANE_ROWS * 16  # rows per numpy step of bit_counts: bounded temporaries that stay in cache
HEX_CHUNK = 512  # payloads joined per bytes.fromhex call: the joined string stays in cache (and memory bounded)
_LOW_BITS = np.uint64(0x0101010101010101)  # bit 0 of each byte of a 64-bit word


def grouped_bit_counts(groups: np.ndarray | None, packed: np.ndarray, n_groups: int, width: int) -> np.ndarray:
    """Ones per (group, bit) over packed big-endian rows (n, ceil(width/8)) -> (n_groups, width) int64.

    One histogram of (group, byte value, byte position) keys, then a 256 x 8 table lookup: n * width / 8 cheap
    operations instead of unpacking n * width bits.  Value-major keys keep sparse rows on neighbouring counters.
    ``groups`` None means one group."""
    n, nbytes = packed.shape
    bins = 256 * nbytes
    histogram = np.zeros(n_groups * bins, dtype=np.int64)
    columns = np.arange(nbytes, dtype=np.intp)[None, :]
    rows = max(1, HISTOGRAM_ELEMENTS // max(nbytes, 1))
    keys = np.empty((min(rows, max(n, 1)), nbytes), dtype=np.intp)  # bincount's own index type: no extra copy
    for start in range(0, n, rows):
        chunk = packed[start:start + rows]
        chunk_keys = keys[: len(chunk)]
        np.multiply(chunk, nbytes, out=chunk_keys, dtype=np.intp)
        chunk_keys += columns
        if groups is not None:
            chunk_keys += (np.asarray(groups[start:start + rows], dtype=np.intp) * bins)[:, None]
        histogram += np.bincount(chunk_keys.ravel(), minlength=n_groups * bins)
    per_byte = histogram.reshape(n_groups, 256, nbytes).transpose(0, 2, 1) @ _BYTE_BITS  # (groups, nbytes, 8)
    return per_byte.reshape(n_groups, nbytes * 8)[:, :width].astype(np.int64)


def bit_counts(packed: np.ndarray, width: int) -> np.ndarray:
    """Ones per bit position over packed big-endian rows (n, ceil(width/8)) -> (width,) int64.

    Eight bits at a time per byte, in 64-bit words: ``(word >> b) & 0x0101..01`` puts bit b of each byte in its
    own 8-bit lane, and 255 rows add up lane by lane without a carry crossing lanes.  So 8 shift, mask and add
    passes over n * width / 64 words, with no (n, width) array built: rows go in blocks that stay in cache, and a
    block is summed as 255 slices of whole rows (long inner loops)."""
    n, nbytes = packed.shape
    words = -(-nbytes // 8)
    lanes = np.zeros((8, words * 8), dtype=np.int64)  # [bit b counted from the least significant, byte]
    buffer_rows = min(BLOCK_ROWS, -(-max(n, 1) // LANE_ROWS) * LANE_ROWS)
    buffer = np.zeros((buffer_rows, words * 8), dtype=np.uint8)
    shifted = np.empty((buffer_rows, words), dtype=np.uint64)
    direct = nbytes % 8 == 0 and packed.flags.c_contiguous  # whole words already: no copy
    for start in range(0, n, BLOCK_ROWS):
        block = packed[start:start + BLOCK_ROWS]
        rows = len(block)
        padded = -(-rows // LANE_ROWS) * LANE_ROWS
        if direct and rows == padded:
            block_words = block.view(np.uint64)
        else:
            buffer[:rows, :nbytes] = block  # whole words, zero-padded
            buffer[rows:padded] = 0
            block_words = buffer[:padded].view(np.uint64)
        lane_bits = shifted[:padded]
        for bit in range(8):
            np.right_shift(block_words, np.uint64(bit), out=lane_bits)
            np.bitwise_and(lane_bits, _LOW_BITS, out=lane_bits)
            sums = np.add.reduce(lane_bits.reshape(LANE_ROWS, -1), axis=0)  # each lane: 255 bits at most
            lanes[bit] += sums.view(np.uint8).reshape(-1, words * 8).sum(axis=0, dtype=np.int64)
    # byte j's bit b (from the least significant) is bit position 8 j + 7 - b of the row
    return np.ascontiguousarray(lanes[::-1].T).reshape(-1)[:width]


def hex_rows(texts: Sequence[str], nbytes: int) -> np.ndarray:
    "Checked hex strings of ``nbytes`` bytes each as a uint8 array (n, nbytes)"
    rows = strict_hex_rows(texts, nbytes)
    if rows is None:
        raise ValueError(f"expected hex strings of {2 * nbytes} hex digits")
    return rows


def strict_hex_rows(texts: Sequence[Any], nbytes: int) -> np.ndarray | None:
    """Strings of exactly ``2 * nbytes`` hex digits each as a uint8 array (n, nbytes); None unless every one is.

    The rule of ``client_sdk.wire.require_hex``, checked in bulk: every length first, then ``binascii.unhexlify``
    over the joined strings a chunk at a time.  unhexlify takes ASCII text only and refuses every character but
    a hex digit, whitespace included (unlike ``bytes.fromhex``, which skips it); joining refuses what is not a
    str; and the decoded length must be exactly what the lengths promise."""
    n = len(texts)
    out = np.empty((n, nbytes), dtype=np.uint8)
    try:
        if n and set(map(len, texts)) != {2 * nbytes}:
            return None
        for start in range(0, n, HEX_CHUNK):
            chunk = texts[start:start + HEX_CHUNK]
            raw = binascii.unhexlify("".join(chunk))
            if len(raw) != len(chunk) * nbytes:
                return None
            out[start:start + len(chunk)] = np.frombuffer(raw, dtype=np.uint8).reshape(len(chunk), nbytes)
    except (TypeError, ValueError):  # an element without a length or not a str; not ASCII or not hex digits
        return None
    return out
