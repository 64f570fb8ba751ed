"""Known-answer checks against the draft's published test vectors (JSON, schema in draft-irtf-cfrg-vdaf-20,
appendix "Test Vectors"): Prio3's, Poplar1's, the IDPF's and the XOFs'.  ``check_vector_file`` runs every listed
operation and returns the first mismatch.

The VDAF is the file name up to its first ``_`` (``Prio3Count_0``, ``Prio3Count_bad_wire_seed``); a file whose VDAF
is not supported is a failure, never a skip.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import Mismatch
from .field import Field128
from .idpf import IdpfBBCGGI21
from .poplar1 import EVALUATE_SKETCH, REVEAL_SKETCH, Poplar1, Poplar1VerifyState
from .prio3 import (
    Prio3,
    VerifyState,
    prio3_count,
    prio3_histogram,
    prio3_multihot_count_vec,
    prio3_sum,
    prio3_sum_vec,
)
from .xof import Xof, XofFixedKeyAes128, XofTurboShake128

FACTORIES: dict[str, Callable[[dict[str, Any]], Prio3]] = {
    "Prio3Count": lambda v: prio3_count(v["shares"]),
    "Prio3Sum": lambda v: prio3_sum(v["max_measurement"], v["shares"]),
    "Prio3SumVec": lambda v: prio3_sum_vec(v["length"], v["max_measurement"], v["chunk_length"], v["shares"]),
    "Prio3Histogram": lambda v: prio3_histogram(v["length"], v["chunk_length"], v["shares"]),
    "Prio3MultihotCountVec": lambda v: prio3_multihot_count_vec(
        v["length"], v["max_weight"], v["chunk_length"], v["shares"]),
}
XOFS: dict[str, type[Xof]] = {"XofTurboShake128": XofTurboShake128, "XofFixedKeyAes128": XofFixedKeyAes128}


def vdaf_name(path: Path) -> str:
    return path.stem.split("_", 1)[0]


def check_vector_file(path: Path) -> str | None:
    "None if every operation in the file reproduces the vector; otherwise the first mismatch"
    try:
        vector = json.loads(Path(path).read_text())
        name = vdaf_name(Path(path))
        if name in XOFS:
            _check_xof(XOFS[name], vector)
        elif name == "Poplar1":
            _check_poplar1(Poplar1(vector["bits"]), vector)
        elif name == "IdpfBBCGGI21":
            _check_idpf(vector)
        elif name in FACTORIES:
            _check_vdaf(FACTORIES[name](vector), vector)
        else:
            raise Mismatch(f"unsupported vector type {name!r}")
    except Mismatch as exc:
        return str(exc)
    except Exception as exc:  # a malformed vector is reported as a failure of that file, not a crash
        return f"malformed vector or unexpected error: {type(exc).__name__}: {exc}"
    return None


def _expect(what: str, got: bytes, want_hex: str) -> None:
    if got.hex() != want_hex:
        raise Mismatch(f"{what}: got {got.hex()[:64]}..., want {want_hex[:64]}...")


def _check_xof(xof: type[Xof], v: dict[str, Any]) -> None:
    seed, dst, binder = (bytes.fromhex(v[k]) for k in ("seed", "dst", "binder"))
    _expect("derived_seed", xof.derive_seed(seed, dst, binder), v["derived_seed"])
    vec = xof.expand_into_vec(Field128, seed, dst, binder, v["length"])
    _expect("expanded_vec_field128", Field128.encode_vec(vec), v["expanded_vec_field128"])


def _check_vdaf(vdaf: Prio3, v: dict[str, Any]) -> None:
    ctx = bytes.fromhex(v["ctx"])
    verify_key = bytes.fromhex(v["verify_key"])
    if v.get("agg_param", ""):
        raise Mismatch("Prio3 takes an empty aggregation parameter")
    reports = v["reports"]
    states: dict[tuple[int, int], VerifyState] = {}
    out_shares: dict[tuple[int, int], list[int]] = {}
    _run_operations(v, lambda kind, op, where: _run_operation(vdaf, v, kind, op, ctx, verify_key, reports, states,
                                                              out_shares, where))


def _run_operations(v: dict[str, Any], run: Callable[[str, dict[str, Any], str], None]) -> None:
    "Each operation in order; a failure must be expected, and nothing may follow it for the same report"
    rejected: set[int] = set()
    for number, op in enumerate(v["operations"]):
        kind = op["operation"]
        where = f"operation {number} ({kind}"
        where += f", report {op['report_index']}" if "report_index" in op else ""
        where += f", aggregator {op['aggregator_id']})" if "aggregator_id" in op else ")"
        index = op.get("report_index")
        if index is not None and index in rejected:
            raise Mismatch(f"{where}: listed after the report was rejected")
        try:
            run(kind, op, where)
        except Mismatch:
            raise
        except Exception as exc:  # an expected failure may surface as any error of a malformed message
            if op["success"]:
                raise Mismatch(f"{where}: failed: {exc}") from exc
            if index is not None:
                rejected.add(index)
            continue
        if not op["success"]:
            raise Mismatch(f"{where}: succeeded but the vector says it must fail")


def _run_operation(vdaf: Prio3, v: dict[str, Any], kind: str, op: dict[str, Any], ctx: bytes, verify_key: bytes,
                   reports: list[dict[str, Any]], states: dict[tuple[int, int], VerifyState],
                   out_shares: dict[tuple[int, int], list[int]], where: str) -> None:
    if kind == "shard":
        report = reports[op["report_index"]]
        public_share, input_shares = vdaf.shard(ctx, report["measurement"], bytes.fromhex(report["nonce"]),
                                                bytes.fromhex(report["rand"]))
        _expect(f"{where}: public_share", vdaf.encode_public_share(public_share), report["public_share"])
        if len(input_shares) != len(report["input_shares"]):
            raise Mismatch(f"{where}: {len(input_shares)} input shares, want {len(report['input_shares'])}")
        for agg_id, share in enumerate(input_shares):
            _expect(f"{where}: input_shares[{agg_id}]", vdaf.encode_input_share(share),
                    report["input_shares"][agg_id])
    elif kind == "verify_init":
        index, agg_id = op["report_index"], op["aggregator_id"]
        report = reports[index]
        public_share = vdaf.decode_public_share(bytes.fromhex(report["public_share"]))
        input_share = vdaf.decode_input_share(agg_id, bytes.fromhex(report["input_shares"][agg_id]))
        state, verifier_share = vdaf.verify_init(verify_key, ctx, agg_id, bytes.fromhex(report["nonce"]),
                                                 public_share, input_share)
        states[index, agg_id] = state
        _expect(f"{where}: verifier_shares[0][{agg_id}]", vdaf.encode_verifier_share(verifier_share),
                report["verifier_shares"][0][agg_id])
    elif kind == "verifier_shares_to_message":
        report = reports[op["report_index"]]
        shares = [vdaf.decode_verifier_share(bytes.fromhex(s)) for s in report["verifier_shares"][op["round"]]]
        message = vdaf.verifier_shares_to_message(ctx, shares)
        _expect(f"{where}: verifier_messages[{op['round']}]", vdaf.encode_verifier_message(message),
                report["verifier_messages"][op["round"]])
    elif kind == "verify_next":
        index, agg_id = op["report_index"], op["aggregator_id"]
        report = reports[index]
        if (index, agg_id) not in states:
            raise Mismatch(f"{where}: no verification state (verify_init was not run)")
        message = vdaf.decode_verifier_message(bytes.fromhex(report["verifier_messages"][op["round"] - 1]))
        out_share = vdaf.verify_next(ctx, states[index, agg_id], message)
        out_shares[index, agg_id] = out_share
        _expect(f"{where}: out_shares[{agg_id}]", vdaf.field.encode_vec(out_share), report["out_shares"][agg_id])
    elif kind == "aggregate":
        agg_id = op["aggregator_id"]
        agg_share = vdaf.agg_init()
        for index, report in enumerate(reports):
            ours = out_shares.get((index, agg_id))
            out_share = ours if ours is not None else vdaf.field.decode_vec(
                bytes.fromhex(report["out_shares"][agg_id]))
            agg_share = vdaf.agg_update(agg_share, out_share)
        _expect(f"{where}: agg_shares[{agg_id}]", vdaf.encode_agg_share(agg_share), v["agg_shares"][agg_id])
    elif kind == "unshard":
        agg_shares = [vdaf.decode_agg_share(bytes.fromhex(s)) for s in v["agg_shares"]]
        result = vdaf.unshard(agg_shares, len(reports))
        if result != v["agg_result"]:
            raise Mismatch(f"{where}: agg_result {result!r}, want {v['agg_result']!r}")
    else:
        raise Mismatch(f"{where}: unknown operation {kind!r}")


def _check_poplar1(vdaf: Poplar1, v: dict[str, Any]) -> None:
    ctx = bytes.fromhex(v["ctx"])
    verify_key = bytes.fromhex(v["verify_key"])
    reports = v["reports"]
    states: dict[tuple[int, int], Poplar1VerifyState] = {}
    out_shares: dict[tuple[int, int], list[int]] = {}

    def run(kind: str, op: dict[str, Any], where: str) -> None:
        agg_param = vdaf.decode_agg_param(bytes.fromhex(v["agg_param"]))
        level = agg_param[0]
        index: int = op.get("report_index", -1)
        agg_id: int = op.get("aggregator_id", -1)
        report = reports[index] if index >= 0 else {}
        if kind == "shard":
            public_share, input_shares = vdaf.shard(ctx, report["measurement"], bytes.fromhex(report["nonce"]),
                                                    bytes.fromhex(report["rand"]))
            _expect(f"{where}: public_share", vdaf.encode_public_share(public_share), report["public_share"])
            for i, input_share in enumerate(input_shares):
                _expect(f"{where}: input_shares[{i}]", vdaf.encode_input_share(input_share),
                        report["input_shares"][i])
        elif kind == "verify_init":
            state, share = vdaf.verify_init(
                verify_key, ctx, agg_id, agg_param, bytes.fromhex(report["nonce"]),
                vdaf.decode_public_share(bytes.fromhex(report["public_share"])),
                vdaf.decode_input_share(agg_id, bytes.fromhex(report["input_shares"][agg_id])))
            states[index, agg_id] = state
            _expect(f"{where}: verifier_shares[0][{agg_id}]", vdaf.encode_verifier_share(level, share),
                    report["verifier_shares"][0][agg_id])
        elif kind == "verifier_shares_to_message":
            step = EVALUATE_SKETCH if op["round"] == 0 else REVEAL_SKETCH
            shares = [vdaf.decode_verifier_share(Poplar1VerifyState(step, level, []), bytes.fromhex(s))
                      for s in report["verifier_shares"][op["round"]]]
            message = vdaf.verifier_shares_to_message(ctx, agg_param, shares)
            _expect(f"{where}: verifier_messages[{op['round']}]", vdaf.encode_verifier_message(level, message),
                    report["verifier_messages"][op["round"]])
        elif kind == "verify_next":
            if (index, agg_id) not in states:
                raise Mismatch(f"{where}: no verification state (verify_init was not run)")
            state = states[index, agg_id]
            message = vdaf.decode_verifier_message(state, bytes.fromhex(report["verifier_messages"][op["round"] - 1]))
            result = vdaf.verify_next(ctx, state, message)
            if isinstance(result, tuple):
                states[index, agg_id], share = result
                _expect(f"{where}: verifier_shares[{op['round']}][{agg_id}]",
                        vdaf.encode_verifier_share(level, share), report["verifier_shares"][op["round"]][agg_id])
            else:
                out_shares[index, agg_id] = result
                _expect(f"{where}: out_shares[{agg_id}]", vdaf.encode_out_share(level, result),
                        report["out_shares"][agg_id])
        elif kind == "aggregate":
            agg_share = vdaf.agg_init(agg_param)
            for i, other in enumerate(reports):
                ours = out_shares.get((i, agg_id))
                out_share = ours if ours is not None else vdaf.decode_out_share(
                    agg_param, bytes.fromhex(other["out_shares"][agg_id]))
                agg_share = vdaf.agg_update(agg_param, agg_share, out_share)
            _expect(f"{where}: agg_shares[{agg_id}]", vdaf.encode_agg_share(agg_param, agg_share),
                    v["agg_shares"][agg_id])
        elif kind == "unshard":
            agg_shares = [vdaf.decode_agg_share(agg_param, bytes.fromhex(s)) for s in v["agg_shares"]]
            result = vdaf.unshard(agg_param, agg_shares, len(reports))
            if result != v["agg_result"]:
                raise Mismatch(f"{where}: agg_result {result!r}, want {v['agg_result']!r}")
        else:
            raise Mismatch(f"{where}: unknown operation {kind!r}")

    _run_operations(v, run)


def _check_idpf(v: dict[str, Any]) -> None:
    "Key generation byte for byte; then both keys evaluated at every level: beta on alpha's path, zero beside it"
    idpf = IdpfBBCGGI21(len(v["beta_leaf"]), v["bits"])
    alpha = tuple(v["alpha"])
    beta_inner = [[int(x) for x in value] for value in v["beta_inner"]]
    beta_leaf = [int(x) for x in v["beta_leaf"]]
    ctx, nonce = bytes.fromhex(v["ctx"]), bytes.fromhex(v["nonce"])
    rand = b"".join(bytes.fromhex(key) for key in v["keys"])  # the keys are the generator's random input
    public_share, keys = idpf.gen(alpha, beta_inner, beta_leaf, ctx, nonce, rand)
    _expect("public_share", idpf.encode_public_share(public_share), v["public_share"])
    for i, key in enumerate(keys):
        _expect(f"keys[{i}]", key, v["keys"][i])
    decoded = idpf.decode_public_share(bytes.fromhex(v["public_share"]))
    for level in range(idpf.BITS):
        on_path = alpha[:level + 1]
        beside = on_path[:-1] + (not on_path[-1],)
        p = idpf.current_field(level).MODULUS
        shares = [idpf.eval(i, decoded, keys[i], level, [on_path, beside], ctx, nonce) for i in range(2)]
        sums = [[(x + y) % p for x, y in zip(a, b)] for a, b in zip(*shares)]
        want = [beta_inner[level] if level < idpf.BITS - 1 else beta_leaf, [0] * idpf.VALUE_LEN]
        if sums != want:
            raise Mismatch(f"eval at level {level}: the keys' shares add up to {sums}, want {want}")
