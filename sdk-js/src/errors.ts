/** Errors the SDK raises on purpose; the same names and fields as the Python SDK's ``client_sdk.errors``. */

export class LDPError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad input: ``field`` names it, ``reason`` says why. */
export class FieldError extends LDPError {
  readonly field: string;
  readonly reason: string;
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
    this.field = field;
    this.reason = reason;
  }
}

/** A campaign spec is invalid. */
export class SpecError extends FieldError {}
/** A report payload does not match its campaign's spec. */
export class PayloadError extends FieldError {}
/** A categorical value is not in the campaign's domain. */
export class ValueNotInDomain extends LDPError {}
/** ``record`` was called wrongly (a programming error); operational conditions never throw. */
export class RecordingError extends LDPError {}
/** The value cannot be reported by this campaign (outside its domain, NaN, ...). */
export class InvalidValue extends RecordingError {}
/** The value has the wrong type for this campaign (a string for a numeric campaign, ...). */
export class InvalidValueType extends RecordingError {}
/** The campaign's spec cannot be used by this SDK (a distributed campaign, an unknown mechanism). */
export class UnsupportedSpec extends RecordingError {}
/** The SDK's state (file or IndexedDB) cannot be opened or is damaged. */
export class StateFileError extends LDPError {}
