"""Aggregator-side batch verification of Prio3 reports that share one circuit (draft-irtf-cfrg-vdaf-20).

``batch_verify_init`` gives, report by report, exactly what ``Prio3.verify_init`` gives (the same accept/reject,
verifier shares and output shares; tests check it), but evaluates the validity circuit once for the whole batch:
every "field element" the SDK's circuit code touches is a numpy array holding that element for every report, so
the circuit, the gadget-polynomial completion and the Lagrange evaluations at the test points run as array
operations instead of once per report, and the inverses behind the evaluations cost one modular inversion per
batch (Montgomery's trick).  The XOF expansions (TurboSHAKE128 in C) stay per report.

The circuit definitions are the SDK's (``client_sdk.vdaf.circuits``): nothing about validity is restated here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from client_sdk.vdaf.field import Field, batch_inverse, next_power_of_2
from client_sdk.vdaf.flp import Gadget, gadget_poly_len, wire_poly_len, with_gadgets
from client_sdk.vdaf.prio3 import Prio3, VerifierShare, VerifyError, VerifyState

Column = Any  # a 1-D numpy object array: one field element per report


@dataclass(frozen=True)
class BatchReport:
    "One report as an aggregator receives it: its nonce, the public share and its own input share, encoded"

    nonce: bytes
    public_share: bytes
    input_share: bytes


def _column(values: Sequence[int]) -> Column:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _as_column(value: Column | int, size: int) -> Column:
    if isinstance(value, np.ndarray):
        return value
    return _column([value] * size)


class _BatchQueryGadget(Gadget):
    "QueryGadget over columns: records wire columns, answers each call from the batch of gadget polynomials"

    def __init__(self, field: type[Field], g: Gadget, seeds: list[Column], gadget_poly: list[Column],
                 calls: int) -> None:
        p = wire_poly_len(calls)
        self.inner = g
        self.ARITY = g.ARITY
        self.DEGREE = g.DEGREE
        self.wires: list[list[Column | int]] = [[seed] + [0] * (p - 1) for seed in seeds]
        self.k = 0
        n = next_power_of_2(len(gadget_poly))
        size = next_power_of_2(gadget_poly_len(g.DEGREE, p))
        if n != size or len(gadget_poly) not in (n, n - 1):
            raise NotImplementedError("batch verification handles gadgets of degree 2 (Mul, x**2 - x)")
        poly = list(gadget_poly)
        if len(poly) == n - 1:  # complete the last value: the top coefficient of a degree < n-1 polynomial is 0
            modulus = field.MODULUS
            nodes = field.nth_root_powers(n)
            partial = sum(v * w for v, w in zip(poly, nodes)) % modulus
            poly.append((-partial * nodes[1]) % modulus)
        self.poly = poly
        self.step = size // p

    def eval(self, field: type[Field], inp: list[Column]) -> Column:
        self.k += 1
        for wire, x in zip(self.wires, inp):
            wire[self.k] = x
        return self.poly[self.k * self.step]


def _inverse_columns(p: int, columns: list[Column]) -> list[Column]:
    "Montgomery's trick along the list and across reports: every entry's inverse for one scalar inversion"
    prefix = [columns[0]]
    for column in columns[1:]:
        prefix.append(prefix[-1] * column % p)
    totals = prefix[-1].tolist()
    inv = _column(batch_inverse(p, [int(x) for x in totals]))
    out: list[Column] = [None] * len(columns)
    for i in range(len(columns) - 1, 0, -1):
        out[i] = inv * prefix[i - 1] % p
        inv = inv * columns[i] % p
    out[0] = inv
    return out


def _weights(field: type[Field], n: int, points: Column) -> tuple[list[Column], list[Column]]:
    """Barycentric weights (see client_sdk.vdaf.field.eval_weights) on the n-th and on the (n/2)-th roots of unity,
    as columns over the reports' test points; the (n/2)-th roots are the even powers of the n-th root, so one set
    of inverses serves both"""
    p = field.MODULUS
    nodes = field.nth_root_powers(n)
    inverses = _inverse_columns(p, [(points - w) % p for w in nodes])
    half = n // 2

    def weights(m: int, step: int) -> list[Column]:
        scale = (_column([pow(int(t), m, p) for t in points.tolist()]) - 1) * pow(m, -1, p) % p
        return [scale * nodes[i * step] % p * inverses[i * step] % p for i in range(m)]

    return weights(n, 1), weights(half, 2)


def _dot(weights: list[Column], values: list[Column | int], modulus: int) -> Column:
    total = weights[0] * values[0]
    for c, v in zip(weights[1:], values[1:]):
        if isinstance(v, int) and v == 0:
            continue
        total = total + c * v
    return total % modulus


def _query_batch(vdaf: Prio3, meas: list[Column], proof: list[Column], query_rand: list[Column],
                 joint_rand: list[Column], t_points: list[list[int]]) -> list[Column]:
    "FlpBBCGGI19.query over columns; t_points[g] lists gadget g's test point for every report"
    flp = vdaf.flp
    valid = flp.valid
    field = vdaf.field
    modulus = field.MODULUS
    size = len(meas[0]) if meas else len(proof[0])
    gadgets: list[Gadget] = []
    offset = 0
    for g, calls in zip(valid.GADGETS, valid.GADGET_CALLS):
        seeds = proof[offset:offset + g.ARITY]
        offset += g.ARITY
        length = gadget_poly_len(g.DEGREE, wire_poly_len(calls))
        gadgets.append(_BatchQueryGadget(field, g, seeds, proof[offset:offset + length], calls))
        offset += length
    out = with_gadgets(valid, gadgets).eval(meas, joint_rand, vdaf.SHARES)
    if valid.EVAL_OUTPUT_LEN > 1:
        reduce_rand = query_rand[:valid.EVAL_OUTPUT_LEN]
        v = _dot(reduce_rand, [_as_column(o, size) for o in out], modulus)
    else:
        v = _as_column(out[0], size) % modulus
    verifier = [v]
    for wrapped, points in zip(gadgets, t_points):
        assert isinstance(wrapped, _BatchQueryGadget)
        if len(wrapped.poly) != 2 * len(wrapped.wires[0]):
            raise NotImplementedError("batch verification handles gadgets of degree 2")
        poly_weights, wire_weights = _weights(field, len(wrapped.poly), _column(points))
        verifier += [_dot(wire_weights, wire, modulus) for wire in wrapped.wires]
        verifier.append(_dot(poly_weights, wrapped.poly, modulus))
    return [_as_column(x, size) for x in verifier]


def batch_verify_init(vdaf: Prio3, verify_key: bytes, ctx: bytes, agg_id: int,
                      reports: Sequence[BatchReport]) -> list[tuple[VerifyState, VerifierShare] | VerifyError]:
    """``Prio3.verify_init`` for many reports at once; a report that cannot be verified gets its VerifyError"""
    if len(verify_key) != vdaf.VERIFY_KEY_SIZE:
        raise ValueError("incorrect verify key size")
    flp = vdaf.flp
    if any(g.DEGREE != 2 for g in flp.valid.GADGETS):  # the columns path completes degree-2 gadgets only
        return [_verify_one(vdaf, verify_key, ctx, agg_id, report) for report in reports]
    results: list[tuple[VerifyState, VerifierShare] | VerifyError | None] = [None] * len(reports)
    rows: list[tuple[int, list[int], list[int], list[int], list[int], VerifyState, bytes | None]] = []
    for index, report in enumerate(reports):
        try:
            if len(report.nonce) != vdaf.NONCE_SIZE:
                raise VerifyError("incorrect nonce size")
            public_share = vdaf.decode_public_share(report.public_share)
            share = vdaf.decode_input_share(agg_id, report.input_share)
            meas_share, proofs_share, blind = vdaf.expand_input_share(ctx, agg_id, share)
            joint_rands: list[int] = []
            corrected, part = None, None
            if flp.JOINT_RAND_LEN > 0:
                assert blind is not None and public_share is not None
                part = vdaf.joint_rand_part(ctx, agg_id, blind, meas_share, report.nonce)
                parts = list(public_share)
                parts[agg_id] = part
                corrected = vdaf.joint_rand_seed(ctx, parts)
                joint_rands = vdaf.joint_rands(ctx, corrected)
            query_rands = vdaf.query_rands(verify_key, ctx, report.nonce)
        except VerifyError as exc:
            results[index] = exc
            continue
        rows.append((index, meas_share, proofs_share, joint_rands, query_rands,
                     VerifyState(flp.truncate(meas_share), corrected), part))

    gadget_count = len(flp.valid.GADGETS)
    reduce_len = flp.valid.EVAL_OUTPUT_LEN if flp.valid.EVAL_OUTPUT_LEN > 1 else 0
    verifiers: list[list[int]] = [[] for _ in rows]
    roots = [wire_poly_len(c) for c in flp.valid.GADGET_CALLS]
    modulus = vdaf.field.MODULUS
    for i in range(vdaf.PROOFS):
        # a test point that is a root of unity would leak wire values: that report is rejected (as verify_init does)
        keep = []
        for position, row in enumerate(rows):
            qr = row[4][i * flp.QUERY_RAND_LEN:(i + 1) * flp.QUERY_RAND_LEN]
            if any(pow(t, p, modulus) == 1 for t, p in zip(qr[reduce_len:], roots)):
                results[row[0]] = VerifyError("test point is a root of unity")
            else:
                keep.append(position)
        if len(keep) != len(rows):
            rows = [rows[k] for k in keep]
            verifiers = [verifiers[k] for k in keep]
        if not rows:
            break
        meas = [_column(c) for c in zip(*(row[1] for row in rows))]
        proof = [_column(c) for c in zip(*(row[2][i * flp.PROOF_LEN:(i + 1) * flp.PROOF_LEN] for row in rows))]
        joint = [_column(c) for c in zip(*(row[3][i * flp.JOINT_RAND_LEN:(i + 1) * flp.JOINT_RAND_LEN]
                                           for row in rows))]
        query_rows = [row[4][i * flp.QUERY_RAND_LEN:(i + 1) * flp.QUERY_RAND_LEN] for row in rows]
        query = [_column(c) for c in zip(*query_rows)]
        t_points = [[q[reduce_len + g] for q in query_rows] for g in range(gadget_count)]
        columns = _query_batch(vdaf, meas, proof, query, joint, t_points)
        for position, values in enumerate(zip(*[col.tolist() for col in columns])):
            verifiers[position].extend(values)  # object columns hold Python ints

    for row, verifier in zip(rows, verifiers):
        results[row[0]] = (row[5], VerifierShare(verifier, row[6]))
    return [r if r is not None else VerifyError("not verified") for r in results]


def _verify_one(vdaf: Prio3, verify_key: bytes, ctx: bytes, agg_id: int,
                report: BatchReport) -> tuple[VerifyState, VerifierShare] | VerifyError:
    try:
        return vdaf.verify_init(verify_key, ctx, agg_id, report.nonce, vdaf.decode_public_share(report.public_share),
                                vdaf.decode_input_share(agg_id, report.input_share))
    except VerifyError as exc:
        return exc
    except ValueError as exc:  # a bad nonce size or a test point on a root of unity
        return VerifyError(str(exc))


def batch_verify(vdaf: Prio3, verify_key: bytes, ctx: bytes, nonces: Sequence[bytes], public_shares: Sequence[bytes],
                 input_shares: Sequence[Sequence[bytes]]) -> list[list[list[int]] | None]:
    """Every aggregator's side of verification for a batch, in one process (tests and benchmarks): per report,
    each aggregator's output share, or None if the report is rejected.  input_shares[r][agg_id] is encoded."""
    per_aggregator = [
        batch_verify_init(vdaf, verify_key, ctx, agg_id,
                          [BatchReport(n, ps, shares[agg_id]) for n, ps, shares in zip(nonces, public_shares,
                                                                                       input_shares)])
        for agg_id in range(vdaf.SHARES)
    ]
    out: list[list[list[int]] | None] = []
    for results in zip(*per_aggregator):
        if any(isinstance(r, VerifyError) for r in results):
            out.append(None)
            continue
        pairs = [r for r in results if not isinstance(r, VerifyError)]
        try:
            message = vdaf.verifier_shares_to_message(ctx, [share for _, share in pairs])
            out.append([vdaf.verify_next(ctx, state, message) for state, _ in pairs])
        except VerifyError:
            out.append(None)
    return out
