/**
 * The two manifests publish together only when they agree: the construct
 * library declares every package its modules import, pins its dependencies
 * as the toolkit pins them (one version of each in an app holding both), and
 * asks its peers (cdk8s, constructs) for a range the toolkit's own version is
 * in. `npm run pack:packages` refuses to pack otherwise, naming the field.
 */
import { constructsManifest, libraryClosure, manifestProblems, rootManifest, type Manifest } from '../../scripts/pack-packages.js';

const toolkit: Manifest = { name: 'distributedkv-toolkit', version: '0.1.0', dependencies: { cdk8s: '2.70.106', constructs: '10.8.1', ajv: '8.20.0', pino: '10.4.0' } };
const library: Manifest = { name: 'cdk8s-distributedkv', peerDependencies: { cdk8s: '^2.70.106', constructs: '^10.8.1' }, dependencies: { ajv: '8.20.0' } };

describe('the manifests of the two packages', () => {
  it('agree as committed, for the packages the compiled library imports', () => {
    expect(manifestProblems(rootManifest(), constructsManifest(), libraryClosure().packages)).toEqual([]);
  });

  it('agree when the library declares what it imports, pins as the toolkit does and its peers hold the toolkit\'s versions', () => {
    expect(manifestProblems(toolkit, library, ['cdk8s', 'constructs', 'ajv'])).toEqual([]);
  });

  it('refuse a package the library imports without declaring it', () => {
    expect(manifestProblems(toolkit, library, ['ajv', 'pino'])).toEqual([
      'packages/constructs/package.json: dependencies: the construct library imports pino, which is neither a dependency nor a peer dependency',
    ]);
  });

  it('refuse a dependency pinned otherwise than the toolkit pins it', () => {
    expect(manifestProblems(toolkit, { ...library, dependencies: { ajv: '8.19.0' } }, [])).toEqual([
      'packages/constructs/package.json: dependencies.ajv: must be the toolkit\'s 8.20.0 (got 8.19.0)',
    ]);
  });

  it('refuse a peer range the toolkit\'s own version is outside', () => {
    for (const range of ['^2.71.0', '^2.70.107', '^3.0.0', '2.70.106', '*']) {
      expect(manifestProblems(toolkit, { ...library, peerDependencies: { cdk8s: range, constructs: '^10.0.0' } }, [])).toEqual([
        `packages/constructs/package.json: peerDependencies.cdk8s: must be a ^ range holding the toolkit's 2.70.106 (got ${range})`,
      ]);
    }
    expect(manifestProblems(toolkit, { ...library, peerDependencies: { cdk8s: '^2.0.0', constructs: '^10.8.1' } }, [])).toEqual([]);
  });

  it('find the library\'s modules from its compiled entry point, and no CLI or controller module among them', () => {
    const { modules, packages } = libraryClosure();
    expect(modules).toEqual(expect.arrayContaining(['index', 'constructs/distributed-kv', 'constructs/synthesize', 'api/validate', 'api/config']));
    expect(modules.filter((m) => /^(?:cli|reconciler|kube|conversion)\//.test(m))).toEqual([]);
    // ajv's runtime helpers only: the validators are compiled at build time (api/validator-code.ts), so ajv-formats is not among them.
    expect(packages).toEqual(['ajv', 'cdk8s', 'cdk8s-plus-27', 'constructs', 'yaml']);
  });
});
