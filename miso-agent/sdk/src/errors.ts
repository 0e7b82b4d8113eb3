/**
 * The SDK's one error class. `code` is the agent's stable EDGE_MISO_* code (from the call's
 * trailing metadata) or EDGE_MISO_SDK_* for failures on this side; `grpcCode` is the status.
 */
export class MisoSdkError extends Error {
  readonly code: string;
  readonly grpcCode: number | undefined;
  constructor(code: string, message: string, grpcCode?: number, options?: ErrorOptions) {
    super(message, options);
    this.name = 'MisoSdkError';
    this.code = code;
    this.grpcCode = grpcCode;
  }
}
