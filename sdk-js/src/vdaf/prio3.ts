/** Prio3 sharding (draft-irtf-cfrg-vdaf-20, section "Prio3"): split an encoded measurement into additive shares for
 * the aggregators and prove its validity, with the draft's message encodings, byte for byte as the Python SDK's
 * ``client_sdk/vdaf/prio3.py`` (whose verification side the aggregators run). */
import { type Field, Field64, Field128 } from "./field.js";
import { type Circuit, proofLen, prove, proveRandLen } from "./flp.js";
import { Count, Histogram, HistogramWithCoins, MultihotCountVec, Sum, SumVec } from "./circuits.js";
import { SEED_SIZE, XofTurboShake128 } from "./xof.js";

const VERSION = 18;
const USAGE_MEAS_SHARE = 1;
const USAGE_PROOF_SHARE = 2;
const USAGE_JOINT_RANDOMNESS = 3;
const USAGE_PROVE_RANDOMNESS = 4;
const USAGE_JOINT_RAND_SEED = 6;
const USAGE_JOINT_RAND_PART = 7;
export const NONCE_SIZE = 16;

/** The encoded shards of one report: the public share and one input share per aggregator (the leader's first). */
export interface Shards {
  publicShare: Uint8Array;
  inputShares: Uint8Array[];
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** One Prio3 instance: a validity circuit, its algorithm id, the number of aggregators; one proof, TurboSHAKE128. */
export class Prio3 {
  readonly field: Field;
  readonly randSize: number;
  private readonly proofs = 1;
  private readonly proveRandLen: number;
  private readonly proofLen: number;
  private readonly dsts = new Map<string, Uint8Array>();

  constructor(readonly circuit: Circuit, readonly algorithmId: number, readonly shares = 2) {
    if (!Number.isInteger(shares) || shares < 2 || shares > 255) throw new RangeError(`shares must be an integer in [2, 256), got ${shares}`);
    this.field = circuit.field;
    this.proveRandLen = proveRandLen(circuit);
    this.proofLen = proofLen(circuit);
    this.randSize = SEED_SIZE * (circuit.jointRandLen > 0 ? 2 * shares : shares);
  }

  /** Validate and encode ``measurement``, then shard it with ``rand`` (randSize bytes). */
  shard(ctx: Uint8Array, measurement: unknown, nonce: Uint8Array, rand: Uint8Array): Shards {
    return this.shardReduced(ctx, this.circuit.encode(measurement), nonce, rand);
  }

  /** Shard an already-encoded, possibly invalid, measurement (tests use it to play a malicious client; product code
   * calls {@link shard}). */
  shardEncoded(ctx: Uint8Array, encoded: readonly (bigint | number)[], nonce: Uint8Array, rand: Uint8Array): Shards {
    const p = this.field.modulus;
    return this.shardReduced(ctx, encoded.map((x) => ((BigInt(x) % p) + p) % p), nonce, rand);
  }

  private shardReduced(ctx: Uint8Array, meas: readonly bigint[], nonce: Uint8Array, rand: Uint8Array): Shards {
    if (nonce.length !== NONCE_SIZE) throw new RangeError(`nonce must be ${NONCE_SIZE} bytes, got ${nonce.length}`);
    if (rand.length !== this.randSize) throw new RangeError(`rand must be ${this.randSize} bytes, got ${rand.length}`);
    if (meas.length !== this.circuit.measLen) throw new RangeError("the encoded measurement has the wrong length");
    const p = this.field.modulus;
    const seeds = Array.from({ length: this.randSize / SEED_SIZE }, (_, i) => rand.subarray(i * SEED_SIZE, (i + 1) * SEED_SIZE));
    const useJoint = this.circuit.jointRandLen > 0;
    const helpers = this.shares - 1;
    const helperSeeds = useJoint ? seeds.filter((_, i) => i < 2 * helpers && i % 2 === 0) : seeds.slice(0, helpers);
    const helperBlinds = useJoint ? seeds.filter((_, i) => i < 2 * helpers && i % 2 === 1) : [];
    const leaderBlind = useJoint ? seeds[2 * helpers] : undefined;
    const proveSeed = seeds[useJoint ? 2 * helpers + 1 : helpers];

    const leaderMeas = [...meas];
    const parts: Uint8Array[] = [];
    for (let j = 0; j < helpers; j++) {
      const helperMeas = this.helperMeasShare(ctx, j + 1, helperSeeds[j]);
      for (let i = 0; i < leaderMeas.length; i++) {
        const d = leaderMeas[i] - helperMeas[i];
        leaderMeas[i] = d < 0n ? d + p : d;
      }
      if (useJoint) parts.push(this.jointRandPart(ctx, j + 1, helperBlinds[j], helperMeas, nonce));
    }
    let jointRands: bigint[] = [];
    if (leaderBlind !== undefined) {
      parts.unshift(this.jointRandPart(ctx, 0, leaderBlind, leaderMeas, nonce));
      jointRands = this.expand(this.jointRandSeed(ctx, parts), USAGE_JOINT_RANDOMNESS, ctx, [this.proofs],
        this.circuit.jointRandLen * this.proofs);
    }
    const proveRands = this.expand(proveSeed, USAGE_PROVE_RANDOMNESS, ctx, [this.proofs], this.proveRandLen * this.proofs);
    const proof = prove(this.circuit, meas, proveRands, jointRands);
    for (let j = 0; j < helpers; j++) {
      const helperProof = this.helperProofsShare(ctx, j + 1, helperSeeds[j]);
      for (let i = 0; i < proof.length; i++) {
        const d = proof[i] - helperProof[i];
        proof[i] = d < 0n ? d + p : d;
      }
    }

    const leaderShare = new Uint8Array((leaderMeas.length + proof.length) * this.field.encodedSize + (leaderBlind?.length ?? 0));
    const end = this.field.encodeInto(proof, leaderShare, this.field.encodeInto(leaderMeas, leaderShare, 0));
    if (leaderBlind !== undefined) leaderShare.set(leaderBlind, end);
    const inputShares: Uint8Array[] = [leaderShare];
    for (let j = 0; j < helpers; j++) inputShares.push(concat(useJoint ? [helperSeeds[j], helperBlinds[j]] : [helperSeeds[j]]));
    return { publicShare: concat(parts), inputShares };
  }

  /** VERSION || algorithm class 0 || algorithm id || usage (big-endian) || ctx (draft "Domain Separation Tag"). */
  private dst(usage: number, ctx: Uint8Array): Uint8Array {
    const key = `${usage} ${ctx.join(",")}`;
    let dst = this.dsts.get(key);
    if (dst === undefined) {
      dst = new Uint8Array(8 + ctx.length);
      const view = new DataView(dst.buffer);
      dst[0] = VERSION;
      dst[1] = 0;
      view.setUint32(2, this.algorithmId);
      view.setUint16(6, usage);
      dst.set(ctx, 8);
      if (this.dsts.size > 64) this.dsts.clear();
      this.dsts.set(key, dst);
    }
    return dst;
  }

  private expand(seed: Uint8Array, usage: number, ctx: Uint8Array, binder: number[] | Uint8Array, length: number): bigint[] {
    return XofTurboShake128.expandIntoVec(this.field, seed, this.dst(usage, ctx), Uint8Array.from(binder), length);
  }

  private helperMeasShare(ctx: Uint8Array, aggId: number, seed: Uint8Array): bigint[] {
    return this.expand(seed, USAGE_MEAS_SHARE, ctx, [aggId], this.circuit.measLen);
  }

  private helperProofsShare(ctx: Uint8Array, aggId: number, seed: Uint8Array): bigint[] {
    return this.expand(seed, USAGE_PROOF_SHARE, ctx, [this.proofs, aggId], this.proofLen * this.proofs);
  }

  private jointRandPart(ctx: Uint8Array, aggId: number, blind: Uint8Array, measShare: readonly bigint[], nonce: Uint8Array): Uint8Array {
    const binder = concat([Uint8Array.of(aggId), nonce, this.field.encodeVec(measShare)]);
    return XofTurboShake128.deriveSeed(blind, this.dst(USAGE_JOINT_RAND_PART, ctx), binder);
  }

  private jointRandSeed(ctx: Uint8Array, parts: readonly Uint8Array[]): Uint8Array {
    return XofTurboShake128.deriveSeed(new Uint8Array(SEED_SIZE), this.dst(USAGE_JOINT_RAND_SEED, ctx), concat(parts));
  }
}

// --- the draft's variants, and the project's coin variant ---------------------------------------------------------

export const prio3Count = (shares = 2): Prio3 => new Prio3(new Count(Field64), 0x00000001, shares);

export const prio3Sum = (maxMeasurement: number | bigint, shares = 2): Prio3 =>
  new Prio3(new Sum(Field64, maxMeasurement), 0x00000002, shares);

export const prio3SumVec = (length: number, maxMeasurement: number | bigint, chunkLength: number, shares = 2): Prio3 =>
  new Prio3(new SumVec(Field128, length, maxMeasurement, chunkLength), 0x00000003, shares);

export const prio3Histogram = (length: number, chunkLength: number, shares = 2): Prio3 =>
  new Prio3(new Histogram(Field128, length, chunkLength), 0x00000004, shares);

export const prio3MultihotCountVec = (length: number, maxWeight: number, chunkLength: number, shares = 2): Prio3 =>
  new Prio3(new MultihotCountVec(Field128, length, maxWeight, chunkLength), 0x00000005, shares);

/** A Histogram with ``coins`` proven coin bits per bucket; 0xFFFF0004 is a private algorithm id (not in the draft). */
export const prio3HistogramWithCoins = (length: number, coins: number, chunkLength: number, shares = 2): Prio3 =>
  new Prio3(new HistogramWithCoins(Field128, length, coins, chunkLength), 0xFFFF0004, shares);
