/**
 * The export schedule, against a clock the test advances: one export per
 * scheduled time, the next tried at its own time after a failure, and
 * nothing once the leadership term has ended. The store here only records
 * what it is asked to write (the real S3 path is test/integration/
 * definitions-export.test.ts): this is about when, not what.
 */
import type { ObjectStore } from '../../backup/object-store.js';
import { nextExportAt, scheduleDefinitionsExports, type ExportResult } from '../../reconciler/fleet/definitions-export.js';
import { silentLogger } from '../../kube/log.js';
import { FakeClock, settle } from '../support/fake-clock.js';

function recordingStore(failFirst = 0): { store: ObjectStore; manifests: string[] } {
  const manifests: string[] = [];
  let failures = failFirst;
  const store = {
    putText: async () => undefined,
    putJson: async (key: string) => {
      if (failures > 0) {
        failures--;
        throw new Error('store down');
      }
      manifests.push(key);
    },
    listBackups: async () => [],
    deleteFolder: async () => 0,
  } as unknown as ObjectStore;
  return { store, manifests };
}

describe('the definitions export schedule', () => {
  const cluster = { metadata: { name: 'orders', namespace: 'shop' }, spec: { size: 3, image: 'kv:1' } };

  it('fires at each scheduled time (UTC), five fields or six with seconds', () => {
    const now = Date.parse('2026-11-22T12:00:00.500Z');
    expect(new Date(nextExportAt('@hourly', now)).toISOString()).toBe('2026-11-22T13:00:00.000Z');
    expect(new Date(nextExportAt('*/10 * * * * *', now)).toISOString()).toBe('2026-11-22T12:00:10.000Z');
  });

  it('exports once per scheduled time, tries the next time after a failure, and stops when the term ends', async () => {
    const clock = new FakeClock();
    const { store, manifests } = recordingStore(1);
    const term = new AbortController();
    const results: (ExportResult | Error)[] = [];
    scheduleDefinitionsExports({ clusters: () => [cluster], store, prefix: 'defs/', retain: 3, server: 'https://api', clock, log: silentLogger }, '*/10 * * * * *', term.signal, (r) => results.push(r));
    await clock.advance(9_000);
    expect(results).toEqual([]);
    await clock.advance(1_000); // 12:00:10: the store is down
    await settle();
    expect(results.map((r) => (r instanceof Error ? r.message : 'ok'))).toEqual(['store down']);
    await clock.advance(10_000); // 12:00:20
    await settle();
    expect(manifests).toEqual(['defs/20261122T120020.000Z/manifest.json']);
    term.abort();
    await clock.advance(60_000);
    await settle();
    expect(results).toHaveLength(2);
  });
});
