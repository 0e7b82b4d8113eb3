/**
 * The one error class of the lab library. Every failure carries a stable code (EDGE_LAB_<THING>);
 * docs/errors.md lists each code with how to solve it. The mesh and the scenarios pass these
 * through unchanged (their CLIs print the code).
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export type LabErrorCode =
  | 'EDGE_LAB_TOOL_MISSING'
  | 'EDGE_LAB_COMMAND_FAILED'
  | 'EDGE_LAB_NOT_READY'
  | 'EDGE_LAB_PROCESS_START'
  | 'EDGE_LAB_TOXIPROXY'
  | 'EDGE_LAB_CAPTURE'
  | 'EDGE_LAB_PCAP'
  | 'EDGE_LAB_REDIS';

export class LabError extends CodedError<LabErrorCode> {
  override name = 'LabError';
}
