"""The name, fields, bounds and defaults of a poplar1 campaign's parameters (one definition, for the params, the
collector's walk and the kind's registration: this module imports nothing)."""

from __future__ import annotations

KIND_NAME = "poplar1"
FIELDS = frozenset(("trust", "bits", "overflow", "threshold", "stride", "min_batch"))
MIN_BITS, MAX_BITS = 8, 256  # whole bytes: a string is bits // 8 bytes
MAX_STRIDE = 8  # bits a level adds: a kept prefix has at most 2**stride candidate extensions
DEFAULT_STRIDE = 4
MAX_MIN_BATCH = 1 << 31
OVERFLOWS = ("truncate", "refuse")
NOISE = "gaussian"  # each aggregator's noise on each level's prefix counts: discrete Gaussian
