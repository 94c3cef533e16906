/**
 * test/cluster/node/oci-image.sh: the images the real node runs are assembled
 * here (no registry is reachable), so what the script writes is what the pods
 * get: the reference containerd imports it under, the config (user,
 * entrypoint, environment, working directory), and the files with their
 * modes. The same inputs must give the same digests, or every run would
 * import a new image.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assembleImage } from '../cluster/real-node.js';

const tar = (archive: string, ...args: string[]): string => {
  const r = spawnSync('tar', ['-xOf', archive, ...args], { encoding: 'latin1', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`tar ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

describe('oci-image.sh', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-oci-image-'));
    writeFileSync(join(dir, 'tool'), '#!/bin/sh\necho tool\n');
    chmodSync(join(dir, 'tool'), 0o700);
    writeFileSync(join(dir, 'conf'), 'setting=1\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const spec = () => ({
    name: 'registry.example/tool:1.0',
    files: [`${join(dir, 'tool')}:/usr/local/bin/tool`, `${join(dir, 'conf')}:/etc/tool/conf:0644`],
    dirs: ['/tmp:1777'],
    user: '65532:65532',
    entrypoint: '/usr/local/bin/tool',
    cmd: ['--serve'],
    workdir: '/',
    env: ['PATH=/usr/local/bin:/usr/bin:/bin'],
  });

  test('writes an OCI layout that names the image and carries its config and files', () => {
    const archive = assembleImage(join(dir, 'a.tar'), spec());
    const index = JSON.parse(tar(archive, 'index.json'));
    expect(index.manifests).toHaveLength(1);
    expect(index.manifests[0].annotations).toEqual({ 'io.containerd.image.name': 'registry.example/tool:1.0', 'org.opencontainers.image.ref.name': 'registry.example/tool:1.0' });
    const blob = (digest: string) => tar(archive, `blobs/sha256/${digest.replace('sha256:', '')}`);
    const manifest = JSON.parse(blob(index.manifests[0].digest));
    const config = JSON.parse(blob(manifest.config.digest));
    expect(config.config).toEqual({ User: '65532:65532', Entrypoint: ['/usr/local/bin/tool'], Cmd: ['--serve'], WorkingDir: '/', Env: ['PATH=/usr/local/bin:/usr/bin:/bin'] });
    expect(config.rootfs.diff_ids).toEqual([manifest.layers[0].digest]);

    writeFileSync(join(dir, 'layer.tar'), Buffer.from(blob(manifest.layers[0].digest), 'latin1'));
    const listing = spawnSync('tar', ['--numeric-owner', '-tvf', join(dir, 'layer.tar')], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)
      .map((l) => { const f = l.split(/\s+/); return `${f[0]} ${f[1]} ${f[5]}`; });
    expect(listing).toEqual([
      'drwxr-xr-x 0/0 etc/', 'drwxr-xr-x 0/0 etc/tool/', '-rw-r--r-- 0/0 etc/tool/conf',
      'drwxrwxrwt 0/0 tmp/',
      'drwxr-xr-x 0/0 usr/', 'drwxr-xr-x 0/0 usr/local/', 'drwxr-xr-x 0/0 usr/local/bin/', '-rwxr-xr-x 0/0 usr/local/bin/tool',
    ]);
    expect(readFileSync(join(dir, 'layer.tar')).includes('setting=1')).toBe(true);
  });

  test('the same inputs give the same archive, byte for byte', () => {
    const first = readFileSync(assembleImage(join(dir, 'b.tar'), spec()));
    const second = readFileSync(assembleImage(join(dir, 'c.tar'), spec()));
    expect(second.equals(first)).toBe(true);
  });

  test('copies a --tree whole with its modes, and takes an entrypoint of several arguments (the project\'s image: node /app/bin/dkv.js)', () => {
    mkdirSync(join(dir, 'pkg', 'lib'), { recursive: true });
    writeFileSync(join(dir, 'pkg', 'package.json'), '{}');
    writeFileSync(join(dir, 'pkg', 'lib', 'run.js'), 'run()');
    chmodSync(join(dir, 'pkg', 'lib', 'run.js'), 0o755);
    const archive = assembleImage(join(dir, 'd.tar'), { name: 'registry.example/app:1', trees: [`${join(dir, 'pkg')}:/app/node_modules/pkg`], entrypoint: ['node', '/app/bin/app.js'] });
    const index = JSON.parse(tar(archive, 'index.json'));
    const blob = (digest: string) => tar(archive, `blobs/sha256/${digest.replace('sha256:', '')}`);
    const manifest = JSON.parse(blob(index.manifests[0].digest));
    expect(JSON.parse(blob(manifest.config.digest)).config.Entrypoint).toEqual(['node', '/app/bin/app.js']);
    writeFileSync(join(dir, 'layer-d.tar'), Buffer.from(blob(manifest.layers[0].digest), 'latin1'));
    const listing = spawnSync('tar', ['--numeric-owner', '-tvf', join(dir, 'layer-d.tar')], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)
      .map((l) => { const f = l.split(/\s+/); return `${f[0]} ${f[1]} ${f[5]}`; });
    expect(listing).toEqual([
      'drwxr-xr-x 0/0 app/', 'drwxr-xr-x 0/0 app/node_modules/', 'drwxr-xr-x 0/0 app/node_modules/pkg/',
      'drwxr-xr-x 0/0 app/node_modules/pkg/lib/', '-rwxr-xr-x 0/0 app/node_modules/pkg/lib/run.js', '-rw-r--r-- 0/0 app/node_modules/pkg/package.json',
    ]);
  });
});
