/**
 * A real S3-compatible server on loopback for the backup tests: versitygw
 * (built from the Go module proxy by test/cluster/backup-tools/build.sh, which says why
 * this one) over a temporary directory, one bucket created through S3 itself.
 * Objects really are written to and read back from disk.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { exitDescription, freePort, launch, terminate } from '../cluster/control-plane.js';
import { packageRoot } from '../../api/package-root.js';
import { eventually, yes } from './eventually.js';
import { httpProbe } from './http-probe.js';

export const S3_ACCESS_KEY = 'dkv-test';
export const S3_SECRET_KEY = 'dkv-test-secret-key';

export interface S3Server {
  readonly endpoint: string;
  readonly bucket: string;
  /** The directory versitygw keeps objects in: `<dataDir>/<bucket>/<key>`. */
  readonly dataDir: string;
  /** Environment for a `dkv backup` process: the credentials, as the AWS SDK reads them. */
  readonly env: NodeJS.ProcessEnv;
  /** Stops the server (objects stay on disk until `stop`); `start` brings it back on the same port. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** The directory holding versitygw and etcdutl (built once, then a cache hit). */
export function backupTools(): string {
  const out = execFileSync('bash', [join(packageRoot(), 'test', 'cluster', 'backup-tools', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').at(-1)!;
}

export async function startS3Server(bucket = 'dkv-backups'): Promise<S3Server> {
  const binary = join(backupTools(), 'versitygw');
  const dir = mkdtempSync(join(tmpdir(), 'dkv-s3-'));
  const dataDir = join(dir, 'data');
  const sidecar = join(dir, 'meta');
  mkdirSync(dataDir);
  mkdirSync(sidecar);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const log = join(dir, 'versitygw.log');
  const env = { ...process.env, ROOT_ACCESS_KEY: S3_ACCESS_KEY, ROOT_SECRET_KEY: S3_SECRET_KEY };
  let child: ChildProcess | undefined;
  const start = async () => {
    // Metadata in a sidecar directory, not extended attributes: any filesystem will do.
    child = launch(binary, ['--port', `127.0.0.1:${port}`, '--health', '/health', 'posix', '--sidecar', sidecar, dataDir], log, env);
    const running = child;
    await eventually('versitygw to answer', async () => yes((await httpProbe(`${endpoint}/health`)).status === 200), 30_000, 100, () => exitDescription(running, log));
  };
  await start();
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
  return {
    endpoint, bucket, dataDir,
    env: { AWS_ACCESS_KEY_ID: S3_ACCESS_KEY, AWS_SECRET_ACCESS_KEY: S3_SECRET_KEY, AWS_REGION: 'us-east-1' },
    pause: () => terminate(child),
    resume: start,
    stop: async () => {
      await terminate(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
