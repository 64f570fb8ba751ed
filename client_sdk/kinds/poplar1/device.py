"""The poplar1 kind's Poplar1 instances, one per input length (building one derives its IDPF's fixed AES keys)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...vdaf.poplar1 import Poplar1

# Function-level imports: the VDAF layer (Poplar1, its AES and TurboSHAKE) only with the first report.

_INSTANCES: dict[int, Poplar1] = {}
_LOCK = threading.Lock()


def poplar1_for(bits: int) -> Poplar1:
    "The Poplar1 instance over ``bits``-bit strings (memoized)"
    vdaf = _INSTANCES.get(bits)
    if vdaf is None:
        from ...vdaf.poplar1 import Poplar1  # here: the VDAF layer only with the first report

        vdaf = Poplar1(bits)
        with _LOCK:
            _INSTANCES[bits] = vdaf
    return vdaf
