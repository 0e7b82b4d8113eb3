/**
 * The Syncmesh paper's published numbers that we have: only those quoted in the issue that asked
 * for this benchmark. Every other cell of the paper's Table III/IV is "unavailable" here and is
 * shown as such; nothing is interpolated or estimated.
 */
export interface PaperFigure {
  what: string;
  nodes: number | null;
  workload: 'collect' | 'aggregate';
  value: string;
}

export const PAPER_FIGURES: readonly PaperFigure[] = [
  { what: 'traffic, baseline', nodes: 3, workload: 'aggregate', value: '34.74 MB' },
  { what: 'traffic, syncmesh', nodes: 3, workload: 'aggregate', value: '0.56 MB' },
  { what: 'traffic, syncmesh / baseline', nodes: 3, workload: 'aggregate', value: '1.6 %' },
  { what: 'traffic, syncmesh vs baseline', nodes: null, workload: 'collect', value: '-14 %' },
  { what: 'RTT, syncmesh vs baseline', nodes: null, workload: 'aggregate', value: '+31 %' },
];

/** Paper traffic in MB by (system, nodes, workload), or null when we do not have it. */
export function paperTrafficMb(system: string, nodes: number, workload: string): number | null {
  if (workload !== 'aggregate' || nodes !== 3) return null;
  if (system === 'baseline') return 34.74;
  if (system === 'syncmesh') return 0.56;
  return null;
}

/** The targets of the issue, on the regional profile. */
export const TARGETS = {
  /** syncmesh aggregate traffic at most this share of the baseline's. */
  aggregateTrafficShare: 0.02,
  /** syncmesh collect traffic at most the baseline's. */
  collectTrafficShare: 1,
  /** syncmesh aggregate RTT at most the baseline's. */
  aggregateRttShare: 1,
};

/** The paper's `advanced` system (sharded MongoDB) needs mongos, which cannot run here. */
export const ADVANCED_NOTE =
  "The paper's `advanced` system (sharded MongoDB behind `mongos`) is not run: no real MongoDB (and so no `mongos` or config servers) can be installed on this machine, and the MongoDB-compatible test server has no sharding. Its published numbers are not among those we have, so they are listed as unavailable.";
