/**
 * `dkv backup` against real components: three real etcd members started from
 * the generated StatefulSet (test/support/etcd-members.ts), a real
 * S3-compatible server (versitygw, test/support/s3-server.ts), and etcd's own
 * `etcdutl` to restore what was backed up. The runner runs as the CronJob's
 * container would: the compiled CLI in its own process, credentials from the
 * standard AWS environment, S3 settings from a configuration file.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { exitDescription, freePort, launch, locateBinaries, terminate } from '../cluster/control-plane.js';
import { loadConfig } from '../../api/config.js';
import { synth } from '../generator/support.js';
import type { BackupManifest } from '../../backup/manifest.js';
import { dkv, type CliRun } from '../support/dkv-cli.js';
import { b64, countOrders, etcdPost, startLocalEtcdCluster, writeOrders, type LocalEtcdCluster } from '../support/etcd-members.js';
import { eventually, yes } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';
import { backupTools, S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';

const describeWithEtcd = process.env.DKV_SKIP_CLUSTER ? describe.skip : describe;
const KEYS = 10_000;
const FOLDER = 'nightly/';

type Run = CliRun;

/** The client Secret's files, where the kubelet would mount them for the CronJob's container (TLS is on by default). */
let clientTlsDir: string;

/** The compiled CLI in a process of its own, as the CronJob's container runs it: the client Secret mounted where DKV_TLS_DIR says. */
function dkvBackup(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return dkv(['backup', ...args], { ...env, DKV_TLS_DIR: clientTlsDir });
}

describeWithEtcd('dkv backup of a real etcd cluster into a real S3-compatible store', () => {
  let dir: string;
  let binDir: string;
  let tools: string;
  let s3: S3Server;
  let client: S3Client;
  let cluster: LocalEtcdCluster;
  let pods: string[];
  let leader: string;
  let configFile: string;
  let memberArgs: string[];

  const backup = () => dkvBackup(['--cluster', 'kv', '--namespace', 'shop', '--size', '3', '--s3-path', `s3://${s3.bucket}/nightly`, '--config', configFile, ...memberArgs], s3.env);
  const keys = async (prefix: string): Promise<string[]> => {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
    return (listed.Contents ?? []).map((o) => o.Key!).sort();
  };
  const body = async (key: string): Promise<Readable> => (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body as Readable;

  beforeAll(async () => {
    binDir = locateBinaries(['etcd']);
    tools = backupTools();
    dir = mkdtempSync(join(tmpdir(), 'dkv-backup-'));
    s3 = await startS3Server();
    client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
    configFile = join(dir, 'dkv.config.yaml');
    writeFileSync(configFile, `backup:\n  retain: 2\n  s3:\n    endpoint: ${s3.endpoint}\n    forcePathStyle: true\n    partSizeMiB: 5\n`);
    let secrets;
    ({ cluster, pods, secrets } = await startLocalEtcdCluster(3, binDir, join(dir, 'members')));
    clientTlsDir = join(dir, 'client-tls');
    mkdirSync(clientTlsDir);
    for (const [file, content] of Object.entries(secrets.get('kv-tls-client')!)) writeFileSync(join(clientTlsDir, file), content, { mode: 0o600 });
    memberArgs = (await Promise.all(pods.map(async (p) => ['--member', `${p}=${(await cluster.address(p)).clientUrl}`]))).flat();
    const first = (await cluster.address('kv-0')).clientUrl;
    await writeOrders(first, KEYS);
    const status = await etcdPost(first, '/v3/maintenance/status', {});
    leader = (await etcdPost(first, '/v3/cluster/member/list', {})).members.find((m: { ID: string }) => m.ID === status.leader).name;
  }, 300_000);

  afterAll(async () => {
    client?.destroy();
    await cluster?.stopAll();
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('streams a follower\'s snapshot of 10,000 keys into S3 with a manifest whose checksum matches, and etcdutl restores it into a member that serves every key', async () => {
    const run = await backup();
    expect(run.stderr).not.toMatch(/failed/);
    expect(run.status).toBe(0);
    const [folder] = (await keys(FOLDER)).map((k) => k.slice(0, k.lastIndexOf('/') + 1));
    expect(await keys(folder)).toEqual([`${folder}manifest.json`, `${folder}snapshot.db`]);
    expect(run.stdout).toContain(`s3://${s3.bucket}/${folder}`);

    const manifest = JSON.parse(await (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${folder}manifest.json` }))).Body!.transformToString()) as BackupManifest;
    expect(manifest).toMatchObject({ kind: 'BackupManifest', cluster: { namespace: 'shop', name: 'kv' }, engine: 'etcd', member: { version: '3.6.8' } });
    expect(manifest.member.name).not.toBe(leader); // a follower served it
    const snapshotFile = join(dir, 'restored.db');
    await pipeline(await body(`${folder}snapshot.db`), createWriteStream(snapshotFile));
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of await body(`${folder}snapshot.db`)) {
      hash.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    expect(manifest.files).toEqual([{ name: 'snapshot.db', bytes, sha256: hash.digest('hex') }]);

    // etcd's own restore checks the snapshot's embedded hash, then a member started on it serves every key.
    const [client2, peer] = [await freePort(), await freePort()];
    const dataDir = join(dir, 'restored');
    const restore = await new Promise<Run>((resolve) => {
      const child = spawn(join(tools, 'etcdutl'), ['snapshot', 'restore', snapshotFile, `--data-dir=${dataDir}`, '--name=restored',
        `--initial-cluster=restored=http://127.0.0.1:${peer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`]);
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (status) => resolve({ status, stdout: '', stderr }));
    });
    expect(restore.stderr).not.toMatch(/hash mismatch|corrupt/i);
    expect(restore.status).toBe(0);
    const log = join(dir, 'restored.log');
    const restored = launch(join(binDir, 'etcd'), ['--name=restored', `--data-dir=${dataDir}`, `--listen-client-urls=http://127.0.0.1:${client2}`,
      `--advertise-client-urls=http://127.0.0.1:${client2}`, `--listen-peer-urls=http://127.0.0.1:${peer}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`], log);
    try {
      const url = `http://127.0.0.1:${client2}`;
      await eventually('the restored member to serve', async () => yes((await httpProbe(`${url}/health`)).status === 200), 30_000, 100, () => exitDescription(restored, log));
      expect(await countOrders(url)).toBe(KEYS);
      const one = await etcdPost(url, '/v3/kv/range', { key: b64('orders/04242') });
      expect(Buffer.from(one.kvs[0].value, 'base64').toString()).toBe('order 4242');
    } finally {
      await terminate(restored);
    }
  }, 180_000);

  it('dkv restore refuses a snapshot that does not match its manifest, leaving no data directory, and never restores over a member\'s data', async () => {
    const [folder] = (await keys(FOLDER)).filter((k) => k.endsWith('manifest.json')).map((k) => k.slice(0, -'manifest.json'.length));
    const restore = (from: string, dataDir: string) => dkv(['restore', `--from=${from}`, `--data-dir=${dataDir}`, '--name=kv-0', '--initial-cluster=kv-0=http://127.0.0.1:2380',
      '--initial-cluster-state=new', '--initial-cluster-token=kv.shop', '--initial-advertise-peer-urls=http://127.0.0.1:2380', '--config', configFile,
      `--etcdutl=${join(tools, 'etcdutl')}`], s3.env);
    // The same manifest over a snapshot one byte different: the sha256 disagrees.
    const tampered = `tampered/${folder.slice(FOLDER.length)}`;
    const original = Buffer.concat(await (await body(`${folder}snapshot.db`)).toArray() as Buffer[]);
    original[original.length >> 1] ^= 0xff;
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `${tampered}snapshot.db`, Body: original }));
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `${tampered}manifest.json`, Body: await (await body(`${folder}manifest.json`)).toArray().then((c) => Buffer.concat(c as Buffer[])) }));
    const dataDir = join(dir, 'member-data', 'etcd');
    const refused = await restore(`s3://${s3.bucket}/${tampered}`, dataDir);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/dkv restore: failed: s3:\/\/.*snapshot\.db does not match its manifest: \d+ bytes sha256 [0-9a-f]{64}, the manifest says \d+ bytes sha256/);
    expect(existsSync(dataDir)).toBe(false);
    // The true backup restores; run again, it leaves the member's data as it is.
    const restored = await restore(`s3://${s3.bucket}/${folder}`, dataDir);
    expect(restored.stdout).toMatch(/^restored kv-0 from s3:\/\/.* as its manifest says\n$/);
    expect(existsSync(join(dataDir, 'member', 'snap', 'db'))).toBe(true);
    const again = await restore(`s3://${s3.bucket}/${folder}`, dataDir);
    expect([again.status, again.stdout]).toEqual([0, `nothing restored: ${dataDir} exists: kv-0 keeps its data (a restore is never in place)\n`]);
  }, 120_000);

  /** The environment of the container the CronJob of cluster shop/kv with this s3Path runs, as the kubelet gives it (the fieldRef is the pod's namespace). */
  const cronJobEnvironment = (s3Path: string): Record<string, string> => {
    const config = loadConfig(configFile);
    const cronJob = synth({ name: 'kv', namespace: 'shop', size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path, schedule: '0 2 * * *' } }, config)
      .find((o) => o.kind === 'CronJob')!;
    const container = (cronJob as any).spec.jobTemplate.spec.template.spec.containers[0];
    expect(container.command).toEqual(['dkv', 'backup']);
    expect(container.image).toBe(config.backup.runner.image);
    expect(container.envFrom).toEqual([{ secretRef: { name: config.backup.runner.credentialsSecret, optional: true } }]);
    // The client Secret is mounted where DKV_TLS_DIR says (dkvBackup puts its files there).
    expect(container.env).toContainEqual({ name: 'DKV_TLS_DIR', value: container.volumeMounts[0].mountPath });
    return Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace' ? 'shop' : undefined)]));
  };
  /** The stamps of the backup folders directly in `prefix` (each `<prefix><stamp>/`). */
  const stampsIn = async (prefix: string): Promise<string[]> =>
    [...new Set((await keys(prefix)).map((k) => k.slice(prefix.length).split('/')).filter((p) => p.length === 2 && /^\d{8}T/.test(p[0])).map((p) => p[0]))].sort();

  it('runs from exactly the environment the generated CronJob gives it, keeps the newest two complete backups (retain: 2) and sweeps an unfinished older one', async () => {
    // The CronJob a cluster with this configuration generates; its container's environment (the Secret's keys are the credentials) is the runner's whole input.
    const env = cronJobEnvironment(`s3://${s3.bucket}/nightly`);
    const asTheCronJob = () => dkvBackup(memberArgs, { ...env, ...s3.env });

    // A run killed part-way long ago: its folder has data and no manifest.
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `${FOLDER}20000101T000000.000Z/snapshot.db`, Body: 'half a snapshot' }));
    for (let i = 0; i < 2; i++) {
      const run = await asTheCronJob();
      expect(run.stderr).not.toMatch(/failed|usage/);
      expect(run.status).toBe(0);
    }
    const folders = await stampsIn(FOLDER);
    expect(folders).toHaveLength(2);
    expect(folders).not.toContain('20000101T000000.000Z');
    for (const f of folders) expect(await keys(`${FOLDER}${f}/`)).toEqual([`${FOLDER}${f}/manifest.json`, `${FOLDER}${f}/snapshot.db`]);
  }, 180_000);

  it('fails cleanly while the store is down, naming it, writing no manifest; the next run succeeds', async () => {
    const before = await keys(FOLDER);
    await s3.pause();
    let down: Run;
    try {
      down = await backup();
    } finally {
      await s3.resume();
    }
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/dkv backup: failed: .*(ECONNREFUSED|connect)/);
    expect((await keys(FOLDER)).filter((k) => k.endsWith('manifest.json'))).toEqual(before.filter((k) => k.endsWith('manifest.json')));
    expect((await backup()).status).toBe(0);
  }, 180_000);

  it('stops at its deadline part-way, leaving no manifest: nothing trusts the unfinished folder, and the next success sweeps it', async () => {
    const manifests = async () => (await keys(FOLDER)).filter((k) => k.endsWith('manifest.json'));
    const before = await manifests();
    const cut = await dkvBackup(['--cluster', 'kv', '--namespace', 'shop', '--size', '3', '--s3-path', `s3://${s3.bucket}/nightly`, '--config', configFile,
      '--deadline-seconds', '0.01', ...memberArgs], s3.env);
    expect(cut.status).toBe(1);
    expect(cut.stderr).toMatch(/dkv backup: failed: deadline of 0\.01 s passed/);
    expect(await manifests()).toEqual(before);
    expect((await backup()).status).toBe(0);
    // Retention (2) kept two complete backups, and no folder without its manifest is older than the newest.
    const folders = [...new Set((await keys(FOLDER)).map((k) => k.slice(FOLDER.length).split('/')[0]))].sort();
    for (const f of folders.slice(0, -1)) expect(await keys(`${FOLDER}${f}/`)).toContain(`${FOLDER}${f}/manifest.json`);
  }, 120_000);

  it('counts the backups of the layout before (<s3Path>/<namespace>/<name>/) as the cluster\'s own: a restore names them, the retention deletes them in turn, and another cluster\'s are never touched', async () => {
    const s3Path = `s3://${s3.bucket}/migrated`;
    const env = cronJobEnvironment(s3Path);
    expect(env.DKV_BACKUP_LAYOUT).toBe('folder');
    // A CronJob written before the change sets no layout: it keeps writing under <s3Path>/<namespace>/<name>/, where its s3Path may be shared.
    const { DKV_BACKUP_LAYOUT: _new, ...before } = env;
    const legacy = 'migrated/shop/kv/';
    for (let i = 0; i < 2; i++) {
      const run = await dkvBackup(memberArgs, { ...before, ...s3.env });
      expect(run.status).toBe(0);
      expect(run.stdout).toContain(`${s3Path}/shop/kv/`);
    }
    const legacyStamps = await stampsIn(legacy);
    expect(legacyStamps).toHaveLength(2);
    // Another cluster's backup from when they shared this s3Path, and one of a cluster named like a prefix of this one's name.
    const others = [`migrated/shop/kv-canary/20000101T000000.000Z/manifest.json`, `migrated/shop/k/20000101T000000.000Z/manifest.json`];
    for (const key of others) await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: '{}' }));

    // A restore names a backup of the layout before in full, as dkv backup printed it.
    const dataDir = join(dir, 'legacy-restore', 'etcd');
    const restored = await dkv(['restore', `--from=${s3Path}/shop/kv/${legacyStamps[0]}/`, `--data-dir=${dataDir}`, '--name=kv-0', '--initial-cluster=kv-0=http://127.0.0.1:2380',
      '--initial-cluster-state=new', '--initial-cluster-token=kv.shop', '--initial-advertise-peer-urls=http://127.0.0.1:2380', '--config', configFile,
      `--etcdutl=${join(tools, 'etcdutl')}`], s3.env);
    expect(restored.stdout).toMatch(/^restored kv-0 from s3:\/\/.*\/migrated\/shop\/kv\/\d{8}T.* as its manifest says\n$/);

    // The regenerated CronJob writes into s3Path itself; retention (2) counts both folders, by time: the oldest legacy backup goes.
    const first = await dkvBackup(memberArgs, { ...env, ...s3.env });
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`^${s3Path}/\\d{8}T\\d{6}\\.\\d{3}Z/ `));
    expect(first.stdout).toContain(`; deleted shop/kv/${legacyStamps[0]}`);
    expect(await stampsIn('migrated/')).toHaveLength(1);
    expect(await stampsIn(legacy)).toEqual([legacyStamps[1]]);
    const second = await dkvBackup(memberArgs, { ...env, ...s3.env });
    expect(second.status).toBe(0);
    expect(await stampsIn('migrated/')).toHaveLength(2);
    expect(await stampsIn(legacy)).toEqual([]);
    for (const key of others) expect(await keys(key)).toEqual([key]);
  }, 180_000);

  it('fails cleanly when no member answers, naming the members', async () => {
    await cluster.stopAll();
    const run = await backup();
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/dkv backup: failed: no member of shop\/kv answered: .*kv-0.*kv-1.*kv-2/);
  }, 60_000);
});
