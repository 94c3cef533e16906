/**
 * promtool and, when asked, the Prometheus server, built from the Go module
 * proxy by test/cluster/prometheus/build.sh into the control plane's cache
 * (a first build takes minutes; afterwards a cache hit). Without a Go
 * toolchain the tests that need them are skipped with one loud line, except
 * under CI=true, where that is a failure.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';

/** Whether a Go toolchain is on the PATH to build the tools with. */
export function hasGo(): boolean {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
}

/**
 * `describe`, or `describe.skip` with one loud line when there is no Go
 * toolchain to build the tools (never under CI=true: there the missing
 * toolchain fails the suite).
 */
export function describeWithPrometheusTools(what: string): jest.Describe {
  if (hasGo() || process.env.CI === 'true') return describe;
  process.stderr.write(`*** no Go toolchain: ${what} SKIPPED (promtool is built from the Go module proxy) ***\n`);
  return describe.skip;
}

/** The directory holding promtool (and prometheus with `withServer`), building what is missing first. */
export function prometheusTools(withServer = false): string {
  const script = join(packageRoot(), 'test', 'cluster', 'prometheus', 'build.sh');
  const out = execFileSync('bash', [script, ...(withServer ? ['prometheus'] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = out.trim().split('\n');
  return lines[lines.length - 1];
}
