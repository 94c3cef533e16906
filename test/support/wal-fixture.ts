/**
 * etcd WAL bytes for tests that read a member id from a data directory
 * (engines/etcd/wal-identity.ts): walpb.Records framed as etcd's encoder
 * frames them (a little-endian length whose top byte flags the padding, the
 * protobuf record, zero padding to 8 bytes). A real WAL is read in
 * test/integration/quorum-recovery.test.ts.
 */

/** A protobuf varint. */
const varint = (n: bigint): number[] => {
  const out: number[] = [];
  do {
    let byte = Number(n & 0x7fn);
    n >>= 7n;
    if (n > 0n) byte |= 0x80;
    out.push(byte);
  } while (n > 0n);
  return out;
};

/** A protobuf field: a varint for a bigint, length-delimited bytes for a Buffer. */
const field = (number: number, value: bigint | Buffer): number[] =>
  (typeof value === 'bigint' ? [...varint(BigInt(number << 3)), ...varint(value)] : [...varint(BigInt((number << 3) | 2)), ...varint(BigInt(value.length)), ...value]);

/** One walpb.Record of `type` (1 metadata, 2 entry, 4 CRC) holding `data`, framed. */
export function walFrame(type: bigint, data: Buffer): Buffer {
  const record = Buffer.from([...field(1, type), ...field(2, 12345n), ...field(3, data)]);
  const pad = (8 - (record.length % 8)) % 8;
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(record.length) | (pad ? BigInt(0x80 | pad) << 56n : 0n));
  return Buffer.concat([length, record, Buffer.alloc(pad)]);
}

/** An etcdserverpb.Metadata: the member id and the cluster id. */
export function walMetadata(member: bigint, cluster: bigint): Buffer {
  return Buffer.from([...field(1, member), ...field(2, cluster)]);
}

/** A WAL file as etcd starts one: the CRC record, then the metadata naming `member`, then zeroes. */
export function walWith(member: bigint, cluster = 7n): Buffer {
  return Buffer.concat([walFrame(4n, Buffer.alloc(0)), walFrame(1n, walMetadata(member, cluster)), Buffer.alloc(64)]);
}
