"""The incremental distributed point function of BBCGGI21 (draft-irtf-cfrg-vdaf-20, section "IDPF Specification",
``IdpfBBCGGI21``): two keys whose evaluations at a node of a binary tree of depth ``BITS`` are additive shares of
``beta[level]`` on the path to ``alpha`` and of zero elsewhere.  Inner levels carry Field64 values, the leaves
Field255.

Evaluation is the draft's, node for node, but breadth first: a level's prefixes share their ancestors, so each
node is expanded once, and all the nodes of one level are hashed by one fixed-key AES call (``xof_aes``).  The
leaf level uses XofTurboShake128 as the draft says.  Seeds are kept as 128-bit ints (little-endian bytes).
"""

from __future__ import annotations

from _thread import get_ident
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple, overload

from ..errors import VerifyError
from .field import EncodedSequence, Field, Field64, Field255, u64_struct
from .xof import XofFixedKeyAes128, XofTurboShake128, fixed_key_prefix, format_dst, turboshake128
from .xof_aes import FixedKeyAes128

KEY_SIZE = 16
LOW_BIT_CLEARED = ~1
_TWO_WORDS = u64_struct(2)  # a seed's 16 bytes as lo, hi
# a NamedTuple made from its fields' tuple, without the generated __new__ (a Python frame): for the words, states
# and shares made per report and level
_new_tuple = tuple.__new__


class CorrectionWord(NamedTuple):
    "One level of the public share: the seed correction, the two control-bit corrections, the value correction"

    seed: bytes
    ctrl: tuple[bool, bool]
    payload: list[int]


def bits_to_int(bits: Sequence[bool]) -> int:
    "A bit string (most significant first) as an int"
    value = 0
    for bit in bits:
        value = value << 1 | (1 if bit else 0)
    return value


def _check_bits(bits: object, length: int, what: str) -> Sequence[bool]:
    if not isinstance(bits, (tuple, list)) or len(bits) != length:
        raise ValueError(f"{what} must be a sequence of {length} bits")
    if any(not isinstance(b, (bool, int)) or b not in (0, 1) for b in bits):
        raise ValueError(f"{what} must hold only bits (True/False or 1/0)")
    return bits


@lru_cache(maxsize=16)
def _prefix_indices(level: int, prefixes: tuple[Sequence[bool], ...]) -> tuple[int, ...]:
    """The prefixes as ints, checked (each level + 1 bits, all distinct); cached, as an aggregator evaluates every
    report of a batch at the same prefixes"""
    indices = tuple(bits_to_int(_check_bits(prefix, level + 1, "each prefix")) for prefix in prefixes)
    if len(set(indices)) != len(indices):
        raise ValueError("prefixes must be unique")
    return indices


class _Hashers:
    """The XOFs of one report (one nonce, one ctx): fixed-key AES for inner levels, TurboSHAKE128 for the leaves.

    Nothing here is secret (the fixed keys are derived from the public ``ctx`` and nonce), and the ECB encryptors
    keep no state between calls, so one object serves every evaluation of a report: ``_report_hashers`` caches them
    by (ctx, nonce), as the draft allows ("this step can be cached across XOF evaluations with many different
    seeds"), so the two aggregators of one process and the levels of a heavy-hitters walk derive each key once."""

    __slots__ = ("convert_aes", "convert_dst", "extend_aes", "extend_dst", "nonce")

    def __init__(self, ctx: bytes, nonce: bytes) -> None:
        self.extend_dst, self.convert_dst, extend_prefix, convert_prefix = _idpf_dsts(ctx)
        self.nonce = nonce
        self.extend_aes = FixedKeyAes128.from_key(turboshake128(extend_prefix + nonce, 2, 16))
        self.convert_aes = FixedKeyAes128.from_key(turboshake128(convert_prefix + nonce, 2, 16))


@lru_cache(maxsize=16)
def _idpf_dsts(ctx: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    """The domain separation tags of the IDPF's extend and convert for ``ctx`` (the same for a campaign's reports),
    then each as its fixed key's derivation starts: ``fixed_key(dst, nonce)`` is TurboSHAKE128(that || nonce, 2, 16)"""
    extend, convert = format_dst(1, 0, 0) + ctx, format_dst(1, 0, 1) + ctx
    return extend, convert, fixed_key_prefix(extend), fixed_key_prefix(convert)


@lru_cache(maxsize=4096)
def _report_hashers(ctx: bytes, nonce: bytes, thread: int) -> _Hashers:
    """One report's hashers, cached by (ctx, nonce): a walk's batch of reports at each level, both aggregators.
    Also by thread, so no cipher context is ever driven by two threads at once"""
    return _Hashers(ctx, nonce)


def clear_report_cache() -> None:
    "Forget every report's cached hashers (a benchmark measuring cold evaluations; memory after a batch)"
    _report_hashers.cache_clear()


class IdpfBBCGGI21:
    "IdpfBBCGGI21 with ``value_len`` field elements per node and ``bits`` levels (SHARES = 2)"

    SHARES = 2
    KEY_SIZE = KEY_SIZE
    NONCE_SIZE = 16
    RAND_SIZE = 2 * KEY_SIZE
    field_inner: type[Field] = Field64
    field_leaf: type[Field] = Field255

    def __init__(self, value_len: int, bits: int) -> None:
        for name, value in (("value_len", value_len), ("bits", bits)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if bits > 0xFFFF:
            raise ValueError("bits must be at most 65535 (the aggregation parameter's level is a uint16)")
        self.VALUE_LEN = value_len
        self.BITS = bits
        self._agg_ids, self._levels = range(self.SHARES), range(bits)
        self._public_share_size = self.public_share_size()
        # the public share's encoding: packed control bits, then the seeds, the inner levels' values, the leaf's
        ctrl_size = (2 * bits + 7) // 8
        values_at = ctrl_size + KEY_SIZE * bits
        self._public_share_layout = (ctrl_size, values_at,
                                     values_at + self.field_inner.ENCODED_SIZE * value_len * (bits - 1))

    def current_field(self, level: int) -> type[Field]:
        return self.field_inner if level < self.BITS - 1 else self.field_leaf

    # --- key generation ---------------------------------------------------------------------------------------

    def gen(self, alpha: Sequence[bool], beta_inner: Sequence[Sequence[int]], beta_leaf: Sequence[int], ctx: bytes,
            nonce: bytes, rand: bytes) -> tuple[list[CorrectionWord], list[bytes]]:
        "The public share and the two keys programming ``beta`` on the path to ``alpha``"
        alpha = _check_bits(alpha, self.BITS, "alpha")
        if len(beta_inner) != self.BITS - 1:
            raise ValueError("incorrect beta_inner length")
        if len(rand) != self.RAND_SIZE:
            raise ValueError("incorrect rand size")
        if len(nonce) != self.NONCE_SIZE:
            raise ValueError("incorrect nonce size")
        keys = [rand[:KEY_SIZE], rand[KEY_SIZE:]]
        hashers = _Hashers(bytes(ctx), nonce)
        seeds = [int.from_bytes(key, "little") for key in keys]
        ctrl = [False, True]
        public_share = []
        for level in range(self.BITS):
            bit = bool(alpha[level])
            (s0, t0), (s1, t1) = self._extend(level, seeds, hashers)
            keep, lose = int(bit), 1 - int(bit)
            seed_cw = s0[lose] ^ s1[lose]
            ctrl_cw = (t0[0] ^ t1[0] ^ (not bit), t0[1] ^ t1[1] ^ bit)
            x0 = s0[keep] ^ seed_cw if ctrl[0] else s0[keep]
            x1 = s1[keep] ^ seed_cw if ctrl[1] else s1[keep]
            ctrl[0] = t0[keep] ^ ctrl_cw[keep] if ctrl[0] else t0[keep]
            ctrl[1] = t1[keep] ^ ctrl_cw[keep] if ctrl[1] else t1[keep]
            seeds, (w0, w1) = self._convert(level, [x0, x1], hashers, values=True)
            beta = beta_inner[level] if level < self.BITS - 1 else beta_leaf
            if len(beta) != self.VALUE_LEN:
                raise ValueError("length of beta must match the value length")
            p = self.current_field(level).MODULUS
            w_cw = [(b - a + c) % p for b, a, c in zip(beta, w0, w1)]
            if ctrl[1]:
                w_cw = [-x % p for x in w_cw]
            public_share.append(CorrectionWord(seed_cw.to_bytes(KEY_SIZE, "little"), ctrl_cw, w_cw))
        return public_share, keys

    # --- evaluation -------------------------------------------------------------------------------------------

    def eval(self, agg_id: int, public_share: Sequence[CorrectionWord], key: bytes, level: int,
             prefixes: Sequence[Sequence[bool]], ctx: bytes, nonce: bytes) -> list[list[int]]:
        "This aggregator's shares of the values at ``prefixes`` (distinct, each ``level + 1`` bits), in their order"
        if agg_id not in self._agg_ids:
            raise ValueError("aggregator id out of range")
        if isinstance(level, bool) or not isinstance(level, int) or level not in self._levels:
            raise ValueError("level out of range")
        if len(public_share) != self.BITS:
            raise ValueError("public share has the wrong number of correction words")
        if len(key) != KEY_SIZE:
            raise ValueError("incorrect key size")
        if len(nonce) != self.NONCE_SIZE:
            raise ValueError("incorrect nonce size")
        prefixes = prefixes if type(prefixes) is tuple else tuple(prefixes)
        try:
            indices = _prefix_indices(level, prefixes)
        except TypeError:  # unhashable prefixes (lists): checked without the cache
            indices = _prefix_indices.__wrapped__(level, prefixes)
        if level == 0 and self.BITS > 1:
            hashers = _report_hashers(ctx if type(ctx) is bytes else bytes(ctx),
                                      nonce if type(nonce) is bytes else bytes(nonce), get_ident())
            return self._eval_first_level(agg_id, public_share[0], key, indices, hashers)
        return list(map(self.eval_indices(agg_id, public_share, key, level, indices, ctx, nonce).__getitem__, indices))

    def eval_indices(self, agg_id: int, public_share: Sequence[CorrectionWord], key: bytes, level: int,
                     indices: Sequence[int], ctx: bytes, nonce: bytes) -> dict[int, list[int]]:
        "As ``eval``, prefixes given as ints of ``level + 1`` bits (unchecked), answered by prefix"
        hashers = _report_hashers(ctx if type(ctx) is bytes else bytes(ctx),
                                  nonce if type(nonce) is bytes else bytes(nonce), get_ident())
        if level == 0 and self.BITS > 1:
            return dict(zip(indices, self._eval_first_level(agg_id, public_share[0], key, indices, hashers)))
        nodes: dict[int, tuple[int, bool]] = {0: (int.from_bytes(key, "little"), bool(agg_id))}  # the empty prefix
        out: dict[int, list[int]] = {}
        for current in range(level + 1):
            shift = level - current
            needed = list(dict.fromkeys(index >> shift for index in indices))
            parents = list(dict.fromkeys(node >> 1 for node in needed))
            cw = public_share[current]
            seed_cw = int.from_bytes(cw.seed, "little")
            extended: dict[int, tuple[int, int, bool, bool]] = {}
            for parent, ((s0, s1), (t0, t1)) in zip(
                    parents, self._extend(current, [nodes[parent][0] for parent in parents], hashers)):
                if nodes[parent][1]:
                    s0, s1, t0, t1 = s0 ^ seed_cw, s1 ^ seed_cw, t0 ^ cw.ctrl[0], t1 ^ cw.ctrl[1]
                extended[parent] = (s0, s1, t0, t1)
            chosen = [extended[node >> 1][node & 1] for node in needed]
            ctrls = [bool(extended[node >> 1][2 + (node & 1)]) for node in needed]
            last = current == level
            seeds, values = self._convert(current, chosen, hashers, values=last)
            if not last:
                nodes = {node: (seed, ctrl) for node, seed, ctrl in zip(needed, seeds, ctrls)}
                continue
            p = self.current_field(current).MODULUS
            for node, value, ctrl in zip(needed, values, ctrls):
                if ctrl:
                    value = [(y + w) for y, w in zip(value, cw.payload)]
                out[node] = [-y % p for y in value] if agg_id else [y % p for y in value]
        return out

    def _eval_first_level(self, agg_id: int, cw: CorrectionWord, key: bytes, indices: Sequence[int],
                          hashers: _Hashers) -> list[list[int]]:
        """The values at ``indices`` (each 0 or 1), in their order, at level 0 of a tree of more than one level, in
        straight-line code: one extend of the root, one convert of the children asked for; the general walk's bytes"""
        p = self.field_inner.MODULUS
        if self.VALUE_LEN == 2 and len(indices) == 2 and indices[0] != indices[1]:  # both children, in 64-bit words
            # a seed is lo || hi; block i of its stream hashes sigma = hi, hi ^ lo ^ i (``FixedKeyAes128``)
            lo, hi = _TWO_WORDS.unpack(key)
            lo0, hi0, lo1, hi1 = hashers.extend_aes.four_words(hi, hi ^ lo, hi, hi ^ lo ^ 1)
            t0, t1 = lo0 & 1, lo1 & 1
            lo0 &= LOW_BIT_CLEARED
            lo1 &= LOW_BIT_CLEARED
            if agg_id:  # the root's control bit is the aggregator id
                cw_lo, cw_hi = _TWO_WORDS.unpack(cw.seed)
                lo0, hi0, lo1, hi1 = lo0 ^ cw_lo, hi0 ^ cw_hi, lo1 ^ cw_lo, hi1 ^ cw_hi
                t0, t1 = t0 ^ cw.ctrl[0], t1 ^ cw.ctrl[1]
            first_node, second_node = indices
            lo_a, hi_a = (lo1, hi1) if first_node else (lo0, hi0)
            lo_b, hi_b = (lo1, hi1) if second_node else (lo0, hi0)
            y = list(hashers.convert_aes.four_words(hi_a, hi_a ^ lo_a ^ 1, hi_b, hi_b ^ lo_b ^ 1))  # block 1 each
            if max(y) < p:  # else rejection sampling: the general path reads on
                w0, w1 = cw.payload
                if t1 if first_node else t0:
                    y[0] += w0
                    y[1] += w1
                if t1 if second_node else t0:
                    y[2] += w0
                    y[3] += w1
                if agg_id:
                    return [[-y[0] % p, -y[1] % p], [-y[2] % p, -y[3] % p]]
                return [[y[0] % p, y[1] % p], [y[2] % p, y[3] % p]]
        a, b = hashers.extend_aes.two_blocks(int.from_bytes(key, "little"))
        s0, s1, t0, t1 = a & LOW_BIT_CLEARED, b & LOW_BIT_CLEARED, a & 1, b & 1
        if agg_id:
            seed_cw = int.from_bytes(cw.seed, "little")
            s0, s1, t0, t1 = s0 ^ seed_cw, s1 ^ seed_cw, t0 ^ cw.ctrl[0], t1 ^ cw.ctrl[1]
        needed = list(dict.fromkeys(indices))
        _, values = self._convert(0, [s1 if node else s0 for node in needed], hashers, values=True)
        out: dict[int, list[int]] = {}
        for node, value in zip(needed, values):
            if t1 if node else t0:
                value = [(y + w) for y, w in zip(value, cw.payload)]
            out[node] = [-y % p for y in value] if agg_id else [y % p for y in value]
        return [out[index] for index in indices]

    # --- extend and convert, for a list of seeds at once ------------------------------------------------------

    def _extend(self, level: int, seeds: list[int],
                hashers: _Hashers) -> list[tuple[tuple[int, int], tuple[bool, bool]]]:
        "Each seed's two child seeds (low bit cleared) and control bits"
        if level < self.BITS - 1:
            if len(seeds) == 2:
                a0, a1, b0, b1 = hashers.extend_aes.two_blocks_each(seeds[0], seeds[1])
                pairs = [(a0, a1), (b0, b1)]
            elif len(seeds) == 1:
                pairs = [hashers.extend_aes.two_blocks(seeds[0])]
            else:
                blocks = hashers.extend_aes.blocks(seeds, 2)
                pairs = list(zip(blocks[0::2], blocks[1::2]))
        else:
            pairs = [_turboshake_pair(seed, hashers.extend_dst, hashers.nonce) for seed in seeds]
        return [((a & LOW_BIT_CLEARED, b & LOW_BIT_CLEARED), (bool(a & 1), bool(b & 1))) for a, b in pairs]

    def _convert(self, level: int, seeds: list[int], hashers: _Hashers,
                 values: bool) -> tuple[list[int], list[list[int]]]:
        "Each seed's next seed and (when ``values``) its VALUE_LEN field elements"
        field = self.current_field(level)
        if level == self.BITS - 1:
            next_seeds, vectors = [], []
            for seed in seeds:
                xof = XofTurboShake128(seed.to_bytes(KEY_SIZE, "little"), hashers.convert_dst, hashers.nonce)
                next_seeds.append(int.from_bytes(xof.next(KEY_SIZE), "little"))
                vectors.append(xof.next_vec(field, self.VALUE_LEN))
            return next_seeds, vectors
        if not values:
            return hashers.convert_aes.blocks(seeds, 1), []
        count = 1 + (self.VALUE_LEN + 1) // 2  # the seed's block, then two Field64 elements per block
        if count == 2 and len(seeds) == 2:
            blocks = list(hashers.convert_aes.two_blocks_each(seeds[0], seeds[1]))
        elif count == 2 and len(seeds) == 1:
            blocks = list(hashers.convert_aes.two_blocks(seeds[0]))
        else:
            blocks = hashers.convert_aes.blocks(seeds, count)
        next_seeds = blocks[0::count]
        vectors = []
        p, mask, length = field.MODULUS, (1 << 64) - 1, self.VALUE_LEN
        for i, seed in enumerate(seeds):
            vec: list[int] = []
            for block in blocks[i * count + 1:(i + 1) * count]:
                vec += (block & mask, block >> 64)
            vec = vec[:length]
            if max(vec) >= p:  # rejection sampling needs more of the stream (probability about 2**-32)
                stream = XofFixedKeyAes128(seed.to_bytes(KEY_SIZE, "little"), hashers.convert_dst, hashers.nonce)
                stream.next(KEY_SIZE)
                vec = stream.next_vec(field, length)
            vectors.append(vec)
        return next_seeds, vectors

    # --- the public share's encoding --------------------------------------------------------------------------

    def encode_public_share(self, public_share: Sequence[CorrectionWord]) -> bytes:
        if isinstance(public_share, PublicShare) and public_share._idpf.BITS == self.BITS and (
                public_share._idpf.VALUE_LEN == self.VALUE_LEN):
            return public_share.encoded
        ctrl = [bit for cw in public_share for bit in cw.ctrl]
        packed = bytearray((len(ctrl) + 7) // 8)
        for i, bit in enumerate(ctrl):
            packed[i // 8] |= bool(bit) << (i % 8)
        out = bytes(packed) + b"".join(cw.seed for cw in public_share)
        out += b"".join(self.current_field(level).encode_vec(cw.payload) for level, cw in enumerate(public_share))
        return out

    def public_share_size(self) -> int:
        return ((2 * self.BITS + 7) // 8 + KEY_SIZE * self.BITS + self.VALUE_LEN * (
            self.field_inner.ENCODED_SIZE * (self.BITS - 1) + self.field_leaf.ENCODED_SIZE))

    def decode_public_share(self, encoded: bytes) -> PublicShare:
        "VerifyError on a wrong length, a set unused control bit, or a value out of its field"
        if len(encoded) != self._public_share_size:
            raise VerifyError("public share has the wrong length")
        return PublicShare(self, bytes(encoded))


class PublicShare(EncodedSequence[CorrectionWord]):
    """A decoded public share: checked whole when decoded (control bits, every value in its field), each level's
    ``CorrectionWord`` built from the encoding when first read.  An aggregator reads a report's public share up
    to the level asked for: at level 0 one word of ``BITS``.  Equal to any sequence of the same words."""

    __slots__ = ("_ctrl", "_idpf", "_seeds_at", "_values_at", "_words")

    def __init__(self, idpf: IdpfBBCGGI21, encoded: bytes) -> None:
        levels = idpf.BITS
        ctrl_size, values_at, inner_end = idpf._public_share_layout
        self._ctrl = int.from_bytes(encoded[:ctrl_size], "little")
        if self._ctrl >> 2 * levels:
            raise VerifyError("public share: trailing control bits")
        self._idpf, self._encoded = idpf, encoded
        self._seeds_at, self._values_at = ctrl_size, values_at
        try:
            idpf.field_inner.check_vec(encoded[values_at:inner_end])
            idpf.field_leaf.check_vec(encoded[inner_end:])
        except ValueError as exc:
            raise VerifyError(f"public share: {exc}") from exc
        self._words: list[CorrectionWord | None] = [None] * levels

    def __len__(self) -> int:
        return len(self._words)

    @overload
    def __getitem__(self, level: int) -> CorrectionWord: ...

    @overload
    def __getitem__(self, level: slice) -> list[CorrectionWord]: ...

    def __getitem__(self, level: int | slice) -> CorrectionWord | list[CorrectionWord]:
        if isinstance(level, slice):
            return [self[i] for i in range(len(self._words))[level]]
        word = self._words[level]  # IndexError out of range
        if word is None:
            idpf, encoded = self._idpf, self._encoded
            level %= idpf.BITS
            field = idpf.field_inner if level < idpf.BITS - 1 else idpf.field_leaf
            size = field.ENCODED_SIZE * idpf.VALUE_LEN
            at = self._values_at + idpf.field_inner.ENCODED_SIZE * idpf.VALUE_LEN * level
            seed_at = self._seeds_at + KEY_SIZE * level
            ctrl = self._ctrl >> 2 * level
            payload = list(u64_struct(idpf.VALUE_LEN).unpack_from(encoded, at)) if field.ENCODED_SIZE == 8 else (
                field.unpack_vec(encoded[at:at + size]))
            word = self._words[level] = _new_tuple(CorrectionWord, (
                encoded[seed_at:seed_at + KEY_SIZE], (bool(ctrl & 1), bool(ctrl & 2)), payload))
        return word


def _turboshake_pair(seed: int, dst: bytes, nonce: bytes) -> tuple[int, int]:
    "The leaf level's extend: 32 bytes of XofTurboShake128(seed, dst, nonce) as two 128-bit ints"
    stream = XofTurboShake128(seed.to_bytes(KEY_SIZE, "little"), dst, nonce).next(2 * KEY_SIZE)
    return int.from_bytes(stream[:KEY_SIZE], "little"), int.from_bytes(stream[KEY_SIZE:], "little")
