/**
 * The compiled `dkv` CLI in a process of its own, as a container runs it:
 * only PATH and HOME from the test's environment, the rest as given.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';

export interface CliRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `started` gets the process, for a test that kills it part-way. */
export function dkv(args: string[], env: NodeJS.ProcessEnv, started?: (child: ChildProcess) => void): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(packageRoot(), 'bin', 'dkv.js'), ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
    started?.(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
