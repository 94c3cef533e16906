/**
 * Which etcd images the engine runs, and which image changes etcd takes one
 * member at a time (etcd's upgrade and downgrade rules).
 */
import { etcdImageChangeProblem, etcdImageProblems, etcdVersionOf } from '../../engines/etcd/versions.js';
import { validateDistributedKV } from '../../api/validate.js';
import { loadDefaultConfig } from '../../api/config.js';

describe('the etcd version an image names', () => {
  it.each([
    ['registry.k8s.io/etcd:3.6.8-0', { major: 3, minor: 6, patch: 8 }],
    ['quay.io/coreos/etcd:v3.5.17', { major: 3, minor: 5, patch: 17 }],
    ['gcr.io/etcd-development/etcd:v3.6.0@sha256:0123', { major: 3, minor: 6, patch: 0 }],
    ['registry.local:5000/mirror/etcd-amd64:3.5.12', { major: 3, minor: 5, patch: 12 }],
  ])('%s is %o', (image, version) => {
    expect(etcdVersionOf(image)).toEqual(version);
  });

  it.each([
    'registry.k8s.io/etcd@sha256:0123456789abcdef', // a digest alone
    'registry.k8s.io/etcd:latest',
    'registry.k8s.io/etcd', // no tag
    'registry.example.com/kv/server:1.4.2', // not an etcd image: its tags are someone else's versions
    'registry.local:5000/etcd', // a registry port is not a tag
  ])('%s names none, and is not judged', (image) => {
    expect(etcdVersionOf(image)).toBeUndefined();
    expect(etcdImageProblems(image)).toEqual([]);
  });
});

describe('an image the etcd engine cannot run', () => {
  it('refuses etcd before 3.5.11, whose members have no /livez and /readyz for the probes', () => {
    expect(etcdImageProblems('registry.k8s.io/etcd:3.5.10-0')).toEqual([expect.stringContaining('older than 3.5.11')]);
    expect(etcdImageProblems('quay.io/coreos/etcd:v3.4.30')).toEqual([expect.stringContaining('/livez and /readyz')]);
    expect(etcdImageProblems('registry.k8s.io/etcd:3.5.11-0')).toEqual([]);
  });

  it('refuses a major version other than 3', () => {
    expect(etcdImageProblems('quay.io/coreos/etcd:v2.3.8')).toEqual([expect.stringContaining('not a version this engine runs')]);
    expect(etcdImageProblems('registry.k8s.io/etcd:4.0.0')).toEqual([expect.stringContaining('not a version this engine runs')]);
  });

  it('is a spec problem naming spec.image, for dkv validate, dkv synth and the controller alike', () => {
    const config = loadDefaultConfig();
    const result = validateDistributedKV({ apiVersion: 'example.com/v1alpha1', kind: 'DistributedKV', metadata: { name: 'kv' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.4.27-0' } }, config);
    expect(result).toEqual({ valid: false, problems: [{ segments: ['spec', 'image'], message: expect.stringContaining('etcd 3.4.27 is older than 3.5.11') }] });
    // The generic engine runs whatever the image is.
    expect(validateDistributedKV({ apiVersion: 'example.com/v1alpha1', kind: 'DistributedKV', metadata: { name: 'kv' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.4.27-0' } },
      { ...config, engine: 'generic' }).valid).toBe(true);
  });
});

describe('an image change the running members cannot take one at a time', () => {
  const v = (version: string) => `registry.k8s.io/etcd:${version}-0`;

  it('allows a patch release, and the next minor', () => {
    expect(etcdImageChangeProblem(v('3.6.9'), [v('3.6.8'), v('3.6.8')])).toBeUndefined();
    expect(etcdImageChangeProblem(v('3.6.0'), [v('3.5.17'), v('3.5.17')])).toBeUndefined();
  });

  it('refuses skipping a minor version, judged from the oldest member', () => {
    expect(etcdImageChangeProblem(v('3.7.0'), [v('3.5.17')])).toMatch(/one minor version at a time: the oldest member runs 3\.5\.17, so 3\.7\.0 must wait until every member runs 3\.6/);
    // Half way from 3.5 to 3.6: the members still on 3.5 could not jump to 3.7.
    expect(etcdImageChangeProblem(v('3.7.0'), [v('3.6.0'), v('3.5.17'), v('3.6.0')])).toMatch(/oldest member runs 3\.5\.17/);
  });

  it('allows going back while a member still runs the old minor (a rollback), and refuses it once every member runs the new one', () => {
    expect(etcdImageChangeProblem(v('3.5.17'), [v('3.6.0'), v('3.5.17'), v('3.5.17')])).toBeUndefined();
    expect(etcdImageChangeProblem(v('3.5.17'), [v('3.6.0'), v('3.6.0'), v('3.6.0')])).toMatch(/cluster version is 3\.6: going back to 3\.5\.17 takes etcd's downgrade procedure/);
  });

  it('refuses crossing a major version, and judges nothing it cannot read', () => {
    expect(etcdImageChangeProblem(v('4.0.0'), [v('3.6.8')])).toMatch(/within one major version/);
    expect(etcdImageChangeProblem('registry.k8s.io/etcd:latest', [v('3.6.8')])).toBeUndefined();
    expect(etcdImageChangeProblem(v('3.8.0'), ['registry.example.com/kv/server:1.4.2'])).toBeUndefined();
  });
});
