import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BUILD_COMMANDS, COMPONENT_ORDER, ComponentNeeds, packageRoot } from './component-needs.js';

describe('test lanes: which built components a test file needs', () => {
  let root: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'dkv-lanes-'));
    write('package.json', '{}');
    write('test/cluster/kube.ts', "import { x } from './binaries.js';\nexport const y = x;\n");
    write('test/cluster/binaries.ts', 'export const x = 1;\n');
    write('test/cluster/real-node.ts', "import { y } from './kube.js';\nexport const z = y;\n");
    const s3 = ['test', 'cluster', 'backup-tools', 'build.sh'].map((part) => `'${part}'`).join(', ');
    write('test/support/s3.ts', `import { y } from '../cluster/kube.js';\nexport const dir = [${s3}, y];\n`);
    write('reconciler/thing.ts', `// names 'backup-tools' and DKV_TEST_KUBECONFIG, but product code is never read\nexport const t = 1;\n`);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('puts a file that reaches neither a binary nor the control plane in the fast lane', () => {
    write('test/a/pure.test.ts', "import { t } from '../../reconciler/thing.js';\nit('x', () => expect(t).toBe(1));\n");
    expect(new ComponentNeeds(root).of('test/a/pure.test.ts')).toEqual([]);
    expect(new ComponentNeeds(root).rank('test/a/pure.test.ts')).toBe(-1);
  });

  it('follows imports transitively, and ranks a file by the last component it needs in build order', () => {
    write('test/a/backup.test.ts', "import { dir } from '../support/s3.js';\n");
    write('test/a/node.test.ts', "import { z } from '../cluster/real-node.js';\nimport { dir } from '../support/s3.js';\n");
    const needs = new ComponentNeeds(root);
    expect(needs.of('test/a/backup.test.ts')).toEqual(['control-plane', 'backup-tools']);
    expect(needs.of('test/a/node.test.ts')).toEqual(['control-plane', 'backup-tools', 'real-node']);
    expect(needs.rank('test/a/node.test.ts')).toBe(COMPONENT_ORDER.indexOf('real-node'));
  });

  it('counts a text marker where a file asks for a component, not in the module that defines it', () => {
    write('test/cluster/nodes.ts', "export function startNodes(o: { withNodes?: boolean }) { return o; }\n");
    write('test/cluster/control-plane.ts', "import { startNodes } from './nodes.js';\nimport { x } from './binaries.js';\nexport const plane = [startNodes, x];\n");
    write('test/a/core.test.ts', "import { plane } from '../cluster/control-plane.js';\n");
    write('test/a/nodes.test.ts', "import { plane } from '../cluster/control-plane.js';\nconst p = plane({ withNodes: {} });\n");
    const needs = new ComponentNeeds(root);
    expect(needs.of('test/a/core.test.ts')).toEqual(['control-plane']);
    expect(needs.of('test/a/nodes.test.ts')).toEqual(['control-plane', 'kwok-nodes']);
  });

  it('reads a compiled path (lib/...js) as its TypeScript source', () => {
    write('test/a/kube.test.ts', "import { y } from '../cluster/kube.js';\n");
    expect(new ComponentNeeds(root).of(join(root, 'lib', 'test', 'a', 'kube.test.js'))).toEqual(['control-plane']);
  });

  it('builds in build-all.sh exactly the components, order and commands it ranks by', () => {
    const script = readFileSync(join(packageRoot(), 'test', 'cluster', 'build-all.sh'), 'utf8');
    const steps = [...script.matchAll(/^\s*"([a-z-]+)\|([^"]+)"$/gm)].map((m) => [m[1], m[2].split(' ')]);
    expect(steps).toEqual(COMPONENT_ORDER.map((c) => [c, BUILD_COMMANDS[c]]));
  });
});
