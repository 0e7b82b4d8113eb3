/** @syncmesh-edge/lab: the lab's shared code for scenarios/mesh and scenarios/measure (never shipped). */
export { LabError } from './errors.js';
export { Prng } from './prng.js';
export type { LabErrorCode } from './errors.js';
export {
  DEFAULT_RUN_TIMEOUT_MS,
  delay,
  freePort,
  hasCommand,
  hostListeners,
  httpOk,
  isAlive,
  jsonLines,
  parseProcNetTcp,
  pool,
  portTaken,
  processStartTime,
  pssBytes,
  rssBytes,
  run,
  startDetached,
  startService,
  stopProcess,
  tail,
  tcpOpen,
  tryRun,
  waitFor,
  waitForEvery,
} from './sys.js';
export { ConnectProxy, Relay } from './relay.js';
export type { Listener, ProcessRecord, RunOptions, RunResult, Service } from './sys.js';
export {
  attachNamespace,
  BRIDGE_PORT_FORWARDING_TIMEOUT_MS,
  bridgeMac,
  bridgeOf,
  CENTRAL_HOST_OCTET,
  CLIENT_HOST_OCTET,
  createBridge,
  createExtraNamespace,
  createNamespace,
  createTestNetwork,
  deleteLink,
  deleteNamespace,
  EXTRA_ROLES,
  extraNamespace,
  freeSubnet,
  inNetns,
  killNamespaceProcesses,
  leftovers,
  listLinks,
  listNamespaces,
  listRoutes,
  namespacePids,
  NETNS_IF,
  removeExtraNamespaces,
  removeNamespace,
  runInNetns,
  spawnInNetns,
  tryRunInNetns,
  waitForwarding,
} from './netns.js';
export type { ExtraNamespace, ExtraRole, Route, TestNetwork, VethAttachment } from './netns.js';
export { SNAPLEN_BYTES, startCapture } from './capture.js';
export { cpuLimitUnavailable, createCpuLimit } from './cgroup.js';
export type { CpuLimit } from './cgroup.js';
export type { CaptureTarget, PhaseTraffic, RunningCapture } from './capture.js';
export { buildPcap, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, parsePcap, readPcap, tcpFrame } from './pcap.js';
export type { Packet, PcapFile } from './pcap.js';
export { classify, emptyBreakdown, layoutFromTopology } from './traffic.js';
export type { CapturedInterface, InterfaceKind, Layout, LayoutNode, NodeLinkTraffic, PairTraffic, TopologyLike, TrafficBreakdown } from './traffic.js';
export { parseResp, RespClient } from './resp.js';
export type { RespValue } from './resp.js';
export { CUT_TOXICS, latencyToxics, Toxiproxy, TOXIPROXY_API_TIMEOUT_MS } from './toxiproxy.js';
export type { ProxySpec, Toxic } from './toxiproxy.js';
export { scrapeMetrics } from './prometheus.js';
