/**
 * jest setupFilesAfterEnv of the integration lane: before a file's own hooks,
 * wait until every component it needs is built. Each build script is a cache
 * hit once built, and while test/cluster/build-all.sh is still building that
 * component the script waits on its lock, then finds it built: so a file never
 * starts a hook whose timeout a cold build would exceed. Prints what it waited.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { BUILD_COMMANDS, ComponentNeeds, packageRoot } from './component-needs.js';

/** A cold build of everything on 2 cores takes about 25 minutes; this is a bound on a stuck build, not a figure. */
const BUILD_WAIT_MS = 60 * 60_000;

function build(script: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${script} ${args.join(' ')} failed with exit code ${code}:\n${stderr}`))));
  });
}

const testPath = expect.getState().testPath;
// The control plane's core is global setup's; a Go toolchain is needed for the rest (global setup already said so loudly).
const needs = testPath && process.env.DKV_TEST_KUBECONFIG ? new ComponentNeeds().of(testPath).filter((c) => c !== 'control-plane') : [];

if (needs.length > 0) {
  beforeAll(async () => {
    const cluster = join(packageRoot(), 'test', 'cluster');
    for (const component of needs) {
      const started = Date.now();
      const [script, ...args] = BUILD_COMMANDS[component];
      await build(join(cluster, script), args);
      const waited = Date.now() - started;
      if (waited > 2000) process.stderr.write(`await-components: ${component} was built after ${Math.round(waited / 1000)} s of waiting (cold cache)\n`);
    }
  }, BUILD_WAIT_MS);
}
