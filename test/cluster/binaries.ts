/**
 * Where the test control plane's binaries come from: build.sh, which builds
 * each one from the Go module proxy into a cache on first use and finds it
 * there afterwards (or links envtest's binaries). A run builds only what it
 * needs: every control plane runs the core, and the rest (the `withNodes`
 * components, kubectl) is built when a test asks for it, usually already
 * done by the background build that jest's global setup starts once the
 * core is ready. build.sh builds each binary once however many runs ask:
 * a second asker waits for the first's build of that binary.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** test/cluster in the source tree, whether running from source or from lib/. */
const clusterDir = here.includes(`${join('lib', 'test')}`) ? join(here, '..', '..', '..', 'test', 'cluster') : here;
const BUILD_SCRIPT = join(clusterDir, 'build.sh');

/** What every control plane runs: built before the first test can start. */
export const CORE_BINARIES = ['etcd', 'kube-apiserver', 'dkv-pki'] as const;
/** What `withNodes` runs beside the core (kwok comes with its Stage files). */
export const NODE_BINARIES = ['kube-controller-manager', 'kube-scheduler', 'kwok'] as const;
/** Everything build.sh builds besides the core, in the order a later test most likely needs it. */
export const LATER_BINARIES = [...NODE_BINARIES, 'kubectl'] as const;

export type Binary = (typeof CORE_BINARIES)[number] | (typeof LATER_BINARIES)[number];

/**
 * What a hook that starts a control plane with nodes, or runs kubectl,
 * allows for a first build of those binaries (about 2.5 minutes on 2 cores
 * with a cold Go build cache, while tests run beside it; nothing once built).
 */
export const LATER_BINARIES_BUILD_MS = 5 * 60_000;

export class ControlPlaneUnavailable extends Error {}

function hasExternalBinaries(): boolean {
  return Boolean(process.env.KUBEBUILDER_ASSETS || (process.env.TEST_ASSET_KUBE_APISERVER && process.env.TEST_ASSET_ETCD));
}

/** Thrown in the fast lane (test/lanes/fast-lane-guard.ts), where nothing is built: the asking file belongs in the integration lane. */
export function refuseInFastLane(what: string): void {
  if (process.env.DKV_FAST_LANE === '1') {
    throw new Error(`${what} in the fast lane, where nothing is built and no control plane runs: test/lanes/component-needs.ts's markers put this file there; add the marker it reaches this by`);
  }
}

function checkToolchain(): void {
  refuseInFastLane('a built binary was asked for');
  if (!hasExternalBinaries() && spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) {
    throw new ControlPlaneUnavailable('no Go toolchain and no KUBEBUILDER_ASSETS / TEST_ASSET_KUBE_APISERVER+TEST_ASSET_ETCD: cannot build or find kube-apiserver and etcd');
  }
}

/** build.sh's answer: the directory is the last line it prints. */
function directoryFrom(stdout: string): string {
  const lines = stdout.trim().split('\n');
  const dir = lines[lines.length - 1];
  // An empty answer would make join(dir, 'kubectl') a bare name, found on the PATH: some other kubectl.
  if (!isAbsolute(dir)) throw new ControlPlaneUnavailable(`test/cluster/build.sh printed no binary directory (stdout: ${JSON.stringify(stdout.slice(-200))})`);
  return dir;
}

/**
 * The directory holding `binaries` (all of them when none are named, as
 * build.sh with no arguments), building what is missing first; blocks until
 * done. Throws ControlPlaneUnavailable when there is neither a Go toolchain
 * nor binaries, or the build fails.
 */
export function locateBinaries(binaries: readonly Binary[] = []): string {
  checkToolchain();
  const result = spawnSync('bash', [BUILD_SCRIPT, ...binaries], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
  if (result.status !== 0) throw new ControlPlaneUnavailable(`test/cluster/build.sh ${binaries.join(' ')} failed with exit code ${result.status}`);
  return directoryFrom(result.stdout);
}

/** locateBinaries without blocking the event loop: for a test that needs more than the core, while its control plane starts. */
export function buildBinaries(binaries: readonly Binary[]): Promise<string> {
  checkToolchain();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [BUILD_SCRIPT, ...binaries], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    // 'close', not 'exit': stdout may still hold the last line when the process has exited.
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new ControlPlaneUnavailable(`test/cluster/build.sh ${binaries.join(' ')} failed with exit code ${code}`));
        return;
      }
      try {
        resolve(directoryFrom(stdout));
      } catch (e) {
        reject(e);
      }
    });
  });
}

export interface BackgroundBuild {
  /** Its output (build.sh's progress), in a file: a test that needs one of its binaries reports its own build's failure. */
  readonly logFile: string;
  /** Stops the build if it still runs (nothing half-built stays: build.sh installs a binary only once it is complete). */
  stop(): Promise<void>;
}

/**
 * Starts building `binaries` at low CPU priority and returns at once. Its
 * own process group, so stop() ends `go build` with it; not waited for, so
 * it never holds a run open.
 */
export function startBackgroundBuild(binaries: readonly Binary[], env: NodeJS.ProcessEnv = process.env): BackgroundBuild {
  const logFile = join(tmpdir(), `dkv-control-plane-build-${process.pid}.log`);
  const fd = openSync(logFile, 'a');
  const child: ChildProcess = spawn('nice', ['-n', '10', 'bash', BUILD_SCRIPT, ...binaries], { stdio: ['ignore', fd, fd], detached: true, env });
  closeSync(fd);
  child.on('error', () => undefined); // no `nice`: then nothing builds ahead, and each test builds what it needs
  child.unref();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    logFile,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      child.ref(); // so that its exit is seen before the run ends
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        return; // already gone
      }
      await exited;
    },
  };
}
