/**
 * When an etcd cluster's certificates are renewed and how its issuing CA is
 * replaced, as pure decisions on a clock the test moves: a leaf is renewed
 * once two thirds of its validity have passed (and not a moment before), a
 * CA rotation starts when the issuer is due or the annotation asks, and each
 * of its phases moves on only once every member was seen to take it.
 */
import { FakeClock } from '../support/fake-clock.js';
import {
  caRotationAction, caRotationPhase, DEFAULT_RENEWAL_FRACTION, formatRevoked, leavesToRenew, nextRenewalCheck, parseRevoked, renewalDue, renewalTime,
  type MemberObservation, type RotationState,
} from '../../engines/etcd/certificate-rotation.js';

const DAY_MS = 86_400_000;
const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
const issuedToday = (days: number) => ({ notBefore: new Date(clock.now()), notAfter: new Date(clock.now() + days * DAY_MS) });
const at = (offsetDays: number) => new Date(clock.now() + offsetDays * DAY_MS);
const F = DEFAULT_RENEWAL_FRACTION;

describe('leaf renewal', () => {
  const year = issuedToday(365);

  it('renews a certificate once two thirds of its validity have passed, as cert-manager does by default', () => {
    expect(renewalTime(year, F).toISOString()).toBe(new Date(clock.now() + 365 * DAY_MS * 2 / 3).toISOString());
    expect(renewalDue(year, at(243), F)).toBe(false);
    expect(renewalDue(year, at(243.4), F)).toBe(true);
    expect(renewalDue(year, at(400), F)).toBe(true);
  });

  it('follows the configured fraction', () => {
    expect(renewalDue(year, at(183), 0.5)).toBe(true);
    expect(renewalDue(year, at(182), 0.5)).toBe(false);
  });

  it('renews only the leaves that are due, and a leaf not from the current issuer at once', () => {
    const fresh = { validity: issuedToday(365), fromIssuer: true };
    const old = { validity: { notBefore: at(-300), notAfter: at(65) }, fromIssuer: true };
    expect(leavesToRenew({ member: fresh, client: old }, at(0), F)).toEqual(['client']);
    expect(leavesToRenew({ member: { ...fresh, fromIssuer: false }, client: fresh }, at(0), F)).toEqual(['member']);
    expect(leavesToRenew({ member: fresh, client: undefined }, at(0), F)).toEqual([]);
  });

  it('looks again at the earliest renewal time still ahead', () => {
    const short = issuedToday(30);
    expect(nextRenewalCheck([year, short], at(0), F)?.toISOString()).toBe(renewalTime(short, F).toISOString());
    expect(nextRenewalCheck([short], at(25), F)).toBeUndefined();
  });
});

describe('CA rotation', () => {
  const idle: RotationState = { issuer: issuedToday(730), rootIssues: false, retiring: false };
  const members = (o: MemberObservation, pods = ['kv-0', 'kv-1', 'kv-2']) => new Map(pods.map((p) => [p, o] as const));
  const seen = (over: Record<string, MemberObservation>) => new Map(Object.entries({ 'kv-0': {}, 'kv-1': {}, 'kv-2': {}, ...over }));

  it('starts when the issuer has used its fraction of life, and not before', () => {
    expect(caRotationAction(idle, members({}), at(486), F)).toEqual({ kind: 'none' });
    expect(caRotationAction(idle, members({}), at(487), F)).toMatchObject({ kind: 'start', why: expect.stringContaining('67%') });
  });

  it('starts when the annotation carries a value not acted on yet, and only once per value', () => {
    expect(caRotationAction({ ...idle, requested: 'now' }, members({}), at(0), F)).toMatchObject({ kind: 'start', why: expect.stringContaining('"now"') });
    expect(caRotationAction({ ...idle, requested: 'now', lastRequest: 'now' }, members({}), at(0), F)).toEqual({ kind: 'none' });
  });

  it('leaves a cluster whose root signs its leaves alone until asked: its root is not rotated without restarts', () => {
    expect(caRotationAction({ ...idle, rootIssues: true }, members({}), at(700), F)).toEqual({ kind: 'none' });
    expect(caRotationAction({ ...idle, rootIssues: true, requested: '1' }, members({}), at(0), F)).toMatchObject({ kind: 'start' });
  });

  it('re-issues the leaves only once every member accepts a certificate of the new issuer', () => {
    const trusting: RotationState = { ...idle, next: { leavesIssued: false } };
    expect(caRotationPhase(trusting)).toBe('Trusting');
    expect(caRotationAction(trusting, seen({ 'kv-0': { acceptsNext: true }, 'kv-2': { acceptsNext: false } }), at(0), F)).toEqual({ kind: 'wait', waitingFor: ['kv-1', 'kv-2'] });
    expect(caRotationAction(trusting, members({ acceptsNext: true }), at(0), F)).toEqual({ kind: 'reissue' });
  });

  it('drops the old issuer only once every member serves the new member certificate', () => {
    const reissuing: RotationState = { ...idle, next: { leavesIssued: true } };
    expect(caRotationPhase(reissuing)).toBe('Reissuing');
    expect(caRotationAction(reissuing, seen({ 'kv-0': { servesCurrent: true }, 'kv-1': { servesCurrent: true } }), at(0), F)).toEqual({ kind: 'wait', waitingFor: ['kv-2'] });
    expect(caRotationAction(reissuing, members({ servesCurrent: true }), at(0), F)).toEqual({ kind: 'promote' });
  });

  it('ends only once every member refuses the old issuer, and starts nothing new meanwhile', () => {
    const dropping: RotationState = { ...idle, retiring: true, requested: 'again', lastRequest: 'before' };
    expect(caRotationPhase(dropping)).toBe('Dropping');
    expect(caRotationAction(dropping, seen({ 'kv-1': { refusesRetired: true } }), at(0), F)).toEqual({ kind: 'wait', waitingFor: ['kv-0', 'kv-2'] });
    expect(caRotationAction(dropping, members({ refusesRetired: true }), at(0), F)).toEqual({ kind: 'forget' });
  });

  it('never moves on with no member seen', () => {
    expect(caRotationAction({ ...idle, next: { leavesIssued: false } }, new Map(), at(0), F)).toEqual({ kind: 'wait', waitingFor: [] });
  });
});

describe('the revoked list', () => {
  it('keeps each serial once, and forgets those that expired', () => {
    const text = formatRevoked([
      { serial: '01AB', notAfter: at(10) }, { serial: '01AB', notAfter: at(10) }, { serial: '02CD', notAfter: at(-1) },
    ], at(0));
    expect(parseRevoked(text)).toEqual([{ serial: '01AB', notAfter: at(10) }]);
    expect(parseRevoked('garbage\n\n01ab 2026-02-01T00:00:00.000Z\n')).toEqual([{ serial: '01AB', notAfter: new Date('2026-02-01T00:00:00Z') }]);
  });
});
