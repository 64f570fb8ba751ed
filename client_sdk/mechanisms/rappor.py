"""The RAPPOR randomizer (Erlingsson, Pihur, Korolova, CCS 2014); parameters, hashing and the PRR derivation are
in ``client_sdk.rappor``, which the server's decoder shares."""

from __future__ import annotations

import _thread

from ..errors import PayloadError, SpecError
from ..randomness import PROB_DENOMINATOR, RandomSource
from ..rappor import (
    MIN_SECRET_BYTES,
    PRR_CACHE_SIZE,
    RapporParams,
    cohort_from_secret,
    hash_bytes,
    probability_threshold,
    prr_words,
    quantized_probabilities,
    value_bit_positions,
)
from ..spec import Spec
from ..wire import bits_to_hex, require_int, require_packed_bits
from .base import Mechanism

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any, ClassVar


class RapporMechanism(Mechanism):
    """RAPPOR for one campaign on one device: ``perturb(value)`` gives ``{"cohort", "bits"}``.

    ``secret`` (at least 32 bytes) and ``cohort`` come from the device state (the :class:`~client_sdk.Client`
    keeps the secret in its state database); without a secret a fresh one is drawn from ``rng``, which protects
    nothing across processes.  The cohort defaults to the one derived from the secret."""

    names: ClassVar[tuple[str, ...]] = ("rappor",)
    family = "set"

    def __init__(
        self,
        spec: Spec,
        *,
        rng: RandomSource | None = None,
        secret: bytes | None = None,
        cohort: int | None = None,
    ) -> None:
        super().__init__(spec, rng=rng)
        if spec.rappor is None:
            raise SpecError("rappor", "the RAPPOR randomizer needs the spec's rappor parameters")
        self.params: RapporParams = spec.rappor
        params = self.params
        self._candidate_index: dict[str, int] | None = None
        if params.encoding == "basic":
            if spec.candidates is None or len(spec.candidates) != params.k:
                raise SpecError("candidates", "the basic encoding needs exactly k candidates (one bit each)")
            self._candidate_index = {value: i for i, value in enumerate(spec.candidates)}
        self.secret = self._check_secret(self.rng.token_bytes(MIN_SECRET_BYTES) if secret is None else secret)
        if cohort is None:
            cohort = cohort_from_secret(self.secret, params.m)
        if isinstance(cohort, bool) or not isinstance(cohort, int) or not 0 <= cohort < params.m:
            raise ValueError(f"cohort must be an integer in [0, {params.m})")
        self.cohort = cohort
        f_half, p, q = quantized_probabilities(params)
        self.prr_threshold, self.p_threshold, self.q_threshold = (probability_threshold(x) for x in (f_half, p, q))
        self._prr_cache: dict[bytes, bytearray] = {}
        self._prr_lock = _thread.allocate_lock()  # threading.Lock itself, without importing threading

    @staticmethod
    def _check_secret(secret: Any) -> bytes:
        if not isinstance(secret, (bytes, bytearray)):
            raise TypeError("secret must be bytes")
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"secret must be at least {MIN_SECRET_BYTES} bytes")
        return bytes(secret)

    # -- the three steps ----------------------------------------------------------------------------------
    def bloom_bits(self, value: Any) -> bytearray:
        "The true Bloom filter of ``value`` in this device's cohort, one 0/1 byte per bit (never sent)"
        positions = value_bit_positions(self.params, value, self.cohort, self._candidate_index)
        bits = bytearray(self.params.k)
        for position in positions:
            bits[position] = 1
        return bits

    def permanent_bits(self, value: Any) -> bytearray:
        "The memoized PRR of ``value``: a deterministic function of secret, campaign and Bloom bits (never sent)"
        bloom = self.bloom_bits(value)
        key = bytes.fromhex(bits_to_hex(bloom, len(bloom)))
        cached = self._prr_cache.get(key)
        if cached is None:
            words = prr_words(self.secret, self.spec.name, key, self.params.k)
            t = self.prr_threshold
            # w < t: 1 (prob f/2); t <= w < 2t: 0 (prob f/2); else keep the Bloom bit (prob 1 - f)
            cached = bytearray(1 if w < t else (0 if w < 2 * t else b) for w, b in zip(words, bloom))
            with self._prr_lock:  # the SDK client may report from several threads
                if len(self._prr_cache) >= PRR_CACHE_SIZE:
                    del self._prr_cache[next(iter(self._prr_cache))]
                self._prr_cache[key] = cached
        return bytearray(cached)

    def instantaneous_bits(self, prr: bytearray) -> bytearray:
        "The IRR: fresh from ``rng`` on every call; a PRR 1-bit is reported as 1 w.p. q, a 0-bit w.p. p"
        words = memoryview(self.rng.token_bytes(4 * len(prr))).cast("I")
        p_t, q_t = self.p_threshold, self.q_threshold
        return bytearray((w < q_t) if b else (w < p_t) for w, b in zip(words, prr))

    # -- Mechanism interface ------------------------------------------------------------------------------
    def perturb(self, value: Any) -> dict:
        "One report of ``value``: a dict with ``cohort`` (int) and ``bits`` (hex)"
        irr = self.instantaneous_bits(self.permanent_bits(value))
        return {"cohort": self.cohort, "bits": bits_to_hex(irr, self.params.k)}

    def check_payload(self, payload: Any) -> None:
        if not isinstance(payload, dict):
            raise PayloadError("payload", "must be an object with cohort and bits")
        extra = sorted(set(payload) - {"cohort", "bits"})
        if extra:
            raise PayloadError(f"payload.{extra[0]}", "unknown field; allowed: cohort, bits")
        for name in ("cohort", "bits"):
            if name not in payload:
                raise PayloadError(f"payload.{name}", "is required")
        require_int(payload["cohort"], "payload.cohort", 0, self.params.m)
        require_packed_bits(payload["bits"], "payload.bits", self.params.k)

    @classmethod
    def spec_derived(cls, spec: Spec) -> dict:
        "From the parameters alone: a served spec needs no device secret (nor, for basic, its candidates)"
        params = spec.rappor
        if params is None:
            raise SpecError("rappor", "the RAPPOR randomizer needs the spec's rappor parameters")
        return {"p11": params.p11, "p01": params.p01, "epsilon_one": params.epsilon_one,
                "epsilon_inf": params.epsilon_inf}

    def derived(self) -> dict:
        params = self.params
        return {
            **self.spec_derived(self.spec),
            "encoding": params.encoding,
            "hash_bytes": hash_bytes(params.k),
            "f_half_quantized": self.prr_threshold / PROB_DENOMINATOR,
            "p_quantized": self.p_threshold / PROB_DENOMINATOR,
            "q_quantized": self.q_threshold / PROB_DENOMINATOR,
        }
