/** A campaign's privacy budget (the spec's optional ``budget``, ``client_sdk/budget.py``): what one device may spend
 * over the campaign's life, and the one rule both ends enforce it by, basic composition of the charges: each release
 * charges the (epsilon, delta) its kind states for one report, the charges add up, and one that would take the sums
 * past the budget's epsilon (or its delta, when it names one) is refused. */

import { PyFloat } from "./canonical.js";
import { SpecError } from "./errors.js";

export interface Budget {
  epsilon: number;
  /** null: the budget caps epsilon only. */
  delta: number | null;
}

const finite = Number.isFinite as (v: unknown) => v is number;

/** The spec's ``budget`` member; SpecError naming ``budget``, ``budget.epsilon`` or ``budget.delta``. */
export function parseBudget(value: unknown): Budget {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new SpecError("budget", 'must be {"epsilon": E[, "delta": D]}');
  }
  const { epsilon, delta, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest).sort();
  if (unknown.length) throw new SpecError(`budget.${unknown[0]}`, "unknown field");
  if (!finite(epsilon) || !(epsilon > 0)) throw new SpecError("budget.epsilon", "must be a positive finite number");
  if (delta != null && !(finite(delta) && delta > 0 && delta < 1)) throw new SpecError("budget.delta", "must be in (0, 1)");
  return { epsilon, delta: delta ?? null };
}

/** The budget's part of the fingerprint (Python holds its members as floats). */
export const budgetIdentity = ({ epsilon, delta }: Budget): Record<string, PyFloat> =>
  (delta === null ? { epsilon: new PyFloat(epsilon) } : { epsilon: new PyFloat(epsilon), delta: new PyFloat(delta) });

/** Whether one more ``charge`` [epsilon, delta] after ``spent`` (the charges' sums) would pass ``budget`` (never
 * without one); the relative tolerance lets a budget of k epsilons allow k charges despite rounding in their sum. */
export const exceeds = (budget: Budget | null | undefined, spent: [number, number], charge: [number, number]): boolean =>
  !!budget && (spent[0] + charge[0] > budget.epsilon * (1 + 1e-12)
    || (budget.delta !== null && spent[1] + charge[1] > budget.delta * (1 + 1e-12)));
