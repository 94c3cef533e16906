/**
 * What `dkv backup` loads before it asks a member for the snapshot: every
 * module evaluated at its start is time the backup window pays on each run
 * (docs/performance.md, "Backup and restore"). The modules are loaded in a
 * process of their own, as the CronJob's container starts them.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../../api/package-root.js';

/** The built-in modules Node.js loaded once `module` was imported, in a fresh process. */
function builtinsLoadedBy(module: string): string[] {
  const url = pathToFileURL(join(packageRoot(), 'lib', module)).href;
  const script = `await import(${JSON.stringify(url)}); process.stdout.write(JSON.stringify(process.moduleLoadList));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
}

describe('dkv backup\'s start', () => {
  it('does not load undici, Node\'s fetch, which no backup step calls', () => {
    const loaded = builtinsLoadedBy('cli/backup-command.js');
    // The check can fail: the command's modules did load (node:https, for the members' TLS), and undici would show as these.
    expect(loaded).toContain('NativeModule https');
    expect(loaded.filter((m) => m.includes('undici'))).toEqual([]);
  });
});
