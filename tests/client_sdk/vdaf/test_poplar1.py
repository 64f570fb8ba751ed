"""Poplar1 and its IDPF beyond the draft's vectors: the batched evaluation against the draft's node-by-node one,
counts over a heavy-hitters walk, the aggregation parameter's encoding and validity rule, and malicious clients
rejected by the sketch."""

from __future__ import annotations

import os
import random

import pytest

from client_sdk.errors import VerifyError
from client_sdk.vdaf import Field64, Field255, IdpfBBCGGI21, Poplar1, XofFixedKeyAes128, XofTurboShake128
from client_sdk.vdaf.idpf import CorrectionWord
from client_sdk.vdaf.xof import format_dst
from client_sdk.vdaf.xof_aes import FixedKeyAes128

CTX = b"ldp-telemetry tests"
VERIFY_KEY = bytes(range(32))


def bits(value: int, width: int) -> tuple[bool, ...]:
    return tuple(bool(value >> (width - 1 - i) & 1) for i in range(width))


def naive_eval(idpf: IdpfBBCGGI21, agg_id: int, public_share: list[CorrectionWord], key: bytes, level: int,
               prefix: tuple[bool, ...], nonce: bytes) -> list[int]:
    "The draft's eval for one prefix, node after node, with one XOF object per call (no batching, no sharing)"
    seed, ctrl = key, bool(agg_id)
    y: list[int] = []
    for current in range(level + 1):
        xof_class = XofFixedKeyAes128 if current < idpf.BITS - 1 else XofTurboShake128
        xof = xof_class(seed, format_dst(1, 0, 0) + CTX, nonce)
        s = [bytearray(xof.next(16)), bytearray(xof.next(16))]
        t = [bool(s[0][0] & 1), bool(s[1][0] & 1)]
        s[0][0] &= 0xFE
        s[1][0] &= 0xFE
        cw = public_share[current]
        if ctrl:
            s = [bytearray(a ^ b for a, b in zip(half, cw.seed)) for half in s]
            t = [t[0] ^ cw.ctrl[0], t[1] ^ cw.ctrl[1]]
        bit = int(prefix[current])
        ctrl = t[bit]
        convert = xof_class(bytes(s[bit]), format_dst(1, 0, 1) + CTX, nonce)
        seed = convert.next(16)
        field = idpf.current_field(current)
        y = convert.next_vec(field, idpf.VALUE_LEN)
        if ctrl:
            y = [(a + b) % field.MODULUS for a, b in zip(y, cw.payload)]
    p = idpf.current_field(level).MODULUS
    return [-a % p for a in y] if agg_id else y


def test_batched_fixed_key_aes_is_the_xof_stream():
    rng = random.Random(1)
    dst, nonce = b"some dst", bytes(range(16))
    hasher = FixedKeyAes128(dst, nonce)
    seeds = [rng.randbytes(16) for _ in range(5)]
    for count in (1, 2, 3):
        blocks = hasher.blocks([int.from_bytes(s, "little") for s in seeds], count)
        for i, seed in enumerate(seeds):
            stream = XofFixedKeyAes128(seed, dst, nonce).next(16 * count)
            assert b"".join(b.to_bytes(16, "little") for b in blocks[i * count:(i + 1) * count]) == stream
    assert hasher.blocks([], 2) == []


@pytest.mark.parametrize("value_len", [1, 2, 3])
def test_idpf_eval_matches_the_draft_node_by_node_and_shares_beta_on_the_path(value_len):
    rng = random.Random(value_len)
    idpf = IdpfBBCGGI21(value_len, 6)
    alpha = bits(0b101101, 6)
    beta_inner = [[rng.randrange(Field64.MODULUS) for _ in range(value_len)] for _ in range(5)]
    beta_leaf = [rng.randrange(Field255.MODULUS) for _ in range(value_len)]
    nonce = rng.randbytes(16)
    public_share, keys = idpf.gen(alpha, beta_inner, beta_leaf, CTX, nonce, rng.randbytes(32))
    public_share = idpf.decode_public_share(idpf.encode_public_share(public_share))
    for level in range(6):
        prefixes = [bits(v, level + 1) for v in range(2 ** (level + 1))]
        shares = [idpf.eval(i, public_share, keys[i], level, prefixes, CTX, nonce) for i in range(2)]
        p = idpf.current_field(level).MODULUS
        for j, prefix in enumerate(prefixes):
            for i in range(2):
                assert shares[i][j] == naive_eval(idpf, i, public_share, keys[i], level, prefix, nonce)
            total = [(a + b) % p for a, b in zip(shares[0][j], shares[1][j])]
            want = (beta_inner[level] if level < 5 else beta_leaf) if prefix == alpha[:level + 1] else [0] * value_len
            assert total == want


@pytest.mark.parametrize("value_len", [1, 2, 3])
def test_the_public_share_decodes_to_what_was_encoded(value_len):
    "Every tree depth (control bits filling 1 to 3 bytes, partly or fully), every payload width"
    rng = random.Random(10 + value_len)
    for depth in range(1, 10):
        idpf = IdpfBBCGGI21(value_len, depth)
        beta_inner = [[rng.randrange(Field64.MODULUS) for _ in range(value_len)] for _ in range(depth - 1)]
        beta_leaf = [rng.randrange(Field255.MODULUS) for _ in range(value_len)]
        alpha = bits(rng.getrandbits(depth), depth)
        public_share, _ = idpf.gen(alpha, beta_inner, beta_leaf, CTX, rng.randbytes(16), rng.randbytes(32))
        decoded = idpf.decode_public_share(idpf.encode_public_share(public_share))
        assert decoded == public_share and all(type(cw) is CorrectionWord for cw in decoded)
        assert [type(cw.seed) for cw in decoded] == [bytes] * depth


def test_level_zero_and_the_per_report_cache_agree_with_the_draft_for_any_nonce_and_prefix_order():
    "The level-0 shortcut (one prefix, two, either order) and hashers cached by (ctx, nonce), nonces interleaved"
    rng = random.Random(7)
    idpf = IdpfBBCGGI21(2, 5)
    reports = []
    for _ in range(3):
        nonce = rng.randbytes(16)
        public_share, keys = idpf.gen(bits(rng.getrandbits(5), 5), [[1, rng.randrange(99)]] * 4, [1, 5], CTX,
                                      nonce, rng.randbytes(32))
        reports.append((nonce, public_share, keys))
    for _ in range(2):  # the second pass evaluates every report from the cache
        for nonce, public_share, keys in reports:
            for prefixes in ([(True,)], [(False,)], [(True,), (False,)], [(False,), (True,)]):
                for i in range(2):
                    got = idpf.eval(i, public_share, keys[i], 0, prefixes, CTX, nonce)
                    assert got == [naive_eval(idpf, i, public_share, keys[i], 0, prefix, nonce) for prefix in prefixes]
            other_ctx = idpf.eval(0, public_share, keys[0], 0, [(True,)], CTX + b"!", nonce)
            assert other_ctx != idpf.eval(0, public_share, keys[0], 0, [(True,)], CTX, nonce)


def test_idpf_rejects_bad_arguments():
    idpf = IdpfBBCGGI21(2, 4)
    nonce = bytes(16)
    public_share, keys = idpf.gen((True, False, True, True), [[1, 2]] * 3, [1, 2], CTX, nonce, bytes(32))
    for args, message in [((2, 0, [(True,)]), "aggregator id"), ((0, 4, [(True,)] * 5), "level"),
                          ((0, 1, [(True,)]), "prefix"), ((0, 0, [(True,), (True,)]), "unique"),
                          ((0, 0, [(2,)]), "bits")]:
        agg_id, level, prefixes = args
        with pytest.raises(ValueError, match=message):
            idpf.eval(agg_id, public_share, keys[agg_id % 2], level, prefixes, CTX, nonce)
    with pytest.raises(ValueError, match="alpha"):
        idpf.gen((True,) * 3, [[1, 2]] * 3, [1, 2], CTX, nonce, bytes(32))
    encoded = bytearray(idpf.encode_public_share(public_share))
    encoded[0] |= 0x80  # 2 * 4 control bits fill the byte; set a bit of a larger tree's padding instead
    assert IdpfBBCGGI21(2, 4).decode_public_share(bytes(encoded))  # all 8 bits are used: still valid
    odd = IdpfBBCGGI21(2, 3)
    share3, _ = odd.gen((True, False, True), [[1, 2]] * 2, [1, 2], CTX, nonce, bytes(32))
    padded = bytearray(odd.encode_public_share(share3))
    padded[0] |= 0x80  # bit 7 is beyond the 6 control bits
    with pytest.raises(VerifyError, match="trailing"):
        odd.decode_public_share(bytes(padded))
    with pytest.raises(VerifyError, match="length"):
        odd.decode_public_share(bytes(padded[:-1]))


def run_level(vdaf: Poplar1, reports: list, agg_param) -> list[int]:
    "Both aggregators prepare every report at agg_param through the byte encodings; the unsharded counts"
    agg_shares = [vdaf.agg_init(agg_param), vdaf.agg_init(agg_param)]
    level = agg_param[0]
    for nonce, public, shares in reports:
        pairs = [vdaf.verify_init(VERIFY_KEY, CTX, i, agg_param, nonce, vdaf.decode_public_share(public),
                                  vdaf.decode_input_share(i, shares[i])) for i in range(2)]
        first = [vdaf.decode_verifier_share(state, vdaf.encode_verifier_share(level, share)) for state, share in pairs]
        message = vdaf.verifier_shares_to_message(CTX, agg_param, first)
        wire = vdaf.encode_verifier_message(level, message)
        second = [vdaf.verify_next(CTX, state, vdaf.decode_verifier_message(state, wire)) for state, _ in pairs]
        assert all(isinstance(s, tuple) for s in second)
        message = vdaf.verifier_shares_to_message(CTX, agg_param, [s[1] for s in second])
        assert message is None
        for i, (state, _) in enumerate(second):
            out = vdaf.verify_next(CTX, state, vdaf.decode_verifier_message(state, b""))
            agg_shares[i] = vdaf.agg_update(agg_param, agg_shares[i], out)
    decoded = [vdaf.decode_agg_share(agg_param, vdaf.encode_agg_share(agg_param, s)) for s in agg_shares]
    return vdaf.unshard(agg_param, decoded, len(reports))


def shard_reports(vdaf: Poplar1, measurements: list, rng: random.Random) -> list:
    reports = []
    for m in measurements:
        nonce = rng.randbytes(16)
        public, shares = vdaf.shard(CTX, m, nonce, rng.randbytes(vdaf.RAND_SIZE))
        reports.append((nonce, vdaf.encode_public_share(public), [vdaf.encode_input_share(s) for s in shares]))
    return reports


def test_a_heavy_hitters_walk_counts_every_prefix_and_finds_the_heavy_strings():
    rng = random.Random(7)
    width = 8
    vdaf = Poplar1(width)
    heavy = [0b10110011, 0b10110000, 0b01000111]
    values = [heavy[0]] * 6 + [heavy[1]] * 5 + [heavy[2]] * 4 + [rng.getrandbits(width) for _ in range(5)]
    reports = shard_reports(vdaf, [bits(v, width) for v in values], rng)
    threshold, candidates, previous = 4, [(False,), (True,)], []
    for level in range(width):
        agg_param = (level, tuple(sorted(candidates)))
        assert vdaf.is_valid(agg_param, previous)
        counts = run_level(vdaf, reports, agg_param)
        assert counts == [sum(bits(v, width)[:level + 1] == prefix for v in values) for prefix in agg_param[1]]
        previous.append(agg_param)
        survivors = [prefix for prefix, count in zip(agg_param[1], counts) if count >= threshold]
        candidates = [prefix + (bit,) for prefix in survivors for bit in (False, True)]
    assert sorted(survivors) == sorted(bits(v, width) for v in heavy)


def test_agg_param_encoding_round_trips_and_rejects_padding_and_lengths():
    vdaf = Poplar1(11)
    for level in (0, 7, 8, 10):
        prefixes = tuple(sorted({bits(random.Random(level + i).getrandbits(level + 1), level + 1) for i in range(5)}))
        encoded = vdaf.encode_agg_param((level, prefixes))
        assert vdaf.decode_agg_param(encoded) == (level, prefixes)
    encoded = bytearray(vdaf.encode_agg_param((2, ((True, False, True),))))
    encoded[-1] |= 1
    with pytest.raises(ValueError, match="trailing"):
        vdaf.decode_agg_param(bytes(encoded))
    with pytest.raises(ValueError, match="length"):
        vdaf.decode_agg_param(bytes(encoded[:-1]))
    with pytest.raises(ValueError, match="range"):
        vdaf.decode_agg_param((11).to_bytes(2, "big") + bytes(4))


def test_is_valid_is_the_drafts_rule():
    vdaf = Poplar1(4)
    first = (0, ((False,), (True,)))
    second = (1, ((True, False), (True, True)))
    assert vdaf.is_valid(first, [])
    assert vdaf.is_valid(second, [first])
    assert not vdaf.is_valid((0, ((True,), (False,))), [])  # unsorted
    assert not vdaf.is_valid((0, ((True,), (True,))), [])  # repeated
    assert not vdaf.is_valid(first, [first])  # the same level again
    assert not vdaf.is_valid((0, ((True,),)), [second])  # a lower level
    assert not vdaf.is_valid((2, ((False, False, False),)), [second])  # its parent was not asked for
    assert vdaf.is_valid((3, ((True, True, False, True),)), [first, second])  # a level may be skipped


def prepare(vdaf: Poplar1, nonce: bytes, public_share, shares, agg_param) -> None:
    "Both rounds; VerifyError when the sketch rejects the report"
    pairs = [vdaf.verify_init(VERIFY_KEY, CTX, i, agg_param, nonce, public_share, shares[i]) for i in range(2)]
    message = vdaf.verifier_shares_to_message(CTX, agg_param, [s for _, s in pairs])
    second = [vdaf.verify_next(CTX, state, message) for state, _ in pairs]
    vdaf.verifier_shares_to_message(CTX, agg_param, [s[1] for s in second])  # type: ignore[index]


@pytest.mark.parametrize("tamper", ["beta_not_one", "idpf_key", "correction_word", "corr_share"])
def test_a_malicious_client_is_rejected_by_the_sketch(tamper):
    rng = random.Random(tamper)
    vdaf = Poplar1(6)
    if tamper == "beta_not_one":  # the client programs a count of 2 on its path at every level
        gen = vdaf.idpf.gen
        vdaf.idpf.gen = lambda a, inner, leaf, *rest: gen(a, [[2, k] for _, k in inner], [2, leaf[1]], *rest)
    for _ in range(3):
        nonce = rng.randbytes(16)
        public_share, shares = vdaf.shard(CTX, bits(rng.getrandbits(6), 6), nonce, rng.randbytes(vdaf.RAND_SIZE))
        level = rng.randrange(6)
        if tamper == "idpf_key":
            key = bytearray(shares[1].idpf_key)
            key[3] ^= 0x10
            shares[1] = type(shares[1])(bytes(key), shares[1].corr_seed, shares[1].corr_inner, shares[1].corr_leaf)
        elif tamper == "correction_word":
            cw = public_share[level]
            bumped = (cw.payload[0] + 1) % vdaf.idpf.current_field(level).MODULUS
            public_share[level] = CorrectionWord(cw.seed, cw.ctrl, [bumped] + cw.payload[1:])
        elif tamper == "corr_share":
            inner = list(shares[0].corr_inner)
            inner[2 * min(level, 4) + 1] = (inner[2 * min(level, 4) + 1] + 1) % Field64.MODULUS
            leaf = [(shares[0].corr_leaf[0] + 1) % Field255.MODULUS, shares[0].corr_leaf[1]]
            shares[0] = type(shares[0])(shares[0].idpf_key, shares[0].corr_seed, inner, leaf)
        prefixes = tuple(bits(v, level + 1) for v in range(2 ** (level + 1)))
        with pytest.raises(VerifyError, match="sketch"):
            prepare(vdaf, nonce, public_share, shares, (level, prefixes))


def test_malformed_messages_are_verify_errors():
    vdaf = Poplar1(4)
    public_share, shares = vdaf.shard(CTX, (True, False, False, True), bytes(16))
    encoded = vdaf.encode_input_share(shares[0])
    with pytest.raises(VerifyError, match="length"):
        vdaf.decode_input_share(0, encoded[:-1])
    overflow = encoded[:-32] + (2**255 - 1).to_bytes(32, "little")
    with pytest.raises(VerifyError, match="modulus"):
        vdaf.decode_input_share(0, overflow)
    with pytest.raises(ValueError, match="nonce"):
        vdaf.shard(CTX, (True,) * 4, bytes(15))
    with pytest.raises(ValueError, match="alpha"):
        vdaf.shard(CTX, (True,) * 5, bytes(16))
    with pytest.raises(VerifyError, match="verifier shares"):
        vdaf.verifier_shares_to_message(CTX, (0, ((True,),)), [[0, 0, 0]])


def test_an_input_shares_correlations_are_range_checked_whole_and_read_by_level():
    "Every level's (A, B) checked at decode, also those an aggregation never reads; encode(decode(x)) == x"
    vdaf = Poplar1(4)
    public_share, shares = vdaf.shard(CTX, (True, False, False, True), bytes(16))
    for agg_id, share in enumerate(shares):
        encoded = vdaf.encode_input_share(share)
        decoded = vdaf.decode_input_share(agg_id, encoded)
        assert decoded == share and list(decoded.corr_inner) == share.corr_inner
        assert [decoded.corr_inner[2 * level:2 * level + 2] for level in range(3)] == [
            share.corr_inner[2 * level:2 * level + 2] for level in range(3)]
        assert vdaf.encode_input_share(decoded) == encoded
        last_inner = 16 + 32 + 8 * 5  # the last inner level's B, which level 0 never reads
        overflow = encoded[:last_inner] + Field64.MODULUS.to_bytes(8, "little") + encoded[last_inner + 8:]
        with pytest.raises(VerifyError, match="modulus"):
            vdaf.decode_input_share(agg_id, overflow)


def test_shard_uses_fresh_randomness_by_default():
    vdaf = Poplar1(4)
    nonce = os.urandom(16)
    first = vdaf.encode_public_share(vdaf.shard(CTX, (True,) * 4, nonce)[0])
    assert first != vdaf.encode_public_share(vdaf.shard(CTX, (True,) * 4, nonce)[0])


def test_one_shot_turboshake_expansions_are_the_xof_stream():
    "expand_into_vec's single-read path (Field64) and derive_seed against the streaming XofTurboShake128"
    rng = random.Random(3)
    for length in (1, 2, 3, 7, 40):
        seed, dst, binder = rng.randbytes(32), rng.randbytes(9), rng.randbytes(17)
        for field in (Field64, Field255):
            want = XofTurboShake128(seed, dst, binder).next_vec(field, length)
            assert XofTurboShake128.expand_into_vec(field, seed, dst, binder, length) == want
        assert XofTurboShake128.derive_seed(seed, dst, binder) == XofTurboShake128(seed, dst, binder).next(32)


def test_a_reports_fixed_keys_are_derived_once_across_levels_and_per_ctx_and_nonce():
    "The docs' claim: a walk's later levels reuse a report's hashers; another ctx or nonce gets its own"
    from client_sdk.vdaf import idpf as idpf_module

    idpf = IdpfBBCGGI21(2, 4)
    nonce = bytes(range(16))
    public_share, keys = idpf.gen((True, False, True, True), [[1, 2]] * 3, [1, 2], CTX, nonce, bytes(32))
    idpf_module.clear_report_cache()
    for level in range(3):
        idpf.eval(0, public_share, keys[0], level, [(True,) * (level + 1)], CTX, nonce)
    info = idpf_module._report_hashers.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    idpf.eval(0, public_share, keys[0], 0, [(True,)], CTX + b"!", nonce)
    idpf.eval(0, public_share, keys[0], 0, [(True,)], CTX, bytes(16))
    assert idpf_module._report_hashers.cache_info().misses == 3


def test_threads_never_share_a_reports_cipher_contexts():
    "Two threads evaluating the same report each get their own hashers (cached per thread), and the same values"
    import threading

    from client_sdk.vdaf import idpf as idpf_module

    idpf = IdpfBBCGGI21(2, 4)
    nonce = bytes(range(16))
    public_share, keys = idpf.gen((True, False, True, True), [[1, 2]] * 3, [1, 2], CTX, nonce, bytes(32))
    idpf_module.clear_report_cache()
    results: list[list[list[int]]] = []
    worker = threading.Thread(target=lambda: results.append(idpf.eval(0, public_share, keys[0], 1, [(True, False)],
                                                                       CTX, nonce)))
    worker.start()
    worker.join()
    results.append(idpf.eval(0, public_share, keys[0], 1, [(True, False)], CTX, nonce))
    assert results[0] == results[1] and idpf_module._report_hashers.cache_info().misses == 2
