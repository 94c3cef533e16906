/**
 * `dkv <command> --help` is how a new user finds a flag: every command
 * prints its own usage on stdout and exits 0, and does nothing else (no
 * output written, no configuration read, no cluster contacted).
 */
import { CLI_TIMEOUT_MS, dkv, readTree, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

const COMMANDS = ['synth', 'validate', 'controller', 'install', 'backup', 'restore', 'export', 'import', 'migrate'] as const;

describe('dkv <command> --help', () => {
  it.each(COMMANDS)('dkv %s --help prints that command\'s usage and exits 0, doing nothing else', (command) => {
    const dir = temporaryDirectory('dkv-help-');
    // KUBECONFIG points nowhere: a controller that tried to connect would fail, not hang.
    const result = dkv([command, '--help'], dir, { KUBECONFIG: `${dir}/missing-kubeconfig` });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^usage: dkv ${command}\\b`));
    expect(result.stdout).not.toMatch(/unknown option/i);
    expect(readTree(dir)).toEqual({});
  }, CLI_TIMEOUT_MS);

  it('names every flag dkv synth takes', () => {
    const { stdout } = dkv(['synth', '--help']);
    for (const flag of ['--specs', '--out', '--config']) expect(stdout).toContain(flag);
  }, CLI_TIMEOUT_MS);

  it('names every flag dkv validate takes', () => {
    const { stdout } = dkv(['validate', '--help']);
    expect(stdout).toContain('--config');
  }, CLI_TIMEOUT_MS);

  it('wins over other flags, so a half-written command line still shows the usage', () => {
    const dir = temporaryDirectory('dkv-help-');
    const result = dkv(['synth', '--specs', 'missing.yaml', '--out', 'out', '--help'], dir);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^usage: dkv synth/);
    expect(readTree(dir)).toEqual({});
  }, CLI_TIMEOUT_MS);
});

describe('dkv with an unknown option', () => {
  it('is a usage error (exit 2) that shows the usage', () => {
    const result = dkv(['synth', '--replicas', '3']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Unknown option \'--replicas\'');
    expect(result.stderr).toContain('usage:');
  }, CLI_TIMEOUT_MS);
});
