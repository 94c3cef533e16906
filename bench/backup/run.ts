/**
 * `npm run bench:backup`: backup and restore of an etcd snapshot at two
 * sizes (~110 MiB and ten times that), on real components (three etcd
 * members from the generated StatefulSet, the versitygw S3-compatible
 * server, etcdutl), printed beside the floors the runner cannot beat: for
 * a backup, the same snapshot streamed from the same member (through the
 * same reader, hashed) and thrown away; for a restore, the download and
 * etcdutl by hand. Each size is measured `--runs` times, floor and backup
 * in turn, and the medians are printed with the targets (throughput at
 * least 0.9x the floor's, peak RSS at most 128 MiB), where a backup's time
 * went (start, snapshot, retention: its own log lines) and the load average:
 * on a shared machine a single run says little. Figures only; nothing is
 * asserted, and no timing fails the run.
 *
 * Each size is measured in two CPU layouts, one after the other in the same
 * run, floor and backup alike in each:
 *
 * - shared: every process may run on every core, as on a developer's
 *   machine: the S3 server takes its CPU (some 2.5-4.5 CPU-seconds per
 *   1.1 GiB received) from the cores the member and the runner need, which
 *   the floor never pays;
 * - split: the etcd members pinned to all cores but the first, and the S3
 *   server, this process (the floor's reader) and so `dkv backup` (its
 *   child) to the first (taskset, every thread). In production the store
 *   and the backup Job are not on the etcd node's cores; the member serving
 *   the snapshot keeps its own. Two other splits were tried and dropped:
 *   the reader on the members' core, where the floor slowed more than the
 *   backup (a reader that wakes for every read takes the member's core in
 *   slices); and the reader free on both cores, where the floor slowed by
 *   up to 39% against the shared layout and the backup beat it by up to
 *   21% (Linux wakes a reader on the core of the process that woke it, the
 *   member's): no floor either way.
 *
 *   --mib <n>       data written before the first size (default 100; the second size writes ten times as much in all)
 *   --runs <n>      floor and backup pairs per size and layout (default 3)
 *   --small-only    skip the larger size (it needs about 8 GiB free in the temporary directory, checked first)
 *   --layouts <l>   shared, split or both (default both; split needs two cores and taskset)
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { packageRoot } from '../../api/package-root.js';
import { streamEtcdSnapshot } from '../../engines/etcd/snapshot.js';
import { freePort, locateBinaries } from '../../test/cluster/control-plane.js';
import { b64, etcdPost, startLocalEtcdCluster } from '../../test/support/etcd-members.js';
import { backupTools, S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server } from '../../test/support/s3-server.js';
import { runtimeAndMachine } from '../machine.js';

const { values: options } = parseArgs({ options: {
  mib: { type: 'string', default: '100' }, runs: { type: 'string', default: '3' }, 'small-only': { type: 'boolean', default: false }, layouts: { type: 'string', default: 'both' },
} });
const mib = Number(options.mib);
const runs = Math.max(1, Math.floor(Number(options.runs)));
const sizes = options['small-only'] ? [mib] : [mib, 10 * mib];
type Layout = 'shared' | 'split';
const LAYOUTS: Record<string, Layout[]> = { shared: ['shared'], split: ['split'], both: ['shared', 'split'] };
if (!LAYOUTS[options.layouts]) {
  process.stderr.write(`bench:backup: --layouts is shared, split or both (got ${JSON.stringify(options.layouts)})\n`);
  process.exit(2);
}
const VALUE_BYTES = 128 * 1024;
/** Puts in flight while the data is written: enough to keep the members busy, few enough not to time out on a loaded machine. */
const WRITERS = 8;
const TARGET_RATIO = 0.9;
const TARGET_RSS_MIB = 128;
/**
 * Disk the larger size needs, per MiB of data: three members' database and
 * WAL (about twice the data each), two copies in the S3 server (the
 * retention keeps one), the restore's download and data directory.
 */
const DISK_PER_MIB = 3 * 2 + 2 + 2;

/** Runs a command under /usr/bin/time: wall seconds, CPU seconds (user + system) and peak RSS (MiB) of the process, and when it was started (ms since the epoch). */
interface Timed {
  seconds: number;
  cpuSeconds: number;
  peakMiB: number;
  stdout: string;
  stderr: string;
  status: number | null;
  startedAt: number;
}
function timed(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const startedAt = Date.now();
    const child = spawn('/usr/bin/time', ['-f', 'DKV_TIME %e %M %U %S', command, ...args], { env: env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => {
      const match = /DKV_TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)/.exec(stderr);
      if (!match) return reject(new Error(`no timing from /usr/bin/time: ${stderr}`));
      resolve({ seconds: Number(match[1]), cpuSeconds: Number(match[3]) + Number(match[4]), peakMiB: Number(match[2]) / 1024, stdout, stderr, status, startedAt });
    });
  });
}

/**
 * Where a `dkv backup` run's time went, from its own log lines (pino's millisecond timestamps on stderr): from the
 * process's start to `backup started` (Node.js, the modules, the configuration, the membership calls), to `backup
 * written` (the snapshot streamed into the store and the manifest written), and from there to the exit (the retention).
 */
function backupStages(run: { seconds: number; stderr: string; startedAt: number }): { start: number; snapshot: number; rest: number } {
  const at = (msg: string): number => {
    for (const line of run.stderr.split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { msg?: string; time?: string | number };
      if (entry.msg === msg && entry.time !== undefined) return (new Date(entry.time).getTime() - run.startedAt) / 1000;
    }
    throw new Error(`dkv backup logged no "${msg}": ${run.stderr}`);
  };
  const started = at('backup started');
  const written = at('backup written');
  return { start: started, snapshot: written - started, rest: run.seconds - written };
}

/** The process whose command line holds `fragment` (Linux's /proc), if one runs. */
function processOf(fragment: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(fragment)) return Number(pid);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return undefined;
}

/**
 * CPU seconds (user + system) used so far by the process whose command line holds `fragment` (Linux's /proc, in
 * clock ticks of 1/100 s): what the member serving the snapshot and the S3 server spend, which the two cores share
 * with the runner.
 */
function cpuSecondsOf(fragment: string): number {
  const pid = processOf(fragment);
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** The cores this process may run on (Linux's /proc: a cgroup's cpuset may hold fewer than the machine has). */
function allowedCpus(): number[] {
  const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';
  return list.split(',').filter(Boolean).flatMap((range) => {
    const [from, to = from] = range.split('-').map(Number);
    return Array.from({ length: to - from + 1 }, (_, i) => from + i);
  });
}

/** Pins every thread of `pid` to `cpus` (taskset -a: a Go server's threads are many, and each has its own mask). */
function pin(pid: number, cpus: readonly number[]): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus.join(','), String(pid)], { stdio: 'ignore' });
}

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

const dir = mkdtempSync(join(tmpdir(), 'dkv-bench-backup-'));
const largest = sizes.at(-1)!;
const freeMiB = (() => {
  const fs = statfsSync(dir);
  return (fs.bavail * fs.bsize) / (1024 * 1024);
})();
if (freeMiB < largest * DISK_PER_MIB) {
  rmSync(dir, { recursive: true, force: true });
  process.stderr.write(`bench:backup: ${largest} MiB of data needs about ${((largest * DISK_PER_MIB) / 1024).toFixed(1)} GiB free in ${tmpdir()}, which has ${(freeMiB / 1024).toFixed(1)} GiB; run with --small-only or a smaller --mib\n`);
  process.exit(2);
}
const binDir = locateBinaries(['etcd']);
const tools = backupTools();
const s3 = await startS3Server();
// Plain members, as the figures in docs/performance.md were taken: what TLS adds is bench:tls's to measure.
const { cluster, pods, membership } = await startLocalEtcdCluster(3, binDir, join(dir, 'members'), 'shop', { tls: { mode: 'disabled' } });
/** Rows as they are measured: a larger size that fails leaves the smaller one's figures printed. */
const print = (rows: readonly [string, string][]) => {
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(80)}  ${v}\n`);
};
print([['measured on', `${runtimeAndMachine()}, ${new Date().toISOString()}`]]);
try {
  const first = (await cluster.address('kv-0')).clientUrl;
  const configFile = join(dir, 'dkv.config.yaml');
  // retain: 1 bounds the S3 server's disk to two snapshots, whatever the runs.
  writeFileSync(configFile, `backup:\n  retain: 1\n  s3:\n    endpoint: ${s3.endpoint}\n    forcePathStyle: true\n`);
  const memberArgs = (await Promise.all(pods.map(async (p) => ['--member', `${p}=${(await cluster.address(p)).clientUrl}`]))).flat();
  // The layouts (the file's head says why): the split one needs a core for the store and one for the members.
  const cpus = allowedCpus();
  const splitRefused = !LAYOUTS[options.layouts].includes('split') ? undefined
    : cpus.length < 2 ? `this process may run on ${cpus.length} core only`
      : (() => {
        try {
          execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
          return undefined;
        } catch (e) {
          return `taskset: ${(e as Error).message}`;
        }
      })();
  const layouts = LAYOUTS[options.layouts].filter((l) => l === 'shared' || !splitRefused);
  const store = `versitygw --port ${new URL(s3.endpoint).host}`;
  const arrange = (layout: Layout) => {
    if (!layouts.includes('split')) return; // nothing was ever pinned
    const storePid = processOf(store);
    if (storePid === undefined) throw new Error(`no process ${store} to pin`);
    const [first, ...rest] = cpus;
    pin(storePid, layout === 'split' ? [first] : cpus);
    // This process reads the floor and starts each dkv backup, which inherits its cores.
    pin(process.pid, layout === 'split' ? [first] : cpus);
    for (const m of cluster.members.values()) pin(m.process.pid!, layout === 'split' ? rest : cpus);
  };
  const LAYOUT_TEXT: Record<Layout, string> = {
    shared: 'every process on every core',
    split: `the S3 server, the floor's reader and dkv backup on core ${cpus[0]}, the etcd members on ${cpus.slice(1).join(',')}`,
  };
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
  let written = 0;
  for (const [index, size] of sizes.entries()) {
    // Random bytes: nothing along the way can compress them away. Each size adds to the one before.
    const values = Math.ceil((size * 1024 * 1024) / VALUE_BYTES);
    const writeStarted = performance.now();
    for (let i = written; i < values; i += WRITERS) {
      await Promise.all(Array.from({ length: Math.min(WRITERS, values - i) }, (_, j) =>
        etcdPost(first, '/v3/kv/put', { key: b64(`blob/${String(i + j).padStart(7, '0')}`), value: randomBytes(VALUE_BYTES).toString('base64') }, 60_000)));
    }
    const writeSeconds = (performance.now() - writeStarted) / 1000;
    const added = values - written;
    written = values;

    const status = await membership.status();
    const follower = status.members.filter((m) => !m.leader).at(-1)!.name;
    const followerUrl = (await cluster.address(follower)).clientUrl;
    // The follower's etcd and the S3 server: during the floor, and during each backup.
    const member = `--name=${follower} --data-dir=${join(dir, 'members')}`;
    let snapshotBytes = 0;
    const measured: [string, string][][] = [];
    for (const layout of layouts) {
      arrange(layout);
      const loadBefore = load();
      const floors: number[] = [];
      const floorCpu: number[] = [];
      const others: { floorMember: number; backupMember: number; backupStore: number }[] = [];
      const backups: { seconds: number; cpuSeconds: number; peakMiB: number; stderr: string; startedAt: number }[] = [];
      for (let run = 0; run < runs; run++) {
        // Floor: the snapshot from the same follower, through the same reader, hashed and discarded.
        const memberBefore = cpuSecondsOf(member);
        const floorStarted = performance.now();
        const cpuBefore = process.cpuUsage();
        const hash = createHash('sha256');
        snapshotBytes = 0;
        await streamEtcdSnapshot(followerUrl, (chunk) => {
          hash.update(chunk);
          snapshotBytes += chunk.length;
        });
        hash.digest();
        floors.push((performance.now() - floorStarted) / 1000);
        const cpu = process.cpuUsage(cpuBefore);
        floorCpu.push((cpu.user + cpu.system) / 1e6);
        const memberBetween = cpuSecondsOf(member);
        const storeBefore = cpuSecondsOf(store);
        const backup = await timed(process.execPath, [join(packageRoot(), 'bin', 'dkv.js'), 'backup', '--cluster', 'kv', '--namespace', 'shop', '--size', '3',
          '--s3-path', `s3://${s3.bucket}/bench`, '--config', configFile, ...memberArgs], { PATH: process.env.PATH, HOME: process.env.HOME, ...s3.env });
        if (backup.status !== 0) throw new Error(`dkv backup failed: ${backup.stderr}`);
        backups.push(backup);
        others.push({ floorMember: memberBetween - memberBefore, backupMember: cpuSecondsOf(member) - memberBetween, backupStore: cpuSecondsOf(store) - storeBefore });
      }
      const loadAfter = load();
      const mb = snapshotBytes / (1024 * 1024);
      const floor = median(floors);
      const backup = median(backups.map((b) => b.seconds));
      const rss = median(backups.map((b) => b.peakMiB));
      const rssMax = Math.max(...backups.map((b) => b.peakMiB));
      const ratio = floor / backup;
      const all = (xs: readonly number[]) => xs.map((x) => x.toFixed(2)).join(', ');
      measured.push([
        [`  ${layout} cores: ${LAYOUT_TEXT[layout]}`, ''],
        ['    load average (1, 5, 15 min) before / after the runs', `${loadBefore} / ${loadAfter}`],
        [`    floor: snapshot streamed from a follower, hashed, discarded (median of ${runs})`, `${floor.toFixed(2)} s (${(mb / floor).toFixed(0)} MiB/s); runs ${all(floors)}`],
        [`    dkv backup: process start to exit (median of ${runs})`, `${backup.toFixed(2)} s (${(mb / backup).toFixed(0)} MiB/s); runs ${all(backups.map((b) => b.seconds))}`],
        ['    dkv backup stages (medians, from its log)', (() => {
          const stage = (k: 'start' | 'snapshot' | 'rest') => median(backups.map((b) => backupStages(b)[k])).toFixed(2);
          return `${stage('start')} s to the snapshot request, ${stage('snapshot')} s streamed and stored, ${stage('rest')} s retention and exit`;
        })()],
        ['    CPU seconds (user + system), median: floor\'s reader / dkv backup', `${median(floorCpu).toFixed(2)} / ${median(backups.map((b) => b.cpuSeconds)).toFixed(2)}`],
        ['    CPU seconds, median: follower\'s etcd in floor / in backup; S3 server',
          `${median(others.map((o) => o.floorMember)).toFixed(2)} / ${median(others.map((o) => o.backupMember)).toFixed(2)}; ${median(others.map((o) => o.backupStore)).toFixed(2)}`],
        ['    dkv backup throughput / floor\'s', `${ratio.toFixed(2)}x (target >= ${TARGET_RATIO}x: ${ratio >= TARGET_RATIO ? 'met' : 'not met'})`],
        ['    dkv backup: peak RSS, median (largest)', `${rss.toFixed(0)} MiB (${rssMax.toFixed(0)} MiB) (target <= ${TARGET_RSS_MIB} MiB: ${rssMax <= TARGET_RSS_MIB ? 'met' : rss <= TARGET_RSS_MIB ? 'met by the median only' : 'not met'})`],
      ]);
    }
    arrange('shared');

    // Restore: download the snapshot, then etcdutl restores it into a data directory.
    const key = (await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'bench/' }))).Contents!.map((o) => o.Key!).filter((k) => k.endsWith('snapshot.db')).sort().at(-1)!;
    const downloadStarted = performance.now();
    const file = join(dir, 'snapshot.db');
    await pipeline((await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body as Readable, createWriteStream(file));
    const downloadSeconds = (performance.now() - downloadStarted) / 1000;
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
    const downloaded = statSync(file).size;
    for (const path of [file, join(dir, 'restored'), join(dir, 'member')]) rmSync(path, { recursive: true, force: true });

    print([
      [`size ${index + 1}: data written (values of 128 KiB, random, ${WRITERS} at a time)`, `${added} values in ${writeSeconds.toFixed(1)} s (${values} in all)`],
      ['  snapshot size', `${(snapshotBytes / (1024 * 1024)).toFixed(1)} MiB (${downloaded} bytes downloaded)`],
      ...(splitRefused ? [['  split cores: not measured', splitRefused] as [string, string]] : []),
      ...measured.flat(),
      ['  restore floor: download from S3 by hand', `${downloadSeconds.toFixed(2)} s`],
      ['  restore floor: etcdutl snapshot restore by hand', `${restore.seconds.toFixed(2)} s, peak RSS ${restore.peakMiB.toFixed(0)} MiB`],
      ['  dkv restore: process start to exit (download, sha256 check, etcdutl)', `${initContainer.seconds.toFixed(2)} s (floor ${(downloadSeconds + restore.seconds).toFixed(2)} s)`],
      ['  dkv restore: peak RSS (largest of dkv and etcdutl)', `${initContainer.peakMiB.toFixed(0)} MiB`],
    ]);
  }
  client.destroy();
} finally {
  await cluster.stopAll();
  await s3.stop();
  rmSync(dir, { recursive: true, force: true });
}
