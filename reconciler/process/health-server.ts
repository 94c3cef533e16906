import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

export interface HealthServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly registry: Registry;
  /** Ready once the caches have synced (a standby replica is ready too: it is waiting for the Lease). */
  readonly ready: () => boolean;
  /** Alive while the process still hears from the API server; /healthz fails with the message otherwise. @default always alive */
  readonly live?: () => { readonly live: boolean; readonly message: string };
}

/** `/healthz` (the process serves and its watches are alive), `/readyz` (caches synced) and `/metrics` (Prometheus). */
export async function startHealthServer(options: HealthServerOptions): Promise<{ port: number; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      const liveness = options.live?.() ?? { live: true, message: 'ok' };
      res.writeHead(liveness.live ? 200 : 503, { 'Content-Type': 'text/plain' }).end(liveness.message);
    } else if (path === '/readyz') {
      const ready = options.ready();
      res.writeHead(ready ? 200 : 503, { 'Content-Type': 'text/plain' }).end(ready ? 'ok' : 'caches not synced');
    } else if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': options.registry.contentType }).end(text),
        (e) => res.writeHead(500).end(String(e)),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : options.port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
