/** Every verb of the CLI, in the order `syncmesh --help` lists them. */
import { completionVerb } from './commands/completion.js';
import { loadVerb } from './commands/load.js';
import { logsVerb } from './commands/logs.js';
import { meshVerb } from './commands/mesh.js';
import { queryVerb } from './commands/query.js';
import { addVerb, nodesVerb, removeVerb, subscribeVerb, unsubscribeVerb } from './commands/registry.js';
import { statusVerb } from './commands/status.js';
import type { Verb } from './context.js';

export const VERBS: readonly Verb[] = [
  statusVerb,
  nodesVerb,
  addVerb,
  removeVerb,
  subscribeVerb,
  unsubscribeVerb,
  queryVerb,
  loadVerb,
  logsVerb,
  meshVerb,
  completionVerb(() => VERBS.map((v) => v.spec)),
];
