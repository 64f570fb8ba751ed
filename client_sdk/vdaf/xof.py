"""The XOFs of draft-irtf-cfrg-vdaf-20 (section "Extendable Output Functions"): XofTurboShake128, XofFixedKeyAes128,
and the domain separation tag of their callers.

TurboSHAKE128 (RFC 9861) and AES-128 come from pycryptodome (>= 3.20), the SDK's optional ``distributed`` extra:
the standard library has neither, and a pure-Python Keccak-p[1600, 12] would dominate the cost of sharding.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..errors import MissingDependency
from .field import Field, Field64, next_power_of_2, u64_struct

INSTALL_HINT = "from a checkout of the repository, pip install './sdk[distributed]'"


def _crypto() -> tuple[Any, Any]:
    try:
        # pycryptodome: the optional distributed extra, imported on first use
        from Crypto.Cipher import AES
        from Crypto.Hash import TurboSHAKE128
    except ImportError as exc:  # pragma: no cover - exercised by test_import_isolation in a subprocess
        raise MissingDependency(
            f"Prio3 and Poplar1 need pycryptodome >= 3.20 (TurboSHAKE128, AES): {INSTALL_HINT}"
        ) from exc
    return TurboSHAKE128, AES


_TURBOSHAKE, _AES = _crypto()

VERSION = 18  # the draft's VERSION constant, the first byte of every domain separation tag


@lru_cache(maxsize=64)
def format_dst(algo_class: int, algo: int, usage: int) -> bytes:
    "VERSION || algorithm class || algorithm id || usage, big-endian (draft section \"Domain Separation Tag\")"
    return bytes([VERSION, algo_class]) + algo.to_bytes(4, "big") + usage.to_bytes(2, "big")


class _RawTurboShake:
    """One reusable TurboSHAKE128 state per thread, driven through pycryptodome's Keccak library directly.

    A one-shot expansion then costs about a third of going through ``TurboSHAKE128.new`` (no per-call allocation
    and wrapper layers), which matters because verifying a small report is mostly XOF calls.  Only used for one-shot
    expansions (``derive_seed``, ``expand_into_vec``); any import problem falls back to the public API.
    """

    def __init__(self) -> None:
        # pycryptodome: the optional distributed extra, imported on first use
        from Crypto.Hash.keccak import _raw_keccak_lib
        from Crypto.Util._raw_api import (
            SmartPointer,
            VoidPointer,
            c_size_t,
            c_ubyte,
            create_string_buffer,
            get_raw_buffer,
        )

        self._lib = _raw_keccak_lib
        self._size_t = c_size_t
        self._domains = {1: c_ubyte(1), 2: c_ubyte(2)}  # XofTurboShake128's, XofFixedKeyAes128's key derivation
        self._buffer = create_string_buffer
        self._raw = get_raw_buffer
        self._local = threading.local()
        self._new_state = lambda: self._make_state(VoidPointer, SmartPointer, c_ubyte)

    def _make_state(self, void_pointer: Any, smart_pointer: Any, c_ubyte: Any) -> Any:
        state = void_pointer()
        if self._lib.keccak_init(state.address_of(), self._size_t(32), c_ubyte(12)):
            raise ValueError("could not instantiate TurboSHAKE128")
        return smart_pointer(state.get(), self._lib.keccak_destroy)

    def _absorb(self, message: bytes) -> Any:
        "This thread's state, reset, with ``message`` absorbed"
        holder = getattr(self._local, "state", None)
        if holder is None:
            holder = self._local.state = self._new_state()
            self._local.buffers = {}
        state = holder.get()
        self._lib.keccak_reset(state)
        self._lib.keccak_absorb(state, message, self._size_t(len(message)))
        return state

    def start(self, message: bytes, domain: int = 1) -> Callable[[int], bytes]:
        "Absorb message into this thread's state; the returned reader is valid until the next start()"
        domain_byte = self._domains[domain]
        state = self._absorb(message)
        lib = self._lib

        def read(length: int) -> bytes:
            out = self._buffer(length)
            if lib.keccak_squeeze(state, out, self._size_t(length), domain_byte):
                raise ValueError("TurboSHAKE128 squeeze failed")
            return bytes(self._raw(out))

        return read

    def digest(self, message: bytes, domain: int, length: int) -> bytes:
        """The first ``length`` bytes of TurboSHAKE128(message, domain): ``start(message, domain)(length)`` without
        the reader closure, squeezed into this thread's buffer of that length (a fixed-key derivation or a short
        expansion is otherwise mostly interpreter overhead)"""
        state = self._absorb(message)
        buffers = self._local.buffers  # set with the state by _absorb
        out = buffers.get(length)
        if out is None:
            out = buffers[length] = self._buffer(length)
        if self._lib.keccak_squeeze(state, out, self._size_t(length), self._domains[domain]):
            raise ValueError("TurboSHAKE128 squeeze failed")
        return self._raw(out)  # type: ignore[no-any-return]  # a copy: the buffer is reused


try:
    _RAW: _RawTurboShake | None = _RawTurboShake()
except (ImportError, AttributeError, ValueError):  # pragma: no cover - another pycryptodome layout
    _RAW = None


def _oneshot() -> tuple[Callable[[bytes, int, int], bytes], Callable[[type[Field], bytes, int], list[int]]] | None:
    """TurboSHAKE128(M, D, L) as one call into pycryptodome's Keccak library (``keccak_oneshot``: capacity 32
    bytes, 12 rounds, D as the padding byte), through its cffi binding: no state to reset, no thread-local lookup,
    a fresh output buffer per call (so any number of threads may hash at once); and XofTurboShake128's expansion
    of a whole input into a Field64 vector, its little-endian uint64s read from that buffer without a copy.
    None without the cffi backend or that function (an older pycryptodome): ``_RawTurboShake`` then serves."""
    try:
        # pycryptodome: the optional distributed extra, imported on first use
        from Crypto.Hash.keccak import _raw_keccak_lib
        from Crypto.Util import _raw_api

        if _raw_api.backend != "cffi":
            return None
        keccak_oneshot = _raw_keccak_lib.keccak_oneshot
        # the C allocator ``ffi.new`` ends in, given the array type once (not its name, parsed on every call)
        ffi = _raw_api.ffi
        new, out_type, buffer = getattr(ffi, "_backend", ffi).newp, ffi.typeof("uint8_t[]"), ffi.buffer
    except (ImportError, AttributeError):  # pragma: no cover - another pycryptodome layout
        return None

    def digest(message: bytes, domain: int, length: int) -> bytes:
        "TurboSHAKE128(M, D, L) of RFC 9861 (ValueError unless 0x01 <= D <= 0x7F)"
        if not 0 < domain < 0x80:
            raise ValueError("TurboSHAKE128's domain byte must be in [0x01, 0x7F]")
        out = new(out_type, length)
        if keccak_oneshot(message, len(message), out, length, 32, 12, domain):
            raise ValueError("TurboSHAKE128 failed")
        return buffer(out)[:]  # type: ignore[no-any-return]  # bytes, one copy

    def expand(field: type[Field], message: bytes, length: int) -> list[int]:
        """``XofTurboShake128.expand_message_into_vec``: a Field64 vector read from the one call's buffer (8-byte
        elements, a modulus above 2**63: no mask, almost never a value to reject)"""
        if field.ENCODED_SIZE == 8 and field.MODULUS > _FIELD64_LEAST_MODULUS and 0 < length:
            out = new(out_type, 8 * length)
            if keccak_oneshot(message, len(message), out, 8 * length, 32, 12, 1):
                raise ValueError("TurboSHAKE128 failed")
            vec = list(u64_struct(length).unpack(buffer(out)))
            if max(vec) < field.MODULUS:
                return vec
        return _expand_message(field, message, length)  # rejection sampling reads on when a value is >= p

    try:  # RFC 9861's first TurboSHAKE128 vector (empty message, D = 0x1F), or the library is not this one
        if digest(b"", 0x1F, 32) != bytes.fromhex(
                "1e415f1c5983aff2169217277d17bb538cd945a397ddec541f1ce41af2c1b74c"):
            return None
        if expand(Field64, b"", 4) != _expand_message(Field64, b"", 4):
            return None
    except Exception:  # noqa: BLE001 - pragma: no cover - an incompatible binding: the state-based path serves
        return None
    return digest, expand


def _sample(field: type[Field], read: Callable[[int], bytes], length: int) -> list[int]:
    "Rejection sampling of `length` elements from a byte stream (draft: Xof.next_vec)"
    mask = next_power_of_2(field.MODULUS) - 1
    size = field.ENCODED_SIZE
    modulus = field.MODULUS
    vec = field.unpack_vec(read(length * size))
    if mask != (1 << (8 * size)) - 1:
        vec = [x & mask for x in vec]
    if max(vec, default=0) < modulus:
        return vec
    vec = [x for x in vec if x < modulus]
    while len(vec) < length:
        block = read((length - len(vec)) * size)
        for i in range(0, len(block), size):
            x = int.from_bytes(block[i:i + size], "little") & mask
            if x < modulus:
                vec.append(x)
    return vec


def _expand_message(field: type[Field], message: bytes, length: int) -> list[int]:
    "``length`` elements of ``field`` sampled from XofTurboShake128's stream over ``message`` (the whole input)"
    if _RAW is None:
        hasher = _TURBOSHAKE.new(domain=1)
        hasher.update(message)
        return _sample(field, lambda size: bytes(hasher.read(size)), length)
    return _sample(field, _RAW.start(message), length)


_FIELD64_LEAST_MODULUS = 1 << 63  # a field of 8-byte elements and a modulus above this samples with no mask
_ONESHOTS = _oneshot()
_ONESHOT, _ONESHOT_EXPAND = _ONESHOTS if _ONESHOTS is not None else (None, None)


def _turboshake128(message: bytes, domain: int, length: int) -> bytes:
    "TurboSHAKE128(M, D, L) of RFC 9861 (ValueError unless 0x01 <= D <= 0x7F)"
    if _RAW is not None and domain in (1, 2):
        return _RAW.digest(message, domain, length)
    h = _TURBOSHAKE.new(domain=domain)
    h.update(message)
    return bytes(h.read(length))


# TurboSHAKE128(M, D, L): the one-shot call when pycryptodome has it (a fixed-key derivation: no wrapper around it)
turboshake128: Callable[[bytes, int, int], bytes] = _ONESHOT if _ONESHOT is not None else _turboshake128


def fixed_key(dst: bytes, binder: bytes) -> bytes:
    "XofFixedKeyAes128's AES-128 key: TurboSHAKE128(len(dst) || dst || binder, 2, 16)"
    return turboshake128(fixed_key_prefix(dst) + binder, 2, 16)


def fixed_key_prefix(dst: bytes) -> bytes:
    """``len(dst) || dst``, what ``fixed_key`` hashes before the binder (for a caller deriving many keys under one
    ``dst``: ``turboshake128(prefix + binder, 2, 16)``)"""
    if len(dst) > 65535:
        raise ValueError("dst longer than 65535 bytes")
    return len(dst).to_bytes(2, "little") + dst


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
        return _sample(field, self.next, length)

    @classmethod
    def expand_into_vec(cls, field: type[Field], seed: bytes, dst: bytes, binder: bytes, length: int) -> list[int]:
        return cls(seed, dst, binder).next_vec(field, length)


class XofTurboShake128(Xof):
    "TurboSHAKE128 over len(dst) || dst || len(seed) || seed || binder, domain byte 1"

    SEED_SIZE = 32

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        self._hash = _TURBOSHAKE.new(domain=1)
        self._hash.update(self._message(seed, dst, binder))

    def next(self, length: int) -> bytes:
        return bytes(self._hash.read(length))

    @staticmethod
    def _message(seed: bytes, dst: bytes, binder: bytes) -> bytes:
        if len(seed) > 255:
            raise ValueError("seed longer than 255 bytes")
        if len(dst) > 65535:
            raise ValueError("dst longer than 65535 bytes")
        return len(dst).to_bytes(2, "little") + dst + len(seed).to_bytes(1, "little") + seed + binder

    @classmethod
    def derive_seed(cls, seed: bytes, dst: bytes, binder: bytes) -> bytes:
        if _ONESHOT is not None:
            return _ONESHOT(cls._message(seed, dst, binder), 1, cls.SEED_SIZE)
        if _RAW is None:
            return super().derive_seed(seed, dst, binder)
        return _RAW.digest(cls._message(seed, dst, binder), 1, cls.SEED_SIZE)

    @classmethod
    def expand_into_vec(cls, field: type[Field], seed: bytes, dst: bytes, binder: bytes, length: int) -> list[int]:
        return cls.expand_message_into_vec(field, cls._message(seed, dst, binder), length)

    @staticmethod
    def message_head(dst: bytes, seed_size: int) -> bytes:
        """``len(dst) || dst || len(seed)``, what the XOF absorbs before a ``seed_size``-byte seed and the binder
        (for a caller expanding many seeds under one ``dst``: ``expand_message_into_vec(field, head + seed + binder,
        length)``)"""
        if seed_size > 255 or len(dst) > 65535:
            raise ValueError("seed or dst too long")
        return len(dst).to_bytes(2, "little") + dst + bytes((seed_size,))

    # ``expand_into_vec`` given the whole input, ``len(dst) || dst || len(seed) || seed || binder``: the one-shot
    # call when pycryptodome has it (a function of its own, so a sketch's expansion is one Python frame)
    expand_message_into_vec = staticmethod(_ONESHOT_EXPAND if _ONESHOT_EXPAND is not None else _expand_message)


class XofFixedKeyAes128(Xof):
    "Fixed-key AES-128 in the circular correlation-robust hash mode of GKWWY20; key = TurboSHAKE128(dst, binder)"

    SEED_SIZE = 16

    def __init__(self, seed: bytes, dst: bytes, binder: bytes) -> None:
        if len(seed) != self.SEED_SIZE:
            raise ValueError("incorrect seed size")
        self._encrypt = _AES.new(fixed_key(dst, binder), _AES.MODE_ECB).encrypt
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
        encrypted = self._encrypt(bytes(sigma))
        hashed = (int.from_bytes(encrypted, "big") ^ int.from_bytes(sigma, "big")).to_bytes(len(sigma), "big")
        return hashed[offset:offset + length]
