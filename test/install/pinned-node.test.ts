/**
 * The project runs on one pinned Node.js 24, whatever node the machine has:
 * `npm ci` (its prepare script, scripts/install-node.js) puts the official
 * build from the npm registry at node_modules/.bin/node, which every npm
 * script, `npx`, and CI (.ci/run) find first on their PATH. These
 * specifications run on it too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { MINIMUM_NODE_MAJOR } from '../../cli/supported-node.js';
import { ROOT } from '../generator/support.js';

const script = readFileSync(join(ROOT, 'scripts', 'install-node.js'), 'utf8');
const pinned = /^const NODE_VERSION = '(\d+\.\d+\.\d+)';$/m.exec(script)![1];
const packaged = new Set([...script.matchAll(/^ {2}'([a-z0-9]+-[a-z0-9]+)': \{ name: 'node-\1', integrity: 'sha512-[A-Za-z0-9+/]{86}==' \},$/gm)].map((m) => m[1]));

describe('the pinned Node.js', () => {
  it('is one Node.js 24 release, with the registry package and its integrity for Linux on x64 and arm64', () => {
    expect(pinned).toMatch(new RegExp(`^${MINIMUM_NODE_MAJOR}\\.`));
    expect([...packaged].sort()).toEqual(['linux-arm64', 'linux-x64']);
  });

  it('is installed by npm ci itself, before anything is compiled', () => {
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.prepare).toMatch(/^node scripts\/install-node\.js && tsc -p \.$/);
  });

  const onPackagedPlatform = packaged.has(`${process.platform}-${process.arch}`) ? it : it.skip;
  onPackagedPlatform(`is node_modules/.bin/node after npm ci (${process.platform}-${process.arch})`, () => {
    const link = join(ROOT, 'node_modules', '.bin', 'node');
    expect(existsSync(link)).toBe(true);
    expect(realpathSync(link)).toBe(join(ROOT, 'node_modules', '.node', pinned, 'bin', 'node'));
    expect(execFileSync(link, ['--version'], { encoding: 'utf8' }).trim()).toBe(`v${pinned}`);
  });

  it(`runs these specifications (Node.js ${MINIMUM_NODE_MAJOR} or later)`, () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(MINIMUM_NODE_MAJOR);
  });
});
