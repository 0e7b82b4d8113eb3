/**
 * The one error class of the mesh tooling. Every failure carries a stable code
 * (EDGE_MESH_<THING>); README.md lists each code with how to solve it.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export type MeshErrorCode =
  | 'EDGE_MESH_CONFIG'
  | 'EDGE_MESH_NOT_ROOT'
  | 'EDGE_MESH_NAME_TAKEN'
  | 'EDGE_MESH_PORT_TAKEN'
  | 'EDGE_MESH_SUBNET_TAKEN'
  | 'EDGE_MESH_ALREADY_UP'
  | 'EDGE_MESH_NOT_UP'
  | 'EDGE_MESH_TOOL_MISSING'
  | 'EDGE_MESH_COMMAND_FAILED'
  | 'EDGE_MESH_NODE_START'
  | 'EDGE_MESH_DATA'
  | 'EDGE_MESH_LATENCY_FILE'
  | 'EDGE_MESH_REQUEST'
  | 'EDGE_MESH_UNKNOWN_NODE'
  | 'EDGE_MESH_INTERRUPTED'
  | 'EDGE_MESH_FAASD_GATEWAY'
  | 'EDGE_MESH_FAASD_DEPLOY'
  /** A user's function: a bad name, image reference or secret, a node's own function, a node without registry details. */
  | 'EDGE_MESH_FN_BAD_INPUT'
  /** A user's function: a node's registry refused the credentials, did not answer, or could not store the image (full). */
  | 'EDGE_MESH_FN_REGISTRY';

export class MeshError extends CodedError<MeshErrorCode> {
  override name = 'MeshError';
}

/** The deliberate swallow (one definition, in `@syncmesh-edge/log`). */
export { squashError } from '@syncmesh-edge/log';
