"""Prio3 and Poplar1 verifiable distributed aggregation (draft-irtf-cfrg-vdaf-20) for distributed campaigns.

Not imported by ``client_sdk`` itself: local-DP campaigns stay standard-library only.  This subpackage needs
pycryptodome >= 3.20 and cryptography >= 48 (the SDK's ``distributed`` extra: ``pip install './sdk[distributed]'``
from a checkout) and raises ``MissingDependency`` without them.
"""

from __future__ import annotations

from .field import Field, Field64, Field128, Field255
from .idpf import CorrectionWord, IdpfBBCGGI21
from .poplar1 import Poplar1, Poplar1AggParam, Poplar1InputShare, Poplar1VerifyState
from .prio3 import (
    InputShare,
    Prio3,
    VerifierShare,
    VerifyError,
    VerifyState,
    prio3_count,
    prio3_histogram,
    prio3_histogram_with_coins,
    prio3_multihot_count_vec,
    prio3_sum,
    prio3_sum_vec,
)
from .xof import MissingDependency, XofFixedKeyAes128, XofTurboShake128

__all__ = [
    "Field",
    "Field64",
    "Field128",
    "Field255",
    "CorrectionWord",
    "IdpfBBCGGI21",
    "Poplar1",
    "Poplar1AggParam",
    "Poplar1InputShare",
    "Poplar1VerifyState",
    "InputShare",
    "MissingDependency",
    "Prio3",
    "VerifierShare",
    "VerifyError",
    "VerifyState",
    "XofFixedKeyAes128",
    "XofTurboShake128",
    "prio3_count",
    "prio3_histogram",
    "prio3_histogram_with_coins",
    "prio3_multihot_count_vec",
    "prio3_sum",
    "prio3_sum_vec",
]
