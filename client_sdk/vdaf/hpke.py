"""HPKE (RFC 9180, base mode, single shot) for distributed campaigns' input shares: X25519 / HKDF-SHA256 /
AES-128-GCM only, through ``cryptography.hazmat.primitives.hpke`` (cryptography >= 48).

A device seals each Prio3 input share to its aggregator's public key; ``info`` binds the report's metadata
(campaign, fingerprint, report id, public share: ``client_sdk.distributed.input_share_info``), so a share moved to
another report or campaign does not open.  cryptography's single-shot API takes ``info`` but no separate AAD; RFC
9180 section 8.1 allows auxiliary data in ``info`` for single-shot use (DAP puts it in the AEAD's AAD instead).

Like ``xof.py``, this module is part of the SDK's optional ``distributed`` extra: ``import client_sdk`` never
imports it, and without cryptography it raises ``MissingDependency``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..distributed_messages import b64url, from_b64url  # re-exported: the one base64url
from ..errors import HpkeError, MissingDependency
from .xof import INSTALL_HINT

try:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM, Suite
except ImportError as exc:  # pragma: no cover - cryptography is a dependency of the extra
    raise MissingDependency(f"HPKE needs cryptography >= 48 (cryptography.hazmat.primitives.hpke): {INSTALL_HINT}"
                            ) from exc

# The IANA HPKE registry's identifiers of the one suite we support.
KEM_X25519_HKDF_SHA256 = 0x0020
KDF_HKDF_SHA256 = 0x0001
AEAD_AES_128_GCM = 0x0001
PUBLIC_KEY_SIZE = 32
ENC_SIZE = 32  # X25519's encapsulated key
TAG_SIZE = 16  # AES-128-GCM's tag
_SUITE = Suite(KEM.X25519, KDF.HKDF_SHA256, AEAD.AES_128_GCM)


def _config_id(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255:
        raise ValueError(f"{field}: must be an integer in [0, 255]")
    return value


@dataclass(frozen=True)
class HpkeConfig:
    "An aggregator's published HPKE configuration (DAP's HpkeConfig): config id, suite, X25519 public key"

    id: int
    kem_id: int = KEM_X25519_HKDF_SHA256
    kdf_id: int = KDF_HKDF_SHA256
    aead_id: int = AEAD_AES_128_GCM
    public_key: bytes = b""

    def __post_init__(self) -> None:
        _config_id(self.id, "id")
        for field, value, supported in (("kem_id", self.kem_id, KEM_X25519_HKDF_SHA256),
                                        ("kdf_id", self.kdf_id, KDF_HKDF_SHA256),
                                        ("aead_id", self.aead_id, AEAD_AES_128_GCM)):
            if value != supported or isinstance(value, bool):
                raise ValueError(f"{field}: unsupported HPKE algorithm {value!r} (only {supported:#06x}: "
                                 "X25519 / HKDF-SHA256 / AES-128-GCM)")
        if not isinstance(self.public_key, bytes) or len(self.public_key) != PUBLIC_KEY_SIZE:
            raise ValueError(f"public_key: must be {PUBLIC_KEY_SIZE} bytes (an X25519 public key)")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kem_id": self.kem_id, "kdf_id": self.kdf_id, "aead_id": self.aead_id,
                "public_key": b64url(self.public_key)}

    @classmethod
    def from_dict(cls, data: Any) -> HpkeConfig:
        "Validate a JSON object; ValueError names the field"
        if not isinstance(data, dict):
            raise ValueError("hpke_config: must be a JSON object")
        unknown = sorted(set(data) - {"id", "kem_id", "kdf_id", "aead_id", "public_key"})
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown field of an HPKE config")
        for field in ("id", "kem_id", "kdf_id", "aead_id", "public_key"):
            if field not in data:
                raise ValueError(f"{field}: missing from the HPKE config")
        return cls(id=_config_id(data["id"], "id"), kem_id=data["kem_id"], kdf_id=data["kdf_id"],
                   aead_id=data["aead_id"], public_key=from_b64url(data["public_key"], "public_key"))


@dataclass(frozen=True)
class HpkeKeyPair:
    "An aggregator's key pair: its config (published) and the X25519 private key (kept in its database)"

    config: HpkeConfig
    private_key: X25519PrivateKey

    @classmethod
    def generate(cls, config_id: int) -> HpkeKeyPair:
        "A fresh key pair from the OS CSPRNG"
        return cls._from_key(_config_id(config_id, "config_id"), X25519PrivateKey.generate())

    @classmethod
    def from_private_bytes(cls, config_id: int, raw: bytes) -> HpkeKeyPair:
        if not isinstance(raw, bytes) or len(raw) != 32:
            raise ValueError("private_key: must be 32 bytes (an X25519 private key)")
        return cls._from_key(_config_id(config_id, "config_id"), X25519PrivateKey.from_private_bytes(raw))

    @classmethod
    def _from_key(cls, config_id: int, key: X25519PrivateKey) -> HpkeKeyPair:
        return cls(HpkeConfig(id=config_id, public_key=key.public_key().public_bytes_raw()), key)

    def private_bytes(self) -> bytes:
        return self.private_key.private_bytes_raw()


@lru_cache(maxsize=64)
def _public_key(raw: bytes) -> X25519PublicKey:
    "An aggregator's public key, parsed once per key (a device seals every report to the same two)"
    return X25519PublicKey.from_public_bytes(raw)


def seal(config: HpkeConfig, plaintext: bytes, info: bytes) -> bytes:
    "enc || ciphertext of ``plaintext`` to the config's public key, with ``info`` bound"
    try:
        return _SUITE.encrypt(plaintext, _public_key(config.public_key), info)
    except ValueError as exc:  # a low-order public key (an all-zero shared secret)
        raise HpkeError(f"cannot seal to HPKE config {config.id}: {exc}") from exc


def open_sealed(keypair: HpkeKeyPair, ciphertext: bytes, info: bytes) -> bytes:
    "The plaintext of ``seal``'s output; HpkeError if it does not open with this key and ``info``"
    if not isinstance(ciphertext, bytes) or len(ciphertext) < ENC_SIZE + TAG_SIZE:
        raise HpkeError("ciphertext is too short")
    try:
        return _SUITE.decrypt(ciphertext, keypair.private_key, info)
    except Exception as exc:  # cryptography raises InvalidTag or ValueError, depending on what is wrong
        raise HpkeError("ciphertext does not open with this key and report metadata") from exc
