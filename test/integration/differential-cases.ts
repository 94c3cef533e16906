/**
 * Specs for differential validation: hand-written edge cases and seeded
 * random mutations of a valid spec. Each is a whole DistributedKV document.
 */
const BASE = { size: 3, image: 'registry.example.com/kv/server:1.4.2' };

function doc(name: string, spec: unknown): Record<string, unknown> {
  return { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name }, spec };
}

const S3_PATHS = [
  's3://bucket/prefix', 's3://my.bucket-1/a/b/c', 's3://b/x_y.z-1', 's3://bucket', 's3://bucket/', 's3://Bucket/x', 'http://bucket/x',
  's3:/bucket/x', 's3://bucket/with space', 's3://bucket/ok/', 's3://-bucket/x', 's3://bucket/ünicode', '', 's3://a..b/c',
];
const SCHEDULES = [
  '0 2 * * *', '*/15 * * * *', '0 0 1,15 * MON-FRI', '@daily', '@hourly', '@weekly', '@every 5m', '30 3 * JAN-MAR sun', '5-10/2 0-23/6 1 1 0',
  '0 2 * *', '60 * * * *', '* 24 * * *', '* * 0 * *', '* * * 13 *', '* * * * 7', '0 2 * * * *', '*/0 * * * *', 'a b c d e', '', '0  2 * * *', ' 0 2 * * *',
];
const QUANTITIES: unknown[] = ['500m', '2', 2, '1.5', 1.5, '4Gi', '512Mi', '1e3', 'abc', '-1', -1, '', '0.5Gi', '.5', true];
const NAMES = ['orders', 'a', 'Orders', '9abc', 'a.b', 'a-', '-a', 'a_b', 'x'.repeat(52), 'x'.repeat(53), 'x'.repeat(63), 'x'.repeat(64), 'kv-1'];

/** Seeded so a failure reproduces: mulberry32. */
function rng(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function handWrittenCases(): Record<string, unknown>[] {
  const cases: Record<string, unknown>[] = [];
  for (const size of [0, 1, 2, 5, 9, 10, -1, 3.5, '3', null, true]) cases.push(doc('size', { ...BASE, size }));
  cases.push(doc('noimage', { size: 3 }), doc('nosize', { image: 'x' }), doc('emptyimage', { ...BASE, image: '' }), doc('spaceimage', { ...BASE, image: 'a b' }));
  cases.push(doc('unknown', { ...BASE, replicas: 3 }), doc('unknownbackup', { ...BASE, backup: { s3Path: 's3://b/x', schedule: '@daily', retain: 3 } }));
  for (const s3Path of S3_PATHS) cases.push(doc('s3', { ...BASE, backup: { s3Path, schedule: '0 2 * * *' } }));
  for (const schedule of SCHEDULES) cases.push(doc('cron', { ...BASE, backup: { s3Path: 's3://b/x', schedule } }));
  cases.push(doc('backupmissing', { ...BASE, backup: { s3Path: 's3://b/x' } }), doc('backupempty', { ...BASE, backup: {} }), doc('backupstring', { ...BASE, backup: 's3://b/x' }));
  for (const cpu of QUANTITIES) cases.push(doc('cpu', { ...BASE, resources: { requests: { cpu } } }));
  for (const size of ['10Gi', '1Ti', '10G', '10', 'big', 10]) cases.push(doc('storage', { ...BASE, storage: { size } }));
  for (const storageClassName of ['fast-ssd', 'Fast', '', 'a.b']) cases.push(doc('sc', { ...BASE, storage: { storageClassName } }));
  for (const name of NAMES) cases.push(doc(name, BASE));
  return cases;
}

export function generatedCases(count: number, seed = 20261122): Record<string, unknown>[] {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const cases: Record<string, unknown>[] = [];
  // Each field is valid most of the time, so the corpus holds many accepted specs and rejections that differ by one field.
  const valid = (p: number) => random() < p;
  for (let i = 0; i < count; i++) {
    const spec: Record<string, unknown> = {
      size: valid(0.8) ? 1 + Math.floor(random() * 9) : pick([0, 10, '3', -2]),
      image: valid(0.9) ? pick(['kv:1', 'registry.example.com/kv/server@sha256:abc']) : pick(['', 'a b']),
    };
    if (random() < 0.6) {
      spec.backup = {
        s3Path: valid(0.7) ? pick(['s3://bucket/prefix', 's3://my.bucket-1/a/b/c']) : pick(S3_PATHS),
        schedule: valid(0.7) ? pick(['0 2 * * *', '@daily', '*/15 * * * *']) : pick(SCHEDULES),
        ...(random() < 0.3 ? { backupImage: valid(0.8) ? 'img:1' : '' } : {}),
      };
    }
    if (random() < 0.3) spec.resources = { [valid(0.9) ? pick(['requests', 'limits']) : 'bogus']: { [valid(0.9) ? pick(['cpu', 'memory']) : 'gpu']: pick(QUANTITIES) } };
    if (random() < 0.2) spec.storage = { size: pick(['10Gi', '5Mi', '1T', 7]) };
    if (random() < 0.05) spec[pick(['replicas', 'Size', 'imagePullPolicy'])] = 1;
    if (random() < 0.05) delete spec[pick(['size', 'image'])];
    cases.push(doc(random() < 0.1 ? pick(NAMES) : `gen-${i}`, spec));
  }
  return cases;
}
