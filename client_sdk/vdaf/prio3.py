"""Prio3 (draft-irtf-cfrg-vdaf-20, section "Prio3"): shard a measurement into additive shares with a proof of
validity, verify the proof on shares, aggregate output shares, unshard the aggregate.

Messages travel as bytes with the draft's encodings (``encode_*`` / ``decode_*``), so a report, a verifier share or
an aggregate share made here is byte-identical to the draft's.  ``Prio3.shard`` validates the measurement first;
``_shard_encoded`` skips that (tests use it to play a malicious client; never call it from product code).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import VerifyError
from .circuits import Count, Histogram, HistogramWithCoins, MultihotCountVec, Sum, SumVec
from .field import Field, Field64, Field128
from .flp import FlpBBCGGI19, Valid
from .xof import Xof, XofTurboShake128, format_dst

USAGE_MEAS_SHARE = 1
USAGE_PROOF_SHARE = 2
USAGE_JOINT_RANDOMNESS = 3
USAGE_PROVE_RANDOMNESS = 4
USAGE_QUERY_RANDOMNESS = 5
USAGE_JOINT_RAND_SEED = 6
USAGE_JOINT_RAND_PART = 7


@dataclass(frozen=True)
class InputShare:
    "Leader (agg_id 0): meas_share and proofs_share vectors; helpers: a seed; blind when joint randomness is used"

    meas_share: list[int] | None
    proofs_share: list[int] | None
    seed: bytes | None
    blind: bytes | None


@dataclass(frozen=True)
class VerifyState:
    out_share: list[int]
    corrected_joint_rand_seed: bytes | None


@dataclass(frozen=True)
class VerifierShare:
    verifiers_share: list[int]
    joint_rand_part: bytes | None


class Prio3:
    "One Prio3 instance: a validity circuit, a number of proofs and aggregators, the XOF (TurboSHAKE128)"

    NONCE_SIZE = 16

    def __init__(self, valid: Valid, *, algorithm_id: int, shares: int = 2, proofs: int = 1,
                 xof: type[Xof] = XofTurboShake128) -> None:
        if isinstance(shares, bool) or not isinstance(shares, int) or not 2 <= shares < 256:
            raise ValueError(f"shares must be an int in [2, 256), got {shares!r}")
        if isinstance(proofs, bool) or not isinstance(proofs, int) or not 1 <= proofs < 256:
            raise ValueError(f"proofs must be an int in [1, 256), got {proofs!r}")
        self.flp = FlpBBCGGI19(valid)
        self.field: type[Field] = valid.field
        self.ID = algorithm_id
        self.SHARES = shares
        self.PROOFS = proofs
        self.xof = xof
        self.VERIFY_KEY_SIZE = xof.SEED_SIZE
        seeds = shares if self.flp.JOINT_RAND_LEN == 0 else 2 * shares
        self.RAND_SIZE = xof.SEED_SIZE * seeds

    # --- sharding ---------------------------------------------------------------------------------------------

    def shard(self, ctx: bytes, measurement: object, nonce: bytes,
              rand: bytes | None = None) -> tuple[list[bytes] | None, list[InputShare]]:
        "Encode (validating) and split a measurement; rand defaults to fresh OS randomness"
        if rand is None:
            rand = os.urandom(self.RAND_SIZE)
        return self._shard_encoded(ctx, self.flp.encode(measurement), nonce, rand)

    def _shard_encoded(self, ctx: bytes, meas: list[int], nonce: bytes,
                       rand: bytes) -> tuple[list[bytes] | None, list[InputShare]]:
        "Internal (tests only): shard an already-encoded, possibly invalid, measurement"
        if len(nonce) != self.NONCE_SIZE:
            raise ValueError("incorrect nonce size")
        if len(rand) != self.RAND_SIZE:
            raise ValueError("incorrect size of random bytes argument")
        if len(meas) != self.flp.MEAS_LEN:
            raise ValueError("encoded measurement has the wrong length")
        size = self.xof.SEED_SIZE
        seeds = [rand[i:i + size] for i in range(0, self.RAND_SIZE, size)]
        p = self.field.MODULUS
        use_joint = self.flp.JOINT_RAND_LEN > 0
        helpers = self.SHARES - 1
        if use_joint:
            helper_shares = seeds[0:2 * helpers:2]
            helper_blinds: list[bytes | None] = list(seeds[1:2 * helpers:2])
            leader_blind: bytes | None = seeds[2 * helpers]
            prove_seed = seeds[2 * helpers + 1]
        else:
            helper_shares = seeds[:helpers]
            helper_blinds = [None] * helpers
            leader_blind = None
            prove_seed = seeds[helpers]

        leader_meas = list(meas)
        joint_rand_parts: list[bytes] = []
        for j in range(helpers):
            helper_meas = self.helper_meas_share(ctx, j + 1, helper_shares[j])
            leader_meas = [(a - b) % p for a, b in zip(leader_meas, helper_meas)]
            if use_joint:
                blind = helper_blinds[j]
                assert blind is not None
                joint_rand_parts.append(self.joint_rand_part(ctx, j + 1, blind, helper_meas, nonce))
        joint_rands: list[int] = []
        if use_joint:
            assert leader_blind is not None
            joint_rand_parts.insert(0, self.joint_rand_part(ctx, 0, leader_blind, leader_meas, nonce))
            joint_rands = self.joint_rands(ctx, self.joint_rand_seed(ctx, joint_rand_parts))

        prove_rands = self.prove_rands(ctx, prove_seed)
        proofs: list[int] = []
        prl, jrl = self.flp.PROVE_RAND_LEN, self.flp.JOINT_RAND_LEN
        for i in range(self.PROOFS):
            proofs += self.flp.prove(meas, prove_rands[i * prl:(i + 1) * prl], joint_rands[i * jrl:(i + 1) * jrl])
        for j in range(helpers):
            helper_proofs = self.helper_proofs_share(ctx, j + 1, helper_shares[j])
            proofs = [(a - b) % p for a, b in zip(proofs, helper_proofs)]

        input_shares = [InputShare(leader_meas, proofs, None, leader_blind)]
        input_shares += [InputShare(None, None, helper_shares[j], helper_blinds[j]) for j in range(helpers)]
        return (joint_rand_parts if use_joint else None), input_shares

    # --- verification -----------------------------------------------------------------------------------------

    def verify_init(self, verify_key: bytes, ctx: bytes, agg_id: int, nonce: bytes,
                    public_share: list[bytes] | None, input_share: InputShare) -> tuple[VerifyState, VerifierShare]:
        if len(verify_key) != self.VERIFY_KEY_SIZE:
            raise ValueError("incorrect verify key size")
        if len(nonce) != self.NONCE_SIZE:
            raise ValueError("incorrect nonce size")
        if not 0 <= agg_id < self.SHARES:
            raise ValueError("agg_id out of range")
        meas_share, proofs_share, blind = self.expand_input_share(ctx, agg_id, input_share)
        out_share = self.flp.truncate(meas_share)

        joint_rands: list[int] = []
        corrected_seed, part = None, None
        if self.flp.JOINT_RAND_LEN > 0:
            if blind is None or public_share is None or len(public_share) != self.SHARES:
                raise VerifyError("missing blind or joint randomness parts")
            part = self.joint_rand_part(ctx, agg_id, blind, meas_share, nonce)
            parts = list(public_share)
            parts[agg_id] = part
            corrected_seed = self.joint_rand_seed(ctx, parts)
            joint_rands = self.joint_rands(ctx, corrected_seed)

        query_rands = self.query_rands(verify_key, ctx, nonce)
        flp = self.flp
        verifiers: list[int] = []
        for i in range(self.PROOFS):
            verifiers += flp.query(
                meas_share,
                proofs_share[i * flp.PROOF_LEN:(i + 1) * flp.PROOF_LEN],
                query_rands[i * flp.QUERY_RAND_LEN:(i + 1) * flp.QUERY_RAND_LEN],
                joint_rands[i * flp.JOINT_RAND_LEN:(i + 1) * flp.JOINT_RAND_LEN],
                self.SHARES,
            )
        return VerifyState(out_share, corrected_seed), VerifierShare(verifiers, part)

    def verifier_shares_to_message(self, ctx: bytes, verifier_shares: Sequence[VerifierShare]) -> bytes | None:
        "Combine the verifier shares; VerifyError if any proof is rejected"
        p = self.field.MODULUS
        length = self.flp.VERIFIER_LEN * self.PROOFS
        verifiers = [0] * length
        parts: list[bytes] = []
        for share in verifier_shares:
            if len(share.verifiers_share) != length:
                raise VerifyError("verifier share has the wrong length")
            verifiers = [(a + b) % p for a, b in zip(verifiers, share.verifiers_share)]
            if self.flp.JOINT_RAND_LEN > 0:
                if share.joint_rand_part is None:
                    raise VerifyError("missing joint randomness part")
                parts.append(share.joint_rand_part)
        vl = self.flp.VERIFIER_LEN
        for i in range(self.PROOFS):
            if not self.flp.decide(verifiers[i * vl:(i + 1) * vl]):
                raise VerifyError("proof verifier check failed")
        return self.joint_rand_seed(ctx, parts) if self.flp.JOINT_RAND_LEN > 0 else None

    def verify_next(self, ctx: bytes, state: VerifyState, message: bytes | None) -> list[int]:
        if message != state.corrected_joint_rand_seed:
            raise VerifyError("joint randomness check failed")
        return state.out_share

    # --- aggregation ------------------------------------------------------------------------------------------

    def agg_init(self) -> list[int]:
        return [0] * self.flp.OUTPUT_LEN

    def agg_update(self, agg_share: list[int], out_share: list[int]) -> list[int]:
        if len(out_share) != len(agg_share):
            raise ValueError("mismatched vector sizes")
        p = self.field.MODULUS
        return [(a + b) % p for a, b in zip(agg_share, out_share)]

    def merge(self, agg_shares: Sequence[list[int]]) -> list[int]:
        agg = self.agg_init()
        for share in agg_shares:
            agg = self.agg_update(agg, share)
        return agg

    def unshard(self, agg_shares: Sequence[list[int]], num_measurements: int) -> object:
        return self.flp.decode(self.merge(agg_shares), num_measurements)

    # --- auxiliary functions ----------------------------------------------------------------------------------

    def domain_separation_tag(self, usage: int, ctx: bytes) -> bytes:
        return format_dst(0, self.ID, usage) + ctx

    def helper_meas_share(self, ctx: bytes, agg_id: int, seed: bytes) -> list[int]:
        return self.xof.expand_into_vec(self.field, seed, self.domain_separation_tag(USAGE_MEAS_SHARE, ctx),
                                        bytes([agg_id]), self.flp.MEAS_LEN)

    def helper_proofs_share(self, ctx: bytes, agg_id: int, seed: bytes) -> list[int]:
        return self.xof.expand_into_vec(self.field, seed, self.domain_separation_tag(USAGE_PROOF_SHARE, ctx),
                                        bytes([self.PROOFS, agg_id]), self.flp.PROOF_LEN * self.PROOFS)

    def expand_input_share(self, ctx: bytes, agg_id: int,
                           share: InputShare) -> tuple[list[int], list[int], bytes | None]:
        if agg_id > 0:
            if share.seed is None:
                raise VerifyError("a helper input share carries a seed")
            return (self.helper_meas_share(ctx, agg_id, share.seed),
                    self.helper_proofs_share(ctx, agg_id, share.seed), share.blind)
        if share.meas_share is None or share.proofs_share is None:
            raise VerifyError("the leader input share carries the measurement and proof shares")
        return share.meas_share, share.proofs_share, share.blind

    def prove_rands(self, ctx: bytes, seed: bytes) -> list[int]:
        return self.xof.expand_into_vec(self.field, seed, self.domain_separation_tag(USAGE_PROVE_RANDOMNESS, ctx),
                                        bytes([self.PROOFS]), self.flp.PROVE_RAND_LEN * self.PROOFS)

    def query_rands(self, verify_key: bytes, ctx: bytes, nonce: bytes) -> list[int]:
        return self.xof.expand_into_vec(self.field, verify_key,
                                        self.domain_separation_tag(USAGE_QUERY_RANDOMNESS, ctx),
                                        bytes([self.PROOFS]) + nonce, self.flp.QUERY_RAND_LEN * self.PROOFS)

    def joint_rand_part(self, ctx: bytes, agg_id: int, blind: bytes, meas_share: list[int], nonce: bytes) -> bytes:
        return self.xof.derive_seed(blind, self.domain_separation_tag(USAGE_JOINT_RAND_PART, ctx),
                                    bytes([agg_id]) + nonce + self.field.encode_vec(meas_share))

    def joint_rand_seed(self, ctx: bytes, parts: Sequence[bytes]) -> bytes:
        return self.xof.derive_seed(bytes(self.xof.SEED_SIZE),
                                    self.domain_separation_tag(USAGE_JOINT_RAND_SEED, ctx), b"".join(parts))

    def joint_rands(self, ctx: bytes, seed: bytes) -> list[int]:
        return self.xof.expand_into_vec(self.field, seed, self.domain_separation_tag(USAGE_JOINT_RANDOMNESS, ctx),
                                        bytes([self.PROOFS]), self.flp.JOINT_RAND_LEN * self.PROOFS)

    # --- message encodings ------------------------------------------------------------------------------------

    def encode_public_share(self, public_share: list[bytes] | None) -> bytes:
        return b"".join(public_share) if public_share is not None else b""

    def decode_public_share(self, encoded: bytes) -> list[bytes] | None:
        size = self.xof.SEED_SIZE
        if self.flp.JOINT_RAND_LEN == 0:
            if encoded:
                raise VerifyError("public share must be empty")
            return None
        if len(encoded) != size * self.SHARES:
            raise VerifyError("public share has the wrong length")
        return [encoded[i:i + size] for i in range(0, len(encoded), size)]

    def encode_input_share(self, share: InputShare) -> bytes:
        if share.seed is None:
            assert share.meas_share is not None and share.proofs_share is not None
            out = self.field.encode_vec(share.meas_share) + self.field.encode_vec(share.proofs_share)
        else:
            out = share.seed
        return out + (share.blind or b"")

    def decode_input_share(self, agg_id: int, encoded: bytes) -> InputShare:
        size = self.xof.SEED_SIZE
        blind_size = size if self.flp.JOINT_RAND_LEN > 0 else 0
        blind = encoded[len(encoded) - blind_size:] if blind_size else None
        body = encoded[:len(encoded) - blind_size]
        if agg_id == 0:
            elem = self.field.ENCODED_SIZE
            meas_len = self.flp.MEAS_LEN
            expected = elem * (meas_len + self.flp.PROOF_LEN * self.PROOFS) + blind_size
            if len(encoded) != expected:
                raise VerifyError("leader input share has the wrong length")
            try:
                vec = self.field.decode_vec(body)
            except ValueError as exc:
                raise VerifyError(str(exc)) from exc
            return InputShare(vec[:meas_len], vec[meas_len:], None, blind)
        if len(encoded) != size + blind_size:
            raise VerifyError("helper input share has the wrong length")
        return InputShare(None, None, body, blind)

    def encode_verifier_share(self, share: VerifierShare) -> bytes:
        return self.field.encode_vec(share.verifiers_share) + (share.joint_rand_part or b"")

    def decode_verifier_share(self, encoded: bytes) -> VerifierShare:
        part_size = self.xof.SEED_SIZE if self.flp.JOINT_RAND_LEN > 0 else 0
        expected = self.field.ENCODED_SIZE * self.flp.VERIFIER_LEN * self.PROOFS + part_size
        if len(encoded) != expected:
            raise VerifyError("verifier share has the wrong length")
        body = encoded[:len(encoded) - part_size]
        try:
            vec = self.field.decode_vec(body)
        except ValueError as exc:
            raise VerifyError(str(exc)) from exc
        return VerifierShare(vec, encoded[len(body):] if part_size else None)

    def encode_verifier_message(self, message: bytes | None) -> bytes:
        return message or b""

    def decode_verifier_message(self, encoded: bytes) -> bytes | None:
        if self.flp.JOINT_RAND_LEN == 0:
            if encoded:
                raise VerifyError("verifier message must be empty")
            return None
        if len(encoded) != self.xof.SEED_SIZE:
            raise VerifyError("verifier message has the wrong length")
        return encoded

    def encode_agg_share(self, agg_share: list[int]) -> bytes:
        return self.field.encode_vec(agg_share)

    def decode_agg_share(self, encoded: bytes) -> list[int]:
        vec = self.field.decode_vec(encoded)
        if len(vec) != self.flp.OUTPUT_LEN:
            raise ValueError("aggregate share has the wrong length")
        return vec


# --- the draft's variants ---------------------------------------------------------------------------------------


def prio3_count(shares: int = 2) -> Prio3:
    return Prio3(Count(Field64), algorithm_id=0x00000001, shares=shares)


def prio3_sum(max_measurement: int, shares: int = 2) -> Prio3:
    return Prio3(Sum(Field64, max_measurement), algorithm_id=0x00000002, shares=shares)


def prio3_sum_vec(length: int, max_measurement: int, chunk_length: int, shares: int = 2) -> Prio3:
    return Prio3(SumVec(Field128, length, max_measurement, chunk_length), algorithm_id=0x00000003, shares=shares)


def prio3_histogram(length: int, chunk_length: int, shares: int = 2) -> Prio3:
    return Prio3(Histogram(Field128, length, chunk_length), algorithm_id=0x00000004, shares=shares)


def prio3_multihot_count_vec(length: int, max_weight: int, chunk_length: int, shares: int = 2) -> Prio3:
    return Prio3(MultihotCountVec(Field128, length, max_weight, chunk_length), algorithm_id=0x00000005,
                 shares=shares)


def prio3_histogram_with_coins(length: int, coins: int, chunk_length: int, shares: int = 2) -> Prio3:
    "A Histogram with ``coins`` proven coin bits per bucket; 0xFFFF0004 is a private algorithm id (not in the draft)"
    return Prio3(HistogramWithCoins(Field128, length, coins, chunk_length), algorithm_id=0xFFFF0004, shares=shares)
