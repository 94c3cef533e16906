/**
 * `npm run bench:backup`: backup and restore of a ~100 MiB etcd snapshot, on
 * real components (three etcd members from the generated StatefulSet, the
 * versitygw S3-compatible server, etcdutl), printed beside the floors the
 * runner cannot beat: for a backup, the same snapshot streamed from the same
 * member and thrown away; for a restore, the download and etcdutl by hand.
 * Figures only; nothing is asserted.
 *
 *   --mib <n>   data to write before the backup (default 100)
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { packageRoot } from '../../api/package-root.js';
import { etcdSnapshot } from '../../engines/etcd/snapshot.js';
import { freePort, locateBinaries } from '../../test/cluster/control-plane.js';
import { b64, etcdPost, startLocalEtcdCluster } from '../../test/support/etcd-members.js';
import { backupTools, S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server } from '../../test/support/s3-server.js';
import { runtimeAndMachine } from '../machine.js';

const { values } = parseArgs({ options: { mib: { type: 'string', default: '100' } } });
const mib = Number(values.mib);
const VALUE_BYTES = 128 * 1024;

/** Runs a command under /usr/bin/time: wall seconds and peak RSS (MiB) of the process. */
function timed(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<{ seconds: number; peakMiB: number; stdout: string; stderr: string; status: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'DKV_TIME %e %M', command, ...args], { env: env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => {
      const match = /DKV_TIME ([\d.]+) (\d+)/.exec(stderr);
      if (!match) return reject(new Error(`no timing from /usr/bin/time: ${stderr}`));
      resolve({ seconds: Number(match[1]), peakMiB: Number(match[2]) / 1024, stdout, stderr, status });
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-backup-'));
const binDir = locateBinaries(['etcd']);
const tools = backupTools();
const s3 = await startS3Server();
const { cluster, pods, membership } = await startLocalEtcdCluster(3, binDir, join(dir, 'members'));
try {
  const first = (await cluster.address('kv-0')).clientUrl;
  const values = Math.ceil((mib * 1024 * 1024) / VALUE_BYTES);
  const writeStarted = performance.now();
  for (let i = 0; i < values; i++) {
    // Random bytes: nothing along the way can compress them away.
    await etcdPost(first, '/v3/kv/put', { key: b64(`blob/${String(i).padStart(6, '0')}`), value: randomBytes(VALUE_BYTES).toString('base64') }, 30_000);
  }
  const writeSeconds = (performance.now() - writeStarted) / 1000;

  const status = await membership.status();
  const follower = status.members.filter((m) => !m.leader).at(-1)!.name;
  const followerUrl = (await cluster.address(follower)).clientUrl;

  // Floor: the snapshot from the same follower, hashed and discarded.
  const floorStarted = performance.now();
  const hash = createHash('sha256');
  let snapshotBytes = 0;
  for await (const chunk of etcdSnapshot(followerUrl)) {
    hash.update(chunk);
    snapshotBytes += chunk.length;
  }
  hash.digest();
  const floorSeconds = (performance.now() - floorStarted) / 1000;

  const configFile = join(dir, 'dkv.config.yaml');
  writeFileSync(configFile, `backup:\n  s3:\n    endpoint: ${s3.endpoint}\n    forcePathStyle: true\n`);
  const memberArgs = (await Promise.all(pods.map(async (p) => ['--member', `${p}=${(await cluster.address(p)).clientUrl}`]))).flat();
  const backup = await timed(process.execPath, [join(packageRoot(), 'bin', 'dkv.js'), 'backup', '--cluster', 'kv', '--namespace', 'shop', '--size', '3',
    '--s3-path', `s3://${s3.bucket}/bench`, '--config', configFile, ...memberArgs], { PATH: process.env.PATH, HOME: process.env.HOME, ...s3.env });
  if (backup.status !== 0) throw new Error(`dkv backup failed: ${backup.stderr}`);

  // Restore: download the snapshot, then etcdutl restores it into a data directory.
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
  const key = (await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'bench/' }))).Contents!.map((o) => o.Key!).find((k) => k.endsWith('snapshot.db'))!;
  const downloadStarted = performance.now();
  const file = join(dir, 'snapshot.db');
  await pipeline((await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body as Readable, createWriteStream(file));
  const downloadSeconds = (performance.now() - downloadStarted) / 1000;
  client.destroy();
  const peer = await freePort();
  const restore = await timed(join(tools, 'etcdutl'), ['snapshot', 'restore', file, `--data-dir=${join(dir, 'restored')}`, '--name=restored',
    `--initial-cluster=restored=http://127.0.0.1:${peer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`]);
  if (restore.status !== 0) throw new Error(`etcdutl snapshot restore failed: ${restore.stderr}`);

  // What a restoring member's init container runs: dkv restore (download, sha256 against the manifest, etcdutl).
  const folder = key.slice(0, -'snapshot.db'.length);
  const initContainer = await timed(process.execPath, [join(packageRoot(), 'bin', 'dkv.js'), 'restore', `--from=s3://${s3.bucket}/${folder}`,
    `--data-dir=${join(dir, 'member', 'etcd')}`, '--name=kv-0', `--initial-cluster=kv-0=http://127.0.0.1:${peer}`, '--initial-cluster-state=new',
    '--initial-cluster-token=kv.shop', `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`, '--config', configFile, `--etcdutl=${join(tools, 'etcdutl')}`],
  { PATH: process.env.PATH, HOME: process.env.HOME, ...s3.env });
  if (initContainer.status !== 0) throw new Error(`dkv restore failed: ${initContainer.stderr}`);

  const mb = snapshotBytes / (1024 * 1024);
  const rows: [string, string][] = [
    ['measured on', runtimeAndMachine()],
    ['data written (values of 128 KiB, random)', `${values} values in ${writeSeconds.toFixed(1)} s`],
    ['snapshot size', `${mb.toFixed(1)} MiB (${statSync(file).size} bytes downloaded)`],
    ['floor: snapshot streamed from a follower, hashed, discarded', `${floorSeconds.toFixed(2)} s (${(mb / floorSeconds).toFixed(0)} MiB/s)`],
    ['dkv backup: process start to exit (snapshot -> multipart S3 upload, manifest, retention)', `${backup.seconds.toFixed(2)} s (${(mb / backup.seconds).toFixed(0)} MiB/s)`],
    ['dkv backup: peak RSS', `${backup.peakMiB.toFixed(0)} MiB (for a ${mb.toFixed(0)} MiB snapshot)`],
    ['restore floor: download from S3 by hand', `${downloadSeconds.toFixed(2)} s`],
    ['restore floor: etcdutl snapshot restore by hand', `${restore.seconds.toFixed(2)} s, peak RSS ${restore.peakMiB.toFixed(0)} MiB`],
    ['dkv restore: process start to exit (download, sha256 check, etcdutl)', `${initContainer.seconds.toFixed(2)} s (floor ${(downloadSeconds + restore.seconds).toFixed(2)} s)`],
    ['dkv restore: peak RSS (largest of dkv and etcdutl)', `${initContainer.peakMiB.toFixed(0)} MiB`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
} finally {
  await cluster.stopAll();
  await s3.stop();
  rmSync(dir, { recursive: true, force: true });
}
