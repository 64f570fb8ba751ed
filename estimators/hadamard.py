"""The fast Walsh-Hadamard transform (Sylvester ordering), O(D log D)."""

from __future__ import annotations

import numpy as np


def walsh_hadamard(vector: np.ndarray) -> np.ndarray:
    "H @ vector for the D x D Sylvester Hadamard matrix, H[i, j] = (-1)^popcount(i & j); D a power of two"
    out = np.array(vector, dtype=np.float64, copy=True)
    size = len(out)
    if size & (size - 1):
        raise ValueError("length must be a power of two")
    half = 1
    while half < size:
        blocks = out.reshape(-1, 2, half)
        top = blocks[:, 0, :].copy()
        blocks[:, 0, :] += blocks[:, 1, :]
        blocks[:, 1, :] = top - blocks[:, 1, :]
        half *= 2
    return out
