/**
 * A kubeconfig the user named that does not exist, or one kubectl's rules
 * find but cannot use, is a mistake in the user's input: every command that
 * reaches a cluster says so as the other input errors are said (the file
 * first, then what is wrong, then the count; exit 1), never as an internal
 * error, and touches nothing.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_TIMEOUT_MS, dkv, ROOT, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

describe('a kubeconfig that cannot be used', () => {
  it.each([
    ['controller', ['controller', '--kubeconfig', '/nonexistent'], '1 problem(s) found'],
    ['export', ['export', '--out', 'out', '--kubeconfig', '/nonexistent'], '1 problem(s) found'],
    ['migrate', ['migrate', '--kubeconfig', '/nonexistent'], '1 problem(s) found'],
    ['import', ['import', '--from', join(ROOT, 'examples'), '--kubeconfig', '/nonexistent'], '1 problem(s) found; nothing was written'],
  ])('dkv %s --kubeconfig /nonexistent names the file as an input error (exit 1)', (_, args, count) => {
    const dir = temporaryDirectory('dkv-kubeconfig-');
    const result = dkv(args, dir);
    expect(result.stderr).toBe(`/nonexistent: kubeconfig file does not exist\n${count}\n`);
    expect(result.status).toBe(1);
  }, CLI_TIMEOUT_MS);

  it('is an input error too when $KUBECONFIG names only files that do not exist', () => {
    const dir = temporaryDirectory('dkv-kubeconfig-');
    const result = dkv(['migrate'], dir, { KUBECONFIG: `${dir}/a:${dir}/b` });
    expect(result.stderr).toBe(`${dir}/a:${dir}/b: no kubeconfig found: none of the files $KUBECONFIG names exists\n1 problem(s) found\n`);
    expect(result.status).toBe(1);
  }, CLI_TIMEOUT_MS);

  it('is an input error when the file exists but names a context it does not hold, or is not YAML', () => {
    const dir = temporaryDirectory('dkv-kubeconfig-');
    const missingContext = join(dir, 'missing-context');
    writeFileSync(missingContext, 'current-context: nope\ncontexts: []\n');
    expect(dkv(['migrate', '--kubeconfig', missingContext], dir)).toMatchObject({ status: 1, stderr: `${missingContext}: kubeconfig: context "nope" not found\n1 problem(s) found\n` });
    const broken = join(dir, 'broken');
    writeFileSync(broken, 'clusters: [\n');
    const result = dkv(['migrate', '--kubeconfig', broken], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^${broken}: not a readable kubeconfig: .+\\n1 problem\\(s\\) found\\n$`));
  }, CLI_TIMEOUT_MS);
});
