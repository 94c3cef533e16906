/**
 * test/cluster/dkv-image.ts: the real node runs the project's image as
 * assembled from the files the Dockerfile's runtime stage copies, with the
 * config that stage sets. Read from the Dockerfile itself, so the two cannot
 * drift: these tests fail when the Dockerfile gains an instruction or a COPY
 * the assembly cannot map, or when what it maps stops being what the
 * Dockerfile says (user, entrypoint, PATH, the `dkv` launcher, production
 * dependencies only). No node needed: in the default suite.
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { dkvImageSpec, readDockerfileRuntime } from '../cluster/dkv-image.js';

const root = packageRoot();
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
/** Where dkvImageSpec writes the launcher. */
const scratch = join(tmpdir(), `dkv-image-test-${process.pid}`);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the project\'s image on the real node, from the Dockerfile', () => {
  test('the runtime stage\'s config is read as the Dockerfile sets it: user 65532, node /app/bin/dkv.js, /app, Node.js on the PATH', () => {
    const runtime = readDockerfileRuntime(dockerfile);
    expect(runtime.user).toBe('65532:65532');
    expect(runtime.entrypoint).toEqual(['node', '/app/bin/dkv.js']);
    expect(runtime.workdir).toBe('/app');
    expect(runtime.env).toEqual(['NODE_ENV=production', 'PATH=/nodejs/bin:/usr/local/bin:/usr/bin:/bin']);
    // The launcher the build stage prints, which `command: [dkv, …]` in the generated pods runs.
    expect(runtime.printed.get('/usr/local/bin/dkv')).toBe('#!/nodejs/bin/node\nimport("/app/bin/dkv.js");\n');
  });

  test('every COPY of the runtime stage maps to local files: etcdutl, the launcher, the compiled code, production dependencies only', () => {
    const spec = dkvImageSpec({ name: 'registry.example.com/dkv/controller:0.1.0', root, etcdutl: '/opt/etcdutl', scratch });
    const destinations = [...(spec.files ?? []), ...(spec.trees ?? [])].map((f) => f.split(':')[1]);
    for (const path of ['/nodejs/bin/node', '/usr/local/bin/etcdutl', '/usr/local/bin/dkv', '/app/package.json', '/app/dkv.config.yaml',
      '/app/api/config.schema.json', '/app/api/distributedkv.schema.json', '/app/examples', '/app/bin', '/app/lib/cli', '/app/node_modules/yaml', '/app/node_modules/@aws-sdk/client-s3']) {
      expect(destinations).toContain(path);
    }
    expect(spec.files).toContain('/opt/etcdutl:/usr/local/bin/etcdutl');
    expect(destinations).not.toContain('/app/node_modules/jest');
    expect(destinations).not.toContain('/app/node_modules/typescript');
    expect(destinations.some((d) => d.startsWith('/app/lib/test'))).toBe(false);
    expect(spec.user).toBe('65532:65532');
  });

  test('a runtime stage with a COPY or an instruction it cannot map is refused, naming it', () => {
    expect(() => readDockerfileRuntime(`${dockerfile}\nRUN rm -rf /tmp\n`)).toThrow(/the runtime stage has a RUN instruction, which dkv-image.ts does not map: RUN rm -rf \/tmp/);
    const withCopy = `${dockerfile}\nCOPY --from=build /etc/ssl/certs /etc/ssl/certs\n`;
    expect(() => dkvImageSpec({ name: 'x', root, etcdutl: '/opt/etcdutl', scratch, dockerfile: withCopy })).toThrow(/COPY --from=build \/etc\/ssl\/certs \/etc\/ssl\/certs: dkv-image.ts does not know which local file that is/);
  });
});
