/** Deliberately ignores an error; every call says why in a comment next to it. */
export function squashError(_err: unknown): void {
  /* intentionally empty: see the caller's comment */
}

/**
 * The one base class of the components' errors: a stable `code` (each has a row in docs/errors.md
 * or the component's README) and the standard `cause`. A component declares its codes as a string
 * union and subclasses this once, naming the class:
 * `export class MisoError extends CodedError<MisoErrorCode> { override name = 'MisoError'; }`.
 */
export class CodedError<C extends string = string> extends Error {
  readonly code: C;

  constructor(code: C, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
