/**
 * The CLI keeps compiled code in Node.js's compile cache
 * (cli/compile-cache.ts), or runs without it, silently, where it cannot
 * write one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { removeTemporaryDirectories, ROOT, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

describe('the compile cache', () => {
  /** useCompileCache(directory) in a fresh node, as bin/dkv.js calls it; what it returned, and the process's own output. */
  function enableIn(directory: string, environment: NodeJS.ProcessEnv = {}): { result: unknown; status: number | null; stderr: string } {
    const module = pathToFileURL(join(ROOT, 'lib', 'cli', 'compile-cache.js')).href;
    const script = `const { useCompileCache } = await import(${JSON.stringify(module)}); console.log(JSON.stringify(useCompileCache(${JSON.stringify(directory)})));`;
    const env = { ...process.env, ...environment };
    delete env.NODE_COMPILE_CACHE;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env });
    return { result: JSON.parse(child.stdout || 'null'), status: child.status, stderr: child.stderr };
  }

  it('keeps compiled code in the directory it is given', () => {
    const directory = join(temporaryDirectory(), 'cache');
    expect(enableIn(directory)).toEqual({ result: { enabled: true }, status: 0, stderr: '' });
    expect(readdirSync(directory)).toEqual([expect.stringMatching(new RegExp(`^${process.version}-`))]);
  });

  it('runs without it, silently, where the directory cannot be made', () => {
    const blocker = join(temporaryDirectory(), 'a-file');
    writeFileSync(blocker, '');
    const { result, status, stderr } = enableIn(join(blocker, 'cache'));
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
    expect(result).toMatchObject({ enabled: false, message: expect.stringContaining('not a directory') });
    expect(existsSync(join(blocker, 'cache'))).toBe(false);
  });

  it('is off when NODE_DISABLE_COMPILE_CACHE is set', () => {
    const directory = join(temporaryDirectory(), 'cache');
    expect(enableIn(directory, { NODE_DISABLE_COMPILE_CACHE: '1' })).toMatchObject({ result: { enabled: false }, status: 0, stderr: '' });
    expect(existsSync(directory)).toBe(false);
  });
});
