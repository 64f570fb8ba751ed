"""Counting ones per bit position in packed bit rows: the unary encodings' and RAPPOR's sufficient statistic."""

from __future__ import annotations

import numpy as np

_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)  # (256, 8)
HISTOGRAM_ELEMENTS = 1 << 20  # (row, byte) keys built per numpy step


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
    "Ones per bit position over packed big-endian rows (n, ceil(width/8)) -> (width,) int64"
    return grouped_bit_counts(None, packed, 1, width)[0]


def hex_rows(texts: list[str], nbytes: int) -> np.ndarray:
    "Checked hex strings of ``nbytes`` bytes each as a uint8 array (n, nbytes)"
    return np.frombuffer(bytes.fromhex("".join(texts)), dtype=np.uint8).reshape(len(texts), nbytes)
