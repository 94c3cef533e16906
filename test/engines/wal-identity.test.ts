/**
 * The member id in an etcd data directory, read from the first records of
 * its WAL (engines/etcd/wal-identity.ts): the quorum-loss rebuild acts only
 * on the recorded member's data. The bytes are framed as etcd's encoder
 * frames them (test/support/wal-fixture.ts); a real WAL is read in
 * test/integration/quorum-recovery.test.ts.
 */
import { walIdentityOf, WalIdentityError } from '../../engines/etcd/wal-identity.js';
import { walFrame, walMetadata } from '../support/wal-fixture.js';

describe('the member id in a WAL', () => {
  it('is the metadata record\'s, after the CRC record that opens every file, as the decimal etcd\'s JSON uses', () => {
    const wal = Buffer.concat([walFrame(4n, Buffer.alloc(0)), walFrame(1n, walMetadata(0xf1e5d1a3c2b4a697n, 0x1234n)), walFrame(2n, Buffer.from('entry')), Buffer.alloc(64)]);
    expect(walIdentityOf(wal)).toEqual({ memberId: 0xf1e5d1a3c2b4a697n.toString(), clusterId: '4660' });
  });

  it('is refused, not guessed, when the file holds no metadata record', () => {
    expect(() => walIdentityOf(Buffer.concat([walFrame(4n, Buffer.alloc(0)), Buffer.alloc(64)]))).toThrow(WalIdentityError);
    expect(() => walIdentityOf(Buffer.alloc(64))).toThrow(/no metadata record/);
  });
});
