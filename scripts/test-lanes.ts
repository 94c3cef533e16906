/**
 * `npm test`: the whole suite in two lanes, with the components it runs built
 * in the background meanwhile.
 *
 * 1. test/cluster/build-all.sh starts at low CPU priority: the control plane,
 *    then every other component, in the order the integration lane needs them.
 * 2. The fast lane runs: every file that needs nothing built and no control
 *    plane (test/lanes/component-needs.ts decides from each file's imports).
 * 3. Beside it, the integration lane, in two shards side by side and then
 *    the real node's files alone (test/lanes/integration-shards.ts): in each,
 *    the control plane's files first, then by the components each needs;
 *    each file first waits for its components' builds
 *    (test/lanes/await-components.ts), a cache hit once built.
 *
 * Ends with the lanes' totals in DKV_TEST_SUMMARY (for .ci/run), the 20 files
 * that took longest with their share of the run, and each component's build
 * time. With arguments (`npm test -- test/kube`) it is plain jest on the
 * integration configuration, as before. `--lane fast` runs the fast lane only
 * (`npm run test:unit`).
 *
 * DKV_TEST_BUSY_CORE=1 also keeps one core busy for the whole run (a bounded
 * burner pinned to the last core, ended at exit): the suite must pass on a
 * loaded machine, since its tests assert order and mechanism, not seconds.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { COMPONENT_ORDER, ComponentNeeds, packageRoot } from '../test/lanes/component-needs.js';
import { planIntegration } from '../test/lanes/integration-shards.js';
import type { TimingFigure } from '../test/support/timing-figures.js';

interface FileTime { readonly path: string; readonly ms: number; readonly failed: number }
interface Summary { passed: number; failed: number; skipped: number; files: FileTime[] }

const root = packageRoot(join(packageRoot(), 'test', 'lanes'));
const jestBin = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
/** Where the tests' timing figures go (test/support/timing-figures.ts), one JSON line each. */
const timingFigures = join(mkdtempSync(join(tmpdir(), 'dkv-timing-')), 'figures.jsonl');
/** The burner's own bound: it stops by itself even if this process is killed without a chance to end it. */
const BURNER_MAX_MS = 3 * 60 * 60_000;

function allTestFiles(): string[] {
  const listed = spawnSync(process.execPath, ['--experimental-vm-modules', jestBin, '--listTests'], { cwd: root, encoding: 'utf8', env: { ...process.env, DKV_TEST_LANE: 'fast' } });
  if (listed.status !== 0) throw new Error(`jest --listTests failed:\n${listed.stderr}`);
  return listed.stdout.split('\n').filter((line) => line.endsWith('.test.ts')).map((f) => relative(root, f)).sort();
}

/** Runs one lane's jest; its output goes to the terminal, or to `logFile` when another lane runs beside it. */
function runJest(lane: 'fast' | 'integration', args: readonly string[], logFile?: string): Promise<Summary> {
  const dir = mkdtempSync(join(tmpdir(), `dkv-${lane}-lane-`));
  const summaryFile = join(dir, 'summary.json');
  const env = { ...process.env, DKV_TEST_SUMMARY: summaryFile, DKV_TEST_LANE: lane, DKV_TIMING_FIGURES: timingFigures };
  const log = logFile === undefined ? undefined : openSync(logFile, 'w');
  // --forceExit: a file that fails part-way can leave a handle open (a member's socket, a timer), and jest then waits
  // for it after the run, without end: a busy-core run hung so for 20 minutes past its last test. Its summary is written first.
  const child = spawn(process.execPath, ['--experimental-vm-modules', jestBin, '--forceExit', ...args], { cwd: root, stdio: log === undefined ? 'inherit' : ['ignore', log, log], env });
  if (log !== undefined) closeSync(log);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      let summary: Summary;
      try {
        summary = JSON.parse(readFileSync(summaryFile, 'utf8'));
      } catch {
        summary = { passed: 0, failed: 1, skipped: 0, files: [] }; // jest ended without a summary: a failure
      }
      if (code !== 0 && summary.failed === 0) summary.failed = 1;
      rmSync(dir, { recursive: true, force: true });
      resolve(summary);
    });
  });
}

function startBurner(): ChildProcess | undefined {
  if (process.env.DKV_TEST_BUSY_CORE !== '1') return undefined;
  const core = String(availableParallelism() - 1);
  const loop = `const end = Date.now() + ${BURNER_MAX_MS}; let x = 0; while (Date.now() < end) x = (x + 1) % 1e9;`;
  const burner = spawn('taskset', ['-c', core, process.execPath, '-e', loop], { stdio: 'ignore' });
  burner.on('error', () => undefined);
  process.stderr.write(`test-lanes: DKV_TEST_BUSY_CORE=1: a busy process (pid ${burner.pid}) pinned to core ${core} for the whole run\n`);
  return burner;
}

function startBuildAll(): { child: ChildProcess; lines: string[]; done: Promise<number> } | undefined {
  if (process.env.DKV_SKIP_CLUSTER === '1' && process.env.CI !== 'true') return undefined;
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return undefined; // global setup says so loudly
  const child = spawn('nice', ['-n', '10', 'bash', join(root, 'test', 'cluster', 'build-all.sh')], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  const lines: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
  const done = new Promise<number>((resolve) => {
    child.on('error', () => resolve(1));
    child.on('close', (code) => resolve(code ?? 1));
  });
  return { child, lines, done };
}

const EMPTY: Summary = { passed: 0, failed: 0, skipped: 0, files: [] };

/**
 * A file whose controllers run on leases of seconds: on a machine two shards keep busy, a renewal starved past
 * its deadline makes a replica exit as it must (a CI run with a busy core saw all three sharded replicas go),
 * so these run with the real node's files, alone.
 */
const SHORT_LEASES = /--lease-duration-ms|leaseDurationMs|\bLEASE_MS\b/;

/** A file's weight for the shards: its size, three times over when its first line says it is slow. */
function weightOf(file: string): number {
  const text = readFileSync(join(root, file), 'utf8');
  return text.length * (SLOW_REASON.test(text.split('\n', 1)[0]) ? 3 : 1);
}

/** A lane's output kept apart while another wrote to the terminal: whole if anything in it failed, else its last lines. */
function printKeptOutput(what: string, logFile: string, summary: Summary): void {
  const output = readFileSync(logFile, 'utf8');
  process.stdout.write(summary.failed > 0 ? `\ntest-lanes: ${what}'s whole output (something failed there or beside it):\n${output}\n`
    : `\ntest-lanes: ${what}'s closing lines:\n${output.trimEnd().split('\n').slice(-6).join('\n')}\n`);
}

function add(a: Summary, b: Summary): Summary {
  return { passed: a.passed + b.passed, failed: a.failed + b.failed, skipped: a.skipped + b.skipped, files: [...a.files, ...b.files] };
}

/** A file that takes over a minute says why in its first line: `// Slow: <why>`. */
const SLOW_MS = 60_000;
const SLOW_REASON = /^\/\/ Slow: \S/;

function printSlowest(summary: Summary, totalMs: number): void {
  // Reported, never failed: how long a file takes is the machine's load as much as the file's.
  const unexplained = summary.files.filter((f) => f.ms > SLOW_MS && !SLOW_REASON.test(readFileSync(join(root, f.path), 'utf8').split('\n', 1)[0]));
  for (const f of unexplained) process.stdout.write(`test-lanes: ${f.path} took ${(f.ms / 1000).toFixed(0)} s and its first line does not say why (// Slow: ...)\n`);
  const slowest = [...summary.files].sort((a, b) => b.ms - a.ms).slice(0, 20);
  process.stdout.write(`\ntest-lanes: the 20 slowest files of ${summary.files.length} (share of the run's ${(totalMs / 1000).toFixed(0)} s; the two lanes run side by side):\n`);
  for (const f of slowest) process.stdout.write(`  ${(f.ms / 1000).toFixed(1).padStart(7)} s  ${((100 * f.ms) / totalMs).toFixed(1).padStart(5)} %  ${f.path}${f.failed ? '  (failed)' : ''}\n`);
}

function printTimingFigures(): void {
  let lines: string[];
  try {
    lines = readFileSync(timingFigures, 'utf8').split('\n').filter(Boolean);
  } catch {
    return; // no test reported one
  }
  process.stdout.write(`\ntest-lanes: timing figures (not asserted: the tests assert order and mechanism; test/support/timing-figures.ts):\n`);
  for (const line of lines) {
    const f = JSON.parse(line) as TimingFigure;
    process.stdout.write(`  ${String(f.ms).padStart(7)} ms  bound ${String(f.boundMs).padStart(7)} ms${f.ms > f.boundMs ? '  OVER' : '      '}  ${f.what} (${f.bound})\n`);
  }
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const fastOnly = args[0] === '--lane' && args[1] === 'fast';
  const passThrough = fastOnly ? args.slice(2) : args;
  const started = Date.now();
  const burner = startBurner();
  try {
    if (!fastOnly && passThrough.length > 0) {
      const failed = (await runJest('integration', passThrough)).failed;
      printTimingFigures();
      return failed > 0 ? 1 : 0;
    }

    const needs = new ComponentNeeds(root);
    const files = allTestFiles();
    const fast = files.filter((f) => needs.rank(f) < 0);
    const integration = files.filter((f) => needs.rank(f) >= 0);
    const build = fastOnly ? undefined : startBuildAll();
    process.stderr.write(`test-lanes: ${fast.length} files in the fast lane, ${integration.length} in the integration lane${build ? '; building the components in the background (test/cluster/build-all.sh)' : ''}\n`);

    if (fastOnly) {
      const summary = await runJest('fast', ['--runTestsByPath', ...passThrough, ...fast]);
      printSlowest(summary, Date.now() - started);
      return summary.failed > 0 ? 1 : 0;
    }
    // Both lanes at once: the integration lane waits in its global setup for the control plane's build (cold) or
    // starts at once (warm), and the fast lane needs neither. The fast lane's output is kept apart and shown at the
    // end, whole if it failed, so the two do not interleave.
    const fastLog = join(dirname(timingFigures), 'fast-lane.log');
    let fastMs = 0;
    const fastLane = runJest('fast', ['--runTestsByPath', ...fast], fastLog).then((s) => {
      fastMs = Date.now() - started;
      process.stderr.write(`test-lanes: fast lane done in ${(fastMs / 1000).toFixed(1)} s: ${s.passed} passed, ${s.failed} failed; components built so far: ${build?.lines.join(', ') || 'none'}\n`);
      return s;
    });
    // The integration lane in two shards side by side, then the files that must run alone (integration-shards.ts).
    const plan = planIntegration(integration, weightOf, (f) => needs.rank(f) >= COMPONENT_ORDER.indexOf('real-node') || SHORT_LEASES.test(readFileSync(join(root, f), 'utf8')));
    process.stderr.write(`test-lanes: integration shards of ${plan.shards[0].length} and ${plan.shards[1].length} files side by side, then ${plan.alone.length} alone (the real node's, and those on leases of seconds)\n`);
    const secondLog = join(dirname(timingFigures), 'integration-shard-2.log');
    const shard = (files: readonly string[], log?: string) => (files.length > 0 ? runJest('integration', ['--runTestsByPath', ...files], log) : Promise.resolve(EMPTY));
    const shards = Promise.all([shard(plan.shards[0]), shard(plan.shards[1], secondLog)]).then(async ([first, second]) => add(add(first, second), await shard(plan.alone)));
    const [fastSummary, integrationSummary] = await Promise.all([fastLane, shards]);
    printKeptOutput('the fast lane', fastLog, fastSummary);
    if (plan.shards[1].length > 0) printKeptOutput('the second integration shard', secondLog, integrationSummary);
    const summary = add(fastSummary, integrationSummary);

    if (build) {
      // Every component was asked for by some file by now; one still building is one no file needed: end it.
      if (build.child.exitCode === null) process.kill(-build.child.pid!, 'SIGTERM');
      const code = await build.done;
      process.stdout.write(`\ntest-lanes: component builds (test/cluster/build-all.sh, in the background): ${build.lines.join(', ') || 'none finished'}\n`);
      if (code !== 0 && build.lines.some((line) => line.endsWith('FAILED')) && process.env.CI === 'true') summary.failed += 1;
    }
    const totalMs = Date.now() - started;
    printTimingFigures();
    printSlowest(summary, totalMs);
    process.stdout.write(`test-lanes: ${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped in ${(totalMs / 1000).toFixed(0)} s (fast lane ${(fastMs / 1000).toFixed(0)} s)\n`);
    if (process.env.DKV_TEST_SUMMARY) writeFileSync(process.env.DKV_TEST_SUMMARY, JSON.stringify(summary));
    return summary.failed > 0 ? 1 : 0;
  } finally {
    burner?.kill('SIGKILL');
    rmSync(dirname(timingFigures), { recursive: true, force: true });
  }
}

process.exitCode = await main();
