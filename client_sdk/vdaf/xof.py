"""The XOFs of draft-irtf-cfrg-vdaf-20 (section "Extendable Output Functions"): XofTurboShake128, XofFixedKeyAes128.

TurboSHAKE128 (RFC 9861) and AES-128 come from pycryptodome (>= 3.20), the SDK's optional ``distributed`` extra:
the standard library has neither, and a pure-Python Keccak-p[1600, 12] would dominate the cost of sharding.
"""

from __future__ import annotations

from typing import Any

from .field import Field, next_power_of_2

INSTALL_HINT = "pip install 'ldp-telemetry[distributed]'"


class MissingDependency(ImportError):
    "Distributed (Prio3) campaigns need pycryptodome >= 3.20, the SDK's optional `distributed` extra"


def _crypto() -> tuple[Any, Any]:
    try:
        from Crypto.Cipher import AES
        from Crypto.Hash import TurboSHAKE128
    except ImportError as exc:  # pragma: no cover - exercised by test_import_isolation in a subprocess
        raise MissingDependency(
            f"Prio3 needs pycryptodome >= 3.20 (TurboSHAKE128, AES): {INSTALL_HINT}"
        ) from exc
    return TurboSHAKE128, AES


_TURBOSHAKE, _AES = _crypto()


def turboshake128(message: bytes, domain: int, length: int) -> bytes:
    "TurboSHAKE128(M, D, L) of RFC 9861"
    h = _TURBOSHAKE.new(domain=domain)
    h.update(message)
    return bytes(h.read(length))


class Xof:
    "Common XOF interface: next(length) bytes, next_vec(field, length) field elements"

    SEED_SIZE: int

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        raise NotImplementedError

    def next(self, length: int) -> bytes:
        raise NotImplementedError

    @classmethod
    def derive_seed(cls, seed: bytes, dst: bytes, binder: bytes) -> bytes:
        return cls(seed, dst, binder).next(cls.SEED_SIZE)

    def next_vec(self, field: type[Field], length: int) -> list[int]:
        "The next `length` elements by rejection sampling (mask to the modulus' bit length, drop values >= p)"
        mask = next_power_of_2(field.MODULUS) - 1
        size = field.ENCODED_SIZE
        modulus = field.MODULUS
        vec: list[int] = []
        while len(vec) < length:
            need = length - len(vec)
            block = self.next(need * size)
            for i in range(0, len(block), size):
                x = int.from_bytes(block[i:i + size], "little") & mask
                if x < modulus:
                    vec.append(x)
        return vec

    @classmethod
    def expand_into_vec(cls, field: type[Field], seed: bytes, dst: bytes, binder: bytes, length: int) -> list[int]:
        return cls(seed, dst, binder).next_vec(field, length)


class XofTurboShake128(Xof):
    "TurboSHAKE128 over len(dst) || dst || len(seed) || seed || binder, domain byte 1"

    SEED_SIZE = 32

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        if len(seed) > 255:
            raise ValueError("seed longer than 255 bytes")
        if len(dst) > 65535:
            raise ValueError("dst longer than 65535 bytes")
        self._hash = _TURBOSHAKE.new(domain=1)
        self._hash.update(len(dst).to_bytes(2, "little") + dst + len(seed).to_bytes(1, "little") + seed + binder)

    def next(self, length: int) -> bytes:
        return bytes(self._hash.read(length))


class XofFixedKeyAes128(Xof):
    "Fixed-key AES-128 in the circular correlation-robust hash mode of GKWWY20; key = TurboSHAKE128(dst, binder)"

    SEED_SIZE = 16

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        if len(seed) != self.SEED_SIZE:
            raise ValueError("incorrect seed size")
        if len(dst) > 65535:
            raise ValueError("dst longer than 65535 bytes")
        fixed_key = turboshake128(len(dst).to_bytes(2, "little") + dst + binder, 2, 16)
        self._cipher = _AES.new(fixed_key, _AES.MODE_ECB)
        self._seed = int.from_bytes(seed, "little")
        self._consumed = 0

    def next(self, length: int) -> bytes:
        offset = self._consumed % 16
        first = self._consumed // 16
        self._consumed += length
        last = self._consumed // 16
        sigma = bytearray()
        for i in range(first, last + 1):
            block = (self._seed ^ i).to_bytes(16, "little")
            lo, hi = block[:8], block[8:]
            sigma += hi + bytes(a ^ b for a, b in zip(hi, lo))
        encrypted = self._cipher.encrypt(bytes(sigma))
        hashed = (int.from_bytes(encrypted, "big") ^ int.from_bytes(sigma, "big")).to_bytes(len(sigma), "big")
        return hashed[offset:offset + length]
