/**
 * The member id in an etcd data directory, read from the first records of
 * its WAL (engines/etcd/wal-identity.ts): the quorum-loss rebuild acts only
 * on the recorded member's data. The bytes are framed as etcd's encoder
 * frames them; a real WAL is read in test/integration/quorum-recovery.test.ts.
 */
import { walIdentityOf, WalIdentityError } from '../../engines/etcd/wal-identity.js';

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
const field = (number: number, value: bigint | Buffer): number[] =>
  (typeof value === 'bigint' ? [...varint(BigInt(number << 3)), ...varint(value)] : [...varint(BigInt((number << 3) | 2)), ...varint(BigInt(value.length)), ...value]);
/** One walpb.Record, framed: length (with etcd's padding flag), record, padding to 8 bytes. */
const frame = (type: bigint, data: Buffer): Buffer => {
  const record = Buffer.from([...field(1, type), ...field(2, 12345n), ...field(3, data)]);
  const pad = (8 - (record.length % 8)) % 8;
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(record.length) | (pad ? BigInt(0x80 | pad) << 56n : 0n));
  return Buffer.concat([length, record, Buffer.alloc(pad)]);
};
const metadata = (member: bigint, cluster: bigint) => Buffer.from([...field(1, member), ...field(2, cluster)]);

describe('the member id in a WAL', () => {
  it('is the metadata record\'s, after the CRC record that opens every file, as the decimal etcd\'s JSON uses', () => {
    const wal = Buffer.concat([frame(4n, Buffer.alloc(0)), frame(1n, metadata(0xf1e5d1a3c2b4a697n, 0x1234n)), frame(2n, Buffer.from('entry')), Buffer.alloc(64)]);
    expect(walIdentityOf(wal)).toEqual({ memberId: 0xf1e5d1a3c2b4a697n.toString(), clusterId: '4660' });
  });

  it('is refused, not guessed, when the file holds no metadata record', () => {
    expect(() => walIdentityOf(Buffer.concat([frame(4n, Buffer.alloc(0)), Buffer.alloc(64)]))).toThrow(WalIdentityError);
    expect(() => walIdentityOf(Buffer.alloc(64))).toThrow(/no metadata record/);
  });
});
