/**
 * The project's set-up keeps `cdk8s synth` off the network for every user,
 * not only through `npm run synth`: a bare `npx cdk8s synth`, typed in a
 * fresh shell in this directory, asks no registry whether a newer cdk8s-cli
 * (or npm) exists (.npmrc says how). The network guard
 * (test/support/network-guard.ts, preloaded through NODE_OPTIONS into npx
 * and every process it starts) records each attempt to reach anything but
 * loopback and fails it before a packet leaves.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

const GUARD = join(ROOT, 'lib', 'test', 'support', 'network-guard.js');

/** Runs `npx cdk8s synth` as a user in a fresh shell would (no npm_* or CDK8S_* variables, a home with no caches), under the guard. */
function guardedSynth(environment: Record<string, string> = {}): { status: number | null; output: string; files: string[]; attempts: string[] } {
  if (!existsSync(GUARD)) throw new Error(`${GUARD} is missing: run \`npm run build\` first`);
  const home = temporaryDirectory('dkv-offline-home-');
  const out = temporaryDirectory('dkv-offline-out-');
  const log = join(home, 'network-attempts.log');
  // A fresh HOME also means no ~/.cdk8s-cli.version: cdk8s-cli skips its check for 30 minutes after one, which would hide it.
  const env = { PATH: process.env.PATH ?? '', HOME: home, NODE_OPTIONS: `--import=${GUARD}`, DKV_NETWORK_GUARD_LOG: log, ...environment };
  const result = spawnSync('npx', ['cdk8s', 'synth', '--output', out], { cwd: ROOT, env, encoding: 'utf8' });
  if (result.error) throw result.error;
  const attempts = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  return { status: result.status, output: result.stdout + result.stderr, files: readdirSync(out).sort(), attempts };
}

describe('npx cdk8s synth in this project', () => {
  it('reaches nothing but loopback, with no flag and no variable set, and still writes every manifest', () => {
    const { status, output, files, attempts } = guardedSynth();
    expect(attempts).toEqual([]);
    expect(output).not.toMatch(/new version .* of cdk8s-cli/);
    expect(status).toBe(0);
    expect(files).toEqual(readdirSync(join(ROOT, 'dist')).filter((f) => f.endsWith('.k8s.yaml')).sort());
  }, 60_000);

  it('does check for an upgrade when a user asks for it, and the guard sees that: an empty record means no attempt was made', () => {
    const { attempts } = guardedSynth({ CDK8S_CHECK_UPGRADE: 'true' });
    expect(attempts).toEqual([expect.stringMatching(/_loadurl\.mjs http:\/\/registry\.npmjs\.org\/cdk8s-cli\/latest: connect to registry\.npmjs\.org$/)]);
  }, 60_000);
});
