/**
 * Which client certificates enter the members' CRL (engines/etcd/client-revocation.ts,
 * docs/invariants.md row 17): fixed cases, then the invariant over random ledgers
 * (fast-check; the seed is printed and DKV_PROPERTY_SEED replays it).
 */
import fc from 'fast-check';
import {
  decideClientRevocations, formatLedger, parseLedger, type HeldCertificate, type IssuedClientCertificate, type RevocationInput,
} from '../../engines/etcd/client-revocation.js';
import { propertySeed, RUNS } from '../support/day2-arbitraries.js';

const NOW = new Date('2026-11-29T12:00:00Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const GRACE = DAY;
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);
const cert = (identity: string, serial: string, issuedAgoMs: number, renewal = false, lifeMs = 90 * DAY): IssuedClientCertificate =>
  ({ identity, serial, issuedAt: at(-issuedAgoMs), notAfter: at(lifeMs - issuedAgoMs), renewal });
const holding = (entry: IssuedClientCertificate): HeldCertificate => ({ serial: entry.serial, notBefore: entry.issuedAt, notAfter: entry.notAfter });
const decide = (ledger: IssuedClientCertificate[], wanted: string[], held: IssuedClientCertificate[]) =>
  decideClientRevocations({ ledger, wanted: new Set(wanted), held: new Map(held.map((h) => [h.identity, holding(h)])), now: NOW, graceMs: GRACE });
const serials = (d: { revoke: readonly { serial: string }[] }) => d.revoke.map((r) => r.serial).sort();

describe('decideClientRevocations', () => {
  it('lists a removed client\'s certificates at once, its Secret still there or not', () => {
    const orders = cert('orders', 'A1', 10 * DAY);
    const old = cert('orders', 'A0', 70 * DAY);
    const d = decide([old, orders], ['root'], [orders]);
    expect(serials(d)).toEqual(['A0', 'A1']);
    expect(d.revoke.every((r) => r.why === 'removed')).toBe(true);
    expect(d.ledger).toEqual([]);
    expect(d.changed).toBe(true);
  });

  it('keeps what a Secret holds and lists a renewed predecessor only once the grace has passed', () => {
    const before = cert('orders', 'B0', 61 * DAY);
    const renewed = cert('orders', 'B1', 2 * HOUR, true);
    const inGrace = decide([before, renewed], ['orders'], [renewed]);
    expect(inGrace.revoke).toEqual([]);
    expect(inGrace.changed).toBe(false);
    expect(inGrace.nextAt).toEqual(new Date(renewed.issuedAt.getTime() + GRACE));
    const after = decideClientRevocations({ ...inputOf([before, renewed], ['orders'], [renewed]), now: at(DAY) });
    expect(serials(after)).toEqual(['B0']);
    expect(after.revoke[0].why).toBe('renewed');
    expect(after.ledger.map((e) => e.serial)).toEqual(['B1']);
  });

  it('lists at once a certificate whose Secret was deleted and issued anew (a human\'s revocation)', () => {
    const leaked = cert('orders', 'C0', 5 * DAY);
    const fresh = cert('orders', 'C1', 1000);
    const d = decide([leaked, fresh], ['orders'], [fresh]);
    expect(serials(d)).toEqual(['C0']);
    expect(d.revoke[0].why).toBe('replaced');
  });

  it('does not start a grace from a renewal whose Secret was never written: the one in use stays valid', () => {
    const inUse = cert('orders', 'D0', 61 * DAY);
    const unwritten = cert('orders', 'D1', 3 * DAY, true); // entered in the ledger, then the Secret's write failed
    expect(decide([inUse, unwritten], ['orders'], [inUse]).revoke).toEqual([]);
    // Written at last, days later: the grace runs from this renewal, not from the one never handed out.
    const written = cert('orders', 'D2', HOUR, true);
    const d = decide([inUse, unwritten, written], ['orders'], [written]);
    expect(d.revoke).toEqual([]);
    expect(d.nextAt).toEqual(new Date(written.issuedAt.getTime() + GRACE));
  });

  it('adopts a certificate issued before the ledger existed, then revokes it like any other', () => {
    const older = cert('reports', 'E0', 100 * DAY, false, 365 * DAY);
    const adopted = decide([], ['reports'], [older]);
    expect(adopted.revoke).toEqual([]);
    expect(adopted.changed).toBe(true);
    expect(adopted.ledger).toEqual([{ ...older, renewal: false }]);
    expect(serials(decide([], [], [older]))).toEqual(['E0']);
  });

  it('forgets an expired certificate without listing it (etcd refuses it anyway)', () => {
    const expired = cert('orders', 'F0', 91 * DAY);
    const d = decide([expired], [], []);
    expect(d.revoke).toEqual([]);
    expect(d.ledger).toEqual([]);
    expect(d.changed).toBe(true);
  });

  it('reads back the ledger it writes', () => {
    const entries = [cert('root', '0A1B', DAY), cert('orders', 'FF00', HOUR, true)];
    expect(parseLedger(formatLedger(entries))).toEqual(entries);
    expect(parseLedger('garbage\norders zz 2026 2026 issue\n')).toEqual([]);
  });
});

function inputOf(ledger: IssuedClientCertificate[], wanted: string[], held: IssuedClientCertificate[]): RevocationInput {
  return { ledger, wanted: new Set(wanted), held: new Map(held.map((h) => [h.identity, holding(h)])), now: NOW, graceMs: GRACE };
}

describe('invariant 17: the CRL never refuses a certificate in use, and always a removed one', () => {
  const seed = propertySeed('client-revocation.test.ts');
  const identities = ['root', 'orders', 'reports'];
  const entryArb = fc.record({
    identity: fc.constantFrom(...identities),
    serial: fc.integer({ min: 1, max: 40 }).map((n) => n.toString(16).toUpperCase()),
    issuedAgoMs: fc.integer({ min: 0, max: 100 * DAY }),
    renewal: fc.boolean(),
  }).map((e) => cert(e.identity, e.serial, e.issuedAgoMs, e.renewal));
  const stateArb = fc.record({
    ledger: fc.uniqueArray(entryArb, { selector: (e) => e.serial, maxLength: 10 }),
    wanted: fc.subarray(identities),
    heldPick: fc.array(fc.nat(), { maxLength: 3 }),
    graceMs: fc.integer({ min: 0, max: 3 * DAY }),
  });

  it('keeps every certificate a wanted identity\'s Secret holds, lists every unexpired one of a removed identity, and a renewed predecessor only after the grace', () => fc.assert(fc.property(stateArb, (s) => {
    // Each identity's Secret holds one of its ledger entries (or none).
    const held = new Map<string, HeldCertificate>();
    identities.forEach((who, i) => {
      const own = s.ledger.filter((e) => e.identity === who);
      const pick = s.heldPick[i];
      if (own.length > 0 && pick !== undefined) held.set(who, holding(own[pick % own.length]));
    });
    const wanted = new Set(s.wanted);
    const d = decideClientRevocations({ ledger: s.ledger, wanted, held, now: NOW, graceMs: s.graceMs });
    const revoked = new Set(d.revoke.map((r) => r.serial));
    const live = (e: IssuedClientCertificate) => e.notAfter > NOW;
    for (const [who, h] of held) if (wanted.has(who) && revoked.has(h.serial)) return false;
    for (const e of s.ledger) if (!wanted.has(e.identity) && live(e) && !revoked.has(e.serial)) return false;
    for (const r of d.revoke.filter((x) => x.why === 'renewed')) {
      const latest = s.ledger.filter((e) => e.identity === r.identity).sort((a, b) => a.issuedAt.getTime() - b.issuedAt.getTime()).at(-1)!;
      if (!latest.renewal || latest.issuedAt.getTime() + s.graceMs > NOW.getTime()) return false;
    }
    // Nothing is both kept and listed, and nothing listed was expired.
    return d.ledger.every((e) => !revoked.has(e.serial)) && d.revoke.every((r) => r.notAfter > NOW);
  }), { seed, numRuns: RUNS }));
});
