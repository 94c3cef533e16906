/**
 * How `dkv synth` puts its files in place (cli/manifest-staging.ts): each is
 * written to a hidden temporary file while the rest still renders, and no
 * reader of the directory sees a change until every file is staged and the
 * run commits; a run that fails or is refused leaves the directory as it was.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ManifestStaging } from '../../cli/manifest-staging.js';
import { readTree, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

const NO_INPUTS = { files: [], directories: [] };
const visible = (dir: string) => Object.keys(readTree(dir)).filter((name) => !name.startsWith('.')).sort();
const hidden = (dir: string) => Object.keys(readTree(dir)).filter((name) => name.startsWith('.'));

describe('staging the manifests of one dkv synth run', () => {
  it('shows nothing until commit, then every file at once with no temporary file left', async () => {
    const out = join(temporaryDirectory('dkv-staging-'), 'out');
    const staging = new ManifestStaging(out);
    staging.stage('a.k8s.yaml', 'kind: A\n');
    staging.stage('b.k8s.yaml', 'kind: B\n');
    await new Promise((resolve) => setTimeout(resolve, 50)); // the staged writes complete meanwhile
    expect(visible(out)).toEqual([]);
    expect(hidden(out)).toHaveLength(2);

    expect(await staging.commit(NO_INPUTS)).toEqual({ written: 2, removed: [] });
    expect(visible(out)).toEqual(['a.k8s.yaml', 'b.k8s.yaml']);
    expect(hidden(out)).toEqual([]);
    expect(readFileSync(join(out, 'b.k8s.yaml'), 'utf8')).toBe('kind: B\n');
  });

  it('leaves the directory as it was when the run is discarded after staging', async () => {
    const out = temporaryDirectory('dkv-staging-');
    writeFileSync(join(out, 'a.k8s.yaml'), 'kind: Old\n');
    const before = readTree(out);
    const staging = new ManifestStaging(out);
    staging.stage('a.k8s.yaml', 'kind: New\n');
    staging.stage('b.k8s.yaml', 'kind: B\n');
    await staging.discard();
    expect(readTree(out)).toEqual(before);
  });

  it('renames nothing and removes every temporary file when one write fails, and throws that failure', async () => {
    const out = temporaryDirectory('dkv-staging-');
    writeFileSync(join(out, 'a.k8s.yaml'), 'kind: Old\n');
    const before = readTree(out);
    const staging = new ManifestStaging(out);
    staging.stage('a.k8s.yaml', 'kind: New\n');
    staging.stage('missing/b.k8s.yaml', 'kind: B\n'); // its temporary file's directory does not exist
    staging.stage('c.k8s.yaml', 'kind: C\n');
    await expect(staging.commit(NO_INPUTS)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(readTree(out)).toEqual(before);
  });

  it('leaves a file that already holds its content untouched (same inode and time), and replaces one that does not', async () => {
    const out = temporaryDirectory('dkv-staging-');
    mkdirSync(out, { recursive: true });
    const first = new ManifestStaging(out);
    first.stage('same.k8s.yaml', 'kind: Same\n');
    first.stage('changed.k8s.yaml', 'kind: Before\n');
    await first.commit(NO_INPUTS);
    const same = statSync(join(out, 'same.k8s.yaml'));
    const changed = statSync(join(out, 'changed.k8s.yaml'));

    const second = new ManifestStaging(out);
    second.stage('same.k8s.yaml', 'kind: Same\n');
    second.stage('changed.k8s.yaml', 'kind: After\n');
    await second.commit(NO_INPUTS);
    expect(statSync(join(out, 'same.k8s.yaml'))).toMatchObject({ ino: same.ino, mtimeMs: same.mtimeMs });
    expect(statSync(join(out, 'changed.k8s.yaml')).ino).not.toBe(changed.ino);
    expect(readFileSync(join(out, 'changed.k8s.yaml'), 'utf8')).toBe('kind: After\n');
  });
});
