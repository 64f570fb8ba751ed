/** The prover of the fully linear proof of Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai (CRYPTO 2019), as profiled in
 * draft-irtf-cfrg-vdaf-20 ("FLP Specification"), with its gadgets Mul, PolyEval and ParallelSum; the Python SDK's
 * ``client_sdk/vdaf/flp.py`` holds both sides. A device only proves: it evaluates the validity circuit, records the
 * inputs of each gadget call as evaluations 1, 2, ... of the wire polynomials (evaluation 0 is a random wire seed),
 * and sends the wire seeds and the gadget polynomial's values. */
import { type Field, nextPowerOf2 } from "./field.js";

/** Evaluations per wire polynomial: the seed plus one per call, rounded up to a power of two. */
export function wirePolyLen(gadgetCalls: number): number {
  return nextPowerOf2(1 + gadgetCalls);
}

/** Evaluations of the gadget polynomial carried in the proof. */
export function gadgetPolyLen(degree: number, wirePolynomialLen: number): number {
  return degree * (wirePolynomialLen - 1) + 1;
}

/** A non-affine sub-circuit: eval on field elements, evalPoly on Lagrange-basis polynomials. */
export interface Gadget {
  readonly arity: number;
  readonly degree: number;
  eval(field: Field, inp: readonly bigint[]): bigint;
  evalPoly(field: Field, wires: readonly bigint[][]): bigint[];
}

/** x * y */
export class Mul implements Gadget {
  readonly arity = 2;
  readonly degree = 2;

  eval(field: Field, inp: readonly bigint[]): bigint {
    return (inp[0] * inp[1]) % field.modulus;
  }

  evalPoly(field: Field, wires: readonly bigint[][]): bigint[] {
    const left = field.doubleEvaluations(wires[0]);
    const right = field.doubleEvaluations(wires[1]);
    return left.map((x, i) => (x * right[i]) % field.modulus);
  }
}

/** p(x) for a fixed polynomial p given by its integer coefficients (constant term first). */
export class PolyEval implements Gadget {
  readonly arity = 1;
  readonly degree: number;
  private readonly coeffs: bigint[];
  private readonly size: number;

  constructor(coeffs: readonly number[], numCalls: number) {
    const trimmed = [...coeffs];
    while (trimmed.length && trimmed[trimmed.length - 1] === 0) trimmed.pop();
    if (!trimmed.length) throw new RangeError("invalid polynomial: zero length");
    this.coeffs = trimmed.map(BigInt);
    this.degree = trimmed.length - 1;
    this.size = nextPowerOf2(gadgetPolyLen(this.degree, wirePolyLen(numCalls)));
  }

  eval(field: Field, inp: readonly bigint[]): bigint {
    return this.horner(field, inp[0]);
  }

  evalPoly(field: Field, wires: readonly bigint[][]): bigint[] {
    const monomial = field.invNtt(wires[0]);
    while (monomial.length < this.size) monomial.push(0n);
    return field.ntt(monomial).map((x) => this.horner(field, x));
  }

  private horner(field: Field, x: bigint): bigint {
    const p = field.modulus;
    let out = 0n;
    for (let i = this.coeffs.length - 1; i >= 0; i--) out = (out * x + ((this.coeffs[i] % p) + p)) % p;
    return out;
  }
}

/** The sum of ``count`` calls of a sub-circuit on consecutive slices of the input. */
export class ParallelSum implements Gadget {
  readonly arity: number;
  readonly degree: number;

  constructor(private readonly subcircuit: Gadget, private readonly count: number) {
    this.arity = subcircuit.arity * count;
    this.degree = subcircuit.degree;
  }

  eval(field: Field, inp: readonly bigint[]): bigint {
    const arity = this.subcircuit.arity;
    let out = 0n;
    for (let i = 0; i < this.count; i++) out += this.subcircuit.eval(field, inp.slice(i * arity, (i + 1) * arity));
    return out % field.modulus;
  }

  evalPoly(field: Field, wires: readonly bigint[][]): bigint[] {
    const length = nextPowerOf2(gadgetPolyLen(this.degree, wires[0].length));
    const arity = this.subcircuit.arity;
    const out = new Array<bigint>(length).fill(0n);
    for (let i = 0; i < this.count; i++) {
      const current = this.subcircuit.evalPoly(field, wires.slice(i * arity, (i + 1) * arity));
      for (let j = 0; j < length; j++) out[j] += current[j];
    }
    return out.map((x) => x % field.modulus);
  }
}

/** A validity circuit (draft section "Validity Circuits"): eval(meas, jointRand, numShares, gadgets) is all zeros
 * iff the measurement is valid; every non-affine multiplication goes through ``gadgets``. */
export interface Circuit {
  readonly field: Field;
  readonly gadgets: readonly Gadget[];
  readonly gadgetCalls: readonly number[];
  readonly measLen: number;
  readonly jointRandLen: number;
  readonly evalOutputLen: number;
  readonly outputLen: number;
  /** The measurement's encoding; TypeError or RangeError for a measurement the circuit does not take. */
  encode(measurement: unknown): bigint[];
  eval(meas: readonly bigint[], jointRand: readonly bigint[], numShares: number, gadgets: readonly Gadget[]): bigint[];
}

export function proveRandLen(circuit: Circuit): number {
  return circuit.gadgets.reduce((sum, g) => sum + g.arity, 0);
}

export function proofLen(circuit: Circuit): number {
  return circuit.gadgets.reduce((sum, g, i) => sum + g.arity + gadgetPolyLen(g.degree, wirePolyLen(circuit.gadgetCalls[i])), 0);
}

/** Records the inputs of each call into the wire polynomials, then answers as the gadget it wraps. */
class ProveGadget implements Gadget {
  readonly arity: number;
  readonly degree: number;
  readonly wires: bigint[][];
  private calls = 0;

  constructor(readonly inner: Gadget, wireSeeds: readonly bigint[], calls: number) {
    this.arity = inner.arity;
    this.degree = inner.degree;
    const length = wirePolyLen(calls);
    this.wires = wireSeeds.map((seed) => {
      const wire = new Array<bigint>(length).fill(0n);
      wire[0] = seed;
      return wire;
    });
  }

  eval(field: Field, inp: readonly bigint[]): bigint {
    const k = ++this.calls;
    for (let j = 0; j < this.wires.length; j++) this.wires[j][k] = inp[j];
    return this.inner.eval(field, inp);
  }

  evalPoly(field: Field, wires: readonly bigint[][]): bigint[] {
    return this.inner.evalPoly(field, wires);
  }
}

/** The proof of an encoded measurement: per gadget, its wire seeds and its gadget polynomial's values. */
export function prove(circuit: Circuit, meas: readonly bigint[], proveRand: readonly bigint[], jointRand: readonly bigint[]): bigint[] {
  let offset = 0;
  const recording = circuit.gadgets.map((g, i) => {
    const wrapped = new ProveGadget(g, proveRand.slice(offset, offset + g.arity), circuit.gadgetCalls[i]);
    offset += g.arity;
    return wrapped;
  });
  circuit.eval(meas, jointRand, 1, recording);
  const proof: bigint[] = [];
  recording.forEach((g, i) => {
    for (const wire of g.wires) proof.push(wire[0]);
    const gadgetPoly = g.inner.evalPoly(circuit.field, g.wires);
    const length = gadgetPolyLen(g.degree, wirePolyLen(circuit.gadgetCalls[i]));
    for (let j = 0; j < length; j++) proof.push(gadgetPoly[j]);
  });
  return proof;
}
