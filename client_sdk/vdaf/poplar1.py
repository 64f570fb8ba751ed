"""Poplar1 (draft-irtf-cfrg-vdaf-20, section "Poplar1"): a device secret-shares its ``BITS``-bit string as an IDPF
(``idpf.IdpfBBCGGI21``); for an aggregation parameter ``(level, prefixes)`` the two aggregators evaluate their keys
at the candidate prefixes, check with the two-round arithmetic sketch of BBCGGI21 that the shares add up to a zero
or one-hot vector, and add up the output shares: the counts of the prefixes asked for.

Messages travel as bytes with the draft's encodings (``encode_*`` / ``decode_*``).  ``is_valid`` is the draft's
rule for a sequence of aggregation parameters (prefixes sorted and distinct, levels strictly increasing, each
prefix extending one asked for at the previous level); the aggregators enforce it, each on its own records.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from operator import add
from typing import NamedTuple

from ..errors import VerifyError
from .field import Field, FieldVec
from .idpf import CorrectionWord, IdpfBBCGGI21, PublicShare, _new_tuple, bits_to_int
from .xof import XofTurboShake128, format_dst

ALGORITHM_ID = 0x00000006
USAGE_SHARD_RAND = 1
USAGE_CORR_INNER = 2
USAGE_CORR_LEAF = 3
USAGE_VERIFY_RAND = 4
EVALUATE_SKETCH = "evaluate sketch"
REVEAL_SKETCH = "reveal sketch"
MAX_PREFIXES = 0xFFFFFFFF

_SEED_SIZE = XofTurboShake128.SEED_SIZE  # the correlation seeds' and the verify key's
_expand = XofTurboShake128.expand_message_into_vec

Prefix = tuple[bool, ...]
Poplar1AggParam = tuple[int, tuple[Prefix, ...]]


class Poplar1InputShare(NamedTuple):
    """An aggregator's IDPF key, its correlation seed, and its shares of each level's (A, B) sketch correlation
    (decoded, the inner levels' are a ``FieldVec``: an aggregation reads the two of one level)"""

    idpf_key: bytes
    corr_seed: bytes
    corr_inner: Sequence[int]
    corr_leaf: list[int]


class Poplar1VerifyState(NamedTuple):
    "The step next run by verify_next, the level, and A, B, agg_id then the output share (the draft's verify_mem)"

    step: str
    level: int
    verify_mem: list[int]


class Poplar1:
    "Poplar1 over ``bits``-bit strings: two aggregators, two rounds, XofTurboShake128, IdpfBBCGGI21(2, bits)"

    ID = ALGORITHM_ID
    SHARES = 2
    ROUNDS = 2
    NONCE_SIZE = 16
    xof = XofTurboShake128
    VERIFY_KEY_SIZE = XofTurboShake128.SEED_SIZE

    def __init__(self, bits: int) -> None:
        self.idpf = IdpfBBCGGI21(2, bits)
        self.BITS = bits
        self.RAND_SIZE = self.xof.SEED_SIZE * 3 + self.idpf.RAND_SIZE
        self._dsts: dict[tuple[int, bytes], bytes] = {}
        self._sketch_heads: dict[bytes, tuple[bytes, bytes, bytes]] = {}
        # each level's field and modulus: self._fields[level >= self._leaf_level] (the leaves' at the last level)
        self._leaf_level = bits - 1
        self._fields = (self.idpf.field_inner, self.idpf.field_leaf)
        self._moduli = (self.idpf.field_inner.MODULUS, self.idpf.field_leaf.MODULUS)
        # an input share: the IDPF key, the correlation seed, 2 (A, B) per inner level, then the leaf's 2
        key_size, seed_size = self.idpf.KEY_SIZE, self.xof.SEED_SIZE
        leaf_at = key_size + seed_size + self.idpf.field_inner.ENCODED_SIZE * 2 * (bits - 1)
        self._input_share_layout = (key_size, key_size + seed_size, leaf_at,
                                    leaf_at + 2 * self.idpf.field_leaf.ENCODED_SIZE)

    def domain_separation_tag(self, usage: int, ctx: bytes) -> bytes:
        return format_dst(0, self.ID, usage) + ctx

    # --- sharding ---------------------------------------------------------------------------------------------

    def shard(self, ctx: bytes, measurement: Sequence[bool], nonce: bytes,
              rand: bytes | None = None) -> tuple[list[CorrectionWord], list[Poplar1InputShare]]:
        "The public share (the IDPF's) and both input shares; rand defaults to fresh OS randomness"
        if rand is None:
            rand = os.urandom(self.RAND_SIZE)
        if len(nonce) != self.NONCE_SIZE:
            raise ValueError("incorrect nonce size")
        if len(rand) != self.RAND_SIZE:
            raise ValueError("incorrect size of random bytes argument")
        inner, leaf = self.idpf.field_inner, self.idpf.field_leaf
        bits, size = self.BITS, self.xof.SEED_SIZE
        idpf_rand, rest = rand[:self.idpf.RAND_SIZE], rand[self.idpf.RAND_SIZE:]
        corr_seed = [rest[:size], rest[size:2 * size]]
        xof = self.xof(rest[2 * size:], self.domain_separation_tag(USAGE_SHARD_RAND, ctx), nonce)

        # each level programs (1, k): the data value and the sketch's random authenticator
        auth_inner = xof.next_vec(inner, bits - 1)
        auth_leaf = xof.next_vec(leaf, 1)
        public_share, keys = self.idpf.gen(measurement, [[1, k] for k in auth_inner], [1] + auth_leaf, ctx,
                                           nonce, idpf_rand)

        # (a, b, c) per level, shared through the two correlation seeds; (A, B) shared explicitly
        offsets = self._corr_sum(inner, corr_seed, USAGE_CORR_INNER, ctx, nonce, 3 * (bits - 1))
        offsets += self._corr_sum(leaf, corr_seed, USAGE_CORR_LEAF, ctx, nonce, 3)
        helper_inner = xof.next_vec(inner, 2 * (bits - 1))
        helper_leaf = xof.next_vec(leaf, 2)
        corr: list[list[int]] = [[], []]
        for level in range(bits):
            field = self.idpf.current_field(level)
            p = field.MODULUS
            k = auth_inner[level] if level < bits - 1 else auth_leaf[0]
            a, b, c = offsets[3 * level:3 * level + 3]
            big_a = (-2 * a + k) % p
            big_b = (a * a + b - a * k + c) % p
            helper = helper_inner[2 * level:2 * level + 2] if level < bits - 1 else helper_leaf
            corr[0] += [(big_a - helper[0]) % p, (big_b - helper[1]) % p]
            corr[1] += helper
        cut = 2 * (bits - 1)
        input_shares = [Poplar1InputShare(keys[i], corr_seed[i], corr[i][:cut], corr[i][cut:]) for i in range(2)]
        return public_share, input_shares

    def _corr_sum(self, field: type[Field], seeds: list[bytes], usage: int, ctx: bytes, nonce: bytes,
                  length: int) -> list[int]:
        p = field.MODULUS
        dst = self.domain_separation_tag(usage, ctx)
        first, second = (self.xof.expand_into_vec(field, seeds[i], dst, bytes([i]) + nonce, length) for i in (0, 1))
        return [(x + y) % p for x, y in zip(first, second)]

    # --- validity of aggregation parameters -------------------------------------------------------------------

    def is_valid(self, agg_param: Poplar1AggParam, previous_agg_params: Sequence[Poplar1AggParam]) -> bool:
        """Prefixes distinct and sorted; after earlier parameters, a higher level than the last one and every prefix
        extending one of the last one's prefixes"""
        level, prefixes = agg_param
        if any(prefixes[i - 1] >= prefixes[i] for i in range(1, len(prefixes))):
            return False
        if not previous_agg_params:
            return True
        last_level, last_prefixes = previous_agg_params[-1]
        if level <= last_level:
            return False
        known = set(last_prefixes)
        return all(tuple(prefix[:last_level + 1]) in known for prefix in prefixes)

    # --- verification -----------------------------------------------------------------------------------------

    def verify_init(self, verify_key: bytes, ctx: bytes, agg_id: int, agg_param: Poplar1AggParam, nonce: bytes,
                    public_share: Sequence[CorrectionWord],
                    input_share: Poplar1InputShare) -> tuple[Poplar1VerifyState, list[int]]:
        "Evaluate the IDPF share at the candidate prefixes; the first-round sketch share"
        if len(verify_key) != self.VERIFY_KEY_SIZE:
            raise ValueError("incorrect verify key size")
        if len(nonce) != self.NONCE_SIZE:
            raise ValueError("incorrect nonce size")
        level, prefixes = agg_param
        values = self.idpf.eval(agg_id, public_share, input_share.idpf_key, level, prefixes, ctx, nonce)
        return self._sketch_init(verify_key, ctx, agg_id, level, len(prefixes), nonce, input_share, values)

    def verify_init_indices(self, verify_key: bytes, ctx: bytes, agg_id: int, level: int, indices: Sequence[int],
                            nonce: bytes, public_share: Sequence[CorrectionWord],
                            input_share: Poplar1InputShare) -> tuple[Poplar1VerifyState, list[int]]:
        """As ``verify_init``, the prefixes given as ints of ``level + 1`` bits (most significant first), already
        checked distinct and in range by the caller (an aggregator that validated its aggregation parameter once
        for the whole batch)"""
        if len(verify_key) != self.VERIFY_KEY_SIZE or len(nonce) != self.NONCE_SIZE:
            raise ValueError("incorrect verify key or nonce size")
        if len(input_share.idpf_key) != self.idpf.KEY_SIZE or len(public_share) != self.BITS:
            raise ValueError("malformed input or public share")
        by_index = self.idpf.eval_indices(agg_id, public_share, input_share.idpf_key, level, indices, ctx, nonce)
        values = [by_index[index] for index in indices]
        return self._sketch_init(verify_key, ctx, agg_id, level, len(indices), nonce, input_share, values)

    def _sketch_init(self, verify_key: bytes, ctx: bytes, agg_id: int, level: int, count: int, nonce: bytes,
                     input_share: Poplar1InputShare, values: list[list[int]]) -> tuple[Poplar1VerifyState, list[int]]:
        inner = level < self._leaf_level
        field = self._fields[level >= self._leaf_level]
        p = field.MODULUS
        expand = _expand
        heads = self._sketch_heads.get(ctx) if type(ctx) is bytes else None
        if heads is None:
            heads = self._sketch_heads_for(ctx)
        seed = input_share.corr_seed
        if len(seed) != _SEED_SIZE:
            raise ValueError("incorrect correlation seed size")
        if inner:
            s0, s1, s2 = expand(field, heads[0] + seed + bytes((agg_id,)) + nonce, 3 * level + 3)[3 * level:]
            big_a, big_b = input_share.corr_inner[2 * level:2 * level + 2]
        else:
            s0, s1, s2 = expand(field, heads[1] + seed + bytes((agg_id,)) + nonce, 3)
            big_a, big_b = input_share.corr_leaf
        verify_rand = expand(field, heads[2] + verify_key + nonce + level.to_bytes(2, "big"), count)
        data = [big_a, big_b, agg_id]
        for r, (data_share, auth_share) in zip(verify_rand, values):
            data_r = data_share * r
            s0 += data_r
            s1 += data_r * r
            s2 += auth_share * r
            data.append(data_share)
        return _new_tuple(Poplar1VerifyState, (EVALUATE_SKETCH, level, data)), [s0 % p, s1 % p, s2 % p]

    def _sketch_heads_for(self, ctx: bytes) -> tuple[bytes, bytes, bytes]:
        """What the sketch's three XOFs (inner and leaf correlations, verification randomness) absorb before their
        32-byte seed (``XofTurboShake128.message_head``), kept for a bytes ctx"""
        size = self.xof.SEED_SIZE
        heads = tuple(self.xof.message_head(self._dst(usage, ctx), size)
                      for usage in (USAGE_CORR_INNER, USAGE_CORR_LEAF, USAGE_VERIFY_RAND))
        if type(ctx) is bytes:
            if len(self._sketch_heads) >= 64:
                self._sketch_heads.clear()
            self._sketch_heads[ctx] = heads  # type: ignore[assignment]
        return heads  # type: ignore[return-value]

    def _dst(self, usage: int, ctx: bytes) -> bytes:
        "``domain_separation_tag``, remembered for the last few contexts (every report of a campaign has the same)"
        if type(ctx) is not bytes:  # a bytearray or memoryview: not a dict key
            return self.domain_separation_tag(usage, ctx)
        key = (usage, ctx)
        dst = self._dsts.get(key)
        if dst is None:
            if len(self._dsts) >= 64:
                self._dsts.clear()
            dst = self._dsts[key] = self.domain_separation_tag(usage, ctx)
        return dst

    def verify_next(self, ctx: bytes, state: Poplar1VerifyState,
                    message: list[int] | None) -> tuple[Poplar1VerifyState, list[int]] | list[int]:
        "Round one: the second sketch share (and the next state); round two: the output share"
        if state.step == EVALUATE_SKETCH:
            if message is None:
                raise VerifyError("expected a sketch, got none")
            if len(message) != 3:
                raise VerifyError("incorrect sketch length")
            level, verify_mem = state.level, state.verify_mem
            big_a, big_b, agg_id = verify_mem[0], verify_mem[1], verify_mem[2]
            m0, m1, m2 = message
            share = (agg_id * (m0 * m0 - m1 - m2) + big_a * m0 + big_b) % self._moduli[level >= self._leaf_level]
            return _new_tuple(Poplar1VerifyState, (REVEAL_SKETCH, level, verify_mem[3:])), [share]
        if state.step == REVEAL_SKETCH:
            if message is None:
                return state.verify_mem
            raise VerifyError("invalid verifier message")
        raise VerifyError("invalid verification state")

    def verifier_shares_to_message(self, ctx: bytes, agg_param: Poplar1AggParam,
                                   verifier_shares: Sequence[list[int]]) -> list[int] | None:
        "Round one: the sketch; round two: None when the sketch is zero, else VerifyError"
        if len(verifier_shares) != 2:
            raise VerifyError("incorrect number of verifier shares")
        first, second = verifier_shares
        if len(first) != len(second):
            raise VerifyError("mismatched verifier share lengths")
        p = self._moduli[agg_param[0] >= self._leaf_level]
        if len(first) == 3:
            return [(first[0] + second[0]) % p, (first[1] + second[1]) % p, (first[2] + second[2]) % p]
        if len(first) == 1:
            if (first[0] + second[0]) % p == 0:
                return None
            raise VerifyError("sketch verification failed")
        raise VerifyError("incorrect sketch length")

    # --- aggregation ------------------------------------------------------------------------------------------

    def agg_init(self, agg_param: Poplar1AggParam) -> list[int]:
        return [0] * len(agg_param[1])

    def agg_update(self, agg_param: Poplar1AggParam, agg_share: list[int], out_share: list[int]) -> list[int]:
        if len(agg_share) != len(out_share):
            raise ValueError("mismatched vector sizes")
        p = self._moduli[agg_param[0] >= self._leaf_level]
        return list(map(p.__rmod__, map(add, agg_share, out_share)))  # (a + b) % p, no Python frame per report

    def merge(self, agg_param: Poplar1AggParam, agg_shares: Sequence[list[int]]) -> list[int]:
        agg = self.agg_init(agg_param)
        for share in agg_shares:
            agg = self.agg_update(agg_param, agg, share)
        return agg

    def unshard(self, agg_param: Poplar1AggParam, agg_shares: Sequence[list[int]],
                num_measurements: int) -> list[int]:
        "The count of each candidate prefix"
        return self.merge(agg_param, agg_shares)

    # --- message encodings ------------------------------------------------------------------------------------

    def encode_public_share(self, public_share: Sequence[CorrectionWord]) -> bytes:
        return self.idpf.encode_public_share(public_share)

    def decode_public_share(self, encoded: bytes) -> PublicShare:
        return self.idpf.decode_public_share(encoded)

    def encode_input_share(self, share: Poplar1InputShare) -> bytes:
        inner, leaf = self.idpf.field_inner, self.idpf.field_leaf
        corr_inner = share.corr_inner
        encoded_inner = corr_inner.encoded if isinstance(corr_inner, FieldVec) and (
            corr_inner.field is inner) else inner.encode_vec(list(corr_inner))
        return share.idpf_key + share.corr_seed + encoded_inner + leaf.encode_vec(share.corr_leaf)

    def decode_input_share(self, agg_id: int, encoded: bytes) -> Poplar1InputShare:
        "VerifyError on a wrong length or a value out of its field"
        inner, leaf = self.idpf.field_inner, self.idpf.field_leaf
        key_size, start, leaf_at, size = self._input_share_layout
        if len(encoded) != size:
            raise VerifyError("input share has the wrong length")
        corr_inner, corr_leaf = encoded[start:leaf_at], encoded[leaf_at:]
        try:
            inner.check_vec(corr_inner)
            leaf.check_vec(corr_leaf)
        except ValueError as exc:
            raise VerifyError(f"input share: {exc}") from exc
        half = len(corr_leaf) // 2  # the leaf level's (A, B)
        return _new_tuple(Poplar1InputShare, (encoded[:key_size], encoded[key_size:start], FieldVec(inner, corr_inner),
                                              [int.from_bytes(corr_leaf[:half], "little"),
                                               int.from_bytes(corr_leaf[half:], "little")]))

    def _decode_vec(self, level: int, encoded: bytes, length: int | None, what: str) -> list[int]:
        field = self.idpf.current_field(level)
        if (length is not None and len(encoded) != length * field.ENCODED_SIZE) or len(encoded) % field.ENCODED_SIZE:
            raise VerifyError(f"{what} has the wrong length")
        try:
            return field.decode_vec(encoded)
        except ValueError as exc:
            raise VerifyError(f"{what}: {exc}") from exc

    def encode_verifier_share(self, level: int, share: list[int]) -> bytes:
        return self.idpf.current_field(level).encode_vec(share)

    def decode_verifier_share(self, state: Poplar1VerifyState, encoded: bytes) -> list[int]:
        "The sketch share of the round ``state`` was made in: 3 elements after verify_init, then 1"
        return self._decode_vec(state.level, encoded, 3 if state.step == EVALUATE_SKETCH else 1, "verifier share")

    def encode_verifier_message(self, level: int, message: list[int] | None) -> bytes:
        return b"" if message is None else self.idpf.current_field(level).encode_vec(message)

    def decode_verifier_message(self, state: Poplar1VerifyState, encoded: bytes) -> list[int] | None:
        "The message ``state`` waits for: the 3-element sketch, then the empty message"
        if state.step == REVEAL_SKETCH:
            if encoded:
                raise VerifyError("the second verifier message must be empty")
            return None
        return self._decode_vec(state.level, encoded, 3, "verifier message")

    def encode_agg_share(self, agg_param: Poplar1AggParam, agg_share: list[int]) -> bytes:
        return self.idpf.current_field(agg_param[0]).encode_vec(agg_share)

    def decode_agg_share(self, agg_param: Poplar1AggParam, encoded: bytes) -> list[int]:
        return self._decode_vec(agg_param[0], encoded, len(agg_param[1]), "aggregate share")

    def encode_out_share(self, level: int, out_share: list[int]) -> bytes:
        return self.idpf.current_field(level).encode_vec(out_share)

    def decode_out_share(self, agg_param: Poplar1AggParam, encoded: bytes) -> list[int]:
        return self._decode_vec(agg_param[0], encoded, len(agg_param[1]), "output share")

    def encode_agg_param(self, agg_param: Poplar1AggParam) -> bytes:
        "level (uint16), the number of prefixes (uint32), then each prefix packed most significant bit first"
        level, prefixes = agg_param
        if isinstance(level, bool) or not isinstance(level, int) or level not in range(self.BITS):
            raise ValueError(f"level must be an int in [0, {self.BITS}), got {level!r}")
        if len(prefixes) > MAX_PREFIXES:
            raise ValueError("too many prefixes")
        width = level + 1
        size = (width + 7) // 8
        out = bytearray(level.to_bytes(2, "big") + len(prefixes).to_bytes(4, "big"))
        for prefix in prefixes:
            if len(prefix) != width:
                raise ValueError(f"each prefix must have {width} bits")
            out += (bits_to_int(prefix) << (8 * size - width)).to_bytes(size, "big")
        return bytes(out)

    def decode_agg_param(self, encoded: bytes) -> Poplar1AggParam:
        "ValueError on a level out of range, a wrong length or set padding bits"
        if len(encoded) < 6:
            raise ValueError("aggregation parameter too short")
        level = int.from_bytes(encoded[:2], "big")
        count = int.from_bytes(encoded[2:6], "big")
        if level >= self.BITS:
            raise ValueError(f"level {level} out of range for {self.BITS} bits")
        width = level + 1
        size = (width + 7) // 8
        body = encoded[6:]
        if len(body) != size * count:
            raise ValueError("aggregation parameter has the wrong length")
        padding = 8 * size - width
        prefixes = []
        for i in range(count):
            value = int.from_bytes(body[i * size:(i + 1) * size], "big")
            if value & ((1 << padding) - 1):
                raise ValueError("trailing bits in prefix")
            value >>= padding
            prefixes.append(tuple(bool(value >> (width - 1 - j) & 1) for j in range(width)))
        return level, tuple(prefixes)
