/**
 * etcd's logical snapshot, streamed from one member through the maintenance
 * API's HTTP/JSON gateway (`POST /v3/maintenance/snapshot`). The snapshot is
 * consistent by itself (etcd serialises it from one read transaction), so
 * the store needs no quiesce; its last 32 bytes are etcd's own sha256 of the
 * rest, which `etcdutl snapshot restore` checks.
 *
 * The gateway answers with one JSON message per line, each holding a
 * base64 chunk (`{"result":{"remaining_bytes":"…","blob":"…"}}`), or an
 * `{"error":…}` that ends the stream. Each chunk is handed to the caller's
 * sink as it arrives: nothing holds the whole snapshot.
 *
 * Why a socket and not fetch or node:http: those allocate a new buffer for
 * every read of the socket, and at a member's pace (tens of MiB/s) the
 * dead ones pile up between garbage collections; reading a 109 MiB
 * snapshot through node:http and discarding it peaked at 110-140 MiB of RSS,
 * through one reused read buffer at 48 MiB, with a fifth of the CPU
 * (bench/backup/run.ts). So the response is read into one buffer
 * (net's `onread`), unchunked here, and each line's blob decoded into one
 * reused chunk buffer; JSON.parse reads only the rest of the line. The
 * sink borrows the chunk: it is valid until the sink returns (or its
 * promise settles), and the socket is paused meanwhile, which is the
 * back-pressure on the member.
 *
 * The snapshot's whole length is known from the first message (its blob,
 * the `remaining_bytes` after it, and the 32-byte sha256 etcd sends last),
 * and is announced before the first chunk: an upload that knows it can send
 * the snapshot as one sized request instead of parts (backup/object-store.ts).
 */
import { connect, isIP, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import { tlsAgent, type EtcdClientTls } from './etcd-http.js';
import { tokenFor } from './etcd-auth.js';

/** Takes one chunk, borrowed: valid until it returns, or until its promise settles (nothing more is read meanwhile). */
export type SnapshotSink = (chunk: Buffer) => void | Promise<void>;

/** etcd ends every snapshot with the sha256 of what it sent before, 32 bytes (`etcdutl snapshot restore` checks it). */
export const SNAPSHOT_HASH_BYTES = 32;

export class SnapshotError extends Error {}

interface SnapshotMessage {
  result?: { blob?: string; remaining_bytes?: string; remainingBytes?: string };
  error?: { message?: string; grpc_code?: number; http_code?: number };
}

const BLOB_FIELD = Buffer.from('"blob":"');
const CR = 0x0d;
const LF = 0x0a;
const QUOTE = 0x22;
const READ_BUFFER_BYTES = 64 * 1024;
/** etcd sends 32 KiB a message (about 44 KB as base64): a line far longer is no snapshot message. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
const MAX_HEAD_BYTES = 64 * 1024;
/** How much of a refusal's body is kept for its message. */
const MAX_REFUSAL_BYTES = 4096;

/** A growable byte buffer, reused line after line. */
class Bytes {
  buffer: Buffer;
  length = 0;

  constructor(initial: number, private readonly max: number, private readonly tooLong: () => Error) {
    this.buffer = Buffer.allocUnsafeSlow(initial);
  }

  append(from: Buffer, start: number, end: number): void {
    const needed = this.length + end - start;
    if (needed > this.buffer.length) {
      if (needed > this.max) throw this.tooLong();
      const longer = Buffer.allocUnsafeSlow(Math.min(2 * needed, this.max));
      this.buffer.copy(longer, 0, 0, this.length);
      this.buffer = longer;
    }
    this.length += from.copy(this.buffer, this.length, start, end);
  }

  get view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * Streams the member's snapshot into `sink`. Resolves once the member's last
 * message (`remaining_bytes` 0) was handed over; a stream that ends before
 * it is an error, never a short snapshot taken for a whole one. Aborting
 * `signal` (a deadline, a killed runner) cuts the stream off and rejects
 * with its reason. An https:// member (client TLS) is read over TLS with the
 * client certificate `tls`, trusting only the cluster's CA. `onLength` is
 * told the snapshot's length in bytes, once, before the first chunk, as the
 * member's first message gives it (the upload holds the stream to it:
 * backup/object-store.ts).
 */
export async function streamEtcdSnapshot(endpoint: string, sink: SnapshotSink, signal?: AbortSignal, tls?: EtcdClientTls, onLength?: (bytes: number) => void): Promise<void> {
  const url = new URL('/v3/maintenance/snapshot', endpoint);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.reject(new SnapshotError(`${endpoint}: the snapshot is read over http:// or https:// only (got ${url.protocol})`));
  if (url.protocol === 'https:' && !tls) return Promise.reject(new SnapshotError(`${endpoint}: an https:// member needs the client certificate (DKV_TLS_DIR)`));
  signal?.throwIfAborted();
  // With etcd authentication on, the snapshot is the root user's (client identities: etcd-auth.ts).
  const token = tls?.login ? await tokenFor(url.origin, tls, signal ?? AbortSignal.timeout(30_000), tlsAgent(tls)) : undefined;
  return new Promise<void>((resolve, reject) => {
    const reader = new SnapshotReader(endpoint, sink, onLength);
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      if (error === undefined) resolve();
      else reject(error);
    };
    const onAbort = () => settle(signal!.reason);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const secure = url.protocol === 'https:';
    const onread = {
        buffer: Buffer.allocUnsafeSlow(READ_BUFFER_BYTES),
        callback: (bytes: number, buffer: Uint8Array) => {
          if (settled) return false;
          let pending: Promise<void> | undefined;
          try {
            pending = reader.feed(buffer as Buffer, 0, bytes);
          } catch (e) {
            settle(e);
            return false;
          }
          if (!pending) {
            if (reader.done) settle();
            return !reader.done;
          }
          // The read buffer is reused once reading resumes: the sink has it until then.
          pending.then(() => {
            if (reader.done) settle();
            else if (!settled) socket.resume();
          }, settle);
          return false;
        },
    };
    const ask = () => {
      socket.write(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nAccept: application/json\r\n${token ? `Authorization: ${token}\r\n` : ''}Content-Length: 2\r\nConnection: close\r\n\r\n{}`);
    };
    // Over TLS the request goes once the handshake is done (the member has checked the client certificate).
    const socket: Socket = secure
      // tls.connect takes net's onread (Node's documentation; its type declarations leave it out).
      ? connectTls({ host, port: Number(url.port || 443), ca: tls!.ca, cert: tls!.cert, key: tls!.key, servername: isIP(host) ? undefined : host, onread } as ConnectionOptions, ask)
      : connect({ host, port: Number(url.port || 80), onread });
    if (!secure) socket.on('connect', ask);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('error', (e) => settle(reader.started
      ? new SnapshotError(`${endpoint}: the snapshot stream broke off: ${e.message}`)
      : new SnapshotError(`${endpoint}: cannot ask for a snapshot: ${e.message}`)));
    socket.on('end', () => {
      try {
        const pending = reader.end();
        if (pending) pending.then(() => settle(), settle);
        else settle();
      } catch (e) {
        settle(e);
      }
    });
  });
}

/** The HTTP response (status, headers, a chunked or sized body) and the lines in its body, fed read by read. */
class SnapshotReader {
  started = false;
  done = false;
  private state: 'head' | 'size' | 'data' | 'data-end' | 'trailer' | 'identity' = 'head';
  private readonly head = new Bytes(1024, MAX_HEAD_BYTES + READ_BUFFER_BYTES, () => new SnapshotError(`${this.endpoint}: the snapshot answer's head is longer than ${MAX_HEAD_BYTES} bytes`));
  private readonly line = new Bytes(64 * 1024, MAX_LINE_BYTES, () => new SnapshotError(`${this.endpoint}: the snapshot stream holds a line longer than ${MAX_LINE_BYTES} bytes`));
  private readonly chunk = Buffer.allocUnsafeSlow(48 * 1024);
  /** Bytes left in the current chunk of a chunked body, or in a sized body (-1: until the connection closes). */
  private left = 0;
  private status = 0;
  private refusal = '';
  private finished = false;

  private announced = false;

  constructor(private readonly endpoint: string, private readonly sink: SnapshotSink, private readonly onLength?: (bytes: number) => void) {}

  /** Takes bytes [start, end) of a read; a promise when the sink is still busy with them (the rest is read after it). */
  feed(buffer: Buffer, start: number, end: number): Promise<void> | undefined {
    let at = start;
    while (at < end && !this.done) {
      if (this.state === 'head') {
        at = this.readHead(buffer, at, end);
      } else if (this.state === 'size' || this.state === 'trailer') {
        const newline = buffer.indexOf(LF, at);
        const stop = newline < 0 || newline >= end ? end : newline;
        this.head.append(buffer, at, stop);
        if (stop === end) return undefined;
        at = newline + 1;
        const pending = this.endOfControlLine();
        if (pending) return pending.then(() => this.feed(buffer, at, end));
      } else if (this.state === 'data-end') {
        this.head.append(buffer, at, at + 1);
        at += 1;
        if (buffer[at - 1] === LF) {
          this.head.length = 0;
          this.state = 'size';
        }
      } else {
        const stop = this.left < 0 ? end : Math.min(end, at + this.left);
        const taken = stop - at;
        // Lines first, then the end of the data they came in: a chunked body's last line is handed over before it counts as whole.
        const pending = this.body(buffer, at, stop);
        if (pending) return pending.then(() => this.consumed(taken)).then(() => this.feed(buffer, stop, end));
        const after = this.consumed(taken);
        if (after) return after.then(() => this.feed(buffer, stop, end));
        at = stop;
      }
    }
    return undefined;
  }

  /** The connection closed: whole only when the body was, and the member's last message came. */
  end(): Promise<void> | undefined {
    const pending = this.state === 'identity' && this.left < 0 && !this.done ? this.completeBody() : undefined;
    const check = () => {
      if (!this.done) throw new SnapshotError(`${this.endpoint}: the snapshot stream ended before the member's last chunk`);
    };
    if (pending) return pending.then(check);
    check();
    return undefined;
  }

  private readHead(buffer: Buffer, at: number, end: number): number {
    this.started = true;
    const before = this.head.length;
    this.head.append(buffer, at, end);
    const close = this.head.view.indexOf('\r\n\r\n');
    if (close < 0) {
      if (this.head.length > MAX_HEAD_BYTES) throw new SnapshotError(`${this.endpoint}: the snapshot answer's head is longer than ${MAX_HEAD_BYTES} bytes`);
      return end;
    }
    const text = this.head.view.toString('latin1', 0, close);
    const consumed = close + 4 - before;
    this.head.length = 0;
    const [statusLine, ...headers] = text.split('\r\n');
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!status) throw new SnapshotError(`${this.endpoint}: the snapshot answer is not HTTP (${statusLine.slice(0, 80)})`);
    this.status = Number(status[1]);
    const header = (name: string) => headers.find((h) => h.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim().toLowerCase();
    if (header('transfer-encoding')?.includes('chunked')) {
      this.state = 'size';
    } else {
      const length = header('content-length');
      this.left = length === undefined ? -1 : Number(length);
      this.state = 'identity';
      if (this.left === 0) void this.completeBody(); // no body: no line, so nothing pending
    }
    return at + consumed;
  }

  /** A chunk-size line, or a trailer line after the last chunk. */
  private endOfControlLine(): Promise<void> | undefined {
    const text = this.head.view.toString('latin1').trim();
    this.head.length = 0;
    if (this.state === 'trailer') return text === '' ? this.completeBody() : undefined;
    const size = Number.parseInt(text.split(';')[0], 16);
    if (!Number.isFinite(size) || size < 0) throw new SnapshotError(`${this.endpoint}: the snapshot answer's chunked body is malformed (${JSON.stringify(text.slice(0, 40))})`);
    if (size === 0) {
      this.state = 'trailer';
      return undefined;
    }
    this.left = size;
    this.state = 'data';
    return undefined;
  }

  /** `taken` bytes of body data were read: the end of a chunk, or of a sized body. */
  private consumed(taken: number): Promise<void> | undefined {
    if (this.left < 0) return undefined;
    this.left -= taken;
    return this.left === 0 ? this.afterData() : undefined;
  }

  private afterData(): Promise<void> | undefined {
    if (this.state === 'data') {
      this.state = 'data-end';
      return undefined;
    }
    return this.completeBody();
  }

  /** Body bytes: a refusal's text, or lines of snapshot messages. */
  private body(buffer: Buffer, at: number, end: number): Promise<void> | undefined {
    if (this.status < 200 || this.status >= 300) {
      if (this.refusal.length < MAX_REFUSAL_BYTES) this.refusal += buffer.toString('utf8', at, Math.min(end, at + MAX_REFUSAL_BYTES));
      return undefined;
    }
    while (at < end) {
      const newline = buffer.indexOf(LF, at);
      const stop = newline < 0 || newline >= end ? end : newline;
      this.line.append(buffer, at, stop);
      if (stop === end) return undefined;
      at = newline + 1;
      const pending = this.endOfLine();
      if (pending) return pending.then(() => this.body(buffer, at, end));
    }
    return undefined;
  }

  /** The body is whole: a refusal is reported; a snapshot must have ended with the member's last message. */
  private completeBody(): Promise<void> | undefined {
    if (this.status < 200 || this.status >= 300) throw new SnapshotError(`${this.endpoint}: snapshot refused: ${this.status} ${this.refusal.slice(0, MAX_REFUSAL_BYTES).trim()}`);
    const finish = () => {
      if (!this.finished) throw new SnapshotError(`${this.endpoint}: the snapshot stream ended before the member's last chunk`);
      this.done = true;
    };
    // A last line without its newline.
    const pending = this.line.length > 0 ? this.endOfLine() : undefined;
    if (pending) return pending.then(finish);
    finish();
    return undefined;
  }

  /**
   * One message: its blob decoded into the chunk buffer and handed to the
   * sink, and whether it is the last (nothing remains; the gateway omits a
   * zero, so no field means none). The blob is taken out of the line before
   * the rest is parsed as JSON.
   */
  private endOfLine(): Promise<void> | undefined {
    let line = this.line.view;
    this.line.length = 0;
    if (line.length > 0 && line[line.length - 1] === CR) line = line.subarray(0, -1);
    if (line.every((b) => b === 0x20 || b === 0x09)) return undefined;
    const field = line.indexOf(BLOB_FIELD);
    const blobStart = field < 0 ? -1 : field + BLOB_FIELD.length;
    const blobEnd = blobStart < 0 ? -1 : line.indexOf(QUOTE, blobStart);
    const text = blobEnd < 0 ? line.toString('latin1') : line.toString('latin1', 0, blobStart) + line.toString('latin1', blobEnd);
    let message: SnapshotMessage;
    try {
      message = JSON.parse(text) as SnapshotMessage;
    } catch {
      throw new SnapshotError(`${this.endpoint}: the snapshot stream holds a line that is not JSON (${text.slice(0, 80)}…)`);
    }
    if (message.error) throw new SnapshotError(`${this.endpoint}: the member ended the snapshot: ${message.error.message ?? JSON.stringify(message.error)}`);
    const remaining = message.result?.remaining_bytes ?? message.result?.remainingBytes;
    this.finished = remaining === undefined || Number(remaining) === 0;
    if (blobEnd <= blobStart) return undefined;
    const base64 = line.toString('latin1', blobStart, blobEnd);
    const target = base64.length * 0.75 + 3 <= this.chunk.length ? this.chunk : Buffer.allocUnsafe(Math.ceil(base64.length * 0.75) + 3);
    const chunk = target.subarray(0, target.write(base64, 0, 'base64'));
    if (!this.announced) {
      this.announced = true;
      // A remaining_bytes that is not a count announces nothing: the upload then goes in parts, as for any unknown length.
      const length = chunk.length + Number(remaining ?? 0) + SNAPSHOT_HASH_BYTES;
      if (Number.isSafeInteger(length)) this.onLength?.(length);
    }
    const result = this.sink(chunk);
    return result instanceof Promise ? result : undefined;
  }
}
