/** The standard gRPC health service (grpc.health.v1), answering for "" and the named services. */
import * as grpc from '@grpc/grpc-js';
import { loadProtos } from './protos.js';

export type ServingStatus = 'SERVING' | 'NOT_SERVING';

export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Set<{ service: string; call: grpc.ServerWritableStream<{ service: string }, unknown> }>();

  set(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    for (const w of this.watchers) if (w.service === service) w.call.write({ status });
  }

  addTo(server: grpc.Server): void {
    server.addService(loadProtos().health.service, {
      Check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        const s = this.statuses.get(call.request.service);
        if (!s) return cb({ code: grpc.status.NOT_FOUND, details: `unknown service '${call.request.service}'` });
        cb(null, { status: s });
      },
      Watch: (call: grpc.ServerWritableStream<{ service: string }, unknown>) => {
        const w = { service: call.request.service, call };
        this.watchers.add(w);
        call.write({ status: this.statuses.get(w.service) ?? 'SERVICE_UNKNOWN' });
        call.on('cancelled', () => this.watchers.delete(w));
      },
    });
  }

  /** Ends every Watch stream (on shutdown). */
  close(): void {
    for (const w of this.watchers) w.call.end();
    this.watchers.clear();
  }
}
