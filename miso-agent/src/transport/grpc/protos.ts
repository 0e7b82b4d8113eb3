/**
 * Loads the .proto files of miso-agent/proto at run time (@grpc/proto-loader): field names
 * stay as written in the .proto (keepCase), 64-bit integers become numbers, and decoded
 * messages carry the oneof's name (`body`).
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const here = dirname(fileURLToPath(import.meta.url));

/** miso-agent/proto, from src/ (ts) or dist/src/ (compiled). */
export function protoDir(): string {
  for (const up of ['../../../proto', '../../../../proto']) {
    const p = resolve(here, up);
    if (existsSync(join(p, 'peer.proto'))) return p;
  }
  throw new Error(`miso-agent/proto not found above ${here}`);
}

const LOAD_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

export interface Protos {
  sdk: grpc.ServiceClientConstructor;
  peer: grpc.ServiceClientConstructor;
  health: grpc.ServiceClientConstructor;
}

let cached: Protos | undefined;

export function loadProtos(): Protos {
  if (cached) return cached;
  const dir = protoDir();
  const def = protoLoader.loadSync(
    ['sdk.proto', 'peer.proto', 'health.proto'].map((f) => join(dir, f)),
    {
      ...LOAD_OPTIONS,
      includeDirs: [dir],
    },
  );
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    miso: { sdk: { v1: { Miso: grpc.ServiceClientConstructor } }; peer: { v2: { Peer: grpc.ServiceClientConstructor } } };
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  cached = { sdk: pkg.miso.sdk.v1.Miso, peer: pkg.miso.peer.v2.Peer, health: pkg.grpc.health.v1.Health };
  return cached;
}
