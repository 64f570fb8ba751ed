/** How the SDK reads the collector's answers (the rules of the Python SDK's ``client_sdk/runtime/answers.py``). */

const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

/** The delivery condition a whole-request answer means (the batch stays queued in every case). */
export function conditionFor(status: number): string {
  if (RETRYABLE.has(status) || status >= 500) return "server_unavailable";
  const named: Record<number, string> = { 401: "unauthorized", 403: "forbidden", 404: "not_found", 413: "too_large" };
  return named[status] ?? (status >= 300 && status < 400 ? "redirected" : "refused");
}

/** The reports the collector rejected by name (id -> reason), or why the answer does not acknowledge the batch. */
export function acknowledgement(data: unknown, ids: string[]): Map<string, string> | string {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return "the answer is not the collector's JSON";
  const record = data as Record<string, unknown>;
  const counts = ["accepted", "duplicate", "rejected"].map((k) => record[k]);
  if (counts.some((c) => typeof c !== "number" || !Number.isInteger(c) || c < 0)) {
    return "no counts";
  }
  const sum = (counts as number[]).reduce((a, b) => a + b, 0);
  if (sum !== ids.length) return `counts ${sum} != ${ids.length}`;
  const errors = record.errors;
  if (!Array.isArray(errors) || errors.length !== counts[2]) return "rejections unnamed";
  const batch = new Set(ids);
  const rejected = new Map<string, string>();
  for (const error of errors) {
    const id = error && typeof error === "object" ? (error as Record<string, unknown>).report_id : undefined;
    if (typeof id !== "string" || !batch.has(id) || rejected.has(id)) return "rejection of an unknown report";
    rejected.set(id, `${error.field}: ${error.reason}`);
  }
  return rejected;
}

/** Retry-After in delta-seconds or HTTP-date form (RFC 9110, section 10.2.3), as seconds from ``now``. */
export function retryAfter(header: string | null, now: number): number | null {
  if (header === null) return null;
  const raw = header.trim();
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw);
  const when = Date.parse(raw);
  return Number.isNaN(when) || !/GMT|UTC|[+-]\d{4}$/.test(raw) ? null : Math.max(0, when / 1000 - now);
}

export function problem(data: unknown): string {
  if (data === null || typeof data !== "object") return "no details";
  const record = data as Record<string, unknown>;
  const text = `${record.field ?? ""}: ${record.detail ?? ""}`.replace(/^: |: $/g, "");
  return text || "no details";
}
