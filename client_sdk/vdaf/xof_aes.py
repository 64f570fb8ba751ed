"""XofFixedKeyAes128 (draft-irtf-cfrg-vdaf-20, section "XofFixedKeyAes128") for many seeds at once.

The IDPF expands every node of a tree level under the same fixed key (same ``dst``, same nonce as the binder),
each seed by one or a few blocks.  One XOF object per node would spend its time deriving the key and crossing into
the cipher block by block; here the key is derived once and every block of every seed goes through a single ECB
call.  Block ``i`` of a seed's stream is ``AES(sigma) xor sigma`` with ``sigma = hi || (hi xor lo)`` for
``lo || hi = seed xor le128(i)`` (GKWWY20's circular correlation-robust hash), exactly ``XofFixedKeyAes128.next``.

Seeds and blocks are 128-bit ints (the 16 bytes read little-endian), so XORing a correction word is one operation.

AES-128 here is ``cryptography``'s (the SDK's ``distributed`` extra, as for HPKE): an ECB call costs about a
twentieth of pycryptodome's wrapper, and the IDPF makes two sequential calls per tree level.  The fixed key is
derived with TurboSHAKE128 (``xof.py``), so the output is ``XofFixedKeyAes128``'s byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import MissingDependency
from .field import u64_struct
from .xof import INSTALL_HINT, fixed_key

try:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
except ImportError as exc:  # pragma: no cover - cryptography is a dependency of the extra
    raise MissingDependency(f"Poplar1 needs cryptography >= 48 (AES-128): {INSTALL_HINT}") from exc
try:  # the context constructor ``Cipher.encryptor`` ends in, without its argument checks (half a report's AES setup)
    from cryptography.hazmat.bindings._rust import openssl as _rust_openssl

    _create_encryption_ctx: Callable[[Any, Any], Any] | None = _rust_openssl.ciphers.create_encryption_ctx
except (ImportError, AttributeError):  # pragma: no cover - another cryptography layout: the public API
    _create_encryption_ctx = None
_ECB = modes.ECB()

MASK64 = (1 << 64) - 1
MASK128 = (1 << 128) - 1
BLOCK_ONE = 1 << 64  # le128(1) moved to where it lands in sigma: the second word
_FOUR_WORDS = u64_struct(4)


def _unchecked_aes(key: bytes) -> algorithms.AES:
    """``algorithms.AES(key)`` without its argument checks (abstract-class instance checks that cost as much as
    the key setup): the callers' keys are always 16 bytes, from ``fixed_key``"""
    algorithm = object.__new__(algorithms.AES)
    algorithm.key = key
    return algorithm


def _aes_check() -> bool:
    "Whether ``_unchecked_aes`` gives the public API's cipher (FIPS-197 appendix C.1's AES-128 example)"
    key, block = bytes(range(16)), bytes.fromhex("00112233445566778899aabbccddeeff")
    try:
        if _create_encryption_ctx is None:
            return False
        out = _create_encryption_ctx(_unchecked_aes(key), _ECB).update(block)
    except Exception:  # noqa: BLE001 - pragma: no cover - another cryptography layout: the checked constructor
        return False
    return out == bytes.fromhex("69c4e0d86a7b0430d8cdb78070b4c55a") == Cipher(
        algorithms.AES(key), _ECB).encryptor().update(block)


_UNCHECKED = _aes_check()
_new_object, _AES = object.__new__, algorithms.AES


def _checked_encryptor(key: bytes) -> Callable[[bytes], bytes]:
    "AES-128-ECB encryption under ``key`` through the public constructors (and the private context one if it works)"
    algorithm = algorithms.AES(key)
    if _create_encryption_ctx is not None:
        try:
            return _create_encryption_ctx(algorithm, _ECB).update  # type: ignore[no-any-return]
        except TypeError:  # pragma: no cover - a changed private signature: the public API
            pass
    return Cipher(algorithm, _ECB).encryptor().update


class FixedKeyAes128:
    "The streams of XofFixedKeyAes128(seed, dst, binder) for any number of seeds under one (dst, binder)"

    SEED_SIZE = 16
    __slots__ = ("_encrypt",)
    _encrypt: Callable[[bytes], bytes]

    def __init__(self, dst: bytes, binder: bytes) -> None:
        self._encrypt = self.from_key(fixed_key(dst, binder))._encrypt

    @classmethod
    def from_key(cls, key: bytes) -> FixedKeyAes128:
        "The streams under an already derived fixed key (``fixed_key(dst, binder)``, 16 bytes)"
        hasher = _new_object(cls)
        if _UNCHECKED:  # _unchecked_aes inlined: a report's evaluation sets up two keys per aggregator
            algorithm = _new_object(_AES)
            algorithm.key = key
            hasher._encrypt = _create_encryption_ctx(algorithm, _ECB).update  # type: ignore[misc]
        else:
            hasher._encrypt = _checked_encryptor(key)
        return hasher  # type: ignore[no-any-return]

    def blocks(self, seeds: Sequence[int], count: int) -> list[int]:
        """The first ``count`` 16-byte blocks of each seed's stream, seed after seed (``count * len(seeds)`` ints;
        block j of seed i at ``i * count + j``)"""
        words: list[int] = []
        extend = words.extend
        if count == 1:
            for seed in seeds:
                hi = seed >> 64
                extend((hi, hi ^ (seed & MASK64)))
        elif count == 2:
            for seed in seeds:
                hi = seed >> 64
                mixed = hi ^ (seed & MASK64)
                extend((hi, mixed, hi, mixed ^ 1))
        else:
            for seed in seeds:
                hi = seed >> 64
                mixed = hi ^ (seed & MASK64)
                for i in range(count):
                    extend((hi, mixed ^ i))
        if not words:
            return []
        layout = u64_struct(len(words))
        sigma = layout.pack(*words)
        hashed = (int.from_bytes(self._encrypt(sigma), "little") ^ int.from_bytes(sigma, "little")).to_bytes(
            len(sigma), "little")
        out = layout.unpack(hashed)
        return [lo | hi << 64 for lo, hi in zip(out[0::2], out[1::2])]

    def four_words(self, w0: int, w1: int, w2: int, w3: int) -> tuple[int, int, int, int]:
        """``AES(sigma) xor sigma`` for the two blocks ``sigma`` given as four little-endian uint64s (a block's
        ``sigma`` is ``hi, hi xor lo`` for ``lo || hi = seed xor le128(i)``): two blocks of one seed's stream or
        one block of two seeds' in 64-bit words, no 128-bit int built (the IDPF's first level)"""
        out = _FOUR_WORDS.unpack(self._encrypt(_FOUR_WORDS.pack(w0, w1, w2, w3)))
        return out[0] ^ w0, out[1] ^ w1, out[2] ^ w2, out[3] ^ w3

    def two_blocks(self, seed: int) -> tuple[int, int]:
        "Blocks 0 and 1 of one seed's stream: ``blocks([seed], 2)`` in straight-line code (the root's extend)"
        hi = seed >> 64
        sigma = hi | (hi ^ (seed & MASK64)) << 64
        sigma |= (sigma ^ BLOCK_ONE) << 128
        out = int.from_bytes(self._encrypt(sigma.to_bytes(32, "little")), "little") ^ sigma
        return out & MASK128, out >> 128

    def two_blocks_each(self, first: int, second: int) -> tuple[int, int, int, int]:
        """Blocks 0 and 1 of two seeds' streams (what key generation needs at every level, for its two seeds): the
        same as ``blocks([first, second], 2)`` in straight-line code, as one 512-bit int"""
        hi = first >> 64
        sigma_first = hi | (hi ^ (first & MASK64)) << 64
        hi = second >> 64
        sigma_second = hi | (hi ^ (second & MASK64)) << 64
        sigma = sigma_first | (sigma_first ^ BLOCK_ONE) << 128 | sigma_second << 256 | (sigma_second ^ BLOCK_ONE) << 384
        out = int.from_bytes(self._encrypt(sigma.to_bytes(64, "little")), "little") ^ sigma
        return out & MASK128, out >> 128 & MASK128, out >> 256 & MASK128, out >> 384
