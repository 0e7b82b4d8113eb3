/**
 * The SDK's one error class, a CodedError (lib/log). `code` is the agent's stable EDGE_MISO_*
 * code (from the call's trailing metadata) or EDGE_MISO_SDK_* for failures on this side;
 * `grpcCode` is the status.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export class MisoSdkError extends CodedError {
  override readonly name = 'MisoSdkError';
  readonly grpcCode: number | undefined;
  constructor(code: string, message: string, grpcCode?: number, options?: ErrorOptions) {
    super(code, message, options);
    this.grpcCode = grpcCode;
  }
}
