/**
 * A TCP proxy on loopback in front of the API server (TLS passes through
 * untouched), that can fail the ways networks fail without saying so:
 * `freeze()` makes every open connection half-open for good (bytes stop in
 * both directions, and neither side is closed or told), `blackhole` makes new
 * connections do the same from their first byte, and `partitioned` drops
 * every byte on every connection while it is true (a network partition that
 * heals). Nothing is ever closed by
 * it except on close().
 */
import { connect, createServer, type Socket } from 'node:net';

export interface LoopbackProxy {
  /** `https://127.0.0.1:<port>`: use with viaServer (test/support/connections.ts). */
  readonly url: string;
  /** Every connection open now stops forwarding, for good. */
  freeze(): void;
  /** While true, new connections are accepted and never forwarded. */
  blackhole: boolean;
  /** While true, no connection forwards anything; when it turns false, they all resume. */
  partitioned: boolean;
  close(): Promise<void>;
}

export async function startLoopbackProxy(target: string): Promise<LoopbackProxy> {
  const { hostname, port } = new URL(target);
  const connections = new Set<{ frozen: boolean; sockets: Socket[] }>();
  let blackhole = false;
  let partitioned = false;
  const server = createServer((downstream) => {
    const connection = { frozen: blackhole, sockets: [downstream] as Socket[] };
    connections.add(connection);
    const upstream = connect(Number(port), hostname);
    connection.sockets.push(upstream);
    for (const [from, to] of [[downstream, upstream], [upstream, downstream]] as const) {
      from.on('data', (chunk) => {
        if (!connection.frozen && !partitioned) to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        to.destroy();
        connections.delete(connection);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    url: `https://127.0.0.1:${address.port}`,
    freeze: () => {
      for (const c of connections) c.frozen = true;
    },
    get blackhole() {
      return blackhole;
    },
    set blackhole(on: boolean) {
      blackhole = on;
    },
    get partitioned() {
      return partitioned;
    },
    set partitioned(on: boolean) {
      partitioned = on;
    },
    close: () => {
      for (const c of connections) for (const s of c.sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
