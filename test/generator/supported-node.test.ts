/**
 * dkv runs on Node.js 24 or later. A user who starts it on an older
 * Node.js (Node 20 reached its end of life in April 2026) gets one line
 * that says what is needed and what they have, and exit 2, before any of
 * the CLI loads: not a stack trace from whichever API is missing first.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { MINIMUM_NODE_MAJOR, unsupportedNodeMessage } from '../../cli/supported-node.js';
import { CLI_TIMEOUT_MS, readTree, removeTemporaryDirectories, ROOT, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

const DKV_BIN = join(ROOT, 'bin', 'dkv.js');

describe('the Node.js version dkv needs', () => {
  it('is 24, as package.json\'s engines says', () => {
    expect(MINIMUM_NODE_MAJOR).toBe(24);
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines).toEqual({ node: `>=${MINIMUM_NODE_MAJOR}` });
  });

  it('turns away Node.js 20 and 23 with one line naming both versions and where to read on', () => {
    expect(unsupportedNodeMessage('v20.20.2')).toBe('dkv: needs Node.js 24 or later (this is Node.js 20.20.2); see README "Set-up"');
    expect(unsupportedNodeMessage('v23.11.1')).toBe('dkv: needs Node.js 24 or later (this is Node.js 23.11.1); see README "Set-up"');
  });

  it('lets Node.js 24 and every later line through', () => {
    for (const version of ['v24.0.0', 'v24.21.0', 'v25.2.1', 'v26.10.0', 'v100.0.0']) expect({ version, message: unsupportedNodeMessage(version) }).toEqual({ version, message: undefined });
  });

  it('is checked by a module that imports nothing, so it loads on whatever Node.js the user has', () => {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, 'cli', 'supported-node.ts'), 'utf8'), true, true);
    expect(importedFiles).toEqual([]);
  });
});

describe('dkv started on an older Node.js', () => {
  /** dkv synth in an empty directory: on a supported runtime it would write dist/ there. */
  function synthWith(node: string, nodeFlags: readonly string[] = []): { status: number | null; stdout: string; stderr: string; written: Record<string, Buffer> } {
    const dir = temporaryDirectory('dkv-old-node-');
    const env = { ...process.env };
    delete env.DKV_DEBUG;
    const result = spawnSync(node, [...nodeFlags, DKV_BIN, 'synth'], { cwd: dir, encoding: 'utf8', env });
    if (result.error) throw result.error;
    return { status: result.status, stdout: result.stdout, stderr: result.stderr, written: readTree(dir) };
  }

  it('says which Node.js it needs and exits 2, before the CLI loads (this Node.js made to report 20.20.2)', () => {
    // process.version is what dkv reads; the CLI, had it loaded, would synthesize into the directory.
    const result = synthWith(process.execPath, [`--import=data:text/javascript,Object.defineProperty(process,'version',{value:'v20.20.2'})`]);
    expect(result).toEqual({ status: 2, stdout: '', stderr: 'dkv: needs Node.js 24 or later (this is Node.js 20.20.2); see README "Set-up"\n', written: {} });
  }, CLI_TIMEOUT_MS);

  // A real older Node.js where the machine has one (Debian's /usr/bin/node is 20 on the CI machine).
  const olderNode = ['/usr/bin/node', '/usr/local/bin/node', '/bin/node'].find((path) => {
    if (!existsSync(path)) return false;
    const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
    return Number(/^v(\d+)\./.exec(version)?.[1]) < MINIMUM_NODE_MAJOR;
  });
  const onOlderNode = olderNode === undefined ? it.skip : it;

  onOlderNode(`says the same on a real one (${olderNode ?? 'none on this machine'}), in one line with no stack trace`, () => {
    const version = spawnSync(olderNode!, ['--version'], { encoding: 'utf8' }).stdout.trim();
    const result = synthWith(olderNode!);
    expect(result).toEqual({ status: 2, stdout: '', stderr: `dkv: needs Node.js 24 or later (this is Node.js ${version.slice(1)}); see README "Set-up"\n`, written: {} });
  }, CLI_TIMEOUT_MS);
});
