import { backendQuotaBytes, RECOMMENDED_MAX_QUOTA_BYTES } from '../../model/backend-quota.js';

const Gi = 2 ** 30;
const Mi = 2 ** 20;

describe('each member\'s backend quota', () => {
  it('is half the volume when the spec gives none, in whole MiB', () => {
    expect(backendQuotaBytes({ storage: { size: '10Gi' } })).toBe(5 * Gi);
    expect(backendQuotaBytes({ storage: { size: '1Gi' } })).toBe(512 * Mi);
    expect(backendQuotaBytes({ storage: { size: '1001Mi' } })).toBe(500 * Mi);
  });

  it('is at most etcd\'s recommended 8 GiB, however large the volume', () => {
    expect(backendQuotaBytes({ storage: { size: '100Gi' } })).toBe(RECOMMENDED_MAX_QUOTA_BYTES);
    expect(RECOMMENDED_MAX_QUOTA_BYTES).toBe(8 * Gi);
  });

  it('grows with the volume, and is the spec\'s own when it names one', () => {
    expect(backendQuotaBytes({ storage: { size: '4Gi' } })).toBeLessThan(backendQuotaBytes({ storage: { size: '8Gi' } }));
    expect(backendQuotaBytes({ storage: { size: '10Gi' }, maintenance: { quota: '3Gi' } })).toBe(3 * Gi);
  });

  it('is half of the default 10Gi volume when storage is unset', () => {
    expect(backendQuotaBytes({})).toBe(5 * Gi);
  });
});
