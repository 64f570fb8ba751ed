"""What every mechanism offers the server.

A :class:`ServerMechanism` subclass that declares ``names`` registers itself when its module is imported
(``estimators.mechanisms`` imports every module of the package) in ``estimators.registry``, where
``mechanism_for(spec)`` finds it.  It is built on the SDK's randomizer for the
same spec (``self.device``: the quantized probabilities, the wire format and ``check_payload``) and adds what
the server needs:

=====================  ==================================================================================
``check_payload``      the SDK's check: the one definition of a valid payload (collector and estimators)
``parse``              JSON payloads -> :class:`ReportBatch` (columns), checking every payload unless told
                       they were checked already
``bulk_columns``       optional: the columns of payloads checked all at once (vectorised), exactly as
                       ``check_payload`` would; ``parse`` falls back to the per-payload check to name a bad one
``payloads_of``        a batch -> the JSON payloads, as the SDK sends them
``zeros``              the aggregate of no reports
``statistic``          a batch -> its sufficient statistic (a vector of sums: mergeable by addition)
``simulate``           a vectorised simulator with the SDK's distribution (numpy, seedable)
``variance``           the worst-case per-report variance of the unbiased estimator
``estimate``           an aggregate -> the de-biased estimate with standard errors
=====================  ==================================================================================
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from client_sdk.errors import PayloadError
from client_sdk.mechanisms import Mechanism, mechanism_from_spec
from client_sdk.mechanisms.base import register
from client_sdk.spec import Spec

from ..registry import REGISTRY, ReportBatch


class ServerMechanism(ABC):
    "The server side of one mechanism for one spec"

    names: ClassVar[tuple[str, ...]] = ()
    exact_sums: ClassVar[bool] = False  # counts are exact Python integers (object arrays), else int64

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        register(REGISTRY, cls)

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.device: Mechanism = mechanism_from_spec(spec)

    # -- payloads ---------------------------------------------------------------------------------------
    def check_payload(self, payload: Any) -> None:
        "Raise PayloadError naming the field unless the SDK could have produced ``payload``"
        self.device.check_payload(payload)

    def parse(self, payloads: Sequence[Any], *, checked: bool = False) -> ReportBatch:
        """A batch from JSON payloads; every payload goes through ``check_payload`` unless ``checked`` says it
        did already (the collector checks each report to reject it by name).  PayloadError names the index."""
        if not checked:
            columns = self.bulk_columns(payloads)
            if columns is not None:
                return ReportBatch(self.spec.mechanism, len(payloads), columns)
            for index, payload in enumerate(payloads):
                try:
                    self.check_payload(payload)
                except PayloadError as error:
                    raise PayloadError(f"payloads[{index}]{error.field[len('payload'):]}", error.reason) from None
        return ReportBatch(self.spec.mechanism, len(payloads), self.columns(payloads))

    @abstractmethod
    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        "The columns of checked payloads"

    def bulk_columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray] | None:
        """The columns of ``payloads`` if every one passes ``check_payload``, checked in bulk; None if any fails
        (or the mechanism has no bulk check): then ``parse`` checks them one by one and names the first bad one"""
        return None

    @classmethod
    @abstractmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        "The JSON payloads of a batch"

    # -- aggregation ------------------------------------------------------------------------------------
    @abstractmethod
    def zeros(self) -> np.ndarray:
        "The sufficient statistic of no reports"

    @abstractmethod
    def statistic(self, batch: ReportBatch) -> np.ndarray:
        "The sufficient statistic of a batch: a vector (or matrix) of sums over its reports"

    def small_statistic(self, payloads: Sequence[Any]) -> np.ndarray | None:
        """``statistic`` of a few checked JSON payloads (at most ``SMALL_BATCH``), summed in Python: the same
        values, dtype and shape.  A device's POST holds one report per campaign, for which numpy's per-call cost
        was most of the work.  None where a mechanism has no such path (then ``parse`` and ``statistic``)."""
        return None

    @classmethod
    def counts_from_json(cls, counts: Any) -> np.ndarray:
        "A statistic read back from ``Aggregate.to_dict``"
        if cls.exact_sums:
            return np.array([int(c) for c in counts], dtype=object)
        return np.asarray(counts, dtype=np.int64)

    # -- simulation and estimation ---------------------------------------------------------------------
    @abstractmethod
    def simulate(self, true_values: Any, rng: np.random.Generator) -> ReportBatch:
        "Reports for every true value (domain indices, numbers or strings, as the family takes them)"

    @abstractmethod
    def variance(self) -> float:
        "Worst-case per-report variance of the unbiased estimate (a frequency, or t on [-1, 1])"

    @abstractmethod
    def estimate(self, aggregate: Any, *, confidence: float, delta: float | None) -> Any:
        "De-bias an aggregate of this spec's reports (``.to_dict()`` of the result is plain JSON)"

    def check_estimable(self) -> None:
        "Raise ``CandidatesRequired`` (an ``EstimatorError``) if the spec lacks what its reports' estimate needs"
        return None


def pair_columns(payloads: Sequence[Any], first: str, second: str) -> dict[str, np.ndarray]:
    "Columns of checked ``[int, int]`` payloads"
    pairs = np.asarray(payloads, dtype=np.int64).reshape(len(payloads), 2)
    return {first: pairs[:, 0].copy(), second: pairs[:, 1].copy()}


def pair_payloads(batch: ReportBatch, first: str, second: str) -> list:
    "``[int, int]`` payloads from two columns"
    return [list(pair) for pair in zip(batch[first].tolist(), batch[second].tolist())]


SMALL_BATCH = 16  # batches up to this size are aggregated by small_statistic where a mechanism has it
