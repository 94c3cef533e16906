/**
 * Which member an etcd data directory belongs to, read from its write-ahead
 * log without starting etcd: every WAL file begins with a CRC record and a
 * metadata record holding the member's and the cluster's ids
 * (etcdserverpb.Metadata). The quorum-loss rebuild (quorum-rebuild.ts) acts
 * only on the data of the member the controller recorded, and etcd's images
 * carry no tool that prints it.
 *
 * The framing is etcd's (server/storage/wal/encoder.go): a little-endian
 * uint64 length (its top byte, when it has bit 0x80, gives the padding to 8
 * bytes), then a walpb.Record (type = 1, crc = 2, data = 3) as protobuf.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';

/** walpb record types (server/storage/wal/wal.go). */
const METADATA_RECORD = 1n;
/** A metadata record is the second of a file; a few KiB hold it with room to spare. */
const HEAD_BYTES = 64 * 1024;

export interface WalIdentity {
  /** Decimal, as etcd's JSON gateway writes member ids. */
  readonly memberId: string;
  readonly clusterId: string;
}

export class WalIdentityError extends Error {}

/** The identity in `<dataDir>/member/wal`'s first file; throws when there is none. */
export function readWalIdentity(dataDir: string): WalIdentity {
  const walDir = join(dataDir, 'member', 'wal');
  let files: string[];
  try {
    files = readdirSync(walDir).filter((f) => f.endsWith('.wal')).sort();
  } catch {
    throw new WalIdentityError(`${walDir} does not exist: ${dataDir} holds no etcd member`);
  }
  if (files.length === 0) throw new WalIdentityError(`${walDir} holds no WAL file: ${dataDir} holds no etcd member`);
  const head = Buffer.alloc(HEAD_BYTES);
  const fd = openSync(join(walDir, files[0]), 'r');
  let read: number;
  try {
    read = readSync(fd, head, 0, HEAD_BYTES, 0);
  } finally {
    closeSync(fd);
  }
  return walIdentityOf(head.subarray(0, read), join(walDir, files[0]));
}

/** The identity in the records at the start of one WAL file's bytes. */
export function walIdentityOf(bytes: Buffer, file = 'the WAL'): WalIdentity {
  let at = 0;
  while (at + 8 <= bytes.length) {
    const field = bytes.readBigUInt64LE(at);
    at += 8;
    if (field === 0n) break; // a preallocated file is zeros after its last record
    const top = Number(field >> 56n);
    const length = Number(field & 0x00ff_ffff_ffff_ffffn);
    const padding = top & 0x80 ? top & 0x7 : 0;
    if (at + length > bytes.length) break;
    const record = fields(bytes.subarray(at, at + length));
    at += length + padding;
    if (record.get(1) === METADATA_RECORD) {
      const data = record.get(3);
      const metadata = data instanceof Buffer ? fields(data) : new Map<number, bigint | Buffer>();
      const memberId = metadata.get(1);
      const clusterId = metadata.get(2);
      if (typeof memberId !== 'bigint' || typeof clusterId !== 'bigint') throw new WalIdentityError(`${file}: its metadata record names no member`);
      return { memberId: memberId.toString(), clusterId: clusterId.toString() };
    }
  }
  throw new WalIdentityError(`${file}: no metadata record at its start`);
}

/** A protobuf message's varint and length-delimited fields by number (the last of each; the records here repeat none). */
function fields(message: Buffer): Map<number, bigint | Buffer> {
  const out = new Map<number, bigint | Buffer>();
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; at < message.length; shift += 7n) {
      const byte = message[at++];
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new WalIdentityError('a truncated varint');
  };
  while (at < message.length) {
    const key = varint();
    const number = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) out.set(number, varint());
    else if (wire === 2) {
      const length = Number(varint());
      out.set(number, message.subarray(at, at + length));
      at += length;
    } else if (wire === 5) at += 4;
    else if (wire === 1) at += 8;
    else throw new WalIdentityError(`an unexpected protobuf wire type ${wire}`);
  }
  return out;
}
