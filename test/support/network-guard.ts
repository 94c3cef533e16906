/**
 * A preload that proves a command stays off the network: started with
 * `NODE_OPTIONS=--import=<lib>/test/support/network-guard.js` (children
 * inherit it, so a command's helper processes are guarded too), it records
 * every attempt to reach anything but loopback, a connection or a name
 * lookup, as one line in $DKV_NETWORK_GUARD_LOG, and fails the attempt before
 * a packet leaves the machine. An empty log after the command is the proof.
 *
 * Used by test/generator/offline-synth.test.ts; loaded outside jest, so it
 * runs compiled, from lib/, like the CLI.
 */
import dns from 'node:dns';
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const log = process.env.DKV_NETWORK_GUARD_LOG;

const LOOPBACK_NAMES = new Set(['localhost', 'ip6-localhost', '::1', '0:0:0:0:0:0:0:1']);

function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host) || /^::ffff:127\./i.test(host);
}

function record(what: string): Error {
  const line = `${process.pid} ${process.argv.slice(1).join(' ')}: ${what}\n`;
  if (log) appendFileSync(log, line);
  else process.stderr.write(`network guard: ${line}`);
  return Object.assign(new Error(`network guard: ${what} refused`), { code: 'ENETUNREACH' });
}

/** The host a `socket.connect(...)` call names: `(options)`, `([options, callback])` as net.connect hands it on, or `(port, host)`. */
function connectTarget(args: unknown[]): { host?: string | null; path?: string | null } {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (first !== null && typeof first === 'object') return first as { host?: string | null; path?: string | null };
  if (typeof first === 'string' && !/^\d+$/.test(first)) return { path: first }; // a Unix socket
  return { host: typeof args[1] === 'string' ? args[1] : undefined };
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
  const { host, path } = connectTarget(args);
  if (!path && !isLoopback(host ?? 'localhost')) {
    const error = record(`connect to ${host}`);
    process.nextTick(() => this.destroy(error));
    return this;
  }
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;

const lookup = dns.lookup;
dns.lookup = function guardedLookup(hostname: string, ...rest: unknown[]) {
  if (!isLoopback(hostname)) {
    const error = record(`lookup of ${hostname}`);
    const callback = rest[rest.length - 1];
    if (typeof callback === 'function') process.nextTick(() => callback(error));
    return {};
  }
  return (lookup as (...a: unknown[]) => unknown)(hostname, ...rest);
} as typeof dns.lookup;

const lookupPromise = dns.promises.lookup;
dns.promises.lookup = async function guardedLookupPromise(hostname: string, ...rest: unknown[]) {
  if (!isLoopback(hostname)) throw record(`lookup of ${hostname}`);
  return (lookupPromise as (...a: unknown[]) => Promise<unknown>)(hostname, ...rest);
} as typeof dns.promises.lookup;
