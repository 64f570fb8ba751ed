/** The repeated kind: the same devices every period, on one budget (``client_sdk/kinds/repeated/``: 1BitMean with
 * alpha-point rounding, dBitFlip, memoized answers, optional output perturbation gamma; the guarantee is stated in
 * that package's docstring). A report is ``{"period": "<label>", "answer": ...}``, one per period (the ledger's
 * batch is the period's label, so a second report in a period and a clock set back are refused).
 *
 * The device's state for a campaign (alpha or its d buckets, and the memoized answers: repeated-device.ts) lives in
 * the device store beside the RAPPOR secret, as the setting ``repeated:<campaign>``, written in the same atomic step
 * as the report and its ledger charge (``Charge.state``), and only if it is still the state the report was made from
 * (otherwise the store answers "stale" and the Client makes the report again from the stored one). The ledger is
 * charged epsilon when the report memoized a new answer and nothing when it reuses one (the Python kind's
 * ``ledger_charge``). Clearing the app's state (``deleteLocalData``) is the only way to redraw it; every answer used
 * afterwards costs epsilon again. Browsers load this module with the first repeated spec (dist/browser/repeated.js). */

import { PyFloat, canonicalJson } from "../canonical.js";
import { toHex, utf8 } from "../hash.js";
import type { Mechanism, Payload } from "../mechanisms.js";
import type { RandomSource } from "../randomness.js";
import { sha256 } from "../sha256.js";
import { Spec } from "../spec.js";
import type { Charge, Store } from "../store.js";
import { provideKind, type CampaignKind, type Envelope } from "./index.js";
import { DeviceStateError, clampedValue, makeReport, periodOf, periodStart, type RepeatedState } from "./repeated-device.js";
import { FIELDS, KIND_NAME, parseParams, type RepeatedParams } from "./repeated-params.js";
import { storedSetting } from "./setting.js";

/** A repeated campaign's spec: its parameters at ``params``; the identity has ``kind``, ``trust`` and every field. */
export class RepeatedSpec extends Spec {
  readonly trust = "local";
  constructor(name: string, expires: string | null, readonly params: RepeatedParams) {
    super(name, KIND_NAME, params.epsilon, null, null, [params.low, params.high], null, null, expires);
    // fingerprinted here, with this module's canonical JSON (browsers: the main bundle's PyFloat is not this one)
    (this as { fingerprint: string }).fingerprint = toHex(sha256(utf8(canonicalJson(this.identity())))).slice(0, 32);
  }

  override identity(): Record<string, unknown> {
    const fields = this.params.toDict();
    const out: Record<string, unknown> = { name: this.name, kind: KIND_NAME, trust: "local",
      epsilon: new PyFloat(this.epsilon), ...fields, range: [new PyFloat(this.params.low), new PyFloat(this.params.high)] };
    if (this.params.gamma !== null) out.gamma = new PyFloat(this.params.gamma);
    if (this.expires) out.expires = this.expires;
    return out;
  }
}

/** The store's key of a campaign's device state. */
export const stateKey = (campaign: string): string => `${KIND_NAME}:${campaign}`;

/** Makes a repeated campaign's reports through the Client: ``perturb`` checks the value, ``seal`` draws from the
 * stored state and says what the ledger charges. */
export class RepeatedReporter implements Mechanism {
  constructor(readonly spec: RepeatedSpec, readonly rng: RandomSource) {}

  perturb(value: unknown): Payload {
    clampedValue(this.spec.params, value); // InvalidValueType before anything is drawn
    return value as Payload;
  }

  async seal(value: unknown, _reportId: string, charge: Charge, _context: object, store: Store): Promise<Payload | string> {
    const params = this.spec.params;
    const period = periodOf(params, charge.now);
    charge.batch = period; // one report per period, periods only moving forward
    if (charge.policy.periodSeconds === null) { // the cap's periods are the labels' (weeks from Monday)
      charge.policy = { ...charge.policy, periodSeconds: params.periodSeconds, periodOrigin: periodStart(params, 0) };
    }
    const key = stateKey(this.spec.name);
    const expected = await storedSetting(store, key);
    let state: RepeatedState = {};
    try {
      const parsed = expected === null ? {} : JSON.parse(expected);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) state = parsed; // else: drawn afresh
    } catch {
      return "state_error";
    }
    let answer, isNew;
    try {
      [answer, isNew] = makeReport(this.rng, params, state, value);
    } catch (error) {
      if (error instanceof DeviceStateError) return "state_error"; // damaged: nothing is redrawn
      throw error;
    }
    charge.epsilon = isNew ? this.spec.epsilon : 0;
    charge.state = { key, value: JSON.stringify(state), expected };
    return { period, answer } as unknown as Payload;
  }
}

function parse(d: Record<string, unknown>, { name, expires }: Envelope): Spec {
  return new RepeatedSpec(name, expires, parseParams(d));
}

export const kind: CampaignKind = {
  name: KIND_NAME,
  trustModels: ["local"],
  fields: FIELDS,
  parse,
  reporter: (spec, rng) => new RepeatedReporter(spec as RepeatedSpec, rng),
};

export default kind;
provideKind(kind);
