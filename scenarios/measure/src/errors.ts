/**
 * The one error class of the measurement scenarios. Every failure carries a stable code
 * (EDGE_SCENARIO_<THING>); ../README.md lists each code with how to solve it.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export type ScenarioErrorCode =
  | 'EDGE_SCENARIO_CONFIG'
  | 'EDGE_SCENARIO_NOT_ROOT'
  | 'EDGE_SCENARIO_TOOL_MISSING'
  | 'EDGE_SCENARIO_CENTRAL_START'
  | 'EDGE_SCENARIO_INGEST'
  | 'EDGE_SCENARIO_K6'
  | 'EDGE_SCENARIO_TOPOLOGY'
  | 'EDGE_SCENARIO_UNREACHABLE'
  | 'EDGE_SCENARIO_REPORT';

export class ScenarioError extends CodedError<ScenarioErrorCode> {
  override name = 'ScenarioError';
}

/** The deliberate swallow (one definition, in `@syncmesh-edge/log`). */
export { squashError } from '@syncmesh-edge/log';
