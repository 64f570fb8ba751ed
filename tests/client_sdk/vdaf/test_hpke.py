"""HPKE for input shares: round trip; wrong key, wrong info, tampered or truncated ciphertexts fail with HpkeError;
HPKE configs and base64url are parsed strictly, naming the field."""

from __future__ import annotations

import pytest

from client_sdk.vdaf.hpke import (
    ENC_SIZE,
    HpkeConfig,
    HpkeError,
    HpkeKeyPair,
    b64url,
    from_b64url,
    open_sealed,
    seal,
)

INFO = b"ldp-telemetry input share\x01\x02metadata"


@pytest.fixture(scope="module")
def keypair():
    return HpkeKeyPair.generate(3)


def test_round_trip(keypair):
    for plaintext in (b"", b"x", bytes(range(256)) * 40):
        sealed = seal(keypair.config, plaintext, INFO)
        assert len(sealed) == ENC_SIZE + len(plaintext) + 16
        assert open_sealed(keypair, sealed, INFO) == plaintext
    assert seal(keypair.config, b"same", INFO) != seal(keypair.config, b"same", INFO)  # fresh ephemeral key


def test_private_key_survives_its_bytes(keypair):
    again = HpkeKeyPair.from_private_bytes(3, keypair.private_bytes())
    assert again.config == keypair.config
    assert open_sealed(again, seal(keypair.config, b"share", INFO), INFO) == b"share"


def test_wrong_key_fails(keypair):
    sealed = seal(keypair.config, b"share", INFO)
    with pytest.raises(HpkeError):
        open_sealed(HpkeKeyPair.generate(3), sealed, INFO)


@pytest.mark.parametrize("info", [b"", INFO[:-1], INFO + b"x", INFO.replace(b"\x02", b"\x03")])
def test_wrong_info_fails(keypair, info):
    with pytest.raises(HpkeError):
        open_sealed(keypair, seal(keypair.config, b"share", INFO), info)


def test_tampered_or_truncated_ciphertext_fails(keypair):
    sealed = seal(keypair.config, b"an input share", INFO)
    for position in (0, ENC_SIZE - 1, ENC_SIZE, len(sealed) - 1):
        tampered = bytearray(sealed)
        tampered[position] ^= 0x01
        with pytest.raises(HpkeError):
            open_sealed(keypair, bytes(tampered), INFO)
    for cut in (sealed[:-1], sealed[:ENC_SIZE + 15], b"", sealed + b"\x00"):
        with pytest.raises(HpkeError):
            open_sealed(keypair, cut, INFO)


def test_config_dict_round_trip(keypair):
    data = keypair.config.to_dict()
    assert data == {"id": 3, "kem_id": 0x0020, "kdf_id": 0x0001, "aead_id": 0x0001,
                    "public_key": b64url(keypair.config.public_key)}
    assert HpkeConfig.from_dict(data) == keypair.config


@pytest.mark.parametrize("change, field", [
    ({"kem_id": 0x0010}, "kem_id"), ({"kdf_id": 0x0002}, "kdf_id"), ({"aead_id": 0x0003}, "aead_id"),
    ({"id": 256}, "id"), ({"id": -1}, "id"), ({"id": True}, "id"), ({"public_key": "AAAA"}, "public_key"),
    ({"public_key": 5}, "public_key"), ({"extra": 1}, "extra"),
])
def test_bad_configs_name_the_field(keypair, change, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        HpkeConfig.from_dict({**keypair.config.to_dict(), **change})


def test_missing_config_field(keypair):
    data = keypair.config.to_dict()
    del data["public_key"]
    with pytest.raises(ValueError, match="^public_key:"):
        HpkeConfig.from_dict(data)
    with pytest.raises(ValueError, match="^hpke_config:"):
        HpkeConfig.from_dict([])


def test_b64url_is_strict():
    for data in (b"", b"\x00", b"\xff\xfe", bytes(range(100))):
        assert from_b64url(b64url(data), "x") == data
    assert b64url(b"\xfb\xff") == "-_8"
    for bad in ("-_8=", "+/8", "a", "ab cd", "-_9", "é", 5, None):  # padding, std alphabet, bad length, stray bits
        with pytest.raises(ValueError, match="^payload.public_share:"):
            from_b64url(bad, "payload.public_share")
