"""The fully linear proof of Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai (CRYPTO 2019), section 4.2, as profiled in
draft-irtf-cfrg-vdaf-20 ("FLP Specification"), with its gadgets Mul, PolyEval and ParallelSum.

The prover evaluates the validity circuit and records, for each gadget, the values on its input wires.  Wire
polynomial j takes a random "wire seed" at the first root of unity and the j-th input of call k at the (k+1)-th
root; the gadget polynomial is the gadget applied to the wire polynomials.  The proof is the wire seeds plus the
gadget polynomial's values.  A verifier (holding only shares) re-evaluates the circuit with gadget outputs read off
the gadget polynomial, then evaluates wire and gadget polynomials at a random point t: if the gadget applied to
the wire values at t equals the gadget polynomial at t, the outputs it was fed are the gadget's true outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import mul

from .field import (
    Field,
    double_evaluations,
    extend_values_to_power_of_2,
    nested_eval_weights,
    next_power_of_2,
    poly_eval_monomial,
)


def wire_poly_len(gadget_calls: int) -> int:
    "Evaluations per wire polynomial: the seed plus one per call, rounded up to a power of two"
    return next_power_of_2(1 + gadget_calls)


def gadget_poly_len(gadget_degree: int, wire_polynomial_len: int) -> int:
    "Evaluations of the gadget polynomial carried in the proof"
    return gadget_degree * (wire_polynomial_len - 1) + 1


class Gadget:
    "A non-affine sub-circuit: eval on field elements, eval_poly on Lagrange-basis polynomials"

    ARITY: int
    DEGREE: int

    def eval(self, field: type[Field], inp: list[int]) -> int:
        raise NotImplementedError

    def eval_poly(self, field: type[Field], inp_poly: list[list[int]]) -> list[int]:
        raise NotImplementedError


class Mul(Gadget):
    "x * y"

    ARITY = 2
    DEGREE = 2

    def eval(self, field: type[Field], inp: list[int]) -> int:
        return inp[0] * inp[1] % field.MODULUS

    def eval_poly(self, field: type[Field], inp_poly: list[list[int]]) -> list[int]:
        p = field.MODULUS
        left = double_evaluations(field, inp_poly[0])
        right = double_evaluations(field, inp_poly[1])
        return [a * b % p for a, b in zip(left, right)]


class PolyEval(Gadget):
    "p(x) for a fixed polynomial p given by its integer coefficients (constant term first)"

    ARITY = 1

    def __init__(self, coeffs: list[int], num_calls: int) -> None:
        while coeffs and coeffs[-1] == 0:
            coeffs = coeffs[:-1]
        if not coeffs:
            raise ValueError("invalid polynomial: zero length")
        self.coeffs = list(coeffs)
        self.DEGREE = len(coeffs) - 1
        self.n = next_power_of_2(gadget_poly_len(self.DEGREE, wire_poly_len(num_calls)))

    def eval(self, field: type[Field], inp: list[int]) -> int:
        p = field.MODULUS
        return poly_eval_monomial(p, [c % p for c in self.coeffs], inp[0])

    def eval_poly(self, field: type[Field], inp_poly: list[list[int]]) -> list[int]:
        p = field.MODULUS
        coeffs = [c % p for c in self.coeffs]
        monomial = field.inv_ntt(inp_poly[0], len(inp_poly[0]))
        values = field.ntt(monomial, self.n)
        return [poly_eval_monomial(p, coeffs, x) for x in values]


class ParallelSum(Gadget):
    "sum of `count` calls of a sub-circuit on consecutive slices of the input"

    def __init__(self, subcircuit: Gadget, count: int) -> None:
        self.subcircuit = subcircuit
        self.count = count
        self.ARITY = subcircuit.ARITY * count
        self.DEGREE = subcircuit.DEGREE

    def eval(self, field: type[Field], inp: list[int]) -> int:
        arity = self.subcircuit.ARITY
        out = 0
        for i in range(self.count):
            out += self.subcircuit.eval(field, inp[i * arity:(i + 1) * arity])
        return out % field.MODULUS

    def eval_poly(self, field: type[Field], inp_poly: list[list[int]]) -> list[int]:
        p = field.MODULUS
        length = next_power_of_2(gadget_poly_len(self.DEGREE, len(inp_poly[0])))
        arity = self.subcircuit.ARITY
        out = [0] * length
        for i in range(self.count):
            current = self.subcircuit.eval_poly(field, inp_poly[i * arity:(i + 1) * arity])
            out = [a + b for a, b in zip(out, current)]
        return [x % p for x in out]


class Valid:
    """A validity circuit (draft section "Validity Circuits"): eval(meas, joint_rand, num_shares) is all zeros iff
    the measurement is valid; gadgets carry every non-affine multiplication."""

    GADGETS: list[Gadget]
    GADGET_CALLS: list[int]
    MEAS_LEN: int
    JOINT_RAND_LEN: int
    EVAL_OUTPUT_LEN: int
    OUTPUT_LEN: int
    field: type[Field]

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int) -> list[int]:
        raise NotImplementedError

    def encode(self, measurement: object) -> list[int]:
        raise NotImplementedError

    def truncate(self, meas: list[int]) -> list[int]:
        raise NotImplementedError

    def decode(self, output: list[int], num_measurements: int) -> object:
        raise NotImplementedError

    def prove_rand_len(self) -> int:
        return sum(g.ARITY for g in self.GADGETS)

    def query_rand_len(self) -> int:
        n = len(self.GADGETS)
        return n + self.EVAL_OUTPUT_LEN if self.EVAL_OUTPUT_LEN > 1 else n

    def proof_len(self) -> int:
        return sum(g.ARITY + gadget_poly_len(g.DEGREE, wire_poly_len(calls))
                   for g, calls in zip(self.GADGETS, self.GADGET_CALLS))

    def verifier_len(self) -> int:
        return 1 + sum(g.ARITY + 1 for g in self.GADGETS)


class _RecordingGadget(Gadget):
    "Records the inputs of each call as evaluations 1, 2, ... of the wire polynomials (evaluation 0 is the seed)"

    def __init__(self, g: Gadget, wire_seeds: Sequence[int], calls: int) -> None:
        p = wire_poly_len(calls)
        self.inner = g
        self.ARITY = g.ARITY
        self.DEGREE = g.DEGREE
        self.wires = [[seed] + [0] * (p - 1) for seed in wire_seeds]
        self.k = 0

    def _record(self, inp: list[int]) -> None:
        self.k += 1
        k = self.k
        for wire, x in zip(self.wires, inp):
            wire[k] = x


class ProveGadget(_RecordingGadget):
    def eval(self, field: type[Field], inp: list[int]) -> int:
        self._record(inp)
        return self.inner.eval(field, inp)


class QueryGadget(_RecordingGadget):
    "Answers each call with the gadget polynomial's value at that call's root of unity"

    def __init__(self, field: type[Field], g: Gadget, wire_seeds: Sequence[int], gadget_poly: list[int],
                 calls: int) -> None:
        super().__init__(g, wire_seeds, calls)
        p = wire_poly_len(calls)
        poly = extend_values_to_power_of_2(field, gadget_poly, next_power_of_2(len(gadget_poly)))
        size = next_power_of_2(gadget_poly_len(g.DEGREE, p))
        while len(poly) < size:
            poly = double_evaluations(field, poly)
        self.poly = poly
        self.step = size // p

    def eval(self, field: type[Field], inp: list[int]) -> int:
        self._record(inp)
        return self.poly[self.k * self.step]


def with_gadgets(valid: Valid, gadgets: list[Gadget]) -> Valid:
    """A shallow copy of the circuit whose gadget calls go to `gadgets` (the recording / answering wrappers); what
    ``copy.copy`` does for a plain instance, without its generic dispatch (a few us of every query of a small
    circuit, which is most of Count's verification)"""
    wrapped = object.__new__(type(valid))
    wrapped.__dict__.update(valid.__dict__)
    wrapped.GADGETS = gadgets
    return wrapped


class FlpBBCGGI19:
    "prove / query / decide for one validity circuit (one proof; Prio3 repeats it PROOFS times)"

    def __init__(self, valid: Valid) -> None:
        self.valid = valid
        self.field = valid.field
        self.PROVE_RAND_LEN = valid.prove_rand_len()
        self.QUERY_RAND_LEN = valid.query_rand_len()
        self.JOINT_RAND_LEN = valid.JOINT_RAND_LEN
        self.MEAS_LEN = valid.MEAS_LEN
        self.OUTPUT_LEN = valid.OUTPUT_LEN
        self.PROOF_LEN = valid.proof_len()
        self.VERIFIER_LEN = valid.verifier_len()

    def encode(self, measurement: object) -> list[int]:
        return self.valid.encode(measurement)

    def truncate(self, meas: list[int]) -> list[int]:
        return self.valid.truncate(meas)

    def decode(self, output: list[int], num_measurements: int) -> object:
        return self.valid.decode(output, num_measurements)

    def prove(self, meas: list[int], prove_rand: list[int], joint_rand: list[int]) -> list[int]:
        gadgets: list[Gadget] = []
        offset = 0
        for g, calls in zip(self.valid.GADGETS, self.valid.GADGET_CALLS):
            gadgets.append(ProveGadget(g, prove_rand[offset:offset + g.ARITY], calls))
            offset += g.ARITY
        with_gadgets(self.valid, gadgets).eval(meas, joint_rand, 1)
        proof: list[int] = []
        for wrapped, calls in zip(gadgets, self.valid.GADGET_CALLS):
            assert isinstance(wrapped, ProveGadget)
            proof += [wire[0] for wire in wrapped.wires]
            gadget_poly = wrapped.inner.eval_poly(self.field, wrapped.wires)
            proof += gadget_poly[:gadget_poly_len(wrapped.DEGREE, wire_poly_len(calls))]
        return proof

    def query(self, meas: list[int], proof: list[int], query_rand: list[int], joint_rand: list[int],
              num_shares: int) -> list[int]:
        field = self.field
        modulus = field.MODULUS
        gadgets: list[Gadget] = []
        offset = 0
        for g, calls in zip(self.valid.GADGETS, self.valid.GADGET_CALLS):
            seeds = proof[offset:offset + g.ARITY]
            offset += g.ARITY
            length = gadget_poly_len(g.DEGREE, wire_poly_len(calls))
            gadgets.append(QueryGadget(field, g, seeds, proof[offset:offset + length], calls))
            offset += length
        out = with_gadgets(self.valid, gadgets).eval(meas, joint_rand, num_shares)

        if self.valid.EVAL_OUTPUT_LEN > 1:
            reduce_rand = query_rand[:self.valid.EVAL_OUTPUT_LEN]
            query_rand = query_rand[self.valid.EVAL_OUTPUT_LEN:]
            v = sum(r * o for r, o in zip(reduce_rand, out)) % modulus
        else:
            [v] = out

        verifier = [v]
        for wrapped, t in zip(gadgets, query_rand):
            assert isinstance(wrapped, QueryGadget)
            p = len(wrapped.wires[0])
            if pow(t, p, modulus) == 1:
                raise ValueError("test point is a root of unity")
            gadget_weights, weights = nested_eval_weights(field, len(wrapped.poly), p, t)  # p divides len(poly)
            verifier += [sum(map(mul, weights, wire)) % modulus for wire in wrapped.wires]
            verifier.append(sum(map(mul, gadget_weights, wrapped.poly)) % modulus)
        return verifier

    def decide(self, verifier: list[int]) -> bool:
        if len(verifier) != self.VERIFIER_LEN:
            raise ValueError("verifier has the wrong length")
        if verifier[0] != 0:
            return False
        offset = 1
        for g in self.valid.GADGETS:
            wire_checks = verifier[offset:offset + g.ARITY]
            gadget_check = verifier[offset + g.ARITY]
            offset += g.ARITY + 1
            if g.eval(self.field, wire_checks) != gadget_check:
                return False
        return True
