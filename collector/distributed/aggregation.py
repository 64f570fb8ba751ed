"""What both aggregators compute for one distributed campaign: batched verification, output shares, aggregate
shares with their noise, and the unsharding of a release.  No I/O here.

Field elements travel and are stored as the draft's encodings (``Field.encode_vec``).  The aggregator noise is an
integer per coordinate, added to the share as its residue mod p; the sum of both noisy shares mod p is mapped back
to the signed integer in (-p/2, p/2) (:func:`signed`), exact as long as |sum + noise| < p/2 (p is 2^64 or 2^128
sized: a release would need more than 2^62 reports to wrap).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from client_sdk import distributed
from client_sdk.spec import Spec
from client_sdk.vdaf import VerifyError
from estimators.distributed import Shift, calibrate

from ..vdaf_batch import BatchReport, batch_verify_init


def signed(value: int, modulus: int) -> int:
    "The field element as the signed integer it encodes: value if value <= (p-1)/2, else value - p"
    value %= modulus
    return value if value <= (modulus - 1) // 2 else value - modulus


@dataclass(frozen=True)
class Verified:
    "One report after this aggregator's verify_init: its state and verifier share, or why it failed"

    state: Any = None
    verifier_share: Any = None
    error: str | None = None


class CampaignVdaf:
    "A distributed campaign's Prio3 instance, context, verify key and noise"

    def __init__(self, spec: Spec, verify_key: bytes) -> None:
        self.spec = spec
        self.verify_key = verify_key
        self.vdaf = distributed.vdaf_for(spec)
        self.ctx = distributed.ctx_for(spec)
        self.field = self.vdaf.field
        self.modulus = self.field.MODULUS
        if spec.prio3 is None:
            raise ValueError(f"campaign {spec.name!r} is not distributed")
        self.params = params = spec.prio3
        # a coins campaign's devices also send coin bits (HistogramWithCoins): verified, then dropped (noise.py)
        self.coins = (params.coins or 1) if params.noise == "coins" else 0
        self.length = (params.length or 0) if self.coins else self.vdaf.flp.OUTPUT_LEN

    @cached_property
    def noise(self) -> Any:
        "The campaign's NoiseMode (``estimators.distributed.calibrate``)"
        delta = self.spec.delta if self.spec.delta is not None else 0.0
        return calibrate(self.params.noise, epsilon=self.spec.epsilon, delta=delta,
                         sensitivity=Shift(*self.params.shift))

    # -- verification ---------------------------------------------------------------------------------------
    def verify_init(self, agg_id: int, reports: Sequence[tuple[bytes, bytes, bytes]]) -> list[Verified]:
        "Batched verify_init of (nonce, public share, encoded input share) tuples"
        if not reports:
            return []
        batch = [BatchReport(nonce, public, share) for nonce, public, share in reports]
        try:
            results = batch_verify_init(self.vdaf, self.verify_key, self.ctx, agg_id, batch)
        except (ValueError, IndexError):  # one malformed report must not sink the batch: verify one at a time
            results = []
            for report in batch:
                try:
                    results += batch_verify_init(self.vdaf, self.verify_key, self.ctx, agg_id, [report])
                except (ValueError, IndexError) as exc:
                    results.append(VerifyError(str(exc)))
        out = []
        for result in results:
            if isinstance(result, VerifyError):
                out.append(Verified(error=str(result)))
            else:
                out.append(Verified(state=result[0], verifier_share=result[1]))
        return out

    def decode_input_share(self, agg_id: int, encoded: bytes) -> None:
        "VerifyError if the input share cannot be decoded (checked at upload on the leader)"
        self.vdaf.decode_input_share(agg_id, encoded)

    # -- output shares ----------------------------------------------------------------------------------------
    def contribution(self, out_share: list[int]) -> list[int]:
        "What the report adds to the aggregate share: its output share (a coins report: its histogram part only)"
        return [x % self.modulus for x in out_share[:self.length]]

    def add(self, share: list[int] | None, vectors: Sequence[list[int]]) -> list[int]:
        total = list(share) if share is not None else [0] * self.length
        p = self.modulus
        for vector in vectors:
            total = [(a + b) % p for a, b in zip(total, vector)]
        return total

    def encode(self, vector: list[int]) -> bytes:
        return bytes(self.field.encode_vec(vector))

    def decode(self, data: bytes | None) -> list[int]:
        if data is None:
            return [0] * self.length
        vector = self.field.decode_vec(data)
        if len(vector) != self.length:
            raise ValueError(f"an aggregate share has {self.length} entries, got {len(vector)}")
        return list(vector)

    def add_noise(self, share: list[int]) -> list[int]:
        "This aggregator's own noise on its share, calibrated so that it alone protects the release"
        noise = self.noise.share_noise(self.length)
        return [(a + n) % self.modulus for a, n in zip(share, noise)]

    def unshard(self, shares: Sequence[list[int]]) -> list[int]:
        "The release: the shares' sum as signed integers"
        total = self.add(None, shares)
        return [signed(x, self.modulus) for x in total]
