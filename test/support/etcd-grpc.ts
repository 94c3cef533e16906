/**
 * etcd's gRPC KV API as an application reaches it (etcdctl, clientv3,
 * jetcd): HTTP/2 over TLS with its client certificate, whose common name
 * etcd takes as the user once authentication is on. That is the path client
 * identities are for; the JSON gateway loses the certificate's name
 * (engines/etcd/etcd-auth.ts). Only Put and Range, hand-encoded: two small
 * protobuf messages do not need a gRPC library.
 */
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import type { EtcdClientTls } from '../../engines/etcd/etcd-http.js';

/** A refusal as gRPC reports it (grpc-status and grpc-message). */
export class GrpcError extends Error {
  constructor(readonly code: number, message: string) {
    super(`grpc ${code}: ${message}`);
  }
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n > 0x7f) {
    bytes.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** A length-delimited field (wire type 2). */
const field = (number: number, value: Buffer): Buffer => Buffer.concat([varint((number << 3) | 2), varint(value.length), value]);

/** The length-delimited fields of a message, by number (varint fields skipped). */
function fields(message: Buffer): Array<[number, Buffer]> {
  const out: Array<[number, Buffer]> = [];
  let at = 0;
  const read = (): number => {
    let n = 0;
    let shift = 1;
    for (;;) {
      const b = message[at++];
      n += (b & 0x7f) * shift;
      if (b < 0x80) return n;
      shift *= 128;
    }
  };
  while (at < message.length) {
    const tag = read();
    const wire = tag & 7;
    if (wire === 0) read();
    else if (wire === 2) {
      const length = read();
      out.push([tag >> 3, message.subarray(at, at + length)]);
      at += length;
    } else throw new Error(`unexpected protobuf wire type ${wire}`);
  }
  return out;
}

export class EtcdGrpcClient {
  private readonly session: ClientHttp2Session;

  /** @param url a member's https:// client URL; `tls` the client's certificate, key and the cluster's CA */
  constructor(url: string, tls: EtcdClientTls) {
    this.session = connect(url, { ca: tls.ca, cert: tls.cert, key: tls.key });
    this.session.on('error', () => { /* reported by the call that was in flight */ });
  }

  async put(key: string, value: string): Promise<void> {
    await this.call('/etcdserverpb.KV/Put', Buffer.concat([field(1, Buffer.from(key)), field(2, Buffer.from(value))]));
  }

  /** The keys and values from `key`, or every key under the prefix `key` with `prefix`. */
  async range(key: string, prefix = false): Promise<Array<{ key: string; value: string }>> {
    const end = Buffer.from(key);
    end[end.length - 1]++;
    const answer = await this.call('/etcdserverpb.KV/Range', Buffer.concat([field(1, Buffer.from(key)), ...(prefix ? [field(2, end)] : [])]));
    // RangeResponse.kvs is field 2; KeyValue.key field 1, value field 5.
    return fields(answer).filter(([n]) => n === 2).map(([, kv]) => {
      const f = fields(kv);
      return { key: f.find(([n]) => n === 1)?.[1].toString() ?? '', value: f.find(([n]) => n === 5)?.[1].toString() ?? '' };
    });
  }

  close(): void {
    this.session.close();
  }

  private call(path: string, message: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const frame = Buffer.alloc(5);
      frame.writeUInt32BE(message.length, 1);
      const stream = this.session.request({
        [constants.HTTP2_HEADER_METHOD]: 'POST', [constants.HTTP2_HEADER_PATH]: path, 'content-type': 'application/grpc', te: 'trailers',
      }, { endStream: false, signal: AbortSignal.timeout(5000) });
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let detail = '';
      const note = (headers: Record<string, unknown>) => {
        if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status']);
        if (headers['grpc-message'] !== undefined) detail = decodeURIComponent(String(headers['grpc-message']));
      };
      stream.on('response', note);
      stream.on('trailers', note);
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', reject);
      stream.on('end', () => {
        if (status !== '0') {
          reject(new GrpcError(Number(status), detail));
          return;
        }
        const body = Buffer.concat(chunks);
        resolve(body.length >= 5 ? body.subarray(5, 5 + body.readUInt32BE(1)) : Buffer.alloc(0));
      });
      stream.end(Buffer.concat([frame, message]));
    });
  }
}
