/**
 * Traffic between the test process and a real node with its own network
 * namespace (startRealNode's podNetwork), both ways, without adding an
 * interface, route or address to the host's network:
 *
 * - forward(host, port): a port on the host's loopback whose connections a
 *   relay inside the node's namespace makes to `host:port`, a name resolved
 *   through the node's cluster DNS at each connection. What the controller
 *   in the test's process, the invariant monitor and the test's own checks
 *   reach members by: `kv-1.kv-peers.<ns>.svc.<domain>` is always the
 *   current pod of that ordinal, whatever address its latest sandbox got.
 * - expose(port): a port of the host's loopback (a server the test runs,
 *   e.g. versitygw) made reachable from pods at the node's own address,
 *   `<node address>:<port>`, which pods reach through their bridge's gateway.
 *
 * Both cross the namespace boundary over unix sockets in a temp dir (a unix
 * socket is a file: the same on both sides), as the kubelet's API server
 * relay does (real-node.ts). Every target is on this machine.
 */
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { eventually, yes } from '../support/eventually.js';
import { exitDescription, launch, terminate } from './control-plane.js';
import type { RealNode } from './real-node.js';

/**
 * Runs inside the node's namespace. `dial SOCKET DNS`: each connection on SOCKET
 * starts with a line `HOST PORT`; HOST (a name through the DNS server at DNS, or
 * an address) is connected to and the rest piped both ways. `listen HOST PORT
 * SOCKET`: HOST:PORT piped to SOCKET.
 */
const RELAY_SCRIPT = `import { connect, createServer, isIP } from 'node:net';
import { promises as dns } from 'node:dns';
const [mode, ...args] = process.argv.slice(2);
const join = (a, b) => { const close = () => { a.destroy(); b.destroy(); }; for (const s of [a, b]) { s.on('error', close); s.on('close', close); } };
if (mode === 'dial') {
  const [socket, server] = args;
  const resolver = new dns.Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers([server]);
  createServer((down) => {
    let head = Buffer.alloc(0);
    down.on('error', () => down.destroy());
    const onData = async (chunk) => {
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(10);
      if (nl < 0) return;
      down.off('data', onData);
      down.pause();
      const [host, port] = head.subarray(0, nl).toString().split(' ');
      const rest = head.subarray(nl + 1);
      try {
        const address = isIP(host) ? host : (await resolver.resolve4(host))[0];
        const up = connect(Number(port), address);
        join(down, up);
        up.write(rest);
        down.pipe(up).pipe(down);
      } catch { down.destroy(); }
    };
    down.on('data', onData);
  }).listen(socket);
} else {
  const [host, port, socket] = args;
  createServer((down) => { const up = connect(socket); join(down, up); down.pipe(up).pipe(down); }).listen(Number(port), host);
}
`;

export interface NodeRelays {
  /** A port on the host's loopback whose connections reach `host:port` inside the node's network (host resolved by its cluster DNS). */
  forward(host: string, port: number): Promise<number>;
  /** `<node address>:<port>`, where pods reach the host loopback's `port`. */
  expose(port: number): Promise<string>;
  stop(): Promise<void>;
}

/** The relays of a node started with podNetwork and a clusterDomain (its CoreDNS resolves the names). */
export async function startNodeRelays(node: RealNode): Promise<NodeRelays> {
  const netns = `/run/netns/${node.name}`;
  const dir = mkdtempSync(join(tmpdir(), 'dkv-relays-'));
  const script = join(dir, 'relay.mjs');
  writeFileSync(script, RELAY_SCRIPT);
  const children: ChildProcess[] = [];
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  const track = (s: Socket) => { sockets.add(s); s.on('close', () => sockets.delete(s)); return s; };
  const start = async (what: string, args: string[], ready: () => boolean): Promise<void> => {
    const log = join(dir, `${what}.log`);
    const child = launch('nsenter', [`--net=${netns}`, '--', process.execPath, script, ...args], log);
    children.push(child);
    await eventually(`the ${what} relay inside ${node.name}`, async () => yes(ready()), 10_000, 100, () => exitDescription(child, log));
  };
  const listening = (address: string, port: number) => spawnSync('nsenter', [`--net=${netns}`, '--', 'bash', '-c', `exec 3<>/dev/tcp/${address}/${port}`]).status === 0;
  const serve = (server: Server, ...listen: [number, string] | [string]): Promise<void> => new Promise((resolve, reject) => {
    servers.push(server);
    server.once('error', reject).listen(...(listen as [number, string]), () => resolve());
  });

  const dialSocket = join(dir, 'dial.sock');
  await start('dial', ['dial', dialSocket, node.address], () => existsSync(dialSocket));

  return {
    async forward(host, port) {
      if (isIP(host) === 0 && !host.includes('.')) throw new Error(`forward: ${host} is not a fully qualified name (the relay resolves it through the cluster DNS, without a search path)`);
      const server = createServer((down) => {
        track(down);
        const up = track(connect(dialSocket));
        up.write(`${host} ${port}\n`);
        down.pipe(up).pipe(down);
        const close = () => { down.destroy(); up.destroy(); };
        for (const s of [down, up]) { s.on('error', close); s.on('close', close); }
      });
      await serve(server, 0, '127.0.0.1');
      return (server.address() as { port: number }).port;
    },
    async expose(port) {
      const socket = join(dir, `expose-${port}.sock`);
      const server = createServer((down) => {
        track(down);
        const up = track(connect(port, '127.0.0.1'));
        down.pipe(up).pipe(down);
        const close = () => { down.destroy(); up.destroy(); };
        for (const s of [down, up]) { s.on('error', close); s.on('close', close); }
      });
      await serve(server, socket);
      await start(`expose-${port}`, ['listen', node.address, String(port), socket], () => listening(node.address, port));
      return `${node.address}:${port}`;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      for (const child of children) await terminate(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
