/**
 * test/cluster/build.sh builds what a run asks for and no more, caches each
 * binary on its own, and builds a binary once when runs overlap (a test
 * asking for what the background build is building). Shown with dkv-pki,
 * the one binary that builds in about a second, in a cache of its own.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';

const BUILD = join(packageRoot(), 'test', 'cluster', 'build.sh');
const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;

interface BuildRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** build.sh with `args`, into `cache` (never envtest binaries: they would skip the build). */
function build(cache: string, args: string[]): Promise<BuildRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, DKV_CONTROL_PLANE_CACHE: cache };
  for (const name of ['KUBEBUILDER_ASSETS', 'TEST_ASSET_KUBE_APISERVER', 'TEST_ASSET_ETCD', 'DKV_CONTROL_PLANE_REBUILD']) delete env[name];
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [BUILD, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

const lastLine = (text: string): string => text.trim().split('\n').pop() ?? '';

(hasGo ? describe : describe.skip)('test/cluster/build.sh', () => {
  let cache: string;
  beforeEach(() => {
    cache = mkdtempSync(join(tmpdir(), 'dkv-build-cache-'));
  });
  afterEach(() => rmSync(cache, { recursive: true, force: true }));

  it('builds only the binaries it is asked for, stamps each, and finds them in its cache the next time', async () => {
    const first = await build(cache, ['dkv-pki']);
    expect(first.status).toBe(0);
    const out = lastLine(first.stdout);
    expect(out.startsWith(cache)).toBe(true);
    expect(readdirSync(out).filter((f) => !f.startsWith('.')).sort()).toEqual(['build.log', 'dkv-pki']);
    expect(readFileSync(join(out, '.stamps', 'dkv-pki'), 'utf8')).toMatch(/^key=[0-9a-f]{64}$/m);

    const second = await build(cache, ['dkv-pki']);
    expect(second.status).toBe(0);
    expect(lastLine(second.stdout)).toBe(out);
    expect(second.stderr).toContain('cache hit');
    expect(second.stderr).not.toContain('building dkv-pki');
  }, 120_000);

  it('builds a binary once when two runs ask for it at the same time: the later waits and finds it built', async () => {
    const runs = await Promise.all([build(cache, ['dkv-pki']), build(cache, ['dkv-pki'])]);
    expect(runs.map((r) => r.status)).toEqual([0, 0]);
    const builds = runs.map((r) => (r.stderr.match(/built dkv-pki in/g) ?? []).length);
    expect(builds.sort()).toEqual([0, 1]);
    expect(lastLine(runs[0].stdout)).toBe(lastLine(runs[1].stdout));
    expect(readdirSync(lastLine(runs[0].stdout)).filter((f) => f.startsWith('.tmp-'))).toEqual([]);
  }, 120_000);

  it('rebuilds a binary whose stamp is gone (a build stopped half-way writes none)', async () => {
    const out = lastLine((await build(cache, ['dkv-pki'])).stdout);
    rmSync(join(out, '.stamps', 'dkv-pki'));
    const again = await build(cache, ['dkv-pki']);
    expect(again.stderr).toContain('built dkv-pki in');
    expect(existsSync(join(out, '.stamps', 'dkv-pki'))).toBe(true);
  }, 120_000);

  it('refuses a binary it does not know, naming the ones it does', async () => {
    const run = await build(cache, ['kube-proxy']);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("unknown binary 'kube-proxy' (known: etcd kube-apiserver dkv-pki kube-controller-manager kube-scheduler kwok kubectl)");
  }, 30_000);
});
