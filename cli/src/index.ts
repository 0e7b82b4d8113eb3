/**
 * @syncmesh-edge/cli: the `syncmesh` command line (src/main.ts) and what it reads, for other
 * components and tests: the mesh description's format and reader, and the one signing module.
 */
export { runCli } from './main.js';
export type { Io } from './main.js';
export { loadConfig, DEFAULT_MESH_FILE } from './config.js';
export type { CliConfig } from './config.js';
export { CLI_ERRORS, CliError } from './errors.js';
export type { CliErrorCode } from './errors.js';
export { findNode, meshDescriptionSchema, meshJsonSchema, meshNodeSchema, readMesh } from './mesh-file.js';
export type { MeshDescription, MeshNode } from './mesh-file.js';
export { CLI_ORIGIN, credentialFor } from './signing.js';
export type { Credential } from './signing.js';
