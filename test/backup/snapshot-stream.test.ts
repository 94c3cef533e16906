/**
 * The snapshot reader (engines/etcd/snapshot.ts) against an HTTP server that
 * answers as etcd's gateway does, one JSON message per line, cut into reads
 * and HTTP chunks at every awkward place: the bytes handed over are exactly
 * the snapshot's, in order, and every way a stream can go wrong is an error
 * naming the member, never a short snapshot. (A real member's stream is read
 * by test/backup/etcd-backup.test.ts and bench/backup/run.ts.)
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SnapshotError, streamEtcdSnapshot } from '../../engines/etcd/snapshot.js';

/** The gateway's lines for `data`, in messages of `messageBytes`, the last with remaining_bytes omitted (as the gateway omits a zero). */
function gatewayLines(data: Buffer, messageBytes: number): string[] {
  const lines: string[] = [];
  for (let at = 0; at < data.length; at += messageBytes) {
    const blob = data.subarray(at, at + messageBytes);
    const remaining = data.length - at - blob.length;
    const result = { header: { cluster_id: '1', member_id: '2', revision: '3', raft_term: '4' }, ...(remaining > 0 ? { remaining_bytes: String(remaining) } : {}), blob: blob.toString('base64'), version: '3.6.0' };
    lines.push(JSON.stringify({ result }) + '\n');
  }
  return lines;
}

type Handler = (response: ServerResponse) => void | Promise<void>;

describe('reading an etcd snapshot stream', () => {
  let server: Server;
  let endpoint: string;
  let handler: Handler;

  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => void handler(response));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Every chunk handed over, copied (the reader lends each one only until the sink returns). */
  const read = async (sink?: (chunk: Buffer) => void | Promise<void>): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    await streamEtcdSnapshot(endpoint, (chunk) => {
      chunks.push(Buffer.from(chunk));
      return sink?.(chunk);
    });
    return Buffer.concat(chunks);
  };

  it('hands over exactly the snapshot\'s bytes, however the lines are cut into writes (chunked)', async () => {
    const data = randomBytes(70_000);
    const text = gatewayLines(data, 32 * 1024).join('');
    // Writes of 1, 7, 4093 and 65537 bytes: lines, base64 and chunk sizes split everywhere.
    for (const cut of [1, 7, 4093, 65537]) {
      handler = async (response) => {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        for (let at = 0; at < text.length; at += cut) {
          if (!response.write(text.slice(at, at + cut))) await new Promise((r) => response.once('drain', r));
        }
        response.end();
      };
      const got = await read();
      expect(got.length).toBe(data.length);
      expect(createHash('sha256').update(got).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
    }
  });

  it('reads a body sized by Content-Length, with a last line that has no newline', async () => {
    const data = randomBytes(100_000);
    const text = gatewayLines(data, 32 * 1024).join('').slice(0, -1);
    handler = (response) => {
      response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      response.end(text);
    };
    expect((await read()).equals(data)).toBe(true);
  });

  it('waits for a sink that is busy before it reads on, and hands over the same bytes', async () => {
    const data = randomBytes(200_000);
    handler = (response) => {
      response.writeHead(200);
      response.end(gatewayLines(data, 16 * 1024).join(''));
    };
    let busy = false;
    let overlapped = false;
    const got = await read(async () => {
      overlapped ||= busy;
      busy = true;
      await new Promise((r) => setTimeout(r, 2));
      busy = false;
    });
    expect(overlapped).toBe(false);
    expect(got.equals(data)).toBe(true);
  });

  it('announces the snapshot\'s whole length before its first chunk: the first message\'s blob, what remains after it, and etcd\'s 32-byte sha256 sent last', async () => {
    // As etcd sends it: the database in messages counting down remaining_bytes, then its sha256 alone.
    const database = randomBytes(100_000);
    const hash = createHash('sha256').update(database).digest();
    const text = gatewayLines(database, 32 * 1024).join('') + JSON.stringify({ result: { blob: hash.toString('base64'), version: '3.6.0' } }) + '\n';
    handler = (response) => {
      response.writeHead(200);
      response.end(text);
    };
    const events: string[] = [];
    let bytes = 0;
    await streamEtcdSnapshot(endpoint, (chunk) => {
      if (events.at(-1) !== 'chunk') events.push('chunk');
      bytes += chunk.length;
    }, undefined, undefined, (length) => events.push(`length ${length}`));
    expect(events).toEqual([`length ${database.length + 32}`, 'chunk']);
    expect(bytes).toBe(database.length + 32);

    // A first message whose remaining_bytes is no count announces nothing (the upload goes in parts), and is read all the same.
    handler = (response) => {
      response.writeHead(200);
      response.end(text.replace(/"remaining_bytes":"\d+"/, '"remaining_bytes":"many"'));
    };
    const announced: number[] = [];
    await streamEtcdSnapshot(endpoint, () => undefined, undefined, undefined, (length) => announced.push(length));
    expect(announced).toEqual([]);
  });

  it('fails, naming the member, on a stream that ends before the member\'s last message', async () => {
    const lines = gatewayLines(randomBytes(100_000), 32 * 1024);
    handler = (response) => {
      response.writeHead(200);
      response.end(lines.slice(0, -1).join(''));
    };
    await expect(read()).rejects.toThrow(new SnapshotError(`${endpoint}: the snapshot stream ended before the member's last chunk`));
  });

  it('fails on a connection that breaks off part-way, never taking what came for the whole', async () => {
    const lines = gatewayLines(randomBytes(100_000), 32 * 1024);
    handler = (response) => {
      response.writeHead(200);
      response.write(lines[0]);
      setTimeout(() => response.socket?.destroy(), 20);
    };
    await expect(read()).rejects.toThrow(SnapshotError);
  });

  it('passes on the member\'s own error message, and a refusal with its status and text', async () => {
    handler = (response) => {
      response.writeHead(200);
      response.end(gatewayLines(randomBytes(40_000), 32 * 1024)[0] + JSON.stringify({ error: { grpc_code: 14, message: 'etcdserver: server stopped' } }) + '\n');
    };
    await expect(read()).rejects.toThrow(`${endpoint}: the member ended the snapshot: etcdserver: server stopped`);
    handler = (response) => {
      response.writeHead(503, { 'Content-Type': 'text/plain' });
      response.end('not ready');
    };
    await expect(read()).rejects.toThrow(`${endpoint}: snapshot refused: 503 not ready`);
  });

  it('fails on a line that is not JSON, and names a member that does not answer', async () => {
    handler = (response) => {
      response.writeHead(200);
      response.end('<html>proxy error</html>\n');
    };
    await expect(read()).rejects.toThrow(/the snapshot stream holds a line that is not JSON \(<html>proxy error/);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(streamEtcdSnapshot(`http://127.0.0.1:${port}`, () => undefined)).rejects.toThrow(`http://127.0.0.1:${port}: cannot ask for a snapshot: connect ECONNREFUSED`);
  });

  it('stops when its signal is aborted, with the signal\'s reason', async () => {
    handler = (response) => {
      response.writeHead(200);
      response.write(gatewayLines(randomBytes(100_000), 32 * 1024)[0]);
      // …and nothing more: only the signal ends this.
    };
    const controller = new AbortController();
    const reading = streamEtcdSnapshot(endpoint, () => controller.abort(new Error('deadline')), controller.signal);
    await expect(reading).rejects.toThrow('deadline');
  });
});
